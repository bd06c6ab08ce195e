"""Durable broker state: ``kafkagen serve --log-dir`` keeps topics, records, committed offsets,
producer state and transactions across restarts (SIGTERM and SIGKILL), truncates a torn tail
on start; and a new leader of an offsets partition replays transactional offset commits."""

from __future__ import annotations

import functools
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from broker_helpers import BrokerProcess, WireClient
from kafkagen.generated import message_type
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.metadata import OFFSETS_TOPIC
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.records import Record, build_batch, iter_batches

TOPIC = "t"
T = TypeVar("T")


def req(api_key: int, **fields: Any) -> Any:
    return message_type(api_key, "request")(**fields)


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


def txn_commit_offset(
    w: WireClient, tid: str, group: str, pid: int, epoch: int, offset: int
) -> int:
    Req: Any = message_type(28, "request")
    r = w.call(
        28,
        3,
        Req(
            transactional_id=tid,
            group_id=group,
            producer_id=pid,
            producer_epoch=epoch,
            generation_id=-1,
            member_id="",
            group_instance_id=None,
            topics=[
                Req.TxnOffsetCommitRequestTopic(
                    name=TOPIC,
                    partitions=[
                        Req.TxnOffsetCommitRequestPartition(
                            partition_index=0, committed_offset=offset, committed_metadata="txn"
                        )
                    ],
                )
            ],
        ),
    )
    return int(r.topics[0].partitions[0].error_code)


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


def produce(w: WireClient, partition: int, data: bytes, tid: str | None = None) -> Any:
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
                    name=TOPIC,
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
        assert c.call(lambda: c.cluster.brokers[old].txn_offsets.pending if c.cluster else 0) == {}
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
        wait_coordinators(w, "g", ["tx-commit", "tx-abort"])
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
        commit_offset(w, "g", 0, 4)
        before0 = fetch(w, 0, 0)
        before1 = fetch(w, 1, 0, read_committed=True)
        assert before1.high_watermark == before1.last_stable_offset == 5
        kill(broker, sig)

    with serve(tmp_path) as broker, WireClient(broker.bootstrap) as w:
        wait_coordinators(w, "g", ["tx-commit", "tx-abort"])
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
