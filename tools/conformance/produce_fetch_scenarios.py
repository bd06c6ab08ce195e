"""Produce, Fetch, ListOffsets, OffsetForLeaderEpoch and DeleteRecords."""

from __future__ import annotations

import uuid

from kafkagen.generated.delete_records import DeleteRecordsRequest
from kafkagen.generated.init_producer_id import InitProducerIdRequest
from kafkagen.generated.offset_for_leader_epoch import OffsetForLeaderEpochRequest
from kafkagen.runtime.records import CompressionType

from .core import Session, scenario
from .messages import batch, fetch, list_offsets, produce

# ---------------------------------------------------------------------- Produce


@scenario("Produce", "ordinary", "two batches to a new topic, acks=1: offsets 0 and 3")
async def produce_ordinary(s: Session) -> None:
    t = await s.create_topic()
    node = await s.leader(t)
    await s.call(produce(t, batch(3)), node=node)
    await s.call(produce(t, batch(2, first=3)), node=node)


@scenario("Produce", "acks-all", "acks=-1 to a topic with three replicas", brokers=3)
async def produce_acks_all(s: Session) -> None:
    t = await s.create_topic(replication=3)
    await s.call(produce(t, batch(3), acks=-1), node=await s.leader(t))


@scenario("Produce", "acks-0", "acks=0 gets no answer; the records are still written")
async def produce_acks_0(s: Session) -> None:
    t = await s.create_topic()
    node = await s.leader(t)
    await s.call(produce(t, batch(2), acks=0), node=node, expect_answer=False)
    await s.call(list_offsets(t, -1), node=node)


@scenario("Produce", "compressed", "a gzip batch is stored and served as written")
async def produce_compressed(s: Session) -> None:
    t = await s.create_topic()
    node = await s.leader(t)
    await s.call(produce(t, batch(4, compression=CompressionType.GZIP)), node=node)
    await s.call(fetch(t, s.topic_uuids[t]), node=node)


@scenario("Produce", "unknown-topic", "a topic that does not exist")
async def produce_unknown_topic(s: Session) -> None:
    await s.call(produce(s.name("missing"), batch(1)))


@scenario("Produce", "unknown-partition", "partition 5 of a one-partition topic")
async def produce_unknown_partition(s: Session) -> None:
    t = await s.create_topic()
    await s.call(produce(t, batch(1), partition=5), node=await s.leader(t))


@scenario("Produce", "invalid-acks", "acks=2 is not a valid setting")
async def produce_invalid_acks(s: Session) -> None:
    t = await s.create_topic()
    await s.call(produce(t, batch(1), acks=2), node=await s.leader(t))


@scenario("Produce", "unknown-topic-invalid-acks", "acks=2 to a topic that does not exist")
async def produce_unknown_topic_invalid_acks(s: Session) -> None:
    await s.call(produce(s.name("missing"), batch(1), acks=2))


@scenario("Produce", "invalid-topic-name", "a name with characters topics may not have")
async def produce_invalid_name(s: Session) -> None:
    await s.call(produce(s.name("bad name!"), batch(1)))


@scenario("Produce", "not-leader", "to a broker that is not the partition's leader", brokers=2)
async def produce_not_leader(s: Session) -> None:
    t = await s.create_topic()
    await s.call(produce(t, batch(1)), node=s.other_node(await s.leader(t)))


@scenario("Produce", "corrupt-batch", "a batch whose CRC does not match its bytes")
async def produce_corrupt(s: Session) -> None:
    t = await s.create_topic()
    data = bytearray(batch(2))
    data[-1] ^= 0xFF
    node = await s.leader(t)
    await s.call(produce(t, bytes(data)), node=node)
    await s.call(list_offsets(t, -1), node=node)


@scenario("Produce", "truncated-batch", "a batch cut short in the middle of a record")
async def produce_truncated(s: Session) -> None:
    t = await s.create_topic()
    await s.call(produce(t, batch(2)[:-5]), node=await s.leader(t))


