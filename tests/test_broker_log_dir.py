"""Durable broker state: ``kafkagen serve --log-dir`` keeps topics, records, committed offsets,
producer state and transactions across restarts (SIGTERM and SIGKILL), truncates a torn tail
on start; and a new leader of an offsets partition replays transactional offset commits."""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from broker_helpers import BrokerProcess, WireClient, req, txn_commit_offset
from kafkagen.generated import message_type
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.security.acls import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermission,
    PatternType,
    ResourceType,
)
from kafkagen.runtime.broker.storage import log_store, log_writer
from kafkagen.runtime.broker.storage.log_store import PartitionFiles
from kafkagen.runtime.broker.storage.partition import Partition
from kafkagen.runtime.broker.storage.replica_manager import FetchInfo, FetchParams
from kafkagen.runtime.broker.types import OFFSETS_TOPIC
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.records import Record, build_batch, iter_batches
from kafkagen.runtime.topic_partition import TopicPartition

TOPIC = "t"
T = TypeVar("T")


def wait_for(cond: Callable[[], T], timeout: float = 10.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.02)


# -- request helpers ------------------------------------------------------------------------


def find_coordinator(w: WireClient, key: str, key_type: int) -> int:
    deadline = time.monotonic() + 10
    while True:
        r = w.call(10, 3, req(10, key=key, key_type=key_type))
        if r.error_code == 0:
            return int(r.node_id)
        assert time.monotonic() < deadline, f"no coordinator for {key!r}: {r}"
        time.sleep(0.02)


def init_pid(w: WireClient, tid: str | None, timeout: int = 60000) -> tuple[int, int]:
    r: Any = None
    for _ in range(200):
        r = w.call(22, 4, req(22, transactional_id=tid, transaction_timeout_ms=timeout))
        if r.error_code not in (
            ErrorCode.CONCURRENT_TRANSACTIONS,
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
            ErrorCode.NOT_COORDINATOR,
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ):
            break
        time.sleep(0.05)
    assert r.error_code == 0, r
    return int(r.producer_id), int(r.producer_epoch)


def add_partitions(w: WireClient, tid: str, pid: int, epoch: int, partitions: list[int]) -> None:
    Req: Any = message_type(24, "request")
    r = w.call(
        24,
        3,
        Req(
            v3_and_below_transactional_id=tid,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[Req.AddPartitionsToTxnTopic(name=TOPIC, partitions=partitions)],
        ),
    )
    codes = [
        p.partition_error_code
        for t in r.results_by_topic_v3_and_below
        for p in t.results_by_partition
    ]
    assert codes == [0] * len(partitions), r


def add_offsets(w: WireClient, tid: str, pid: int, epoch: int, group: str) -> None:
    r = w.call(
        25, 3, req(25, transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group)
    )
    assert r.error_code == 0, r


def end_txn(w: WireClient, tid: str, pid: int, epoch: int, commit: bool) -> None:
    r = w.call(
        26,
        3,
        req(26, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit),
    )
    assert r.error_code == 0, r


def txn_state(w: WireClient, tid: str) -> str:
    [s] = w.call(65, 0, req(65, transactional_ids=[tid])).transaction_states
    return str(s.transaction_state)


def commit_offset(w: WireClient, group: str, partition: int, offset: int) -> None:
    Req: Any = message_type(8, "request")
    r = w.call(
        8,
        8,
        Req(
            group_id=group,
            topics=[
                Req.OffsetCommitRequestTopic(
                    name=TOPIC,
                    partitions=[
                        Req.OffsetCommitRequestPartition(
                            partition_index=partition, committed_offset=offset
                        )
                    ],
                )
            ],
        ),
    )
    assert r.topics[0].partitions[0].error_code == 0, r


def committed(w: WireClient, group: str, partition: int = 0, stable: bool = False) -> int:
    """The group's committed offset (-1: none), or the partition's error code negated."""
    Req: Any = message_type(9, "request")
    r = w.call(
        9,
        7,
        Req(
            group_id=group,
            topics=[Req.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[partition])],
            require_stable=stable,
        ),
    )
    assert r.error_code == 0, r
    p = r.topics[0].partitions[0]
    return -int(p.error_code) if p.error_code else int(p.committed_offset)


def produce(
    w: WireClient, partition: int, data: bytes, tid: str | None = None, topic: str = TOPIC
) -> Any:
    Req: Any = message_type(0, "request")
    r = w.call(
        0,
        9,
        Req(
            transactional_id=tid,
            acks=-1,
            timeout_ms=5000,
            topic_data=[
                Req.TopicProduceData(
                    name=topic,
                    partition_data=[Req.PartitionProduceData(index=partition, records=data)],
                )
            ],
        ),
    )
    return r.responses[0].partition_responses[0]


def fetch(w: WireClient, partition: int, offset: int, read_committed: bool = False) -> Any:
    Req: Any = message_type(1, "request")
    r = w.call(
        1,
        11,
        Req(
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 24,
            isolation_level=1 if read_committed else 0,
            session_id=0,
            session_epoch=-1,
            topics=[
                Req.FetchTopic(
                    topic=TOPIC,
                    partitions=[
                        Req.FetchPartition(
                            partition=partition,
                            fetch_offset=offset,
                            partition_max_bytes=1 << 24,
                        )
                    ],
                )
            ],
            forgotten_topics_data=[],
            rack_id="",
        ),
    )
    return r.responses[0].partitions[0]


def records_of(
    data: bytes | None, skip_aborted: list[tuple[int, int]] | None = None
) -> list[tuple[int, int, bytes | None]]:
    """(offset, timestamp, value) of every data record, without aborted transactions' ones."""
    aborted = skip_aborted or []
    out: list[tuple[int, int, bytes | None]] = []
    for b in iter_batches(data or b""):
        if b.is_control:
            continue
        if b.is_transactional and any(
            pid == b.producer_id and first <= b.base_offset for pid, first in aborted
        ):
            continue
        out.extend((r.offset, r.timestamp, r.value) for r in b)
    return out


