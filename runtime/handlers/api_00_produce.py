"""Produce (key 0): one batch per partition, appended through the replica manager.

v3+ carry one v2 record batch per partition; v0-2 carry magic 0/1 message sets, which
become one v2 batch each before anything else looks at them, as Kafka 3.x keeps only v2
in its log (`kafkagen.runtime.legacy_records`). acks=0 has no response; if such a
write fails the connection is closed, which is how Kafka tells a fire-and-forget producer.

Transactional batches are written only to partitions their transaction has added: the
transaction coordinator is asked first (as a broker verifies with AddPartitionsToTxn), and
a partition outside the open transaction gets INVALID_TXN_STATE.
"""

from __future__ import annotations

from kafkagen.generated.produce import ProduceRequest, ProduceResponse
from kafkagen.runtime.broker.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.replica_manager import ProduceResult
from kafkagen.runtime.errors import (
    ErrorCode,
    InvalidTxnStateError,
    RecordSetError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    error_for_code,
)
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
TopicResponse = ProduceResponse.TopicProduceResponse
PartitionResponse = ProduceResponse.PartitionProduceResponse


def handle(ctx: RequestContext, request: ProduceRequest) -> None:
    order: list[tuple[str, list[int]]] = []
    entries: dict[TopicPartition, bytes | memoryview] = {}
    for topic in request.topic_data:
        indexes = []
        for p in topic.partition_data:
            entries[TopicPartition(topic.name, p.index)] = b"" if p.records is None else p.records
            indexes.append(p.index)
        order.append((topic.name, indexes))
    acks = request.acks

    def done(results: dict[TopicPartition, ProduceResult]) -> None:
        if acks == 0:
            failed = [f"{tp}: {r.error}" for tp, r in results.items() if r.error is not None]
            if failed:
                ctx.close_connection("acks=0 produce failed: " + "; ".join(failed))
            else:
                ctx.respond_nothing()
            return
        ctx.respond(_response(ctx, order, results))

    refused = _unauthorized(ctx, request.transactional_id, entries)
    if ctx.api_version < V2_BATCHES_SINCE:
        refused.update(_upconvert_legacy(entries, refused))
    refused.update(
        _verify_transactional(
            ctx,
            request.transactional_id,
            {tp: data for tp, data in entries.items() if tp not in refused},
        )
    )
    if refused:
        entries = {tp: data for tp, data in entries.items() if tp not in refused}
        if not entries:
            done(refused)
            return

        def merged(results: dict[TopicPartition, ProduceResult]) -> None:
            done({**results, **refused})

        ctx.broker.replica_manager.append_records(
            entries, acks, request.timeout_ms, merged, produce_version=ctx.api_version
        )
        return
    ctx.broker.replica_manager.append_records(
        entries, acks, request.timeout_ms, done, produce_version=ctx.api_version
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


def _verify_transactional(
    ctx: RequestContext,
    transactional_id: str | None,
    entries: dict[TopicPartition, bytes | memoryview],
) -> dict[TopicPartition, ProduceResult]:
    """Partitions whose transactional batch is not part of an open transaction."""
    refused: dict[TopicPartition, ProduceResult] = {}
    coordinator = None
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
            continue
        if coordinator is None:
            node = ctx.broker.txn_coordinator.coordinator_for(transactional_id)
            coordinator = ctx.broker.peers.txn_coordinator_of(node)
        code = (
            ErrorCode.NOT_ENOUGH_REPLICAS
            if coordinator is None
            else coordinator.verify_partition(
                transactional_id, batch.producer_id, batch.producer_epoch, tp
            )
        )
        if code == ErrorCode.INVALID_TXN_STATE and ctx.api_version >= ABORTABLE_SINCE:
            code = ErrorCode.TRANSACTION_ABORTABLE
        if code:
            refused[tp] = ProduceResult(
                error_for_code(code)(f"{tp} is not part of the open transaction")
                if code in (ErrorCode.INVALID_TXN_STATE, ErrorCode.TRANSACTION_ABORTABLE)
                else error_for_code(code)()
            )
    return refused


def _response(
    ctx: RequestContext,
    order: list[tuple[str, list[int]]],
    results: dict[TopicPartition, ProduceResult],
) -> ProduceResponse:
    md = ctx.broker.metadata
    responses: KeyedList[TopicResponse] = KeyedList()
    leaders: set[int] = set()
    for name, indexes in order:
        partitions = []
        for index in indexes:
            r = results[TopicPartition(name, index)]
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
            if r.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and ctx.api_version >= 10:
                info = md.partition(name, index)
                if info is not None:
                    pr.current_leader = ProduceResponse.LeaderIdAndEpoch(
                        leader_id=info.leader, leader_epoch=info.leader_epoch
                    )
                    leaders.add(info.leader)
            partitions.append(pr)
        responses.append(TopicResponse(name=name, partition_responses=partitions))
    response = ProduceResponse(responses=responses)
    if leaders and ctx.api_version >= 10:
        # KIP-951: tell the client where the leaders moved, saving it a metadata round trip.
        response.node_endpoints = KeyedList(
            ProduceResponse.NodeEndpoint(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
            for b in (ctx.advertised(md.brokers[n]) for n in sorted(leaders) if n in md.brokers)
        )
    return response
