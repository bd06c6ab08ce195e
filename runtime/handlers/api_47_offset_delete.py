"""OffsetDelete (key 47): drop committed offsets of topics the group does not consume."""

from __future__ import annotations

from kafkagen.generated.offset_delete import OffsetDeleteRequest, OffsetDeleteResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.message import KeyedList
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 47


def handle(ctx: RequestContext, request: OffsetDeleteRequest) -> None:
    wanted = [
        TopicPartition(t.name, p.partition_index) for t in request.topics for p in t.partitions
    ]

    def done(error: int, errors: dict[TopicPartition, int]) -> None:
        topics: KeyedList[OffsetDeleteResponse.OffsetDeleteResponseTopic] = KeyedList()
        if not error or errors:
            by_topic: dict[str, list[int]] = {}
            for tp in wanted:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            for name, indexes in by_topic.items():
                topics.append(
                    OffsetDeleteResponse.OffsetDeleteResponseTopic(
                        name=name,
                        partitions=KeyedList(
                            OffsetDeleteResponse.OffsetDeleteResponsePartition(
                                partition_index=i, error_code=errors.get(TopicPartition(name, i), 0)
                            )
                            for i in indexes
                        ),
                    )
                )
        ctx.respond(OffsetDeleteResponse(error_code=error, topics=topics))

    if not ctx.allowed(AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        ctx.respond(OffsetDeleteResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED))
        return
    readable = {
        name: ctx.allowed(AclOperation.READ, ResourceType.TOPIC, name)
        for name in {tp.topic for tp in wanted}
    }
    denied = {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED for tp in wanted if not readable[tp.topic]}

    def merged(error: int, errors: dict[TopicPartition, int]) -> None:
        done(error, {**errors, **denied})

    allowed = [tp for tp in wanted if tp not in denied]
    ctx.broker.group_coordinator.offsets.delete(request.group_id, allowed, merged)