def batch(
    values: list[bytes],
    *,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    transactional: bool = False,
    timestamp: int | None = None,
) -> bytes:
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    return build_batch(
        [Record(-1, ts + i, None, v) for i, v in enumerate(values)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=transactional,
    )


def create_topic(w: WireClient, partitions: int, rf: int = 1) -> None:
    Req: Any = message_type(19, "request")
    r = w.call(
        19,
        5,
        Req(
            topics=[
                Req.CreatableTopic(name=TOPIC, num_partitions=partitions, replication_factor=rf)
            ],
            timeout_ms=5000,
        ),
    )
    assert r.topics[0].error_code == 0, r


# -- item 1: a new leader of an offsets partition replays transactional offset commits -------


def test_new_offsets_leader_replays_transactional_offset_commits() -> None:
    configs = {
        "offsets.topic.num.partitions": "1",
        "offsets.topic.replication.factor": "3",
        "transaction.state.log.num.partitions": "1",
    }
    with BackgroundCluster(3, configs=configs) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic(TOPIC, 1, 3))
        with WireClient(c.bootstrap) as w:
            find_coordinator(w, "g", 0)
            txn_node = find_coordinator(w, "x", 1)
        offsets = md.partition(OFFSETS_TOPIC, 0)
        assert offsets is not None and len(offsets.replicas) == 3

        def client(node: int) -> WireClient:
            b = md.brokers[node]
            return WireClient(f"{b.host}:{b.port}")

        old = offsets.leader
        with client(txn_node) as tc, client(old) as gc:
            groups = {"committed": 42, "aborted": 7, "open": 9}
            pids = {}
            for name, offset in groups.items():
                tid = f"tid-{name}"
                pid, epoch = init_pid(tc, tid)
                pids[name] = (tid, pid, epoch)
                add_offsets(tc, tid, pid, epoch, f"g-{name}")
                assert txn_commit_offset(gc, tid, f"g-{name}", pid, epoch, offset) == 0
            # The open transaction's group also has a plain commit from before.
            commit_offset(gc, "g-open", 0, 5)
            for name, commit in (("committed", True), ("aborted", False)):
                tid, pid, epoch = pids[name]
                end_txn(tc, tid, pid, epoch, commit)
                want = "CompleteCommit" if commit else "CompleteAbort"
                assert wait_for(functools.partial(has_state, tc, tid, want))
            before = {g: committed(gc, f"g-{g}") for g in groups}
            before_stable = committed(gc, "g-open", stable=True)
        assert before == {"committed": 42, "aborted": -1, "open": 5}
        assert before_stable == -ErrorCode.UNSTABLE_OFFSET_COMMIT

        new = next(n for n in offsets.isr if n != old)
        c.call(lambda: md.move_leader(OFFSETS_TOPIC, 0, new))
        assert wait_for(lambda: find_coordinator_on(c, new))
        with client(new) as gc:
            after = {g: committed(gc, f"g-{g}") for g in groups}
            assert after == before
            assert committed(gc, "g-open", stable=True) == -ErrorCode.UNSTABLE_OFFSET_COMMIT
            assert committed(gc, "g-committed", stable=True) == 42
        # The old leader keeps nothing pending for a partition it no longer leads.
        assert (
            c.call(
                lambda: c.cluster.brokers[old].group_coordinator.offsets.pending if c.cluster else 0
            )
            == {}
        )
        # The open transaction commits now: its marker reaches the new leader.
        with client(txn_node) as tc:
            tid, pid, epoch = pids["open"]
            end_txn(tc, tid, pid, epoch, True)
            assert wait_for(lambda: txn_state(tc, tid) == "CompleteCommit")
        with client(new) as gc:
            assert wait_for(lambda: committed(gc, "g-open", stable=True) == 9)
            assert committed(gc, "g-aborted", stable=True) == -1


def has_state(w: WireClient, tid: str, state: str) -> bool:
    return txn_state(w, tid) == state


def find_coordinator_on(c: BackgroundCluster, node: int) -> bool:
    assert c.cluster is not None
    b = c.cluster.brokers[node]
    return bool(c.call(lambda: 0 in b.group_coordinator.owned))


# -- --log-dir: restarts ------------------------------------------------------------------------

LOG_DIR_CONFIGS = (
    "offsets.topic.num.partitions=2",
    "transaction.state.log.num.partitions=2",
)
#: Fixed create times, so that the timestamps read back are known exactly.
TS = 1_700_000_000_000


def serve(log_dir: Path, brokers: int = 1) -> BrokerProcess:
    return BrokerProcess(*LOG_DIR_CONFIGS, f"log.dirs={log_dir}", brokers=brokers)


def kill(broker: BrokerProcess, sig: signal.Signals) -> None:
    """End the broker with ``sig`` and wait for it (SIGKILL: no chance to flush anything)."""
    broker.proc.send_signal(sig)
    broker.proc.wait(15)
    broker.stop()


def segment_files(log_dir: Path, broker: int, topic: str, partition: int) -> list[Path]:
    return sorted((log_dir / f"broker-{broker}" / f"{topic}-{partition}").glob("*.log"))