@scenario("Produce", "too-large", "a batch above the topic's max.message.bytes")
async def produce_too_large(s: Session) -> None:
    t = await s.create_topic(configs={"max.message.bytes": "1024"})
    node = await s.leader(t)
    await s.call(produce(t, batch(1, size=4096)), node=node)
    await s.call(produce(t, batch(1, size=100)), node=node)


@scenario("Produce", "no-records", "a partition entry with null records")
async def produce_no_records(s: Session) -> None:
    t = await s.create_topic()
    await s.call(produce(t, None), node=await s.leader(t))


@scenario("Produce", "internal-topic", "a client write to __consumer_offsets")
async def produce_internal(s: Session) -> None:
    await s.call(produce("__consumer_offsets", batch(1)), node=await s.leader("__consumer_offsets"))


async def _idempotent(s: Session) -> tuple[str, int, int, int]:
    t = await s.create_topic()
    r = await s.setup(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000))
    return t, await s.leader(t), int(r.producer_id), int(r.producer_epoch)


@scenario("Produce", "idempotent", "sequences 0 and 3 from an idempotent producer")
async def produce_idempotent(s: Session) -> None:
    t, node, pid, epoch = await _idempotent(s)
    kw = dict(producer_id=pid, producer_epoch=epoch)
    await s.call(produce(t, batch(3, base_sequence=0, **kw)), node=node)
    await s.call(produce(t, batch(2, first=3, base_sequence=3, **kw)), node=node)


@scenario("Produce", "duplicate-sequence", "the same idempotent batch twice: written once")
async def produce_duplicate(s: Session) -> None:
    t, node, pid, epoch = await _idempotent(s)
    data = batch(3, base_sequence=0, producer_id=pid, producer_epoch=epoch)
    await s.call(produce(t, data), node=node)
    await s.call(produce(t, data), node=node)
    await s.call(list_offsets(t, -1), node=node)


@scenario("Produce", "out-of-order-sequence", "sequence 5 where 3 is expected")
async def produce_out_of_order(s: Session) -> None:
    t, node, pid, epoch = await _idempotent(s)
    kw = dict(producer_id=pid, producer_epoch=epoch)
    await s.call(produce(t, batch(3, base_sequence=0, **kw)), node=node)
    await s.call(produce(t, batch(1, base_sequence=5, **kw)), node=node)


@scenario("Produce", "first-sequence-not-zero", "a new producer whose first sequence is 7")
async def produce_first_seq(s: Session) -> None:
    t, node, pid, epoch = await _idempotent(s)
    await s.call(
        produce(t, batch(1, base_sequence=7, producer_id=pid, producer_epoch=epoch)), node=node
    )


@scenario("Produce", "unknown-producer", "an idempotent batch from a producer id never issued")
async def produce_unknown_producer(s: Session) -> None:
    t = await s.create_topic()
    data = batch(1, base_sequence=0, producer_id=987654321, producer_epoch=0)
    await s.call(produce(t, data), node=await s.leader(t))


@scenario("Produce", "stale-epoch", "an idempotent batch at an epoch below the producer's")
async def produce_stale_epoch(s: Session) -> None:
    t, node, pid, epoch = await _idempotent(s)
    await s.call(
        produce(t, batch(1, base_sequence=0, producer_id=pid, producer_epoch=epoch + 2)),
        node=node,
    )
    await s.call(
        produce(t, batch(1, base_sequence=1, producer_id=pid, producer_epoch=epoch)), node=node
    )


# ---------------------------------------------------------------------- Fetch


async def _topic_with(s: Session, count: int = 3) -> tuple[str, int]:
    t = await s.create_topic()
    await s.produced(t, batch(count))
    return t, await s.leader(t)


