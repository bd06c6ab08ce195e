"""Produce (key 0): one batch per partition, appended through the replica manager.

v3+ carry one v2 record batch per partition; v0-2 carry magic 0/1 message sets, which
become one v2 batch each before anything else looks at them, as Kafka 3.x keeps only v2
in its log (`kafkagen.runtime.legacy_records`). acks=0 has no response; if such a
write fails the connection is closed, which is how Kafka tells a fire-and-forget producer.
v13 names topics by id (an unknown id is UNKNOWN_TOPIC_ID).

Transactional batches are written only to partitions of their open transaction. Before
v12 the transaction coordinator is asked whether the partition was added (as a broker
verifies with AddPartitionsToTxn), and a partition outside the open transaction gets
INVALID_TXN_STATE (TRANSACTION_ABORTABLE from v11). From v12 (transactions v2, KIP-890)
the broker adds the partitions to the transaction itself before writing, opening one if
none is open; the coordinator's refusals become errors a producer knows from Produce.
A coordinator still completing the previous transaction is asked again for a moment
before the answer (see `in_transaction`), as Kafka's broker does: NOT_ENOUGH_REPLICAS
stands for a busy coordinator only before v12.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from kafkagen.generated.produce import ProduceRequest, ProduceResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.storage.replica_manager import ProduceResult
from kafkagen.runtime.errors import (
    ErrorCode,
    InvalidTxnStateError,
    RecordSetError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from kafkagen.runtime.handlers._util import in_transaction
from kafkagen.runtime.legacy_records import is_legacy, upconvert
from kafkagen.runtime.message import KeyedList
from kafkagen.runtime.records import iter_batches
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 0
#: From v11 a batch outside the open transaction is TRANSACTION_ABORTABLE (KIP-890), as
#: Kafka 4.4 answers; older clients get INVALID_TXN_STATE.
ABORTABLE_SINCE = 11
#: The first version whose record sets are v2 batches only.
V2_BATCHES_SINCE = 3
#: Transactions v2: the broker adds a transactional batch's partition to its transaction.
ADDS_PARTITIONS_SINCE = 12
#: Topics are named by id.
TOPIC_IDS_SINCE = 13
TopicResponse = ProduceResponse.TopicProduceResponse
PartitionResponse = ProduceResponse.PartitionProduceResponse
Results = dict[TopicPartition, ProduceResult]
#: A topic of the request: its name (None for an unknown id), its id, its partitions.
Named = tuple[str | None, uuid.UUID, list[int]]


def handle(ctx: RequestContext, request: ProduceRequest) -> None:
    order: list[Named] = []
    entries: dict[TopicPartition, bytes | memoryview] = {}
    names = ctx.broker.image.topic_names
    by_id = ctx.api_version >= TOPIC_IDS_SINCE
    for topic in request.topic_data:
        name = names.get(topic.topic_id) if by_id else topic.name
        indexes = [p.index for p in topic.partition_data]
        order.append((name, topic.topic_id, indexes))
        if name is None:
            continue  # answered UNKNOWN_TOPIC_ID
        for p in topic.partition_data:
            entries[TopicPartition(name, p.index)] = b"" if p.records is None else p.records
    acks = request.acks

    def done(results: Results) -> None:
        if acks == 0:
            failed = [f"{tp}: {r.error}" for tp, r in results.items() if r.error is not None]
            if any(name is None for name, _, _ in order):
                failed.append("unknown topic id")
            if failed:
                ctx.close_connection("acks=0 produce failed: " + "; ".join(failed))
            else:
                ctx.respond_nothing()
            return
        ctx.respond(_response(ctx, order, results))

    refused = _unauthorized(ctx, request.transactional_id, entries)
    # As Kafka: a partition no topic has is answered before the request's acks are checked.
    md = ctx.broker.image
    for tp in entries:
        if tp not in refused and md.partition(tp.topic, tp.partition) is None:
            refused[tp] = ProduceResult(UnknownTopicOrPartitionError(f"{tp} does not exist"))
    if ctx.api_version < V2_BATCHES_SINCE:
        refused.update(_upconvert_legacy(entries, refused))

    def append(txn_refused: Results) -> None:
        refused.update(txn_refused)
        writable = {tp: data for tp, data in entries.items() if tp not in refused}
        if not writable:
            done(refused)
            return
        if refused:

            def merged(results: Results) -> None:
                done({**results, **refused})

            ctx.broker.replica_manager.append_records(
                writable, acks, request.timeout_ms, merged, produce_version=ctx.api_version
            )
            return
        ctx.broker.replica_manager.append_records(
            writable, acks, request.timeout_ms, done, produce_version=ctx.api_version
        )

    _check_transactional(
        ctx,
        request.transactional_id,
        {tp: data for tp, data in entries.items() if tp not in refused},
        append,
    )


def _unauthorized(
    ctx: RequestContext,
    transactional_id: str | None,
    entries: dict[TopicPartition, bytes | memoryview],
) -> dict[TopicPartition, ProduceResult]:
    """Partitions the sender may not write: WRITE on the transactional id, then on the topic."""
    if transactional_id is not None and not ctx.allowed(
        AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        return {tp: ProduceResult(TransactionalIdAuthorizationFailedError()) for tp in entries}
    allowed: dict[str, bool] = {}
    refused = {}
    for tp in entries:
        if tp.topic not in allowed:
            allowed[tp.topic] = ctx.allowed(AclOperation.WRITE, ResourceType.TOPIC, tp.topic)
        if not allowed[tp.topic]:
            refused[tp] = ProduceResult(TopicAuthorizationFailedError())
    return refused


def _upconvert_legacy(
    entries: dict[TopicPartition, bytes | memoryview],
    refused: dict[TopicPartition, ProduceResult],
) -> dict[TopicPartition, ProduceResult]:
    """Replace each magic 0/1 message set in ``entries`` by its v2 batch; the partitions
    whose set does not convert (CRC, framing, codec) are returned with their error."""
    failed: dict[TopicPartition, ProduceResult] = {}
    for tp, data in entries.items():
        if tp in refused or not is_legacy(data):
            continue
        try:
            entries[tp] = upconvert(data)
        except RecordSetError as e:
            failed[tp] = ProduceResult(e, record_errors=list(e.record_errors))
    return failed


def _check_transactional(
    ctx: RequestContext,
    transactional_id: str | None,
    entries: dict[TopicPartition, bytes | memoryview],
    then: Callable[[Results], None],
) -> None:
    """``then(refused)``: the partitions whose transactional batch may not be written,
    after adding the others to their transaction (v12+) or checking they were added."""
    refused: Results = {}
    md = ctx.broker.metadata
    # (producer id, epoch) -> the partitions its transactional batches go to.
    producers: dict[tuple[int, int], list[TopicPartition]] = {}
    for tp, data in entries.items():
        try:
            batch = next(iter_batches(data, verify_crc=False), None)
        except Exception:
            continue  # malformed: the append reports it
        if batch is None or not batch.is_transactional:
            continue
        if transactional_id is None:
            refused[tp] = ProduceResult(
                InvalidTxnStateError("a transactional batch needs the transactional id")
            )
        elif md.partition(tp.topic, tp.partition) is not None:  # else the append says so
            producers.setdefault((batch.producer_id, batch.producer_epoch), []).append(tp)
            led = ctx.broker.replica_manager.partitions.get(tp)
            if led is not None:
                led.producers.start_verification(
                    batch.producer_id, batch.producer_epoch, batch.base_sequence
                )
    if not producers or transactional_id is None:
        then(refused)
        return
    version = ctx.api_version

    def checked(codes: dict[TopicPartition, int]) -> None:
        refused.update((tp, _refusal(code, tp)) for tp, code in codes.items())
        then(refused)

    in_transaction(
        ctx,
        transactional_id,
        producers,
        version >= ADDS_PARTITIONS_SINCE,
        checked,
        retriable=ErrorCode.NOT_ENOUGH_REPLICAS,
        abortable=version >= ABORTABLE_SINCE,
        wait_out_completion=version >= ADDS_PARTITIONS_SINCE,
    )


def _refusal(code: int, tp: TopicPartition) -> ProduceResult:
    """A transactional batch refused with ``code``."""
    if code in (ErrorCode.INVALID_TXN_STATE, ErrorCode.TRANSACTION_ABORTABLE):
        return ProduceResult(error_for_code(code)(f"{tp} is not part of the open transaction"))
    return ProduceResult(error_for_code(code)())


def _response(ctx: RequestContext, order: list[Named], results: Results) -> ProduceResponse:
    md = ctx.broker.image
    responses: KeyedList[TopicResponse] = KeyedList()
    leaders: set[int] = set()
    unknown_id = ProduceResult(UnknownTopicIdError())
    for name, topic_id, indexes in order:
        partitions = []
        for index in indexes:
            r = unknown_id if name is None else results[TopicPartition(name, index)]
            pr = PartitionResponse(
                index=index,
                error_code=r.error_code,
                base_offset=r.base_offset,
                log_append_time_ms=r.log_append_time,
                log_start_offset=r.log_start_offset,
                record_errors=[
                    ProduceResponse.BatchIndexAndErrorMessage(
                        batch_index=i, batch_index_error_message=m
                    )
                    for i, m in r.record_errors
                ],
                # Kafka sends a message only with record errors; the code says the rest.
                error_message=r.error_message if r.record_errors else None,
            )
            if (
                name is not None
                and r.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
                and ctx.api_version >= 10
            ):
                info = md.partition(name, index)
                if info is not None:
                    pr.current_leader = ProduceResponse.LeaderIdAndEpoch(
                        leader_id=info.leader, leader_epoch=info.leader_epoch
                    )
                    leaders.add(info.leader)
            partitions.append(pr)
        responses.append(
            TopicResponse(name=name or "", topic_id=topic_id, partition_responses=partitions)
        )
    response = ProduceResponse(responses=responses)
    if leaders and ctx.api_version >= 10:
        # KIP-951: tell the client where the leaders moved, saving it a metadata round trip.
        response.node_endpoints = KeyedList(
            ProduceResponse.NodeEndpoint(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
            for b in (ctx.advertised(md.brokers[n]) for n in sorted(leaders) if n in md.brokers)
        )
    return response