def wait_coordinators(w: WireClient, group: str, tids: list[str]) -> None:
    find_coordinator(w, group, 0)
    for tid in tids:
        find_coordinator(w, tid, 1)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_restart_keeps_records_offsets_producers_and_transactions(
    tmp_path: Path, sig: signal.Signals
) -> None:
    with serve(tmp_path) as broker, WireClient(broker.bootstrap) as w:
        create_topic(w, 2)
        wait_coordinators(w, "g", ["tx-commit", "tx-abort", "tx-open"])
        # Idempotent producer on partition 0: sequences 0-2 and 3-4.
        pid, epoch = init_pid(w, None)
        first = produce(w, 0, batch([b"a", b"b", b"c"], pid=pid, epoch=epoch, seq=0, timestamp=TS))
        second = produce(w, 0, batch([b"d", b"e"], pid=pid, epoch=epoch, seq=3, timestamp=TS + 9))
        assert (first.error_code, first.base_offset) == (0, 0)
        assert (second.error_code, second.base_offset) == (0, 3)
        # A committed and an aborted transaction on partition 1; the committed one also
        # commits an offset for group g-txn.
        txns = {}
        for tid, commit, values in (
            ("tx-commit", True, [b"kept-1", b"kept-2"]),
            ("tx-abort", False, [b"gone"]),
        ):
            tpid, tepoch = init_pid(w, tid)
            txns[tid] = (tpid, tepoch)
            add_partitions(w, tid, tpid, tepoch, [1])
            data = batch(values, pid=tpid, epoch=tepoch, seq=0, transactional=True, timestamp=TS)
            assert produce(w, 1, data, tid).error_code == 0
            if commit:
                add_offsets(w, tid, tpid, tepoch, "g-txn")
                assert txn_commit_offset(w, tid, "g-txn", tpid, tepoch, 3) == 0
            end_txn(w, tid, tpid, tepoch, commit)
            want = "CompleteCommit" if commit else "CompleteAbort"
            assert wait_for(functools.partial(has_state, w, tid, want))
        # A transaction left open: its offset commit must stay pending across the restart.
        opid, oepoch = init_pid(w, "tx-open")
        add_offsets(w, "tx-open", opid, oepoch, "g-open")
        assert txn_commit_offset(w, "tx-open", "g-open", opid, oepoch, 8) == 0
        commit_offset(w, "g", 0, 4)
        before0 = fetch(w, 0, 0)
        before1 = fetch(w, 1, 0, read_committed=True)
        assert before1.high_watermark == before1.last_stable_offset == 5
        kill(broker, sig)

    with serve(tmp_path) as broker, WireClient(broker.bootstrap) as w:
        wait_coordinators(w, "g", ["tx-commit", "tx-abort", "tx-open"])
        after0 = fetch(w, 0, 0)
        after1 = fetch(w, 1, 0, read_committed=True)
        assert after0.error_code == after1.error_code == 0
        # Every record, its offset and timestamp; the batches byte for byte.
        assert (
            records_of(after0.records)
            == records_of(before0.records)
            == [
                (0, TS, b"a"),
                (1, TS + 1, b"b"),
                (2, TS + 2, b"c"),
                (3, TS + 9, b"d"),
                (4, TS + 10, b"e"),
            ]
        )
        assert bytes(after0.records) == bytes(before0.records)
        assert bytes(after1.records) == bytes(before1.records)
        assert after0.high_watermark == 5
        aborted = [(a.producer_id, a.first_offset) for a in after1.aborted_transactions]
        assert aborted == [(txns["tx-abort"][0], 3)]
        assert [v for _, _, v in records_of(after1.records, aborted)] == [b"kept-1", b"kept-2"]
        assert (after1.high_watermark, after1.last_stable_offset) == (5, 5)
        # Committed offsets, plain and transactional.
        assert committed(w, "g") == 4
        assert committed(w, "g-txn", stable=True) == 3
        assert committed(w, "g-open") == -1
        assert committed(w, "g-open", stable=True) == -ErrorCode.UNSTABLE_OFFSET_COMMIT
        assert txn_state(w, "tx-open") == "Ongoing"
        end_txn(w, "tx-open", opid, oepoch, True)
        assert wait_for(functools.partial(has_state, w, "tx-open", "CompleteCommit"))
        assert wait_for(lambda: committed(w, "g-open", stable=True) == 8)
        # The producer's sequences: a retried batch is still a duplicate, the next one
        # follows, a gap is refused.
        again = produce(w, 0, batch([b"d", b"e"], pid=pid, epoch=epoch, seq=3, timestamp=TS + 9))
        assert (again.error_code, again.base_offset) == (0, 3)
        assert fetch(w, 0, 0).high_watermark == 5
        gap = produce(w, 0, batch([b"x"], pid=pid, epoch=epoch, seq=9))
        assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        nxt = produce(w, 0, batch([b"f"], pid=pid, epoch=epoch, seq=5))
        assert (nxt.error_code, nxt.base_offset) == (0, 5)
        # Transactional ids keep their producer id and move on to the next epoch; new
        # producer ids never repeat an old one.
        assert txn_state(w, "tx-commit") == "CompleteCommit"
        tpid, tepoch = init_pid(w, "tx-commit")
        assert (tpid, tepoch) == (txns["tx-commit"][0], txns["tx-commit"][1] + 1)
        new_pid, _ = init_pid(w, None)
        assert new_pid not in (pid, *[p for p, _ in txns.values()])
        assert broker.alive()


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["half-batch", "garbage", "flipped-byte"])
def test_a_torn_or_corrupt_tail_is_cut_on_start(tmp_path: Path, damage: str) -> None:
    with serve(tmp_path) as broker, WireClient(broker.bootstrap) as w:
        create_topic(w, 1)
        for i in range(3):
            r = produce(w, 0, batch([b"v%d" % i, b"w%d" % i], timestamp=TS + i))
            assert (r.error_code, r.base_offset) == (0, 2 * i)
        before = fetch(w, 0, 0)
        kill(broker, signal.SIGKILL)
    [segment] = segment_files(tmp_path, 0, TOPIC, 0)
    good = segment.read_bytes()
    last = list(iter_batches(good))[-1]
    last_size = len(last.buffer)
    if damage == "half-batch":
        with open(segment, "ab") as f:
            f.write(bytes(last.buffer)[: last_size // 2])
        cut, kept = last_size // 2, 6
    elif damage == "garbage":
        with open(segment, "ab") as f:
            f.write(b"\x00\x01garbage" * 20)
        cut, kept = 180, 6
    else:
        data = bytearray(good)
        data[-3] ^= 0xFF  # inside the last batch's records: its CRC no longer matches
        segment.write_bytes(bytes(data))
        cut, kept = last_size, 4

    with serve(tmp_path) as broker, WireClient(broker.bootstrap) as w:
        got = fetch(w, 0, 0)
        assert got.error_code == 0
        assert got.high_watermark == kept
        assert records_of(got.records) == records_of(before.records)[:kept]
        r = produce(w, 0, batch([b"after"], timestamp=TS + 50))
        assert (r.error_code, r.base_offset) == (0, kept)
        log = broker.stderr_text()
        assert re.search(rf"{TOPIC}-0: cut {cut} bytes", log), log
    assert segment.stat().st_size == len(good) - (cut if damage == "flipped-byte" else 0) + len(
        build_batch([Record(-1, TS + 50, None, b"after")])
    )


# -- --log-dir: what reaches the disk ------------------------------------------------------------


def _replica(c: BackgroundCluster, node: int, topic: str, index: int) -> Partition:
    assert c.cluster is not None
    return c.cluster.brokers[node].replica_manager.partitions[TopicPartition(topic, index)]


def test_log_start_moves_segments_and_topic_deletion_reach_the_disk(tmp_path: Path) -> None:
    configs = {"log.dirs": str(tmp_path)}
    with BackgroundCluster(configs=configs) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic(TOPIC, 1, 1, configs={"internal.segment.bytes": "300"}))
        c.call(lambda: md.create_topic("doomed", 1, 1))
        topic_id = c.call(lambda: md.topics[TOPIC].topic_id)
        with WireClient(c.bootstrap) as w:
            for i in range(10):
                r = produce(w, 0, batch([b"%03d" % i * 20], timestamp=TS + i))
                assert (r.error_code, r.base_offset) == (0, i)
        segments = segment_files(tmp_path, 0, TOPIC, 0)
        assert len(segments) >= 3
        on_disk = b"".join(s.read_bytes() for s in segments)
        in_memory = c.call(lambda: b"".join(b.data for b in _replica(c, 0, TOPIC, 0).log.batches))
        assert on_disk == in_memory
        rm = c.cluster.brokers[0].replica_manager
        assert c.call(lambda: rm.delete_records(TopicPartition(TOPIC, 0), 6)) == 6
        # Segments wholly below the new start are gone; the one holding offset 6 stays.
        kept = segment_files(tmp_path, 0, TOPIC, 0)
        assert len(kept) < len(segments)
        held = list(iter_batches(kept[0].read_bytes()))
        assert held[0].base_offset <= 6 <= held[-1].last_offset
        checkpoints = tmp_path / "broker-0" / "checkpoints.json"
        assert wait_for(lambda: json.loads(checkpoints.read_text()).get("t-0")[:2] == [6, 10])
        c.call(lambda: md.delete_topic("doomed"))
        assert not (tmp_path / "broker-0" / "doomed-0").exists()

    with BackgroundCluster(configs=configs) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        assert c.call(lambda: sorted(md.topics)) == [TOPIC]
        assert c.call(lambda: md.topics[TOPIC].topic_id) == topic_id
        p = _replica(c, 0, TOPIC, 0)
        assert c.call(lambda: (p.log.log_start_offset, p.log.log_end_offset)) == (6, 10)
        with WireClient(c.bootstrap) as w:
            got = fetch(w, 0, 6)
            assert [(o, t) for o, t, _ in records_of(got.records)][-4:] == [
                (i, TS + i) for i in range(6, 10)
            ]
            assert fetch(w, 0, 2).error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_a_follower_truncation_cuts_its_files_and_it_copies_the_leader_again(
    tmp_path: Path,
) -> None:
    with BackgroundCluster(3, configs={"log.dirs": str(tmp_path)}) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic(TOPIC, 1, 3))
        leader = c.call(lambda: md.topics[TOPIC].partitions[0].leader)
        follower = next(n for n in range(3) if n != leader)
        with WireClient(c.bootstrap.split(",")[leader]) as w:
            for i in range(5):
                assert produce(w, 0, batch([b"r%d" % i], timestamp=TS + i)).error_code == 0
        [leader_file] = segment_files(tmp_path, leader, TOPIC, 0)
        [follower_file] = segment_files(tmp_path, follower, TOPIC, 0)
        assert follower_file.read_bytes() == leader_file.read_bytes()
        full = leader_file.stat().st_size
        p = _replica(c, follower, TOPIC, 0)

        def truncate() -> int:
            c.cluster.brokers[follower].fetcher.stop()  # type: ignore[union-attr]
            p.log.truncate_to(2)
            return p.log.log_end_offset

        assert c.call(truncate) == 2
        assert 0 < follower_file.stat().st_size < full
        assert [b.base_offset for b in iter_batches(follower_file.read_bytes())] == [0, 1]
        c.call(lambda: c.cluster.brokers[follower].fetcher.start())  # type: ignore[union-attr]
        assert wait_for(lambda: follower_file.stat().st_size == full)
        assert follower_file.read_bytes() == leader_file.read_bytes()


