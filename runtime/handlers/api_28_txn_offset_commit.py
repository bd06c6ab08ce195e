"""TxnOffsetCommit (key 28): a group's offsets committed inside a producer's transaction.

The group coordinator writes them to the offsets topic as part of the transaction; they
become the group's committed offsets only when the transaction commits, and are dropped if
it aborts.

The group's offsets partition must be part of the open transaction. Before v5 the
transaction coordinator is asked whether AddOffsetsToTxn added it: if not, the offsets
fail with INVALID_TXN_STATE (TRANSACTION_ABORTABLE from v4, as Kafka 4.4 answers). From v5
(transactions v2, KIP-890) the broker adds it itself, as AddOffsetsToTxn would. From v6
topics are named by id: an id no topic has fails its partitions with UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

from kafkagen.generated.txn_offset_commit import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.group.group_model import OffsetEntry
from kafkagen.runtime.broker.types import OFFSETS_TOPIC
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.handlers._util import commit_denials, in_transaction
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 28
R = TxnOffsetCommitResponse
#: A group's offsets partition outside the transaction is TRANSACTION_ABORTABLE.
ABORTABLE_SINCE = 4
#: Transactions v2: the broker adds the offsets partition to the transaction.
ADDS_PARTITION_SINCE = 5
TOPIC_IDS_SINCE = 6


def handle(ctx: RequestContext, request: TxnOffsetCommitRequest) -> None:
    v = ctx.api_version
    now = ctx.broker.replica_manager.time_ms()
    by_id = v >= TOPIC_IDS_SINCE
    topic_names = ctx.broker.metadata.topic_names
    order: list[tuple[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic, str | None, list[int]]]
    order = []
    offsets: dict[TopicPartition, OffsetEntry] = {}
    for t in request.topics:
        name = topic_names.get(t.topic_id) if by_id else t.name
        order.append((t, name, [p.partition_index for p in t.partitions]))
        if name is None:
            continue  # an unknown topic id: its partitions fail, the rest are committed
        for p in t.partitions:
            offsets[TopicPartition(name, p.partition_index)] = OffsetEntry(
                p.committed_offset,
                p.committed_leader_epoch if v >= 2 else -1,
                p.committed_metadata or "",
                now,
            )

    named = [(name, indexes) for _, name, indexes in order if name is not None]
    denied = commit_denials(ctx, request.group_id, named, request.transactional_id)
    offsets = {tp: e for tp, e in offsets.items() if tp not in denied}

    def done(errors: dict[TopicPartition, int]) -> None:
        errors = {**errors, **denied}

        def error_of(name: str | None, index: int) -> int:
            return (
                ErrorCode.UNKNOWN_TOPIC_ID if name is None else errors[TopicPartition(name, index)]
            )

        ctx.respond(
            R(
                topics=[
                    R.TxnOffsetCommitResponseTopic(
                        name=t.name,
                        topic_id=t.topic_id,
                        partitions=[
                            R.TxnOffsetCommitResponsePartition(
                                partition_index=i, error_code=error_of(name, i)
                            )
                            for i in indexes
                        ],
                    )
                    for t, name, indexes in order
                ]
            )
        )

    if not offsets:
        done({})
        return

    def commit(refused: dict[TopicPartition, int]) -> None:
        if refused:
            [code] = refused.values()
            done(dict.fromkeys(offsets, code))
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

    gc = ctx.broker.group_coordinator
    if gc.log.group_error(request.group_id):
        commit({})  # not this broker's group: the group coordinator says so first
        return
    offsets_partition = TopicPartition(OFFSETS_TOPIC, gc.log.partition_of(request.group_id))
    in_transaction(
        ctx,
        request.transactional_id,
        {(request.producer_id, request.producer_epoch): [offsets_partition]},
        v >= ADDS_PARTITION_SINCE,
        commit,
        retriable=ErrorCode.COORDINATOR_NOT_AVAILABLE,
        abortable=v >= ABORTABLE_SINCE,
    )
