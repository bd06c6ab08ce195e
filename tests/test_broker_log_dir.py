"""Durable broker state: ``kafkagen serve --log-dir`` keeps topics, records, committed offsets,
producer state and transactions across restarts (SIGTERM and SIGKILL), truncates a torn tail
on start; and a new leader of an offsets partition replays transactional offset commits."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

from broker_helpers import WireClient
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
    def ask() -> int | None:
        r = w.call(10, 3, req(10, key=key, key_type=key_type))
        return int(r.node_id) if r.error_code == 0 else None

    node = wait_for(ask)
    assert node is not None, f"no coordinator for {key!r}"
    return node


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