def test_batches_past_the_cache_budget_leave_memory_and_are_read_from_their_files(
    tmp_path: Path,
) -> None:
    """With a log directory only the newest batches stay in memory (within the process's
    budget); a fetch of older ones, a follower's files and the cleaner read them back."""
    budget = 20_000
    values = [b"%04d" % i * 250 for i in range(60)]  # 1,000-byte values, one batch each
    with BackgroundCluster(3, configs={"log.dirs": str(tmp_path)}) as c:
        assert c.cluster is not None and c.cluster.storage is not None
        cache = c.cluster.storage.cache
        c.call(lambda: setattr(cache, "budget", budget))
        md = c.cluster.metadata
        c.call(lambda: md.create_topic(TOPIC, 1, 3, configs={"internal.segment.bytes": "9000"}))
        leader = c.call(lambda: md.topics[TOPIC].partitions[0].leader)
        with WireClient(c.bootstrap.split(",")[leader]) as w:
            for i, v in enumerate(values):
                r = produce(w, 0, batch([v], timestamp=TS + i))
                assert (r.error_code, r.base_offset) == (0, i)
            got = fetch(w, 0, 0)
            assert got.error_code == 0
            assert [v for _, _, v in records_of(got.records)] == values
        assert c.call(lambda: cache.bytes) <= budget
        for node in range(3):
            p = _replica(c, node, TOPIC, 0)
            resident = c.call(lambda p=p: [b.resident for b in p.log.batches])
            assert len(resident) == 60
            # The oldest went out of memory; the newest of the three replicas stayed.
            assert not any(resident[:40]) and resident[-1], (node, resident)
            on_disk = b"".join(f.read_bytes() for f in segment_files(tmp_path, node, TOPIC, 0))
            in_log = c.call(lambda p=p: b"".join(b.data for b in p.log.batches))
            assert in_log == on_disk
        assert len(segment_files(tmp_path, leader, TOPIC, 0)) >= 5


