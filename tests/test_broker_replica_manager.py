"""The replica manager on a manual clock: appends, acks, waiting fetches, offsets, producers."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from broker_helpers import NOW, Harness
from kafkagen.runtime.broker.storage.replica_manager import (
    FetchInfo,
    FetchParams,
    FetchResult,
)
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.records import (
    CompressionType,
    Record,
    TimestampType,
    build_batch,
    iter_batches,
    iter_records,
)
from kafkagen.runtime.topic_partition import TopicPartition


def batch(n: int = 3, start: int = 0, **kwargs: Any) -> bytes:
    ts = kwargs.pop("ts", NOW)
    records = [
        Record(-1, ts + i, f"k{start + i}".encode(), f"v{start + i}".encode(), [("h", b"x")])
        for i in range(n)
    ]
    return build_batch(records, **kwargs)


TP = TopicPartition("t", 0)


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.md.create_topic("t", 1, 1)
    return harness


def test_acks_1_answers_at_once_with_offsets_and_moves_hw(h: Harness) -> None:
    got = h.produce(TP, batch(3))
    assert got[0][TP].error is None and got[0][TP].base_offset == 0
    got = h.produce(TP, batch(2))
    assert got[0][TP].base_offset == 3
    p = h.rm().partitions[TP]
    assert p.high_watermark == p.log.log_end_offset == 5


def test_acks_all_with_leader_alone_in_isr_answers_at_once(h: Harness) -> None:
    got = h.produce(TP, batch(3), acks=-1)
    assert len(got) == 1 and got[0][TP].error is None


def test_invalid_acks_is_refused(h: Harness) -> None:
    got = h.produce(TP, batch(1), acks=2)
    assert got[0][TP].error_code == ErrorCode.INVALID_REQUIRED_ACKS
    assert h.rm().partitions[TP].log.log_end_offset == 0


def test_unknown_partition_is_refused(h: Harness) -> None:
    got = h.produce(TopicPartition("t", 7), batch(1))
    assert got[0][TopicPartition("t", 7)].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_corrupt_batch_is_rejected_and_log_untouched(h: Harness) -> None:
    data = bytearray(batch(3))
    data[-1] ^= 0xFF
    got = h.produce(TP, bytes(data))
    assert got[0][TP].error_code == ErrorCode.CORRUPT_MESSAGE
    assert h.rm().partitions[TP].log.log_end_offset == 0


def test_too_large_batch_is_rejected(h: Harness) -> None:
    h.md.configs.set_topic_configs("t", {"max.message.bytes": "100"})
    got = h.produce(TP, batch(10))
    assert got[0][TP].error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert h.rm().partitions[TP].log.log_end_offset == 0


def test_log_append_time_topic_stamps_batches(h: Harness) -> None:
    h.md.configs.set_topic_configs("t", {"message.timestamp.type": "LogAppendTime"})
    h.wall = NOW + 5000
    got = h.produce(TP, batch(2, ts=NOW - 10))
    assert got[0][TP].log_append_time == NOW + 5000
    [b] = iter_batches(h.rm().partitions[TP].log.batches[0].data)
    assert b.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in b] == [NOW + 5000, NOW + 5000]


def test_create_time_too_far_in_future_is_invalid_timestamp(h: Harness) -> None:
    h.md.configs.set_topic_configs("t", {"message.timestamp.after.max.ms": "1000"})
    got = h.produce(TP, batch(1, ts=NOW + 60_000))
    assert got[0][TP].error_code == ErrorCode.INVALID_TIMESTAMP
    assert got[0][TP].record_errors and got[0][TP].record_errors[0][0] == 0


def test_compressed_batch_is_served_back_as_written(h: Harness) -> None:
    h.produce(TP, batch(1))
    raw = batch(50, compression=CompressionType.GZIP)
    h.produce(TP, raw)
    [[(_, r)]] = h.fetch(TP, 1)
    [b] = iter_batches(r.records)
    assert b.base_offset == 1 and b.compression is CompressionType.GZIP
    # Only the base offset and leader epoch differ from what the producer sent.
    assert bytes(b.buffer)[8:12] == raw[8:12] and bytes(b.buffer)[16:] == raw[16:]
    assert [r.value for r in b][:2] == [b"v0", b"v1"]


def test_fetch_returns_whole_batches_from_the_offset(h: Harness) -> None:
    for i in range(3):
        h.produce(TP, batch(2, start=2 * i))
    [[(_, r)]] = h.fetch(TP, 3)
    values = [rec.value for rec in iter_records(r.records)]
    # The batch holding offset 3 starts at 2: clients skip what is below their offset.
    assert values == [b"v2", b"v3", b"v4", b"v5"]
    assert r.high_watermark == 6 and r.log_start_offset == 0


def test_fetch_beyond_log_end_is_offset_out_of_range(h: Harness) -> None:
    h.produce(TP, batch(2))
    [[(_, r)]] = h.fetch(TP, 5)
    assert r.error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_fetch_at_the_end_waits_until_an_append(h: Harness) -> None:
    h.produce(TP, batch(2))
    got = h.fetch(TP, 2, max_wait=500)
    assert got == []
    h.produce(TP, batch(1))
    assert len(got) == 1
    [(_, r)] = got[0]
    assert [rec.offset for rec in iter_records(r.records)] == [2]


def test_waiting_fetch_expires_empty(h: Harness) -> None:
    got = h.fetch(TP, 0, max_wait=500)
    h.advance(499)
    assert got == []
    h.advance(1)
    assert len(got) == 1 and got[0][0][1].records == b""


def test_fetch_waits_for_min_bytes(h: Harness) -> None:
    one = len(batch(1))
    got = h.fetch(TP, 0, max_wait=1000, min_bytes=2 * one + 1)
    h.produce(TP, batch(1))
    h.produce(TP, batch(1))
    assert got == []
    h.produce(TP, batch(1))
    assert len(got) == 1
    assert sum(1 for _ in iter_records(got[0][0][1].records)) == 3


def test_max_bytes_still_returns_one_batch(h: Harness) -> None:
    h.produce(TP, batch(20))
    [[(_, r)]] = h.fetch(TP, 0, max_bytes=10)
    assert sum(1 for _ in iter_records(r.records)) == 20


def test_deleting_a_topic_completes_waiting_fetches_with_an_error(h: Harness) -> None:
    got = h.fetch(TP, 0, max_wait=10_000)
    h.md.delete_topic("t")
    assert len(got) == 1
    assert got[0][0][1].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_shutdown_answers_waiting_requests(h: Harness) -> None:
    got = h.fetch(TP, 0, max_wait=10_000)
    h.rm().shutdown()
    assert len(got) == 1 and got[0][0][1].error is None


def test_list_offsets(h: Harness) -> None:
    h.produce(TP, batch(3, ts=NOW))  # offsets 0-2, ts NOW..NOW+2
    h.produce(TP, batch(2, ts=NOW + 100))  # offsets 3-4
    h.produce(TP, batch(1, ts=NOW + 50))  # offset 5
    rm = h.rm()
    assert rm.list_offset(TP, -2)[:2] == (0, -1)
    assert rm.list_offset(TP, -1)[:2] == (6, -1)
    assert rm.list_offset(TP, -3)[:2] == (4, NOW + 101)
    assert rm.list_offset(TP, NOW + 1)[:2] == (1, NOW + 1)
    assert rm.list_offset(TP, NOW + 3)[:2] == (3, NOW + 100)
    assert rm.list_offset(TP, NOW + 1000) == (-1, -1, -1)


# ------------------------------------------------------------------ idempotent producers


def pbatch(seq: int, n: int = 2, pid: int = 1000, epoch: int = 0) -> bytes:
    return batch(n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_duplicate_batch_returns_original_offset_and_is_not_written(h: Harness) -> None:
    h.produce(TP, pbatch(0))
    h.produce(TP, pbatch(2))
    got = h.produce(TP, pbatch(0))
    assert got[0][TP].error is None and got[0][TP].base_offset == 0
    assert h.rm().partitions[TP].log.log_end_offset == 4


def test_sequence_gap_is_out_of_order(h: Harness) -> None:
    h.produce(TP, pbatch(0))
    got = h.produce(TP, pbatch(5))
    assert got[0][TP].error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert h.rm().partitions[TP].log.log_end_offset == 2


def test_a_transactional_batch_after_one_still_waiting_for_its_partition_is_out_of_order(
    h: Harness,
) -> None:
    """Kafka's verification state: the producer's batch at sequence 0 waits for the
    coordinator to add the partition (and is refused, the coordinator busy); its next
    batch, pipelined behind it, must not be written over the gap."""
    txn = {"producer_id": 1000, "producer_epoch": 1, "transactional": True}
    producers = h.rm().partitions[TP].producers
    producers.start_verification(1000, 1, 0)
    producers.start_verification(1000, 1, 2)
    got = h.produce(TP, batch(2, base_sequence=2, **txn))
    assert got[0][TP].error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    # Retried in order, both are written; the next transaction's wait starts afresh.
    for seq in (0, 2):
        assert h.produce(TP, batch(2, base_sequence=seq, **txn))[0][TP].error is None
    assert producers.verifying == {}
    producers.start_verification(1000, 1, 4)  # in its transaction here: nothing waits
    assert producers.verifying == {}


def test_old_epoch_is_fenced(h: Harness) -> None:
    h.produce(TP, pbatch(0, epoch=1))
    got = h.produce(TP, pbatch(2, epoch=0))
    assert got[0][TP].error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_new_epoch_must_start_at_zero(h: Harness) -> None:
    h.produce(TP, pbatch(0, epoch=0))
    assert h.produce(TP, pbatch(4, epoch=1))[0][TP].error_code == (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )
    assert h.produce(TP, pbatch(0, epoch=1))[0][TP].error is None


def test_producer_state_is_kept_for_describe(h: Harness) -> None:
    h.produce(TP, pbatch(0, n=3, pid=7))
    entry = h.rm().partitions[TP].producers.producers[7]
    assert (entry.epoch, entry.last_seq, entry.last_timestamp) == (0, 2, NOW + 2)


# ------------------------------------------------------------------ replication (two brokers)


@pytest.fixture
def h2() -> Harness:
    harness = Harness(brokers=2)
    harness.md.create_topic("r", assignments={0: [0, 1]})
    return harness


R = TopicPartition("r", 0)


def follow(h: Harness, offset: int) -> FetchResult:
    """Broker 1 fetches from leader 0 as a follower and appends what it got."""
    [[(_, r)]] = h.fetch(R, offset, replica_id=1)
    h.rm(1).partitions[R].append_as_follower(r.batches)
    return r


def test_acks_all_waits_for_the_follower(h2: Harness) -> None:
    got = h2.produce(R, batch(3), acks=-1)
    assert got == []
    leader = h2.rm(0).partitions[R]
    assert leader.high_watermark == 0
    follow(h2, 0)  # copies 0-2; the leader learns of it on the next fetch
    assert got == []
    follow(h2, 3)
    assert len(got) == 1 and got[0][R].error is None
    assert leader.high_watermark == 3
    assert h2.rm(1).partitions[R].log.log_end_offset == 3


def test_acks_all_expires_with_request_timed_out(h2: Harness) -> None:
    got = h2.produce(R, batch(1), acks=-1, timeout=300)
    h2.advance(300)
    assert got[0][R].error_code == ErrorCode.REQUEST_TIMED_OUT


def test_consumers_read_only_below_the_high_watermark(h2: Harness) -> None:
    h2.produce(R, batch(3), acks=1)
    [[(_, r)]] = h2.fetch(R, 0)
    assert r.records == b"" and r.high_watermark == 0
    follow(h2, 0)
    follow(h2, 3)
    [[(_, r)]] = h2.fetch(R, 0)
    assert sum(1 for _ in iter_records(r.records)) == 3


def test_waiting_consumer_fetch_completes_when_hw_moves(h2: Harness) -> None:
    h2.produce(R, batch(2), acks=1)
    got = h2.fetch(R, 0, max_wait=5000)
    assert got == []
    follow(h2, 0)
    follow(h2, 2)
    assert len(got) == 1 and got[0][0][1].high_watermark == 2


def test_not_enough_replicas_when_isr_below_min(h2: Harness) -> None:
    h2.md.configs.set_topic_configs("r", {"min.insync.replicas": "2"})
    info = h2.md.partition("r", 0)
    assert info is not None
    info.isr = [0]
    h2.md.update_partition(info)
    got = h2.produce(R, batch(1), acks=-1)
    assert got[0][R].error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert h2.rm(0).partitions[R].log.log_end_offset == 0
    # acks=1 does not care about the ISR.
    assert h2.produce(R, batch(1), acks=1)[0][R].error is None


def test_produce_to_follower_is_not_leader(h2: Harness) -> None:
    got = h2.produce(R, batch(1), rm=1)
    assert got[0][R].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


# ------------------------------------------------------------------ retention


def test_retention_ms_drops_old_batches_below_the_high_watermark(h: Harness) -> None:
    h.md.configs.set_topic_configs("t", {"retention.ms": "60000"})
    h.produce(TP, batch(2, ts=NOW - 120_000))  # 0-1: too old
    h.produce(TP, batch(2, ts=NOW - 10_000))  # 2-3: kept
    h.produce(TP, batch(2, ts=NOW - 120_000))  # 4-5: old, but after a kept batch
    assert h.rm().enforce_retention() == 1
    log = h.rm().partitions[TP].log
    assert log.log_start_offset == 2 and log.batches[0].base_offset == 2
    assert h.rm().list_offset(TP, -2)[0] == 2
    [[(_, r)]] = h.fetch(TP, 0)
    assert r.error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_retention_bytes_keeps_the_log_near_the_limit(h: Harness) -> None:
    size = len(batch(2))
    h.md.configs.set_topic_configs("t", {"retention.bytes": str(2 * size)})
    for i in range(5):
        h.produce(TP, batch(2, start=2 * i))
    h.rm().enforce_retention()
    log = h.rm().partitions[TP].log
    assert log.size_in_bytes == 2 * size and log.log_start_offset == 6


def test_compacted_topics_are_not_trimmed(h: Harness) -> None:
    h.md.configs.set_topic_configs("t", {"retention.ms": "1", "cleanup.policy": "compact"})
    h.produce(TP, batch(2, ts=NOW - 120_000))
    assert h.rm().enforce_retention() == 0


@pytest.mark.parametrize("interval, most", [(5, 6 * 10), (1000, 30 * 10)])
def test_fetch_purgatory_purge_interval_bounds_what_completed_fetches_hold(
    interval: int, most: int
) -> None:
    """A follower's fetch waits under every partition it follows; once it expires it stays
    on those watcher lists until ``fetch.purgatory.purge.interval.requests`` fetches have
    completed. A small interval bounds them; Kafka's 1000 keeps all 30 of this run."""
    h = Harness(brokers=2, fetch_purgatory_purge_interval_requests=str(interval))
    h.md.create_topic("many", assignments={p: [0, 1] for p in range(10)})
    tps = [TopicPartition("many", p) for p in range(10)]
    purgatory = h.rm(0).fetch_purgatory
    for _ in range(30):
        got: list[Any] = []
        params = FetchParams(replica_id=1, max_wait_ms=100, shared=True)
        h.rm(0).fetch_messages(params, [(tp, FetchInfo(0, 1 << 20)) for tp in tps], got.append)
        assert got == []  # nothing to read: it waits
        h.advance(101)
        assert len(got) == 1  # answered empty at its timeout
    assert purgatory.delayed == 0
    assert purgatory.watched <= most
    if interval == 1000:
        assert purgatory.watched == most  # nothing purged yet