@scenario("Fetch", "ordinary", "three records from offset 0")
async def fetch_ordinary(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(fetch(t, s.topic_uuids[t]), node=node)


async def _fetch_in_session(s: Session, session_id: int, epoch: int) -> None:
    t, node = await _topic_with(s)
    req = fetch(t, s.topic_uuids[t])
    req.session_id, req.session_epoch = session_id, epoch
    await s.call(req, node=node)


@scenario("Fetch", "full-naming-a-session", "a full fetch (epoch -1) naming session 12345")
async def fetch_full_naming_session(s: Session) -> None:
    await _fetch_in_session(s, 12345, -1)


@scenario("Fetch", "incremental-without-session", "session 0 at epoch 1: no such session")
async def fetch_incremental_no_session(s: Session) -> None:
    await _fetch_in_session(s, 0, 1)


@scenario("Fetch", "middle-of-batch", "from offset 1: the whole batch holding it comes back")
async def fetch_middle(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(fetch(t, s.topic_uuids[t], 1), node=node)


@scenario("Fetch", "at-end", "from the log end offset: no records, no error")
async def fetch_at_end(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(fetch(t, s.topic_uuids[t], 3), node=node)


@scenario("Fetch", "empty-partition-waits", "min_bytes=1, max_wait 300 ms on an empty log")
async def fetch_wait(s: Session) -> None:
    t = await s.create_topic()
    req = fetch(t, s.topic_uuids[t], max_wait_ms=300, min_bytes=1)
    await s.call(req, node=await s.leader(t))


@scenario("Fetch", "tiny-partition-max-bytes", "partition_max_bytes=1 still returns a batch")
async def fetch_tiny(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(fetch(t, s.topic_uuids[t], partition_max_bytes=1), node=node)


@scenario("Fetch", "offset-out-of-range", "from offset 100 of a three-record log")
async def fetch_out_of_range(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(fetch(t, s.topic_uuids[t], 100), node=node)


@scenario("Fetch", "negative-offset", "from offset -5")
async def fetch_negative(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(fetch(t, s.topic_uuids[t], -5), node=node)


@scenario("Fetch", "unknown-topic", "a topic (and topic id) that does not exist")
async def fetch_unknown_topic(s: Session) -> None:
    await s.call(fetch(s.name("missing"), uuid.UUID(int=12345)))


@scenario("Fetch", "unknown-partition", "partition 3 of a one-partition topic")
async def fetch_unknown_partition(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(fetch(t, s.topic_uuids[t], partition=3), node=node)


@scenario("Fetch", "not-leader", "from a broker that is not the leader", brokers=2)
async def fetch_not_leader(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(fetch(t, s.topic_uuids[t]), node=s.other_node(node))


@scenario("Fetch", "below-log-start", "from offset 0 after DeleteRecords moved the start to 2")
async def fetch_below_start(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.setup(_delete_records(t, 2), node=node)
    await s.call(fetch(t, s.topic_uuids[t], 0), node=node)
    await s.call(fetch(t, s.topic_uuids[t], 2), node=node)


# ---------------------------------------------------------------------- ListOffsets


@scenario("ListOffsets", "earliest-latest", "earliest (-2) and latest (-1) after three records")
async def list_offsets_ends(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(list_offsets(t, -2), node=node)
    await s.call(list_offsets(t, -1), node=node)


@scenario("ListOffsets", "by-timestamp", "the first offset at or after a record's timestamp")
async def list_offsets_time(s: Session) -> None:
    from .messages import BASE_TIMESTAMP

    t, node = await _topic_with(s)
    await s.call(list_offsets(t, BASE_TIMESTAMP + 1), node=node)
    await s.call(list_offsets(t, BASE_TIMESTAMP + 1000), node=node)


@scenario("ListOffsets", "max-timestamp", "the record with the largest timestamp (-3)")
async def list_offsets_max(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(list_offsets(t, -3), node=node)


@scenario("ListOffsets", "tiered", "v11: latest tiered (-5) and earliest pending upload (-6)")
async def list_offsets_tiered(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(list_offsets(t, -5), node=node)
    await s.call(list_offsets(t, -6), node=node)
    await s.call(list_offsets(t, -6), 10, node=node)


@scenario("ListOffsets", "empty-log", "earliest and latest of an empty partition")
async def list_offsets_empty(s: Session) -> None:
    t = await s.create_topic()
    node = await s.leader(t)
    await s.call(list_offsets(t, -2), node=node)
    await s.call(list_offsets(t, -1), node=node)


@scenario("ListOffsets", "unknown-topic", "a topic that does not exist")
async def list_offsets_unknown(s: Session) -> None:
    await s.call(list_offsets(s.name("missing"), -1))


@scenario("ListOffsets", "unknown-partition", "partition 4 of a one-partition topic")
async def list_offsets_unknown_partition(s: Session) -> None:
    t = await s.create_topic()
    await s.call(list_offsets(t, -1, partition=4), node=await s.leader(t))


@scenario("ListOffsets", "not-leader", "to a broker that is not the leader", brokers=2)
async def list_offsets_not_leader(s: Session) -> None:
    t = await s.create_topic()
    await s.call(list_offsets(t, -1), node=s.other_node(await s.leader(t)))


@scenario("ListOffsets", "after-delete-records", "earliest moves with DeleteRecords")
async def list_offsets_after_delete(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.setup(_delete_records(t, 2), node=node)
    await s.call(list_offsets(t, -2), node=node)


# ---------------------------------------------------------------------- OffsetForLeaderEpoch


def _epoch_request(topic: str, epoch: int, partition: int = 0) -> OffsetForLeaderEpochRequest:
    Req = OffsetForLeaderEpochRequest
    return Req(
        replica_id=-1,
        topics=[
            Req.OffsetForLeaderTopic(
                topic=topic,
                partitions=[
                    Req.OffsetForLeaderPartition(
                        partition=partition, current_leader_epoch=-1, leader_epoch=epoch
                    )
                ],
            )
        ],
    )


@scenario("OffsetForLeaderEpoch", "ordinary", "the end offset of epoch 0 after three records")
async def epoch_ordinary(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(_epoch_request(t, 0), node=node)


@scenario("OffsetForLeaderEpoch", "future-epoch", "an epoch above the leader's")
async def epoch_future(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(_epoch_request(t, 7), node=node)


@scenario("OffsetForLeaderEpoch", "unknown-topic", "a topic that does not exist")
async def epoch_unknown(s: Session) -> None:
    await s.call(_epoch_request(s.name("missing"), 0))


@scenario("OffsetForLeaderEpoch", "not-leader", "to a broker that is not the leader", brokers=2)
async def epoch_not_leader(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(_epoch_request(t, 0), node=s.other_node(node))


# ---------------------------------------------------------------------- DeleteRecords


def _delete_records(topic: str, offset: int, partition: int = 0) -> DeleteRecordsRequest:
    D = DeleteRecordsRequest
    return D(
        topics=[
            D.DeleteRecordsTopic(
                name=topic,
                partitions=[D.DeleteRecordsPartition(partition_index=partition, offset=offset)],
            )
        ],
        timeout_ms=10000,
    )


@scenario("DeleteRecords", "ordinary", "up to offset 2, then to the end (-1)")
async def delete_records_ordinary(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(_delete_records(t, 2), node=node)
    await s.call(_delete_records(t, -1), node=node)


@scenario("DeleteRecords", "beyond-high-watermark", "offset 10 of a three-record log")
async def delete_records_beyond(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(_delete_records(t, 10), node=node)


@scenario("DeleteRecords", "unknown-topic", "a topic that does not exist")
async def delete_records_unknown(s: Session) -> None:
    await s.call(_delete_records(s.name("missing"), 1))


@scenario("DeleteRecords", "not-leader", "to a broker that is not the leader", brokers=2)
async def delete_records_not_leader(s: Session) -> None:
    t, node = await _topic_with(s)
    await s.call(_delete_records(t, 1), node=s.other_node(node))