def test_a_fetch_sends_batches_from_their_file_without_copying_them(tmp_path: Path) -> None:
    """With a log directory, a fetch of 64 KiB or more of batches that one segment file
    holds one after another answers with a view of the file (in memory or not), not a
    copy; a smaller one, or one across files, with bytes; the consumer reads the same."""
    values = [b"%04d" % i * 250 for i in range(200)]  # 1,000-byte values, one batch each
    with BackgroundCluster(configs={"log.dirs": str(tmp_path)}) as c:
        assert c.cluster is not None and c.cluster.storage is not None
        cache = c.cluster.storage.cache
        c.call(lambda: setattr(cache, "budget", 40_000))
        md = c.cluster.metadata
        c.call(lambda: md.create_topic(TOPIC, 1, 1, configs={"internal.segment.bytes": "100000"}))
        with WireClient(c.bootstrap) as w:
            for i, v in enumerate(values):
                assert produce(w, 0, batch([v], timestamp=TS + i)).error_code == 0
            got = [v for _, _, v in records_of(fetch(w, 0, 0).records)]
            assert got == values[: len(got)] and len(got) >= 90  # the first file at least
        rm = c.cluster.brokers[0].replica_manager
        files = segment_files(tmp_path, 0, TOPIC, 0)
        assert len(files) == 3

        def read(offset: int, max_bytes: int) -> Any:
            params = FetchParams(max_bytes=max_bytes)
            [(_, r)] = rm.read_from_local_log(
                params, [(TopicPartition(TOPIC, 0), FetchInfo(offset, max_bytes))]
            )
            return r.records

        first = files[0].read_bytes()
        whole = c.call(lambda: read(0, len(first)))  # the first file, mostly out of memory
        assert isinstance(whole, memoryview) and bytes(whole) == first
        last = len(list(iter_batches(first)))
        second = files[1].read_bytes()
        newest = c.call(lambda: read(last, len(second)))  # the second file, partly in memory
        assert isinstance(newest, memoryview) and bytes(newest) == second
        small = c.call(lambda: read(3, 2_500))
        assert type(small) is bytes and [b.base_offset for b in iter_batches(small)] == [3, 4]
        size = len(first) // last  # of each batch
        across = c.call(lambda: read(last - 2, 2 * size + len(second)))  # two files: joined
        assert type(across) is bytes and across.endswith(bytes(newest))
        assert first.endswith(across[: len(across) - len(newest)])
        assert next(iter_batches(across)).base_offset == last - 2


def test_a_follower_truncation_leaves_the_bytes_of_a_view_being_sent(tmp_path: Path) -> None:
    """A view handed to a fetch's answer keeps its bytes while the follower that served it
    truncates that file: the kept part moves to a new file, which later appends extend
    (cutting the mapped file in place would make reading the view fault)."""
    script = f"""
import uuid
from pathlib import Path
from kafkagen.runtime.broker.storage._log import LogBatch, served
from kafkagen.runtime.broker.storage.log_store import PartitionFiles
from kafkagen.runtime.broker.storage.log_writer import DiskWriter
from kafkagen.runtime.records import Record, build_batch, iter_batches
from kafkagen.runtime.topic_partition import TopicPartition

d = Path({str(tmp_path / "t-0")!r})
files = PartitionFiles(TopicPartition("t", 0), d, uuid.uuid4(), lambda: None, DiskWriter(d))
def stored(i):
    data = build_batch([Record(value=b"%04d" % i * 2000)], base_offset=i)
    b = LogBatch(i, i, data, 0, i, 0)
    files.append(b, False)
    return b
batches = [stored(i) for i in range(40)]
view = served(batches)
assert isinstance(view, memoryview), type(view)
sent = bytes(view)
files.truncate(10)
assert bytes(view) == sent  # read after the cut
del view
[path] = sorted(d.glob("*.log"))
kept = path.read_bytes()
assert kept == sent[: len(kept)] and [b.base_offset for b in iter_batches(kept)] == list(range(10))
stored(10)
assert [b.base_offset for b in iter_batches(path.read_bytes())] == list(range(11))
# A truncation stopped before its rename leaves the new file beside the old: a start drops it.
path.with_name(path.name + ".tmp").write_bytes(kept)
again = PartitionFiles(TopicPartition("t", 0), d, files.topic_id, lambda: None, DiskWriter(d))
assert len(again.recover()) == 11 and not list(d.glob("*.tmp"))
print("kept", len(kept))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.startswith("kept ")
    assert not list((tmp_path / "t-0").glob("*.tmp"))


def test_segment_files_are_fsynced_every_flush_messages_records_as_kafka_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By default (flush.messages at its maximum) an acks=all write is acknowledged once
    replicated, with no fsync of its own; a topic with flush.messages=N fsyncs every N."""
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(log_store.os, "fsync", fsync)
    with BackgroundCluster(configs={"log.dirs": str(tmp_path)}) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic(TOPIC, 1, 1))
        c.call(lambda: md.create_topic("every2", 1, 1, configs={"flush.messages": "2"}))
        with WireClient(c.bootstrap) as w:
            for i in range(6):
                assert produce(w, 0, batch([b"v%d" % i])).error_code == 0
                assert produce(w, 0, batch([b"v%d" % i]), topic="every2").error_code == 0

        def segment_syncs(topic: str) -> int:
            return sum(1 for path in synced if f"/{topic}-0/" in path and path.endswith(".log"))

        assert segment_syncs(TOPIC) == 0
        assert segment_syncs("every2") == 3


