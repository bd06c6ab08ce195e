"""OffsetCommit (key 8): committed offsets go to the coordinator, which answers once the
offsets topic has them (acks=all).

From v10 topics are named by id (KIP-848): an id no topic has fails its partitions with
UNKNOWN_TOPIC_ID, and the answer names topics by id too.
"""

from __future__ import annotations

from kafkagen.generated.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.group.group_model import OffsetEntry
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.handlers._util import commit_denials
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 8
TOPIC_IDS_SINCE = 10


def handle(ctx: RequestContext, request: OffsetCommitRequest) -> None:
    v = ctx.api_version
    now = ctx.broker.replica_manager.time_ms()
    by_id = v >= TOPIC_IDS_SINCE
    topic_names = ctx.broker.metadata.topic_names
    order: list[tuple[OffsetCommitRequest.OffsetCommitRequestTopic, str | None, list[int]]] = []
    offsets: dict[TopicPartition, OffsetEntry] = {}
    for t in request.topics:
        name = topic_names.get(t.topic_id) if by_id else t.name
        indexes = [p.partition_index for p in t.partitions]
        order.append((t, name, indexes))
        if name is None:
            continue  # an unknown topic id: its partitions fail, the rest are committed
        for p in t.partitions:
            ts = p.commit_timestamp if v == 1 and p.commit_timestamp >= 0 else now
            offsets[TopicPartition(name, p.partition_index)] = OffsetEntry(
                p.committed_offset,
                p.committed_leader_epoch if v >= 6 else -1,
                p.committed_metadata or "",
                ts,
            )

    def error_of(name: str | None, index: int, errors: dict[TopicPartition, int]) -> int:
        if name is None:
            return ErrorCode.UNKNOWN_TOPIC_ID
        return errors[TopicPartition(name, index)]

    # The group first (every partition fails with it), then READ on each topic.
    named = [(name, indexes) for _, name, indexes in order if name is not None]
    denied = commit_denials(ctx, request.group_id, named)
    offsets = {tp: e for tp, e in offsets.items() if tp not in denied}

    def done(errors: dict[TopicPartition, int]) -> None:
        errors = {**errors, **denied}
        ctx.respond(
            OffsetCommitResponse(
                topics=[
                    OffsetCommitResponse.OffsetCommitResponseTopic(
                        name=t.name,
                        topic_id=t.topic_id,
                        partitions=[
                            OffsetCommitResponse.OffsetCommitResponsePartition(
                                partition_index=i, error_code=error_of(name, i, errors)
                            )
                            for i in indexes
                        ],
                    )
                    for t, name, indexes in order
                ]
            )
        )

    if not offsets:  # as Kafka: nothing left to commit, so the group is not asked
        done({})
        return
    ctx.broker.group_coordinator.offsets.commit(
        request.group_id,
        request.generation_id_or_member_epoch if v >= 1 else -1,
        request.member_id if v >= 1 else "",
        request.group_instance_id if v >= 7 else None,
        offsets,
        done,
        api_version=v,
    )
