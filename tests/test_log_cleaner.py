"""The log cleaner: compaction of a partition's log as Kafka's cleaner does it.

Unit tests run the replica manager on a manual clock and call its cleaner pass directly;
the last ones run brokers on sockets (followers, log directories, the offsets topic).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from broker_helpers import NOW, Harness, WireClient
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.storage.partition import Partition
from kafkagen.runtime.broker.types import OFFSETS_TOPIC, TXN_STATE_TOPIC
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.records import Record, RecordBatch, build_batch, iter_batches
from kafkagen.runtime.topic_partition import TopicPartition
from test_broker_log_dir import (
    commit_offset,
    committed,
    create_topic,
    init_pid,
    segment_files,
    wait_coordinators,
    wait_for,
)

TP = TopicPartition("c", 0)
#: Segments that roll on time: records written by `put` are STEP ms apart, so two
#: batches make a segment (segment.bytes, whose least value Kafka 4 sets at 1 MiB, stays
#: at its default). And a cleaner that runs on any dirt.
STEP = 600
COMPACTED = {
    "cleanup.policy": "compact",
    "segment.ms": "1000",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "1000",
}

Row = tuple[int, bytes | None, bytes | None]


def harness(**topic_configs: str) -> Harness:
    h = Harness()
    h.md.create_topic("c", 1, 1, configs={**COMPACTED, **topic_configs})
    return h


def put(
    h: Harness, key: bytes | None, value: bytes | None, ts: int | None = None, **batch: Any
) -> int:
    """Write one record in a batch of its own, by default STEP ms after the one before."""
    if ts is None:
        ts = NOW + STEP * partition(h).log.log_end_offset
    [got] = h.produce(TP, build_batch([Record(-1, ts, key, value)], **batch))
    assert got[TP].error is None, got[TP]
    return got[TP].base_offset


def partition(h: Harness) -> Partition:
    return h.rm().partitions[TP]


def rows(h: Harness) -> list[Row]:
    return [
        (r.offset, r.key, r.value)
        for b in partition(h).log.batches
        for r in RecordBatch(memoryview(b.data))
    ]


def batches(h: Harness) -> list[RecordBatch]:
    return [next(iter_batches(b.data)) for b in partition(h).log.batches]


def test_the_latest_record_per_key_stays_at_its_offset_and_the_active_segment_is_untouched() -> (
    None
):
    h = harness()
    for i in range(9):
        put(h, b"k%d" % (i % 3), b"v%d" % i)
    put(h, b"k0", b"last")  # offset 9, alone in the active segment with 8
    log = partition(h).log
    assert [s.base_offset for s in log.segments] == [0, 2, 4, 6, 8]
    assert h.rm().clean_logs() == 1
    # Below the active segment (8) only the latest of each key there is left, at its
    # offset; 8 and 9 are in the active segment and stay whatever their keys.
    assert rows(h) == [
        (5, b"k2", b"v5"),
        (6, b"k0", b"v6"),
        (7, b"k1", b"v7"),
        (8, b"k2", b"v8"),
        (9, b"k0", b"last"),
    ]
    assert (log.log_start_offset, log.log_end_offset, log.first_dirty_offset) == (0, 10, 8)
    assert partition(h).high_watermark == 10
    # Nothing new is dirty: the next pass does nothing.
    assert h.rm().clean_logs() == 0


def test_a_rewritten_batch_keeps_its_offsets_producer_and_sequence() -> None:
    h = harness()
    records = [Record(-1, NOW + i, b"k%d" % (i % 2), b"v%d" % i) for i in range(4)]
    data = build_batch(records, producer_id=7, producer_epoch=2, base_sequence=0)
    h.produce(TP, data)
    put(h, b"k1", b"newer", ts=NOW + 10, producer_id=7, producer_epoch=2, base_sequence=4)
    put(h, b"x", b"y", ts=NOW + 5000)  # rolls: the first two batches are cleanable
    assert h.rm().clean_logs() == 1
    first = batches(h)[0]
    assert (first.base_offset, first.last_offset) == (0, 3)
    assert (first.producer_id, first.producer_epoch, first.base_sequence) == (7, 2, 0)
    assert [(r.offset, r.key, r.value, r.timestamp) for r in first] == [(2, b"k0", b"v2", NOW + 2)]
    assert first.is_valid()


def test_tombstones_go_only_in_a_pass_after_their_delete_horizon() -> None:
    h = harness()
    put(h, b"a", b"1")
    put(h, b"a", None)
    put(h, b"b", b"1")
    put(h, b"b", b"2")
    put(h, b"c", b"1")
    assert h.rm().clean_logs() == 1
    # First pass: the tombstone stays, its batch stamped with now + delete.retention.ms.
    assert (1, b"a", None) in rows(h)
    [stamped] = [b for b in batches(h) if b.base_offset == 1]
    assert stamped.has_delete_horizon and stamped.base_timestamp == NOW + 1000
    assert [r.timestamp for r in stamped] == [NOW + STEP]  # record timestamps stay
    # A pass before the horizon keeps it; one after drops it. Each needs new dirt.
    put(h, b"d", b"1")
    put(h, b"d", b"2")
    h.wall += 999
    assert h.rm().clean_logs() == 1 and (1, b"a", None) in rows(h)
    put(h, b"e", b"1")
    put(h, b"e", b"2")
    h.wall += 1
    assert h.rm().clean_logs() == 1
    assert not [r for r in rows(h) if r[1] == b"a"]


def _marker(h: Harness, pid: int, epoch: int, commit: bool) -> None:
    got: list[Any] = []
    h.rm().append_markers({TP: (pid, epoch, commit, 0)}, 1000, got.append)
    assert got and got[0][TP].error is None


def _dirt(h: Harness, key: bytes) -> None:
    """Enough new records to roll the active segment, so that a pass has work."""
    for i in range(4):
        put(h, key, b"%d" % i)


def test_aborted_data_goes_first_and_its_marker_only_once_it_is_safe() -> None:
    h = harness()
    # Markers under a bumped epoch, as transactions v2 write them: the marker is then
    # its producer's last write.
    txn = {"producer_id": 5, "producer_epoch": 0, "transactional": True}
    put(h, b"a", b"aborted", base_sequence=0, **txn)
    put(h, b"b", b"aborted", base_sequence=1, **txn)
    _marker(h, 5, 1, commit=False)  # offset 2
    put(h, b"c", b"committed", producer_id=6, producer_epoch=0, base_sequence=0, transactional=True)
    _marker(h, 6, 1, commit=True)  # offset 4
    _dirt(h, b"f")
    p = partition(h)
    assert [a.producer_id for a in p.producers.aborted] == [5]
    assert h.rm().clean_logs() == 1
    # The aborted batches went; the ABORT marker stays (this pass saw its data), and so
    # does the COMMIT marker with its transaction's batch.
    assert [b.base_offset for b in p.log.batches][:3] == [2, 3, 4]
    assert [a.producer_id for a in p.producers.aborted] == [5]
    # Next pass: nothing of the aborted transaction is left: its marker is stamped with a
    # delete horizon, and read_committed fetches no longer need the transaction.
    _dirt(h, b"g")
    assert h.rm().clean_logs() == 1
    abort = batches(h)[0]
    assert abort.base_offset == 2 and abort.is_control and abort.has_delete_horizon
    assert abort.record_count == 1 and p.producers.aborted == []
    # After the horizon it goes, but as its producer's last write (Kafka keeps the
    # producer's state) an empty header stays while the producer is alive.
    h.wall += 1000
    _dirt(h, b"h")
    assert h.rm().clean_logs() == 1
    abort = batches(h)[0]
    assert (abort.base_offset, abort.record_count, abort.producer_id) == (2, 0, 5)
    p.producers.producers.pop(5)  # the producer expired
    _dirt(h, b"i")
    assert h.rm().clean_logs() == 1
    assert batches(h)[0].base_offset == 3


def test_under_one_epoch_the_last_aborted_batch_stays_empty_and_holds_its_marker() -> None:
    h = harness()
    txn = {"producer_id": 5, "producer_epoch": 0, "transactional": True}
    put(h, b"a", b"aborted", base_sequence=0, **txn)
    put(h, b"b", b"aborted", base_sequence=1, **txn)
    _marker(h, 5, 0, commit=False)
    _dirt(h, b"f")
    for _ in range(2):
        assert h.rm().clean_logs() == 1
        first, marker = batches(h)[:2]
        # The producer's last data batch (its sequence state) stays without records; a
        # pass still sees it, so the marker stays too.
        assert (first.base_offset, first.record_count, first.base_sequence) == (1, 0, 1)
        assert marker.is_control and marker.record_count == 1
        _dirt(h, b"g")


def test_an_idempotent_producers_last_batch_stays_as_an_empty_header() -> None:
    h = harness()
    put(h, b"k", b"old", producer_id=9, producer_epoch=1, base_sequence=0)
    for i in range(5):
        put(h, b"k", b"%d" % i)
    assert h.rm().clean_logs() == 1
    first = batches(h)[0]
    assert (first.base_offset, first.record_count) == (0, 0)
    assert (first.producer_id, first.producer_epoch, first.base_sequence) == (9, 1, 0)
    assert first.max_timestamp == NOW and first.is_valid()


def test_min_compaction_lag_and_dirty_ratio_hold_cleaning_back_max_lag_forces_it() -> None:
    h = harness(**{"min.compaction.lag.ms": "60000"})
    for i in range(6):
        put(h, b"k", b"%d" % i)
    assert h.rm().clean_logs() == 0  # every record is younger than a minute
    h.wall += 70_000  # a minute after the last record
    assert h.rm().clean_logs() == 1
    assert [r[0] for r in rows(h)] == [3, 4, 5]

    h = harness(**{"min.cleanable.dirty.ratio": "0.9"})
    for i in range(6):
        put(h, b"k", b"%d" % i)
    assert h.rm().clean_logs() == 1  # nothing was clean: the dirty ratio was 1
    for i in range(6, 8):
        put(h, b"k", b"%d" % i)
    assert h.rm().clean_logs() == 0  # 144 dirty bytes of 216: 0.67, below 0.9
    h.md.configs.set_topic_configs(
        "c", {**COMPACTED, "min.cleanable.dirty.ratio": "0.9", "max.compaction.lag.ms": "1000"}
    )
    h.wall += 5000  # over a second after the first dirty batch
    assert h.rm().clean_logs() == 1
    assert [r[0] for r in rows(h)] == [5, 6, 7]


def test_a_record_without_a_key_is_refused_on_a_compacted_topic() -> None:
    h = harness()
    [got] = h.produce(TP, build_batch([Record(-1, NOW, b"k", b"v"), Record(-1, NOW, None, b"v")]))
    r = got[TP]
    assert r.error_code == ErrorCode.INVALID_RECORD
    assert r.record_errors == [
        (1, "Compacted topic cannot accept message without key in topic partition c-0.")
    ]
    assert partition(h).log.log_end_offset == 0


def test_delete_records_is_refused_on_a_compact_only_topic() -> None:
    from kafkagen.runtime.errors import PolicyViolationError

    h = harness()
    put(h, b"k", b"v")
    with pytest.raises(PolicyViolationError) as refused:
        h.rm().delete_records(TP, 1)
    assert refused.value.message == (
        "Records of partition c-0 can not be deleted due to the configured policy"
    )
    h = harness(**{"cleanup.policy": "compact,delete"})
    put(h, b"k", b"v")
    assert h.rm().delete_records(TP, 1) == 1


def test_compact_delete_also_applies_retention_and_delete_alone_is_not_cleaned() -> None:
    h = harness(**{"cleanup.policy": "compact,delete", "retention.ms": "1000"})
    for i in range(4):
        put(h, b"k%d" % i, b"v", ts=NOW - 5000)
    put(h, b"new", b"v")
    h.rm().enforce_retention()
    assert partition(h).log.log_start_offset == 4

    h = Harness()
    h.md.create_topic("c", 1, 1, configs={**COMPACTED, "cleanup.policy": "delete"})
    for i in range(6):
        put(h, b"k", b"%d" % i)
    assert h.rm().clean_logs() == 0 and len(rows(h)) == 6


# -- brokers on sockets --------------------------------------------------------------


def _replica(c: BackgroundCluster, node: int, tp: TopicPartition) -> Partition:
    assert c.cluster is not None
    return c.cluster.brokers[node].replica_manager.partitions[tp]


def test_every_replica_cleans_on_its_own_and_ends_with_the_same_records() -> None:
    configs = {"log.cleaner.backoff.ms": "50"}
    with BackgroundCluster(3, configs=configs) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic("c", 1, 3, configs=COMPACTED))
        leader = c.call(lambda: md.topics["c"].partitions[0].leader)
        with WireClient(c.bootstrap.split(",")[leader]) as w:
            for i in range(30):
                data = build_batch([Record(-1, NOW + STEP * i, b"k%d" % (i % 4), b"v%d" % i)])
                assert _produce(w, data) == 0

        def logs() -> list[list[Row]]:
            return [
                [
                    (r.offset, r.key, r.value)
                    for b in _replica(c, n, TP).log.batches
                    for r in RecordBatch(memoryview(b.data))
                ]
                for n in range(3)
            ]

        def converged() -> bool:
            got = c.call(logs)
            return got[0] == got[1] == got[2] and len(got[0]) < 30

        assert wait_for(converged)
        # Each broker's own cleaner did it: every replica's first dirty offset moved.
        assert all(
            c.call(lambda n=n: _replica(c, n, TP).log.first_dirty_offset) > 0 for n in range(3)
        )


def _produce(w: WireClient, data: bytes) -> int:
    from kafkagen.generated import message_type

    Req: Any = message_type(0, "request")
    r = w.call(
        0,
        9,
        Req(
            acks=-1,
            timeout_ms=5000,
            topic_data=[
                Req.TopicProduceData(
                    name="c",
                    partition_data=[Req.PartitionProduceData(index=0, records=data)],
                )
            ],
        ),
    )
    return int(r.responses[0].partition_responses[0].error_code)


def _written(c: BackgroundCluster, keys: list[bytes]) -> None:
    """Create the compacted topic and write one record a batch, ``keys`` in order."""
    assert c.cluster is not None
    md = c.cluster.metadata
    c.call(lambda: md.create_topic("c", 1, 1, configs=COMPACTED))
    with WireClient(c.bootstrap) as w:
        for i, key in enumerate(keys):
            assert _produce(w, build_batch([Record(-1, NOW + STEP * i, key, b"%d" % i)])) == 0


def test_cleaned_segments_replace_the_old_files_and_survive_a_restart(tmp_path: Path) -> None:
    configs = {"log.dirs": str(tmp_path), "log.cleaner.enable": "false"}
    with BackgroundCluster(configs=configs) as c:
        assert c.cluster is not None
        _written(c, [b"k%d" % (i % 3) for i in range(12)])
        before = sum(f.stat().st_size for f in segment_files(tmp_path, 0, "c", 0))
        rm = c.cluster.brokers[0].replica_manager
        assert c.call(rm.clean_logs) == 1
        p = _replica(c, 0, TP)
        in_memory = c.call(lambda: b"".join(b.data for b in p.log.batches))
        files = segment_files(tmp_path, 0, "c", 0)
        assert sum(f.stat().st_size for f in files) < before
        assert b"".join(f.read_bytes() for f in files) == in_memory
        assert not list((tmp_path / "broker-0" / "c-0").glob("*.swap"))
        kept = c.call(lambda: [(b.base_offset, b.data) for b in p.log.batches])
        assert kept[0][0] > 0  # the first batches went; the log still starts at 0
        dirty = c.call(lambda: p.log.first_dirty_offset)
        c.call(lambda: c.cluster.brokers[0].replica_manager.storage.write_checkpoints())  # type: ignore[union-attr]
    with BackgroundCluster(configs=configs) as c:
        p = _replica(c, 0, TP)
        assert c.call(lambda: [(b.base_offset, b.data) for b in p.log.batches]) == kept
        assert c.call(lambda: p.log.first_dirty_offset) == dirty
        assert c.call(lambda: (p.log.log_start_offset, p.log.log_end_offset)) == (0, 12)


def test_a_cleaning_cut_short_leaves_the_old_segments_or_the_new_one(tmp_path: Path) -> None:
    configs = {"log.dirs": str(tmp_path), "log.cleaner.enable": "false"}
    with BackgroundCluster(configs=configs) as c:
        _written(c, [b"k"] * 8)
        original = c.call(lambda: [b.data for b in _replica(c, 0, TP).log.batches])
    directory = tmp_path / "broker-0" / "c-0"
    files = sorted(directory.glob("*.log"))
    # A crash while writing the cleaned file: it is dropped, the old segments stay.
    (directory / (files[0].name[:-4] + ".cleaned")).write_bytes(b"half")
    with BackgroundCluster(configs=configs) as c:
        assert c.call(lambda: [b.data for b in _replica(c, 0, TP).log.batches]) == original
    assert not list(directory.glob("*.cleaned"))
    # A crash after the swap file was complete: the swap replaces the segments it names.
    survivor = next(iter_batches(files[1].read_bytes()))
    swap = directory / f"{0:020d}.{int(files[2].name[:20]):020d}.swap"
    swap.write_bytes(bytes(survivor.buffer))
    with BackgroundCluster(configs=configs) as c:
        got = c.call(lambda: [b.base_offset for b in _replica(c, 0, TP).log.batches])
    assert got[0] == survivor.base_offset and got[1:] == list(range(4, 8))
    assert not list(directory.glob("*.swap"))


def _one_small_partition(log_dir: Path, prefix: str) -> dict[str, str]:
    """Configs giving an internal topic one partition of 4 kB segments, cleaned often."""
    return {
        "log.dirs": str(log_dir),
        f"{prefix}.num.partitions": "1",
        f"{prefix}.segment.bytes": "4096",
        "log.cleaner.backoff.ms": "20",
    }


def _log_size(log_dir: Path, topic: str) -> int:
    return sum(f.stat().st_size for f in segment_files(log_dir, 0, topic, 0))


def test_the_offsets_topic_stays_bounded_and_its_coordinator_reloads_the_latest_commits(
    tmp_path: Path,
) -> None:
    configs = _one_small_partition(tmp_path, "offsets.topic")
    sizes = []
    with BackgroundCluster(configs=configs) as c:
        with WireClient(c.bootstrap) as w:
            create_topic(w, 2)
            wait_coordinators(w, "g", [])
            for i in range(1500):
                commit_offset(w, "g", i % 2, i)
                if i % 100 == 99:
                    sizes.append(_log_size(tmp_path, OFFSETS_TOPIC))
            assert committed(w, "g", 0) == 1498 and committed(w, "g", 1) == 1499
    # 1500 commits of ~100 bytes each: without compaction 150 kB; with it a few segments.
    assert max(sizes) < 5 * 4096, sizes
    with BackgroundCluster(configs=configs) as c:
        with WireClient(c.bootstrap) as w:
            assert wait_for(lambda: committed(w, "g", 0) == 1498)
            assert committed(w, "g", 1) == 1499


def test_the_transaction_log_stays_bounded_and_its_coordinator_reloads_the_latest_epochs(
    tmp_path: Path,
) -> None:
    configs = _one_small_partition(tmp_path, "transaction.state.log")
    sizes = []
    with BackgroundCluster(configs=configs) as c:
        with WireClient(c.bootstrap) as w:
            wait_coordinators(w, "g", ["tx-0", "tx-1", "tx-2"])
            # Each InitProducerId of a known transactional id bumps its epoch: a record.
            last = {}
            for i in range(600):
                tid = f"tx-{i % 3}"
                last[tid] = init_pid(w, tid)
                if i % 50 == 49:
                    sizes.append(_log_size(tmp_path, TXN_STATE_TOPIC))
    assert max(sizes) < 5 * 4096, sizes
    with BackgroundCluster(configs=configs) as c:
        with WireClient(c.bootstrap) as w:
            wait_coordinators(w, "g", list(last))
            for tid, (pid, epoch) in last.items():
                assert init_pid(w, tid) == (pid, epoch + 1)


def test_a_fetch_from_inside_a_gap_starts_at_the_next_batch() -> None:
    h = harness()
    for i in range(6):
        put(h, b"k%d" % (i // 5), b"%d" % i)
    assert h.rm().clean_logs() == 1
    [[(_, result)]] = h.fetch(TP, 1)
    assert [r.offset for b in iter_batches(result.records) for r in b] == [3, 4, 5]