def test_without_a_log_dir_nothing_is_written(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    script = (
        "from kafkagen.runtime.broker.cluster import BackgroundCluster\n"
        "from kafkagen.runtime.records import Record, build_batch\n"
        "with BackgroundCluster() as c:\n"
        "    md = c.cluster.metadata\n"
        "    c.call(lambda: md.create_topic('t', 1, 1))\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, check=True, timeout=60)
    assert list(tmp_path.iterdir()) == []


# -- --log-dir: bad input ------------------------------------------------------------------------


def _serve_fails(*args: str) -> tuple[int, str]:
    r = subprocess.run(
        [sys.executable, "-m", "kafkagen.cli.serve", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return r.returncode, r.stderr


@pytest.mark.slow
def test_bad_log_dirs_are_refused_with_a_clear_error(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    code, err = _serve_fails("--log-dir", str(a_file / "sub"))
    assert code == 2 and f"cannot use log directory {a_file / 'sub'}" in err, err
    code, err = _serve_fails("--log-dir", str(tmp_path), "--config", "log.dirs=/elsewhere")
    assert code == 2 and "disagree" in err, err
    code, err = _serve_fails("--config", "log.dirs=a,b")
    assert code == 2 and "log.dirs" in err and "exactly one directory" in err, err
    # A directory written by a cluster of another size.
    with BackgroundCluster(2, configs={"log.dirs": str(tmp_path / "two")}):
        pass
    code, err = _serve_fails("--log-dir", str(tmp_path / "two"))
    assert code == 2 and "holds a cluster of 2 broker(s); start it with --brokers 2" in err, err
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "cluster.json").write_text("{not json")
    code, err = _serve_fails("--log-dir", str(tmp_path / "bad"))
    assert code == 2 and "cluster.json: cannot read the cluster metadata" in err, err
    # Replica logs without the metadata that places them are not thrown away.
    (tmp_path / "lost" / "broker-0" / "t-0").mkdir(parents=True)
    code, err = _serve_fails("--log-dir", str(tmp_path / "lost"))
    assert code == 2 and "holds replica logs" in err and "no cluster.json" in err, err
    assert (tmp_path / "lost" / "broker-0" / "t-0").is_dir()
    # One process per directory.
    with serve(tmp_path / "busy"):
        code, err = _serve_fails("--log-dir", str(tmp_path / "busy"))
        assert code == 2 and "is in use by another broker process" in err, err


# -- --log-dir: several brokers and real clients -------------------------------------------------


@pytest.mark.slow
def test_three_brokers_restart_after_sigkill_with_replicated_logs(tmp_path: Path) -> None:
    with serve(tmp_path, brokers=3) as broker, WireClient(broker.bootstrap) as w:
        create_topic(w, 3, rf=3)
        find_coordinator(w, "g3", 0)
        sent: dict[int, list[tuple[int, int, bytes | None]]] = {}
        for partition in range(3):
            leader = leader_of(w, partition)
            with WireClient(broker.bootstrap.split(",")[leader]) as lw:
                for i in range(4):
                    data = batch([b"p%d-%d" % (partition, i)], timestamp=TS + i)
                    assert produce(lw, partition, data).error_code == 0
                sent[partition] = records_of(fetch(lw, partition, 0).records)
        coordinator = find_coordinator(w, "g3", 0)
        with WireClient(broker.bootstrap.split(",")[coordinator]) as cw:
            commit_offset(cw, "g3", 1, 3)
        kill(broker, signal.SIGKILL)
    for node in range(3):
        for partition in range(3):
            assert segment_files(tmp_path, node, TOPIC, partition), (node, partition)

    with serve(tmp_path, brokers=3) as broker, WireClient(broker.bootstrap) as w:
        for partition in range(3):
            with WireClient(broker.bootstrap.split(",")[leader_of(w, partition)]) as lw:
                # The high watermark comes back from its last checkpoint, then moves up as
                # the followers fetch again.
                got = wait_for(functools.partial(fetch_up_to, lw, partition, 4))
                assert got is not None and got.error_code == 0
                assert records_of(got.records) == sent[partition]
                assert len(sent[partition]) == 4
        coordinator = find_coordinator(w, "g3", 0)
        with WireClient(broker.bootstrap.split(",")[coordinator]) as cw:
            assert committed(cw, "g3", 1) == 3


def fetch_up_to(w: WireClient, partition: int, high_watermark: int) -> Any:
    """The fetch from offset 0 once the high watermark is ``high_watermark`` (else None)."""
    r = fetch(w, partition, 0)
    return r if r.high_watermark == high_watermark else None


def leader_of(w: WireClient, partition: int) -> int:
    Req: Any = message_type(3, "request")
    r = w.call(3, 12, Req(topics=[Req.MetadataRequestTopic(name=TOPIC)]))
    [t] = r.topics
    return int(next(p.leader_id for p in t.partitions if p.partition_index == partition))


@pytest.mark.slow
def test_confluent_kafka_consumes_from_committed_offsets_after_a_restart(tmp_path: Path) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as CkPartition

    topic, group = "ck-durable", "ck-durable-group"
    with serve(tmp_path) as broker:
        p = Producer(
            {"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "acks": "all"}
        )
        with WireClient(broker.bootstrap) as w:
            Req: Any = message_type(19, "request")
            r = w.call(
                19,
                5,
                Req(
                    topics=[Req.CreatableTopic(name=topic, num_partitions=1, replication_factor=1)],
                    timeout_ms=5000,
                ),
            )
            assert r.topics[0].error_code == 0
        offsets: list[int] = []

        def delivered(err: Any, m: Any) -> None:
            offsets.append(-1 if err else m.offset())

        for i in range(10):
            p.produce(
                topic,
                b"value-%d" % i,
                b"key-%d" % i,
                timestamp=TS + i,
                on_delivery=delivered,
            )
        assert p.flush(30) == 0
        assert sorted(offsets) == list(range(10))
        c = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
            }
        )
        try:
            c.commit(offsets=[CkPartition(topic, 0, 4)], asynchronous=False)
        finally:
            c.close()
        kill(broker, signal.SIGKILL)

    with serve(tmp_path) as broker:
        c = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 500,
            }
        )
        got: list[tuple[int | None, bytes | None, bytes | None, int]] = []
        try:
            c.subscribe([topic])
            deadline = time.monotonic() + 60
            while len(got) < 6 and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is None or m.error() is not None:
                    continue
                got.append((m.offset(), m.key(), m.value(), m.timestamp()[1]))
        finally:
            c.close()
        assert got == [(i, b"key-%d" % i, b"value-%d" % i, TS + i) for i in range(4, 10)]


def test_configs_acls_and_producer_ids_survive_a_restart(tmp_path: Path) -> None:
    configs = {"log.dirs": str(tmp_path)}
    binding = AclBinding(
        ResourceType.TOPIC,
        TOPIC,
        PatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermission.ALLOW,
    )
    with BackgroundCluster(configs=configs) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic(TOPIC, 2, 1, configs={"retention.ms": "12345"}))
        c.call(lambda: md.acls.add(binding))
        c.call(lambda: md.configs.set_dynamic_broker(0, {"log.cleaner.threads": "3"}))
        c.call(lambda: md.configs.set_dynamic_broker(None, {"message.max.bytes": "2000000"}))
        pids = [c.call(md.allocate_producer_id) for _ in range(3)]
        cluster_id = md.cluster_id
    with BackgroundCluster(configs=configs) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        assert md.cluster_id == cluster_id
        assert c.call(lambda: md.configs.topic_raw(TOPIC, "retention.ms")[0]) == "12345"
        assert md.configs.broker_raw("log.cleaner.threads", 0)[0] == "3"
        assert md.configs.broker_int("message.max.bytes") == 2000000
        assert c.call(lambda: md.acls.find(binding_filter(binding))) == [binding]
        later = c.call(md.allocate_producer_id)
        assert later > max(pids)
        # Changes after the restart are saved too.
        c.call(lambda: md.acls.delete(binding_filter(binding)))
    with BackgroundCluster(configs=configs) as c:
        assert c.cluster is not None
        assert c.call(lambda: len(c.cluster.metadata.acls)) == 0  # type: ignore[union-attr]


