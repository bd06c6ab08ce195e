"""Fetch (key 1): records from partition leaders, waiting in the purgatory for min_bytes.

v4+ read the log's v2 batches as they are; v0-3 read magic 0 (v0-1) or magic 1 (v2-3)
messages, which the log's batches are down-converted to, as Kafka does for old fetchers
(zstd batches then answer UNSUPPORTED_COMPRESSION_TYPE). Fetch sessions (v7+) are
answered the simple way Kafka allows: no session is ever created (session id 0). A full
fetch (epoch 0 or -1) is served whatever session id it names, as Kafka closes the session
it names; an incremental one gets FETCH_SESSION_ID_NOT_FOUND and the client starts over
with a full one.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kafkagen.generated.fetch import FetchRequest, FetchResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.storage.replica_manager import (
    READ_COMMITTED,
    FetchInfo,
    FetchParams,
    FetchResult,
)
from kafkagen.runtime.errors import (
    ErrorCode,
    FetchSessionIdNotFoundError,
    KafkaError,
    RecordSetError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
)
from kafkagen.runtime.legacy_records import downconvert, fetch_magic
from kafkagen.runtime.message import KeyedList
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 1
#: Session epochs of a full fetch: 0 opens a session, -1 asks for none.
FULL_FETCH_EPOCHS = (0, -1)
#: The last version whose partition byte limit is hard (KIP-74 made the first message
#: exempt from v3).
HARD_LIMIT_UNTIL = 2
PartitionData = FetchResponse.PartitionData


@dataclass(slots=True)
class _Slot:
    """One requested partition, in request order, with its answer once known."""

    name: str | None
    topic_id: uuid.UUID
    index: int
    fetch_offset: int = 0
    max_bytes: int = 0
    error: KafkaError | None = None
    result: FetchResult | None = None


def handle(ctx: RequestContext, request: FetchRequest) -> None:
    v = ctx.api_version
    if v >= 7 and request.session_epoch not in FULL_FETCH_EPOCHS:
        _respond_error(ctx, FetchSessionIdNotFoundError("this broker keeps no fetch sessions"))
        return
    md = ctx.broker.metadata
    replica_id = request.replica_id if v <= 14 else request.replica_state.replica_id
    slots: list[_Slot] = []
    infos: list[tuple[TopicPartition, FetchInfo]] = []
    early_error = False
    readable: dict[str, bool] = {}
    for t in request.topics:
        name = t.topic if v < 13 else md.topic_names.get(t.topic_id)
        for p in t.partitions:
            slot = _Slot(name, t.topic_id, p.partition, p.fetch_offset, p.partition_max_bytes)
            slots.append(slot)
            if name is None:
                slot.error = UnknownTopicIdError(f"no topic has id {t.topic_id}")
                early_error = True
                continue
            if not readable.setdefault(
                name, ctx.allowed(AclOperation.READ, ResourceType.TOPIC, name)
            ):
                slot.error = TopicAuthorizationFailedError()
                early_error = True
                continue
            infos.append(
                (
                    TopicPartition(name, p.partition),
                    FetchInfo(
                        p.fetch_offset,
                        p.partition_max_bytes,
                        p.current_leader_epoch,
                        p.last_fetched_epoch,
                        p.log_start_offset,
                    ),
                )
            )
    params = FetchParams(
        replica_id=replica_id,
        max_wait_ms=0 if early_error else request.max_wait_ms,
        min_bytes=request.min_bytes,
        max_bytes=request.max_bytes,
        isolation_level=request.isolation_level,
    )

    def done(results: list[tuple[TopicPartition, FetchResult]]) -> None:
        by_tp = dict(results)
        for slot in slots:
            if slot.name is not None:
                slot.result = by_tp.get(TopicPartition(slot.name, slot.index))
        ctx.respond(_response(ctx, slots, params))

    ctx.broker.replica_manager.fetch_messages(params, infos, done)


def _respond_error(ctx: RequestContext, error: KafkaError) -> None:
    ctx.respond(FetchResponse(error_code=error.code, session_id=0, responses=[]))


def _clear(pd: FetchResponse.PartitionData) -> None:
    pd.high_watermark = pd.last_stable_offset = pd.log_start_offset = -1
    pd.records = b""
    # Kafka lists no aborted transactions (an empty list) for a partition it does not
    # know, and null for one whose read failed.
    unknown = pd.error_code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID)
    pd.aborted_transactions = [] if unknown else None


def _readable(r: FetchResult, slot: _Slot, version: int) -> KafkaError | None:
    """Down-convert ``r``'s records in place for a fetcher of an older magic; the error to
    answer instead when they have no such form.

    Up to v2 the partition's byte limit is hard, as in Kafka: the messages are cut at it,
    and a message larger than the limit arrives partial, which tells the consumer its
    fetch size is too small (from v3 a first message over the limit comes whole).
    """
    magic = fetch_magic(version)
    if magic < 2 and r.records:
        try:
            r.records = downconvert(r.records, magic, slot.fetch_offset)
        except RecordSetError as e:
            return e
        if version <= HARD_LIMIT_UNTIL and len(r.records) > slot.max_bytes:
            r.records = r.records[: max(slot.max_bytes, 0)]
    return None


def _response(ctx: RequestContext, slots: list[_Slot], params: FetchParams) -> FetchResponse:
    v = ctx.api_version
    md = ctx.broker.metadata
    responses: list[FetchResponse.FetchableTopicResponse] = []
    current: FetchResponse.FetchableTopicResponse | None = None
    current_key: object = None
    leaders: set[int] = set()
    for slot in slots:
        key = slot.topic_id if v >= 13 else slot.name
        if current is None or key != current_key:
            current = FetchResponse.FetchableTopicResponse(
                topic=slot.name or "", topic_id=slot.topic_id, partitions=[]
            )
            if v >= 13 and slot.name is not None:
                topic = md.topic(slot.name)
                if topic is not None:
                    current.topic_id = topic.topic_id
            responses.append(current)
            current_key = key
        pd = PartitionData(partition_index=slot.index)
        r = slot.result
        if slot.error is not None or r is None:
            pd.error_code = (slot.error or UnknownTopicIdError()).code
            _clear(pd)
        elif r.error_code != 0:
            # As Kafka: a partition that failed tells no offsets and sends no records.
            pd.error_code = r.error_code
            _clear(pd)
            if r.error_code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH):
                leader, epoch = r.current_leader
                if v >= 12 and leader >= 0:
                    pd.current_leader = FetchResponse.LeaderIdAndEpoch(
                        leader_id=leader, leader_epoch=epoch
                    )
                    leaders.add(leader)
        elif (error := _readable(r, slot, v)) is not None:
            pd.error_code = error.code
            _clear(pd)
        else:
            pd.error_code = r.error_code
            pd.high_watermark = r.high_watermark
            pd.last_stable_offset = r.last_stable_offset
            pd.log_start_offset = r.log_start_offset
            pd.records = r.records
            # read_committed: the aborted transactions within the data; else null.
            if params.isolation_level == READ_COMMITTED:
                pd.aborted_transactions = [
                    FetchResponse.AbortedTransaction(producer_id=pid, first_offset=first)
                    for pid, first in r.aborted_transactions or ()
                ]
            else:
                pd.aborted_transactions = None
            if r.diverging_epoch is not None and v >= 12:
                pd.diverging_epoch = FetchResponse.EpochEndOffset(
                    epoch=r.diverging_epoch[0], end_offset=r.diverging_epoch[1]
                )
        current.partitions.append(pd)
    response = FetchResponse(error_code=0, session_id=0, responses=responses)
    if leaders and v >= 16:
        response.node_endpoints = KeyedList(
            FetchResponse.NodeEndpoint(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
            for b in (ctx.advertised(md.brokers[n]) for n in sorted(leaders) if n in md.brokers)
        )
    return response
