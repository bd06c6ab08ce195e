"""TxnOffsetCommit (key 28): a group's offsets committed inside a producer's transaction.

The group coordinator writes them to the offsets topic as part of the transaction; they
become the group's committed offsets only when the transaction commits, and are dropped if
it aborts.
"""

from __future__ import annotations

from kafkagen.generated.txn_offset_commit import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.group_model import OffsetEntry
from kafkagen.runtime.handlers._util import commit_denials
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 28
R = TxnOffsetCommitResponse


def handle(ctx: RequestContext, request: TxnOffsetCommitRequest) -> None:
    v = ctx.api_version
    now = ctx.broker.replica_manager.time_ms()
    order: list[tuple[str, list[int]]] = []
    offsets: dict[TopicPartition, OffsetEntry] = {}
    for t in request.topics:
        indexes = []
        for p in t.partitions:
            offsets[TopicPartition(t.name, p.partition_index)] = OffsetEntry(
                p.committed_offset,
                p.committed_leader_epoch if v >= 2 else -1,
                p.committed_metadata or "",
                now,
            )
            indexes.append(p.partition_index)
        order.append((t.name, indexes))

    denied = commit_denials(ctx, request.group_id, order, request.transactional_id)
    offsets = {tp: e for tp, e in offsets.items() if tp not in denied}

    def done(errors: dict[TopicPartition, int]) -> None:
        errors = {**errors, **denied}
        ctx.respond(
            R(
                topics=[
                    R.TxnOffsetCommitResponseTopic(
                        name=name,
                        partitions=[
                            R.TxnOffsetCommitResponsePartition(
                                partition_index=i, error_code=errors[TopicPartition(name, i)]
                            )
                            for i in indexes
                        ],
                    )
                    for name, indexes in order
                ]
            )
        )

    if denied and not offsets:
        done({})
        return
    ctx.broker.group_coordinator.offsets.commit_transactional(
        request.group_id,
        request.producer_id,
        request.producer_epoch,
        request.generation_id_or_member_epoch if v >= 3 else -1,
        request.member_id if v >= 3 else "",
        request.group_instance_id if v >= 3 else None,
        offsets,
        done,
    )