def binding_filter(b: AclBinding) -> AclFilter:
    return AclFilter(
        b.resource_type,
        b.resource_name,
        b.pattern_type,
        b.principal,
        b.host,
        b.operation,
        b.permission_type,
    )


def test_an_answer_waits_for_its_write_while_the_broker_serves_others(tmp_path: Path) -> None:
    """The writer thread writes a batch while the event loop goes on; the produce answer
    leaves only once the batch is written."""
    with BackgroundCluster(configs={"log.dirs": str(tmp_path)}) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic(TOPIC, 1, 1))
        p = _replica(c, 0, TOPIC, 0)
        files = p.log.storage
        assert isinstance(files, PartitionFiles) and files.writer is not None
        writer = files.writer
        with WireClient(c.bootstrap) as w, WireClient(c.bootstrap) as other:
            assert produce(w, 0, batch([b"first"], timestamp=TS)).error_code == 0
            # The segment's file becomes a full pipe: the next write blocks until read.
            read_end, write_end = os.pipe()
            os.set_blocking(write_end, False)
            filled = 0
            with contextlib.suppress(BlockingIOError):
                while True:
                    filled += os.write(write_end, bytes(65536))
            os.set_blocking(write_end, True)

            def to_pipe() -> None:
                files.close()
                files._fd = write_end

            try:
                c.call(to_pipe)
                # Larger than a write the loop makes itself when the writer is idle.
                big = b"second" + bytes(log_writer.INLINE_BYTES)
                second = batch([big], timestamp=TS + 1)
                with concurrent.futures.ThreadPoolExecutor(1) as pool:
                    answer = pool.submit(produce, w, 0, second)
                    assert wait_for(lambda: c.call(lambda: writer.queued > writer.written))
                    time.sleep(0.3)
                    assert not answer.done()
                    # Meanwhile the loop serves everyone else; the high watermark stays
                    # below what is not written yet, as Kafka's does.
                    assert other.call(18, 2, req(18)).error_code == 0
                    got = fetch(other, 0, 0)
                    assert (got.high_watermark, records_of(got.records)) == (1, [(0, TS, b"first")])
                    assert c.call(lambda: p.log.log_end_offset) == 2
                    assert not answer.done()
                    piped = b""
                    while len(piped) < filled + len(second):
                        piped += os.read(read_end, 1 << 20)
                    r = answer.result(10)
                assert (r.error_code, r.base_offset) == (0, 1)
                got = fetch(other, 0, 1)
                assert [v for _, _, v in records_of(got.records)] == [big]
                assert piped[filled:] == bytes(got.records)

                def restore() -> None:
                    writer.drain()
                    os.close(write_end)
                    files._fd = None
                    files._unsynced = False

                c.call(restore)
            finally:
                os.close(read_end)  # a writer still blocked fails and lets the broker stop


@pytest.mark.parametrize("size", ["small", "large"])
def test_a_failed_write_answers_kafka_storage_error_and_takes_the_log_dir_offline(
    tmp_path: Path, size: str
) -> None:
    """A small write fails on the loop's thread, a large one on the writer's: both answer
    the same."""
    configs = {"log.dirs": str(tmp_path)}
    with BackgroundCluster(configs=configs) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic(TOPIC, 1, 1))
        p = _replica(c, 0, TOPIC, 0)
        with WireClient(c.bootstrap) as w:
            assert produce(w, 0, batch([b"first"], timestamp=TS)).error_code == 0
            [segment] = segment_files(tmp_path, 0, TOPIC, 0)
            size = segment.stat().st_size
            files = p.log.storage
            assert isinstance(files, PartitionFiles)

            def disk_full() -> None:
                files.close()
                files._fd = os.open("/dev/full", os.O_WRONLY)  # every write: ENOSPC

            c.call(disk_full)
            lost = b"lost" + (bytes(log_writer.INLINE_BYTES) if size == "large" else b"")
            r = produce(w, 0, batch([lost], timestamp=TS + 1))
            assert (r.error_code, r.base_offset) == (ErrorCode.KAFKA_STORAGE_ERROR, -1)
            assert segment.stat().st_size == size
            # As Kafka with a failed log directory: nothing more is written or read there.
            r = produce(w, 0, batch([b"later"], timestamp=TS + 2))
            assert r.error_code == ErrorCode.KAFKA_STORAGE_ERROR
            assert fetch(w, 0, 0).error_code == ErrorCode.KAFKA_STORAGE_ERROR
            (result,) = w.call(35, 4, req(35, topics=None)).results
            assert (result.error_code, result.topics) == (ErrorCode.KAFKA_STORAGE_ERROR, [])
            assert segment.stat().st_size == size
    # A restart reads the directory back as the failed write left it.
    with BackgroundCluster(configs=configs) as c:
        with WireClient(c.bootstrap) as w:
            r = wait_for(lambda: _produced(w, batch([b"second"], timestamp=TS + 3)))
            assert r.base_offset == 1
            got = fetch(w, 0, 0)
            assert [v for _, _, v in records_of(got.records)] == [b"first", b"second"]
            assert segment.read_bytes() == bytes(got.records)