def test_an_answered_fetch_waiting_for_the_purge_lets_go_of_its_request() -> None:
    """What an expired fetch keeps until the purge is only its place on watcher lists: its
    callback (and what it closes over, the request) is free at once."""
    h = Harness(brokers=2)
    h.md.create_topic("many", assignments={p: [0, 1] for p in range(10)})
    tps = [TopicPartition("many", p) for p in range(10)]

    class Answer:
        def __init__(self) -> None:
            self.got: list[Any] = []

        def __call__(self, result: Any) -> None:
            self.got.append(result)

    answer = Answer()
    params = FetchParams(replica_id=1, max_wait_ms=100, shared=True)
    h.rm(0).fetch_messages(params, [(tp, FetchInfo(0, 1 << 20)) for tp in tps], answer)
    gone = weakref.ref(answer)
    h.advance(101)
    assert len(answer.got) == 1
    del answer
    gc.collect()
    assert h.rm(0).fetch_purgatory.watched == len(tps)  # still on every watcher list
    assert gone() is None


def test_a_replica_makes_producer_state_only_for_a_producer_id(h: Harness) -> None:
    """Most replicas never see a producer id: reading the LSO, the aborted ranges or
    expiring idle producers makes no state for them; the first idempotent batch does."""
    h.produce(TP, batch(3))
    p = h.rm().partitions[TP]
    assert p.last_stable_offset == p.high_watermark == 3
    assert p.aborted_transactions(0, 3) == []
    h.rm().enforce_retention()
    assert p._producers is None
    h.produce(TP, pbatch(0))
    assert p._producers is not None and list(p.producers.producers) == [1000]
