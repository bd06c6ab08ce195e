"""OffsetCommit (key 8): committed offsets go to the coordinator, which answers once the
offsets topic has them (acks=all)."""

from __future__ import annotations

from kafkagen.generated.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.group_model import OffsetEntry
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 8


def handle(ctx: RequestContext, request: OffsetCommitRequest) -> None:
    v = ctx.api_version
    now = ctx.broker.replica_manager.time_ms()
    order: list[tuple[str, list[int]]] = []
    offsets: dict[TopicPartition, OffsetEntry] = {}
    for t in request.topics:
        indexes = []
        for p in t.partitions:
            ts = p.commit_timestamp if v == 1 and p.commit_timestamp >= 0 else now
            offsets[TopicPartition(t.name, p.partition_index)] = OffsetEntry(
                p.committed_offset,
                p.committed_leader_epoch if v >= 6 else -1,
                p.committed_metadata or "",
                ts,
            )
            indexes.append(p.partition_index)
        order.append((t.name, indexes))

    def done(errors: dict[TopicPartition, int]) -> None:
        ctx.respond(
            OffsetCommitResponse(
                topics=[
                    OffsetCommitResponse.OffsetCommitResponseTopic(
                        name=name,
                        partitions=[
                            OffsetCommitResponse.OffsetCommitResponsePartition(
                                partition_index=i, error_code=errors[TopicPartition(name, i)]
                            )
                            for i in indexes
                        ],
                    )
                    for name, indexes in order
                ]
            )
        )

    ctx.broker.group_coordinator.offsets.commit(
        request.group_id,
        request.generation_id_or_member_epoch if v >= 1 else -1,
        request.member_id if v >= 1 else "",
        request.group_instance_id if v >= 7 else None,
        offsets,
        done,
        api_version=v,
    )