def _produced(w: WireClient, records: bytes) -> Any:
    r = produce(w, 0, records)
    return r if r.error_code == 0 else None


def test_a_commit_cut_short_by_a_stop_completes_after_the_restart(tmp_path: Path) -> None:
    configs = {
        "log.dirs": str(tmp_path),
        "transaction.state.log.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
    }
    with BackgroundCluster(2, configs=configs) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        # The data lives on broker 1 alone; the coordinator is broker 0.
        c.call(lambda: md.create_topic(TOPIC, assignments={0: [1]}))
        addrs = c.bootstrap.split(",")
        with WireClient(addrs[0]) as w0, WireClient(addrs[1]) as w1:
            assert find_coordinator(w0, "cut-short", 1) == 0
            pid, epoch = init_pid(w0, "cut-short")
            add_partitions(w0, "cut-short", pid, epoch, [0])
            data = batch([b"in-doubt"], pid=pid, epoch=epoch, seq=0, transactional=True)
            assert produce(w1, 0, data, "cut-short").error_code == 0
            # Broker 1 goes away: the COMMIT marker cannot be written.
            c.run(c.cluster.pause_broker(1))
            end_txn(w0, "cut-short", pid, epoch, True)
            time.sleep(0.3)
            assert txn_state(w0, "cut-short") == "PrepareCommit"

    with BackgroundCluster(2, configs=configs) as c:
        addrs = c.bootstrap.split(",")
        with WireClient(addrs[0]) as w0, WireClient(addrs[1]) as w1:
            # The new coordinator finishes the commit it found prepared.
            assert wait_for(functools.partial(has_state, w0, "cut-short", "CompleteCommit"))

            def committed_fetch() -> Any:
                r = fetch(w1, 0, 0, read_committed=True)
                return r if r.last_stable_offset == 2 else None

            got = wait_for(committed_fetch)
            assert got is not None
            assert [v for _, _, v in records_of(got.records)] == [b"in-doubt"]
            assert list(got.aborted_transactions) == []


@pytest.mark.slow
@pytest.mark.parametrize("size", ["small", "large"])
def test_every_acknowledged_message_survives_a_sigkill_mid_stream(
    tmp_path: Path, size: str
) -> None:
    """Small batches are written as they come, large ones by the writer thread: neither
    is acknowledged before it is in the file."""
    from confluent_kafka import Producer

    padding = bytes(log_writer.INLINE_BYTES) if size == "large" else b""

    acked: dict[int, bytes] = {}

    def delivered(err: Any, m: Any) -> None:
        if err is None:
            acked[m.offset()] = m.value()

    with serve(tmp_path) as broker:
        with WireClient(broker.bootstrap) as w:
            create_topic(w, 1)
        p = Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 2,
                "message.timeout.ms": 3000,
            }
        )
        deadline = time.monotonic() + 60
        i = 0
        # Keep producing until well past the kill, so that writes are in flight when it lands.
        while len(acked) < 800 and time.monotonic() < deadline:
            try:
                p.produce(TOPIC, b"message-%06d" % i + padding, on_delivery=delivered)
                i += 1
            except BufferError:
                pass
            p.poll(0.001)
        broker.proc.kill()
        for _ in range(200):
            p.poll(0.01)
        known = dict(acked)
        p.purge()
        p.flush(5)
        kill(broker, signal.SIGKILL)
    assert len(known) >= 800

    with serve(tmp_path) as broker, WireClient(broker.bootstrap) as w:
        got: dict[int, bytes | None] = {}
        offset = 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = fetch(w, 0, offset)
            assert r.error_code == 0
            for o, _, v in records_of(r.records):
                got[o] = v
            if not r.records:
                if offset >= max(known) + 1:
                    break
                time.sleep(0.05)
                continue
            offset = max(got) + 1
        missing = [o for o in known if got.get(o) != known[o]]
        assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {missing[:5]}"
        # Offsets stay dense: nothing between acknowledged ones went missing either.
        assert sorted(got) == list(range(len(got)))


def test_timestamp_lookups_answer_the_same_after_a_restart(tmp_path: Path) -> None:
    configs = {"log.dirs": str(tmp_path)}
    tp = TopicPartition(TOPIC, 0)
    queries = (-3, -2, -1, 4, 6, 8, 10)  # max timestamp, earliest, latest, then times

    def answers(c: BackgroundCluster) -> list[tuple[int, int, int]]:
        assert c.cluster is not None
        rm = c.cluster.brokers[0].replica_manager
        return [c.call(functools.partial(rm.list_offset, tp, q)) for q in queries]

    with BackgroundCluster(configs=configs) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic(TOPIC, 1, 1))
        with WireClient(c.bootstrap) as w:
            for stamps in ([5, 9, 7], [3, 9, 2], [1, 1, 1]):
                records = [Record(-1, t, None, b"x") for t in stamps]
                assert produce(w, 0, build_batch(records)).error_code == 0
        before = answers(c)
    assert before[0][:2] == (1, 9)  # the first record holding the largest timestamp
    with BackgroundCluster(configs=configs) as c:
        assert answers(c) == before


def test_describe_log_dirs_names_the_directory_on_disk(tmp_path: Path) -> None:
    with BackgroundCluster(configs={"log.dirs": str(tmp_path)}) as c:
        c.call(lambda: c.cluster.metadata.create_topic(TOPIC, 2, 1))  # type: ignore[union-attr]
        with WireClient(c.bootstrap) as w:
            (result,) = w.call(35, 4, req(35, topics=None)).results
    assert result.error_code == 0
    assert result.log_dir == str((tmp_path / "broker-0").resolve())
    (topic,) = [t for t in result.topics if t.name == TOPIC]
    assert sorted(p.partition_index for p in topic.partitions) == [0, 1]
