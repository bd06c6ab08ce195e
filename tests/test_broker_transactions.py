"""Transactions over real sockets with the generated codecs: the coordinator's state machine
and errors, markers, the last stable offset, read_committed fetches, transactional offset
commits, fencing, timeouts, transactions v2 (KIP-890: Produce v12+ and TxnOffsetCommit v5+
add to the transaction, EndTxn v5 bumps the epoch), and ListTransactions /
DescribeTransactions with pagination."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import functools
import gc
import time
import uuid
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from broker_helpers import WireClient, req, txn_commit_offset
from kafkagen.generated import message_type
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.storage.partition import ABORT_MARKER, COMMIT_MARKER, parse_control_key
from kafkagen.runtime.broker.transaction.transaction_coordinator import (
    DelayedTxnTimeout,
    MarkerWriter,
)
from kafkagen.runtime.broker.transaction.transaction_state import (
    TxnMetadata,
    TxnSnapshot,
    TxnState,
    decode_txn_key,
    decode_txn_value,
    txn_key,
    txn_value,
)
from kafkagen.runtime.broker.types import OFFSETS_TOPIC, TXN_STATE_TOPIC
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.pagination import paged_version
from kafkagen.runtime.purgatory import DelayedOperationPurgatory
from kafkagen.runtime.records import Record, build_batch, iter_batches
from kafkagen.runtime.timer import ManualClock, Timer
from kafkagen.runtime.topic_partition import TopicPartition

TOPIC = "t"
CONFIGS = {
    "transaction.state.log.num.partitions": "4",
    "offsets.topic.num.partitions": "2",
    "unstable.api.versions.enable": "true",
    "transaction.two.phase.commit.enable": "true",
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[BackgroundCluster]:
    with BackgroundCluster(configs=CONFIGS) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic(TOPIC, 2, 1))
        with WireClient(c.bootstrap) as w:
            # Clients look the coordinator up first; that creates the state topic.
            assert w.call(10, 3, req(10, key="any", key_type=1)).error_code == 0
        yield c


@pytest.fixture
def w(cluster: BackgroundCluster) -> Iterator[WireClient]:
    with WireClient(cluster.bootstrap) as client:
        yield client


_ids = iter(range(1_000_000))


def new_id(prefix: str = "txn") -> str:
    return f"{prefix}-{next(_ids)}"


def ids(n: int, prefix: str) -> list[str]:
    return [new_id(prefix) for _ in range(n)]


# -- request helpers ------------------------------------------------------------------------


def init(w: WireClient, tid: str | None, timeout: int = 60000, version: int = 4, **kw: Any) -> Any:
    return w.call(22, version, req(22, transactional_id=tid, transaction_timeout_ms=timeout, **kw))


def init_ok(w: WireClient, tid: str, timeout: int = 60000) -> tuple[int, int]:
    for _ in range(100):
        r = init(w, tid, timeout)
        if r.error_code != ErrorCode.CONCURRENT_TRANSACTIONS:
            break
        time.sleep(0.02)
    assert r.error_code == 0, r
    return r.producer_id, r.producer_epoch


def add_partitions(
    w: WireClient,
    tid: str,
    pid: int,
    epoch: int,
    partitions: list[int],
    version: int = 3,
    topic: str = TOPIC,
) -> dict[int, int]:
    Req: Any = message_type(24, "request")
    r = w.call(
        24,
        version,
        Req(
            v3_and_below_transactional_id=tid,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[Req.AddPartitionsToTxnTopic(name=topic, partitions=partitions)],
        ),
    )
    [topic] = r.results_by_topic_v3_and_below
    return {p.partition_index: p.partition_error_code for p in topic.results_by_partition}


def end_txn(w: WireClient, tid: str, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
    r = w.call(
        26,
        version,
        req(26, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit),
    )
    return int(r.error_code)


def batch(pid: int, epoch: int, seq: int, values: list[bytes], transactional: bool = True) -> bytes:
    now = int(time.time() * 1000)
    return build_batch(
        [Record(-1, now, None, v) for v in values],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=transactional,
    )


def produce(w: WireClient, tid: str | None, partition: int, data: bytes) -> Any:
    return produce_v(w, 9, tid, partition, data).partition_responses[0]


def fetch(w: WireClient, partition: int, offset: int, isolation: int) -> Any:
    Req: Any = message_type(1, "request")
    r = w.call(
        1,
        11,
        Req(
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=isolation,
            session_id=0,
            session_epoch=-1,
            topics=[
                Req.FetchTopic(
                    topic=TOPIC,
                    partitions=[
                        Req.FetchPartition(
                            partition=partition,
                            fetch_offset=offset,
                            partition_max_bytes=1 << 20,
                        )
                    ],
                )
            ],
            forgotten_topics_data=[],
            rack_id="",
        ),
    )
    return r.responses[0].partitions[0]


def values_of(records: bytes | None) -> list[bytes | None]:
    out: list[bytes | None] = []
    for b in iter_batches(records or b""):
        if not b.is_control:
            out.extend(r.value for r in b)
    return out


def control_kinds(records: bytes | None) -> list[int]:
    return [
        parse_control_key(r.key) for b in iter_batches(records or b"") if b.is_control for r in b
    ]


def wait_for(cond: Any, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.02)


def describe(w: WireClient, ids: list[str], version: int = 0, **kw: Any) -> Any:
    return w.call(65, version, req(65, transactional_ids=ids, **kw))


def state_of(w: WireClient, tid: str) -> str:
    [s] = describe(w, [tid]).transaction_states
    return str(s.transaction_state)


def log_end(w: WireClient, partition: int) -> int:
    return int(fetch(w, partition, 0, 0).high_watermark)


# -- the state log's records -----------------------------------------------------------------


def test_state_log_record_round_trips() -> None:
    snap = TxnSnapshot(
        7,
        -1,
        3,
        -1,
        60000,
        TxnState.ONGOING,
        frozenset({TopicPartition("a", 1), TopicPartition("a", 0), TopicPartition("b", 2)}),
        1000,
        2000,
    )
    assert decode_txn_key(txn_key("my-id")) == "my-id"
    assert decode_txn_value(txn_value(snap)) == snap
    # Transactions v2 records (value version 1) keep the producer ids the id moves between.
    v2 = dataclasses.replace(
        snap,
        state=TxnState.PREPARE_COMMIT,
        last_producer_id=5,
        ends_with_bump=True,
        next_producer_id=9,
    )
    assert decode_txn_value(txn_value(v2)) == v2
    assert txn_value(v2)[:2] == b"\x00\x01" and txn_value(snap)[:2] == b"\x00\x00"


# -- FindCoordinator and InitProducerId -------------------------------------------------------


def test_find_coordinator_answers_transactional_ids(w: WireClient) -> None:
    r = w.call(10, 3, req(10, key="some-txn", key_type=1))
    assert r.error_code == 0 and r.node_id == 0 and r.port > 0
    r = w.call(10, 3, req(10, key="", key_type=1))
    assert r.error_code == ErrorCode.INVALID_REQUEST


def test_init_producer_id_bumps_the_epoch_of_the_same_id(w: WireClient) -> None:
    tid = new_id()
    pid, epoch = init_ok(w, tid)
    assert epoch == 0
    pid2, epoch2 = init_ok(w, tid)
    assert (pid2, epoch2) == (pid, 1)
    other, _ = init_ok(w, new_id())
    assert other != pid


def test_init_producer_id_rejects_bad_timeouts_and_empty_id(w: WireClient) -> None:
    assert init(w, new_id(), timeout=0).error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert init(w, new_id(), timeout=900_001).error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert init(w, "").error_code == ErrorCode.INVALID_REQUEST


def test_init_producer_id_without_id_is_idempotent_only(w: WireClient) -> None:
    a, b = init(w, None), init(w, None)
    assert a.error_code == b.error_code == 0
    assert a.producer_id != b.producer_id and a.producer_epoch == 0


def test_init_with_a_stale_producer_is_fenced_per_version(w: WireClient) -> None:
    tid = new_id()
    pid, _ = init_ok(w, tid)
    init_ok(w, tid)  # epoch 1
    r = init(w, tid, producer_id=pid, producer_epoch=0, version=4)
    assert r.error_code == ErrorCode.PRODUCER_FENCED
    r = init(w, tid, producer_id=pid, producer_epoch=0, version=3)
    assert r.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    r = init(w, tid, producer_id=pid, producer_epoch=1, version=4)
    assert (r.error_code, r.producer_id, r.producer_epoch) == (0, pid, 2)


# -- two-phase commit (InitProducerId v6, KIP-939) -----------------------------------------------


def init_2pc(w: WireClient, tid: str, **kw: Any) -> Any:
    return init(w, tid, version=6, enable2_pc=True, **kw)


def test_a_two_phase_commit_transaction_never_times_out(w: WireClient) -> None:
    start = log_end(w, 0)
    tid, timed = new_id("2pc"), new_id()
    r = init_2pc(w, tid, timeout=200)  # the producer's timeout is not used
    assert r.error_code == 0 and (r.ongoing_txn_producer_id, r.ongoing_txn_producer_epoch) == (
        -1,
        -1,
    )
    pid, epoch = r.producer_id, r.producer_epoch
    assert add_partitions(w, tid, pid, epoch, [0]) == {0: 0}
    assert produce(w, tid, 0, batch(pid, epoch, 0, [b"prepared"])).error_code == 0
    # An ordinary transaction with a 200 ms timeout, open at the same time, is aborted.
    tpid, tepoch = init_ok(w, timed, timeout=200)
    assert add_partitions(w, timed, tpid, tepoch, [1]) == {1: 0}
    assert wait_for(lambda: state_of(w, timed) == "CompleteAbort", timeout=5)
    [s] = describe(w, [tid]).transaction_states
    assert (s.transaction_state, s.transaction_timeout_ms) == ("Ongoing", 2**31 - 1)
    listed = w.call(66, 1, req(66, state_filters=["Ongoing"], producer_id_filters=[pid]))
    assert [t.transactional_id for t in listed.transaction_states] == [tid]
    assert fetch(w, 0, start, 1).last_stable_offset == start  # held open, not aborted
    # Its producer (or the next incarnation) still ends it.
    assert end_txn(w, tid, pid, epoch, True) == 0
    assert wait_for(lambda: state_of(w, tid) == "CompleteCommit")
    assert values_of(fetch(w, 0, start, 1).records) == [b"prepared"]


def test_a_new_two_phase_producer_without_keep_prepared_aborts_the_open_one(
    w: WireClient,
) -> None:
    start = log_end(w, 1)
    tid = new_id("2pc")
    r = init_2pc(w, tid)
    pid, epoch = r.producer_id, r.producer_epoch
    assert add_partitions(w, tid, pid, epoch, [1]) == {1: 0}
    assert produce(w, tid, 1, batch(pid, epoch, 0, [b"lost"])).error_code == 0
    # Kafka 4.4 does not keep a prepared transaction for the next producer yet.
    kept = init_2pc(w, tid, keep_prepared_txn=True)
    assert (kept.error_code, kept.producer_id) == (ErrorCode.UNSUPPORTED_VERSION, -1)
    assert state_of(w, tid) == "Ongoing"
    first = init_2pc(w, tid)
    assert first.error_code == ErrorCode.CONCURRENT_TRANSACTIONS  # aborting it first
    assert wait_for(lambda: state_of(w, tid) == "CompleteAbort")
    again = init_2pc(w, tid)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (0, pid, epoch + 2)
    got = fetch(w, 1, start, 1)
    assert got.last_stable_offset == got.high_watermark
    assert [a.producer_id for a in got.aborted_transactions] == [pid]
    assert control_kinds(got.records) == [ABORT_MARKER]


def test_two_phase_commit_needs_the_broker_config_and_unstable_versions() -> None:
    with BackgroundCluster(configs={"unstable.api.versions.enable": "true"}) as off:
        with WireClient(off.bootstrap) as w:
            assert w.call(10, 3, req(10, key="2pc", key_type=1)).error_code == 0
            refused = wait_for(
                lambda: (r := init_2pc(w, "2pc")).error_code != ErrorCode.COORDINATOR_NOT_AVAILABLE
                and r
            )
            assert refused.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            assert init(w, "2pc", version=6).error_code == 0  # without 2PC: served
    with BackgroundCluster(configs={"unstable.api.versions.enable": "false"}) as stable:
        with WireClient(stable.bootstrap) as w:
            versions = w.call(18, 3, req(18, client_software_name="t", client_software_version="1"))
            [api] = [a for a in versions.api_keys if a.api_key == 22]
            assert api.max_version == 5  # v6 is unstable in Kafka 4.4


# -- state machine and errors -------------------------------------------------------------------


def test_add_partitions_errors(w: WireClient) -> None:
    tid = new_id()
    pid, epoch = init_ok(w, tid)
    assert add_partitions(w, "unknown-" + tid, pid, epoch, [0]) == {
        0: ErrorCode.INVALID_PRODUCER_ID_MAPPING
    }
    assert add_partitions(w, tid, pid + 1000, epoch, [0]) == {
        0: ErrorCode.INVALID_PRODUCER_ID_MAPPING
    }
    assert add_partitions(w, tid, pid, epoch + 1, [0]) == {0: ErrorCode.PRODUCER_FENCED}
    assert add_partitions(w, tid, pid, epoch + 1, [0], version=1) == {
        0: ErrorCode.INVALID_PRODUCER_EPOCH
    }
    assert add_partitions(w, tid, pid, epoch, [0, 99]) == {
        0: ErrorCode.OPERATION_NOT_ATTEMPTED,
        99: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert state_of(w, tid) == "Empty"
    assert add_partitions(w, tid, pid, epoch, [0, 1]) == {0: 0, 1: 0}
    assert state_of(w, tid) == "Ongoing"
    assert add_partitions(w, tid, pid, epoch, [1]) == {1: 0}  # already in: nothing written


def test_end_txn_state_rules(w: WireClient) -> None:
    tid = new_id()
    pid, epoch = init_ok(w, tid)
    assert end_txn(w, tid, pid, epoch, True) == ErrorCode.INVALID_TXN_STATE  # Empty
    assert end_txn(w, "nope-" + tid, pid, epoch, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert add_partitions(w, tid, pid, epoch, [0]) == {0: 0}
    assert end_txn(w, tid, pid, epoch + 1, True) == ErrorCode.PRODUCER_FENCED
    assert end_txn(w, tid, pid, epoch + 1, True, version=1) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert end_txn(w, tid, pid, epoch, True) == 0
    assert wait_for(lambda: state_of(w, tid) == "CompleteCommit")
    assert end_txn(w, tid, pid, epoch, True) == 0  # a retried commit
    assert end_txn(w, tid, pid, epoch, False) == ErrorCode.INVALID_TXN_STATE
    assert add_partitions(w, tid, pid, epoch, [0]) == {0: 0}
    assert end_txn(w, tid, pid, epoch, False) == 0
    assert wait_for(lambda: state_of(w, tid) == "CompleteAbort")
    assert end_txn(w, tid, pid, epoch, True) == ErrorCode.INVALID_TXN_STATE


def test_requests_during_prepare_get_concurrent_transactions(cluster: BackgroundCluster) -> None:
    # Hold the markers back: with the partition's leader paused no marker can be written,
    # so the transaction stays in PrepareCommit.
    assert cluster.cluster is not None
    with BackgroundCluster(2, configs=CONFIGS) as c2:
        assert c2.cluster is not None
        md = c2.cluster.metadata
        c2.call(lambda: md.create_topic("held", 1, 1, assignments=None))
        leader = md.partition("held", 0).leader  # type: ignore[union-attr]
        tc = c2.cluster.brokers[0].txn_coordinator
        owners = {t: c2.call(functools.partial(tc.coordinator_for, t)) for t in ids(20, "held")}
        tid = next(t for t, owner in owners.items() if owner != leader)
        coordinator = 1 - leader
        b = md.brokers[coordinator]
        with WireClient(f"{b.host}:{b.port}") as w:
            pid, epoch = init_ok(w, tid)
            assert add_partitions(w, tid, pid, epoch, [0], topic="held") == {0: 0}
            c2.run(c2.cluster.pause_broker(leader))
            assert end_txn(w, tid, pid, epoch, True) == 0
            assert state_of(w, tid) == "PrepareCommit"
            assert end_txn(w, tid, pid, epoch, True) == ErrorCode.CONCURRENT_TRANSACTIONS
            assert end_txn(w, tid, pid, epoch, False) == ErrorCode.INVALID_TXN_STATE
            assert init(w, tid).error_code == ErrorCode.CONCURRENT_TRANSACTIONS
            c2.run(c2.cluster.resume_broker(leader))
            assert wait_for(lambda: state_of(w, tid) == "CompleteCommit")


def test_a_complete_state_the_log_refused_is_written_again_once_it_can_be() -> None:
    """The markers are written but the state log cannot take the Complete record (its
    follower is away and min.insync.replicas is 2): the coordinator retries it, as Kafka's
    marker channel does, rather than leave the id in PrepareCommit for good (every later
    request of its producer would get CONCURRENT_TRANSACTIONS)."""
    configs = {
        **CONFIGS,
        "transaction.state.log.replication.factor": "2",
        "min.insync.replicas": "2",
    }
    with BackgroundCluster(3, configs=configs) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        with WireClient(c.bootstrap) as w0:
            assert w0.call(10, 3, req(10, key="any", key_type=1)).error_code == 0
        tc = c.cluster.brokers[0].txn_coordinator
        tid = "complete-retried"
        state = md.partition(TXN_STATE_TOPIC, c.call(functools.partial(tc.partition_of, tid)))
        assert state is not None
        coordinator = state.leader
        follower = next(r for r in state.replicas if r != coordinator)
        data_leader = next(b for b in md.brokers if b not in (coordinator, follower))
        c.call(
            lambda: md.create_topic(
                "held", assignments={0: [data_leader]}, configs={"min.insync.replicas": "1"}
            )
        )
        b = md.brokers[coordinator]
        with WireClient(f"{b.host}:{b.port}") as w:
            pid, epoch = init_ok(w, tid)
            assert add_partitions(w, tid, pid, epoch, [0], topic="held") == {0: 0}
            c.run(c.cluster.pause_broker(data_leader))  # no marker can be written yet
            assert end_txn(w, tid, pid, epoch, True) == 0
            c.run(c.cluster.pause_broker(follower))  # the state log now refuses appends
            c.run(c.cluster.resume_broker(data_leader))
            held = c.call(lambda: md.partition("held", 0))
            # The marker goes in; the Complete record cannot.
            assert wait_for(lambda: log_end_of(c, data_leader, "held") > 0)
            time.sleep(0.5)
            assert state_of(w, tid) == "PrepareCommit", held
            c.run(c.cluster.resume_broker(follower))
            assert wait_for(lambda: state_of(w, tid) == "CompleteCommit", timeout=15.0)


def log_end_of(c: BackgroundCluster, node: int, topic: str) -> int:
    assert c.cluster is not None
    rm = c.cluster.brokers[node].replica_manager
    return int(c.call(lambda: rm.leader_partition(TopicPartition(topic, 0)).log.log_end_offset))


# -- markers, LSO, read_committed -------------------------------------------------------------


def test_commit_and_abort_write_markers_and_read_committed_sees_only_committed(
    w: WireClient,
) -> None:
    start = log_end(w, 1)
    tid = new_id()
    pid, epoch = init_ok(w, tid)
    assert add_partitions(w, tid, pid, epoch, [1]) == {1: 0}
    assert produce(w, tid, 1, batch(pid, epoch, 0, [b"c1", b"c2"])).error_code == 0
    # Open transaction: the LSO stays at its first offset; read_committed sees nothing.
    open_view = fetch(w, 1, start, 1)
    assert open_view.last_stable_offset == start
    assert open_view.high_watermark == start + 2
    assert values_of(open_view.records) == []
    assert values_of(fetch(w, 1, start, 0).records) == [b"c1", b"c2"]
    assert end_txn(w, tid, pid, epoch, True) == 0
    assert wait_for(lambda: fetch(w, 1, start, 1).last_stable_offset == start + 3)

    assert add_partitions(w, tid, pid, epoch, [1]) == {1: 0}
    assert produce(w, tid, 1, batch(pid, epoch, 2, [b"a1"])).error_code == 0
    assert end_txn(w, tid, pid, epoch, False) == 0
    assert wait_for(lambda: fetch(w, 1, start, 1).last_stable_offset == start + 5)

    committed = fetch(w, 1, start, 1)
    # Whole batches below the LSO, the aborted one listed so the consumer drops it.
    assert values_of(committed.records) == [b"c1", b"c2", b"a1"]
    assert control_kinds(committed.records) == [COMMIT_MARKER, ABORT_MARKER]
    assert [(a.producer_id, a.first_offset) for a in committed.aborted_transactions] == [
        (pid, start + 3)
    ]
    # read_uncommitted gets no aborted list at all.
    assert fetch(w, 1, start, 0).aborted_transactions is None
    # Fetching after the aborted range lists nothing.
    assert fetch(w, 1, start + 5, 1).aborted_transactions == []


def test_list_offsets_latest_read_committed_is_the_lso(w: WireClient) -> None:
    tid = new_id()
    pid, epoch = init_ok(w, tid)
    assert add_partitions(w, tid, pid, epoch, [0]) == {0: 0}
    first = produce(w, tid, 0, batch(pid, epoch, 0, [b"x"])).base_offset
    Req: Any = message_type(2, "request")

    def latest(isolation: int) -> int:
        r = w.call(
            2,
            5,
            Req(
                replica_id=-1,
                isolation_level=isolation,
                topics=[
                    Req.ListOffsetsTopic(
                        name=TOPIC,
                        partitions=[Req.ListOffsetsPartition(partition_index=0, timestamp=-1)],
                    )
                ],
            ),
        )
        return int(r.topics[0].partitions[0].offset)

    assert latest(1) == first
    assert latest(0) == first + 1
    assert end_txn(w, tid, pid, epoch, True) == 0
    assert wait_for(lambda: latest(1) == first + 2)


def test_describe_producers_reports_the_current_txn_start(w: WireClient) -> None:
    tid = new_id()
    pid, epoch = init_ok(w, tid)
    assert add_partitions(w, tid, pid, epoch, [0]) == {0: 0}
    first = produce(w, tid, 0, batch(pid, epoch, 0, [b"x"])).base_offset
    Req: Any = message_type(61, "request")

    def start() -> int:
        r = w.call(61, 0, Req(topics=[Req.TopicRequest(name=TOPIC, partition_indexes=[0])]))
        [p] = [p for p in r.topics[0].partitions[0].active_producers if p.producer_id == pid]
        return int(p.current_txn_start_offset)

    assert start() == first
    assert end_txn(w, tid, pid, epoch, False) == 0
    assert wait_for(lambda: start() == -1)


def test_transactional_produce_needs_the_partition_in_the_transaction(w: WireClient) -> None:
    tid = new_id()
    pid, epoch = init_ok(w, tid)
    r = produce(w, tid, 0, batch(pid, epoch, 0, [b"x"]))
    assert r.error_code == ErrorCode.INVALID_TXN_STATE
    r = produce(w, None, 0, batch(pid, epoch, 0, [b"x"]))
    assert r.error_code == ErrorCode.INVALID_TXN_STATE
    assert add_partitions(w, tid, pid, epoch, [0]) == {0: 0}
    assert produce(w, tid, 1, batch(pid, epoch, 0, [b"x"])).error_code == (
        ErrorCode.INVALID_TXN_STATE
    )
    assert produce(w, tid, 0, batch(pid, epoch, 0, [b"x"])).error_code == 0
    assert end_txn(w, tid, pid, epoch, False) == 0


# -- fencing and timeouts ---------------------------------------------------------------------


def test_new_init_fences_the_old_producer_and_aborts_its_transaction(w: WireClient) -> None:
    start = log_end(w, 0)
    tid = new_id()
    pid, epoch = init_ok(w, tid)
    assert add_partitions(w, tid, pid, epoch, [0]) == {0: 0}
    assert produce(w, tid, 0, batch(pid, epoch, 0, [b"zombie"])).error_code == 0
    # A second instance: the first call aborts the open transaction and says retry.
    assert init(w, tid).error_code == ErrorCode.CONCURRENT_TRANSACTIONS
    pid2, epoch2 = init_ok(w, tid)
    assert pid2 == pid and epoch2 == epoch + 2  # one bump for the abort, one for the init
    # The zombie is fenced everywhere.
    assert add_partitions(w, tid, pid, epoch, [0]) == {0: ErrorCode.PRODUCER_FENCED}
    assert end_txn(w, tid, pid, epoch, True) == ErrorCode.PRODUCER_FENCED
    r = produce(w, None, 0, batch(pid, epoch, 1, [b"late"], transactional=False))
    assert r.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    got = fetch(w, 0, start, 1)
    assert values_of(got.records) == [b"zombie"]
    assert [a.producer_id for a in got.aborted_transactions] == [pid]
    assert control_kinds(got.records) == [ABORT_MARKER]


def test_a_transaction_past_its_timeout_is_aborted(w: WireClient) -> None:
    start = log_end(w, 1)
    tid = new_id()
    pid, epoch = init_ok(w, tid, timeout=200)
    assert add_partitions(w, tid, pid, epoch, [1]) == {1: 0}
    assert produce(w, tid, 1, batch(pid, epoch, 0, [b"slow"])).error_code == 0
    assert wait_for(lambda: state_of(w, tid) == "CompleteAbort", timeout=5)
    [s] = describe(w, [tid]).transaction_states
    assert s.producer_epoch == epoch + 1  # fenced
    assert end_txn(w, tid, pid, epoch, True) == ErrorCode.PRODUCER_FENCED
    got = fetch(w, 1, start, 1)
    assert got.last_stable_offset == got.high_watermark
    assert [a.producer_id for a in got.aborted_transactions] == [pid]


# -- transactional offset commits ---------------------------------------------------------------


def _completed(w: WireClient, tid: str) -> bool:
    return state_of(w, tid) in ("CompleteCommit", "CompleteAbort")


def _committed(w: WireClient, group: str, stable: bool = False) -> int:
    """The group's committed offset of partition 0 (or the partition's error code, negated,
    when there is one)."""
    Req: Any = message_type(9, "request")
    r = w.call(
        9,
        7,
        Req(
            group_id=group,
            topics=[Req.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0])],
            require_stable=stable,
        ),
    )
    p = r.topics[0].partitions[0]
    return -int(p.error_code) if p.error_code else int(p.committed_offset)


def test_txn_offset_commit_is_visible_only_after_commit(w: WireClient) -> None:
    for commit in (True, False):
        tid, group = new_id(), new_id("group")
        pid, epoch = init_ok(w, tid)
        r = w.call(
            25,
            3,
            req(25, transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group),
        )
        assert r.error_code == 0
        [s] = describe(w, [tid]).transaction_states
        assert [t.topic for t in s.topics] == [OFFSETS_TOPIC]
        assert txn_commit_offset(w, tid, group, pid, epoch, 42) == 0
        assert _committed(w, group) == -1  # pending: not visible yet
        assert _committed(w, group, stable=True) == -ErrorCode.UNSTABLE_OFFSET_COMMIT
        assert end_txn(w, tid, pid, epoch, commit) == 0
        done = functools.partial(_completed, w, tid)
        assert wait_for(done)
        assert _committed(w, group) == (42 if commit else -1)
        assert _committed(w, group, stable=True) == (42 if commit else -1)


def test_txn_offset_commit_with_a_stale_epoch_is_refused(w: WireClient) -> None:
    tid, group = new_id(), new_id("group")
    pid, epoch = init_ok(w, tid)
    w.call(
        25, 3, req(25, transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group)
    )
    assert txn_commit_offset(w, tid, group, pid, epoch, 1) == 0
    assert end_txn(w, tid, pid, epoch, True) == 0
    assert wait_for(lambda: state_of(w, tid) == "CompleteCommit")
    pid, epoch2 = init_ok(w, tid)
    w.call(
        25, 3, req(25, transactional_id=tid, producer_id=pid, producer_epoch=epoch2, group_id=group)
    )
    assert txn_commit_offset(w, tid, group, pid, epoch2, 2) == 0
    assert txn_commit_offset(w, tid, group, pid, epoch, 3) == ErrorCode.INVALID_PRODUCER_EPOCH


def _txn_with_offsets(w: WireClient, group: str) -> tuple[str, int, int]:
    """A transaction begun with AddOffsetsToTxn for ``group``: (id, producer id, epoch)."""
    tid = new_id()
    pid, epoch = init_ok(w, tid)
    added = w.call(
        25, 3, req(25, transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group)
    )
    assert added.error_code == 0
    return tid, pid, epoch


def test_txn_offset_commits_of_a_consumer_protocol_member_reach_its_group(w: WireClient) -> None:
    """A KIP-848 member's transactional commits land in its group, where OffsetFetch reads
    them, and its next transaction may commit again; a stale member epoch is refused."""
    group = new_id("consumer-group")
    # Clients look the coordinator up first; that creates __consumer_offsets.
    assert w.call(10, 3, req(10, key=group, key_type=0)).error_code == 0
    hb = w.call(
        68,
        0,
        req(
            68,
            group_id=group,
            member_id="",
            member_epoch=0,
            rebalance_timeout_ms=60000,
            subscribed_topic_names=[TOPIC],
            topic_partitions=[],
        ),
    )
    assert hb.error_code == 0 and hb.member_epoch > 0
    member = (hb.member_id, hb.member_epoch)
    for offset in (5, 9):  # the second transaction commits after the first one's marker
        tid, pid, epoch = _txn_with_offsets(w, group)
        assert txn_commit_offset(w, tid, group, pid, epoch, offset, TOPIC, member) == 0
        assert end_txn(w, tid, pid, epoch, True) == 0
        assert wait_for(functools.partial(_completed, w, tid))
        assert _committed(w, group) == offset
    tid, pid, epoch = _txn_with_offsets(w, group)
    stale = (hb.member_id, hb.member_epoch + 1)
    assert txn_commit_offset(w, tid, group, pid, epoch, 11, TOPIC, stale) == (
        ErrorCode.ILLEGAL_GENERATION
    )
    assert txn_commit_offset(w, tid, group, pid, epoch, 11, TOPIC, ("stranger", 1)) == (
        ErrorCode.UNKNOWN_MEMBER_ID
    )
    assert end_txn(w, tid, pid, epoch, False) == 0


# -- several brokers ----------------------------------------------------------------------------


def test_transactional_ids_spread_over_coordinators_and_markers_reach_every_leader() -> None:
    with BackgroundCluster(3, configs=CONFIGS) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic(TOPIC, 3, 2))
        with WireClient(c.bootstrap) as w:
            owners = {}
            for i in range(40):
                r = w.call(10, 3, req(10, key=f"spread-{i}", key_type=1))
                assert r.error_code == 0
                owners[f"spread-{i}"] = (r.node_id, r.host, r.port)
        assert len({o[0] for o in owners.values()}) == 3
        tid, (node, host, port) = next(iter(owners.items()))
        leaders = {p.index: p.leader for p in md.topic(TOPIC).partitions}  # type: ignore[union-attr]
        assert len(set(leaders.values())) == 3
        with WireClient(f"{host}:{port}") as coord:
            pid, epoch = init_ok(coord, tid)
            assert add_partitions(coord, tid, pid, epoch, [0, 1, 2]) == {0: 0, 1: 0, 2: 0}
            for p, leader in leaders.items():
                b = md.brokers[leader]
                with WireClient(f"{b.host}:{b.port}") as lw:
                    assert produce(lw, tid, p, batch(pid, epoch, 0, [b"v%d" % p])).error_code == 0
            # A wrong coordinator says so.
            other = md.brokers[(node + 1) % 3]
            with WireClient(f"{other.host}:{other.port}") as wrong:
                assert end_txn(wrong, tid, pid, epoch, True) == ErrorCode.NOT_COORDINATOR
            assert end_txn(coord, tid, pid, epoch, True) == 0
            assert wait_for(lambda: state_of(coord, tid) == "CompleteCommit")
        for p, leader in leaders.items():
            b = md.brokers[leader]
            with WireClient(f"{b.host}:{b.port}") as lw:
                got = wait_for(
                    lambda lw=lw, p=p: (lambda f: f if f.last_stable_offset == 2 else None)(
                        fetch(lw, p, 0, 1)
                    )
                )
                assert got, f"partition {p} did not become stable"
                assert values_of(got.records) == [b"v%d" % p]
                assert control_kinds(got.records) == [COMMIT_MARKER]


# -- ListTransactions and DescribeTransactions ----------------------------------------------------


@pytest.fixture(scope="module")
def many(cluster: BackgroundCluster) -> list[str]:
    """1,000 transactional ids (half with an open transaction) on one broker."""
    ids = [f"many-{i:04d}" for i in range(1000)]
    with WireClient(cluster.bootstrap) as w:
        for n, tid in enumerate(ids):
            pid, epoch = init_ok(w, tid)
            if n % 2:
                assert add_partitions(w, tid, pid, epoch, [n % 2]) == {n % 2: 0}
    return ids


def _list(w: WireClient, version: int, **kw: Any) -> Any:
    return w.call(66, version, req(66, **kw))


def test_list_transactions_v2_filters_by_a_pattern_of_the_whole_id(
    w: WireClient, many: list[str]
) -> None:
    def listed(version: int, pattern: str) -> Any:
        return _list(
            w, version, state_filters=[], producer_id_filters=[], transactional_id_pattern=pattern
        )

    r = listed(2, "many-00[0-3][05]")
    assert r.error_code == 0
    want = [i for i in many if i[:7] == "many-00" and i[7] in "0123" and i[8] in "05"]
    assert len(want) == 8
    assert sorted(t.transactional_id for t in r.transaction_states) == want
    assert listed(2, "many-000").transaction_states == []  # the whole id must match
    bad = listed(2, "(")
    assert (bad.error_code, bad.transaction_states) == (ErrorCode.INVALID_REGULAR_EXPRESSION, [])


def test_list_transactions_filters(w: WireClient, many: list[str]) -> None:
    r = _list(w, 0, state_filters=["Ongoing", "Bogus"], producer_id_filters=[])
    assert r.error_code == 0 and list(r.unknown_state_filters) == ["Bogus"]
    ongoing = [s.transactional_id for s in r.transaction_states if s.transactional_id in many]
    assert ongoing == many[1::2]
    assert all(s.transaction_state == "Ongoing" for s in r.transaction_states)
    r = _list(w, 0, state_filters=["Bogus"], producer_id_filters=[])
    assert list(r.transaction_states) == []
    one = r = _list(w, 0, state_filters=[], producer_id_filters=[])
    pid = next(s.producer_id for s in one.transaction_states if s.transactional_id == many[7])
    r = _list(w, 0, state_filters=[], producer_id_filters=[pid])
    assert [s.transactional_id for s in r.transaction_states] == [many[7]]
    r = _list(w, 1, state_filters=["Ongoing"], producer_id_filters=[], duration_filter=3_600_000)
    assert list(r.transaction_states) == []
    r = _list(w, 1, state_filters=["Ongoing"], producer_id_filters=[], duration_filter=0)
    assert len([s for s in r.transaction_states if s.transactional_id in many]) == 500


def _walk_list(w: WireClient, limit: int) -> list[tuple[str, int]]:
    Req: Any = message_type(66, "request")
    out: list[tuple[str, int]] = []
    cursor = None
    for _ in range(3000):
        r = _list(
            w,
            paged_version(66),
            state_filters=[],
            producer_id_filters=[],
            response_pagination_limit=limit,
            cursor=cursor,
        )
        assert r.error_code == 0
        assert len(r.transaction_states) <= limit
        out.extend((s.transactional_id, s.producer_id) for s in r.transaction_states)
        if r.next_cursor is None:
            return out
        assert len(r.transaction_states) == limit  # only a full page has a next one
        cursor = Req.TransactionalCursor(
            transactional_id=r.next_cursor.transactional_id,
            producer_id=r.next_cursor.producer_id,
        )
    raise AssertionError("pagination did not end")


@pytest.mark.slow
@pytest.mark.parametrize("limit", [1, 7, 2000])
def test_list_transactions_pages_walk_every_id_once_in_order(
    w: WireClient, many: list[str], limit: int
) -> None:
    full = _list(w, 1, state_filters=[], producer_id_filters=[])
    unpaged = [(s.transactional_id, s.producer_id) for s in full.transaction_states]
    assert len(unpaged) >= 1000
    assert [t for t, _ in unpaged] == sorted(t for t, _ in unpaged)
    paged = _walk_list(w, limit)
    assert paged == unpaged


def test_list_transactions_page_limits(
    cluster: BackgroundCluster, w: WireClient, many: list[str]
) -> None:
    # Zero or negative limits still make progress (at least one item).
    r = _list(
        w, paged_version(66), state_filters=[], producer_id_filters=[], response_pagination_limit=0
    )
    assert len(r.transaction_states) == 1 and r.next_cursor is not None
    # The broker's cap wins over a larger request.
    assert cluster.cluster is not None
    configs = cluster.cluster.configs
    cluster.call(lambda: configs.dynamic_default.update({"max.request.pagination.size.limit": "5"}))
    try:
        r = _list(
            w,
            paged_version(66),
            state_filters=[],
            producer_id_filters=[],
            response_pagination_limit=100,
        )
        assert len(r.transaction_states) == 5
    finally:
        cluster.call(lambda: configs.dynamic_default.pop("max.request.pagination.size.limit"))
    # Older versions answer in full.
    r = _list(w, 1, state_filters=[], producer_id_filters=[])
    assert len(r.transaction_states) >= 1000
    Req: Any = message_type(66, "request")
    bad = Req.TransactionalCursor(transactional_id="many-0001", producer_id=-5)
    r = _list(w, paged_version(66), state_filters=[], producer_id_filters=[], cursor=bad)
    assert r.error_code == ErrorCode.INVALID_REQUEST


def _walk_describe(w: WireClient, ids: list[str], limit: int) -> list[str]:
    Req: Any = message_type(65, "request")
    out: list[str] = []
    cursor = None
    for _ in range(3000):
        r = describe(w, ids, 1, response_pagination_limit=limit, cursor=cursor)
        assert 1 <= len(r.transaction_states) <= limit
        out.extend(s.transactional_id for s in r.transaction_states)
        if r.next_cursor is None:
            return out
        cursor = Req.TransactionalCursor(
            transactional_id=r.next_cursor.transactional_id,
            producer_id=r.next_cursor.producer_id,
        )
    raise AssertionError("pagination did not end")


@pytest.mark.slow
@pytest.mark.parametrize("limit", [1, 7, 2000])
def test_describe_transactions_pages_walk_every_id_once_in_order(
    w: WireClient, many: list[str], limit: int
) -> None:
    ids = [*many, "missing-id"]
    unpaged = describe(w, ids, 0).transaction_states
    assert [s.transactional_id for s in unpaged] == ids
    assert unpaged[-1].error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    assert _walk_describe(w, ids, limit) == ids


def test_describe_transactions_contents_and_bad_cursors(w: WireClient, many: list[str]) -> None:
    r = describe(w, [many[1], many[2]])
    ongoing, empty = r.transaction_states
    assert (ongoing.error_code, ongoing.transaction_state) == (0, "Ongoing")
    assert [(t.topic, list(t.partitions)) for t in ongoing.topics] == [(TOPIC, [1])]
    assert ongoing.transaction_start_time_ms > 0 and ongoing.transaction_timeout_ms == 60000
    assert (empty.transaction_state, list(empty.topics)) == ("Empty", [])
    Req: Any = message_type(65, "request")
    bad = Req.TransactionalCursor(transactional_id="not-asked", producer_id=0)
    r = describe(w, [many[1], many[2]], 1, cursor=bad)
    assert [s.error_code for s in r.transaction_states] == [ErrorCode.INVALID_REQUEST] * 2
    assert r.next_cursor is None
    # A page that starts at the cursor's id.
    start = Req.TransactionalCursor(transactional_id=many[2], producer_id=0)
    r = describe(w, [many[1], many[2], many[3]], 1, cursor=start, response_pagination_limit=1)
    assert [s.transactional_id for s in r.transaction_states] == [many[2]]
    assert r.next_cursor.transactional_id == many[3]


def _features(r: Any) -> dict[str, tuple[int, int]]:
    return {f.name: (f.min_version_level, f.max_version_level) for f in r.finalized_features}


def test_api_versions_advertise_the_transaction_apis(w: WireClient) -> None:
    r = w.call(18, 3, req(18, client_software_name="t", client_software_version="1"))
    ranges = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert ranges[0] == (0, 13)
    assert ranges[22] == (0, 6)  # v6 (two-phase commit) is unstable in Kafka 4.4
    assert ranges[24] == (0, 5)
    assert ranges[25] == (0, 4)
    assert ranges[26] == (0, 5)
    assert ranges[28] == (0, 6)
    assert ranges[65] == (0, 1)  # unstable versions are enabled in this cluster
    assert ranges[66] == (0, 3)  # 2 is Kafka's (KIP-1152), 3 pages (seed 001)
    # Transactions v2 is on, as the finalized feature Kafka's Java client reads.
    assert _features(r)["transaction.version"] == (2, 2)
    assert r.finalized_features_epoch >= 0
    assert {f.name: f.max_version for f in r.supported_features}["transaction.version"] == 2


def test_capping_a_transactions_v2_version_finalizes_transactions_v1() -> None:
    configs = {**CONFIGS, "kafkagen.api.version.max": "EndTxn:4"}
    with BackgroundCluster(configs=configs) as c, WireClient(c.bootstrap) as w:
        r = w.call(18, 3, req(18, client_software_name="t", client_software_version="1"))
        ranges = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
        assert ranges[26] == (0, 4)
        assert _features(r)["transaction.version"] == (1, 1)


# -- transactions v2 (KIP-890): Produce v12+, EndTxn v5, TxnOffsetCommit v5+ -----------------


def produce_v(
    w: WireClient,
    version: int,
    tid: str | None,
    partition: int,
    data: bytes,
    topic_id: uuid.UUID | None = None,
) -> Any:
    """The answer for TOPIC of a Produce at ``version`` (from v13 naming the topic by its id,
    or by ``topic_id``)."""
    if version >= 13 and topic_id is None:
        topic_id = topic_ids(w)[TOPIC]
    r = w.call(0, version, produce_request(version, tid, partition, data, topic_id))
    [topic_response] = r.responses
    return topic_response


def produce_request(
    version: int, tid: str | None, partition: int, data: bytes, topic_id: uuid.UUID | None = None
) -> Any:
    """A Produce of ``data`` to TOPIC's ``partition`` (by ``topic_id`` from v13)."""
    Req: Any = message_type(0, "request")
    named: dict[str, Any] = {"name": TOPIC} if version < 13 else {"topic_id": topic_id}
    return Req(
        transactional_id=tid,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            Req.TopicProduceData(
                **named,
                partition_data=[Req.PartitionProduceData(index=partition, records=data)],
            )
        ],
    )


def topic_ids(w: WireClient) -> dict[str, Any]:
    r = w.call(3, 12, req(3, topics=None))
    return {t.name: t.topic_id for t in r.topics}


def end_txn_v5(w: WireClient, tid: str, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
    """EndTxn v5: (error code, producer id, producer epoch)."""
    r = w.call(
        26,
        5,
        req(26, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit),
    )
    return int(r.error_code), int(r.producer_id), int(r.producer_epoch)


def partitions_of(w: WireClient, tid: str) -> set[tuple[str, int]]:
    [s] = describe(w, [tid]).transaction_states
    return {(t.topic, p) for t in s.topics for p in t.partitions}


def test_produce_v12_adds_the_partition_and_end_txn_v5_bumps_the_epoch(w: WireClient) -> None:
    tid = new_id()
    pid, epoch = init_ok(w, tid)
    start = log_end(w, 1)
    # No AddPartitionsToTxn: the broker adds the partition itself.
    p = produce_v(w, 12, tid, 1, batch(pid, epoch, 0, [b"kept"])).partition_responses[0]
    assert p.error_code == 0, p
    assert state_of(w, tid) == "Ongoing"
    assert partitions_of(w, tid) == {(TOPIC, 1)}
    # The commit ends under the next epoch, which the answer gives the producer.
    assert end_txn_v5(w, tid, pid, epoch, True) == (0, pid, epoch + 1)
    assert wait_for(lambda: state_of(w, tid) == "CompleteCommit")
    r = fetch(w, 1, start, 1)
    assert values_of(r.records) == [b"kept"]
    markers = [b for b in iter_batches(r.records or b"") if b.is_control]
    assert [(m.producer_id, m.producer_epoch) for m in markers] == [(pid, epoch + 1)]
    # The next transaction uses the new epoch from sequence 0; this one is aborted.
    p = produce_v(w, 12, tid, 1, batch(pid, epoch + 1, 0, [b"dropped"])).partition_responses[0]
    assert p.error_code == 0, p
    assert end_txn_v5(w, tid, pid, epoch + 1, False) == (0, pid, epoch + 2)
    assert wait_for(lambda: state_of(w, tid) == "CompleteAbort")
    r = fetch(w, 1, start, 1)
    # The aborted record is served with the aborted transaction listed; clients drop it.
    assert values_of(r.records) == [b"kept", b"dropped"]
    assert [a.producer_id for a in r.aborted_transactions] == [pid]
    assert control_kinds(r.records) == [COMMIT_MARKER, ABORT_MARKER]


def test_produce_v12_refusals_are_produce_errors(w: WireClient) -> None:
    tid = new_id()
    pid, epoch = init_ok(w, tid)
    assert end_txn_v5(w, tid, pid, epoch, False) == (0, pid, epoch + 1)  # nothing open
    assert wait_for(lambda: state_of(w, tid) == "CompleteAbort")
    # The epoch before the bump is fenced; a producer id the id does not have is unknown.
    stale = produce_v(w, 12, tid, 0, batch(pid, epoch, 0, [b"x"])).partition_responses[0]
    assert stale.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    other = produce_v(w, 12, tid, 0, batch(pid + 1000, epoch + 1, 0, [b"x"]))
    assert other.partition_responses[0].error_code == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert state_of(w, tid) == "CompleteAbort"  # neither opened a transaction
    # Before v12 the broker still only checks: not added is TRANSACTION_ABORTABLE.
    v11 = produce_v(w, 11, tid, 0, batch(pid, epoch + 1, 0, [b"x"])).partition_responses[0]
    assert v11.error_code == ErrorCode.TRANSACTION_ABORTABLE


class SlowMarkers:
    """A coordinator's marker writer that hands each round of markers on ``delay_s`` late,
    as a loaded cluster does."""

    def __init__(self, inner: MarkerWriter, delay_s: float) -> None:
        self.inner = inner
        self.delay_s = delay_s
        self.rounds = 0

    def write_txn_markers(
        self, node_id: int, markers: Any, timeout_ms: int, callback: Any, *, sender: int
    ) -> bool:
        def send() -> None:
            self.rounds += 1
            if not self.inner.write_txn_markers(
                node_id, markers, timeout_ms, callback, sender=sender
            ):
                callback({})

        asyncio.get_running_loop().call_later(self.delay_s, send)
        return True


@contextlib.contextmanager
def slow_marker_cluster(
    delay_s: float, **configs: str
) -> Iterator[tuple[BackgroundCluster, WireClient, WireClient, str, SlowMarkers]]:
    """Three brokers, TOPIC replicated on all of them, and a transactional id whose
    coordinator writes markers ``delay_s`` late: (cluster, a client of the coordinator, a
    client of the leader of TOPIC's partition 1, the id, the slow writer)."""
    with BackgroundCluster(3, configs={**CONFIGS, **configs}) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic(TOPIC, 2, 3))
        tid = new_id("slow-markers")
        with WireClient(c.bootstrap) as w0:
            node = w0.call(10, 3, req(10, key=tid, key_type=1)).node_id
        tc = c.cluster.brokers[node].txn_coordinator
        slow = SlowMarkers(tc._markers, delay_s)
        c.call(lambda: setattr(tc, "_markers", slow))
        coordinator, leader = md.brokers[node], md.brokers[md.partition(TOPIC, 1).leader]
        with (
            WireClient(f"{coordinator.host}:{coordinator.port}") as w,
            WireClient(f"{leader.host}:{leader.port}") as lw,
        ):
            yield c, w, lw, tid, slow


def test_produce_v12_waits_out_the_previous_transactions_markers() -> None:
    """A transactions v2 producer sends its next transaction's first batch as soon as
    EndTxn answers, while the coordinator is still writing the markers: the broker asks
    the coordinator again until it can add the partition, as Kafka's does, instead of
    answering NOT_ENOUGH_REPLICAS (which made the producer back off and reorder)."""
    n = 12
    with slow_marker_cluster(0.15, **{"add.partitions.to.txn.retry.backoff.max.ms": "5000"}) as (
        c,
        w,
        lw,
        tid,
        slow,
    ):
        pid, epoch = init_ok(w, tid)
        start = log_end(lw, 1)
        answers: collections.Counter[int] = collections.Counter()
        prepared = 0
        for i in range(n):
            # Two batches in flight at once, as a producer pipelines them: the second
            # must not overtake the first while that one waits.
            for seq, value in enumerate([b"v%d" % i, b"w%d" % i]):
                lw.send(0, 12, produce_request(12, tid, 1, batch(pid, epoch, seq, [value])))
            for _ in range(2):
                [p] = lw.receive(0, 12)[1].responses[0].partition_responses
                answers[p.error_code] += 1
            code, pid, epoch = end_txn_v5(w, tid, pid, epoch, i % 3 != 1)
            assert code == 0
            prepared += state_of(w, tid).startswith("Prepare")
        assert wait_for(lambda: state_of(w, tid).startswith("Complete"))
        # Every first batch met a transaction still completing, and was written once.
        assert prepared == n and slow.rounds == n
        assert answers == {0: 2 * n}, answers
        # Each transaction's batches sit in order before its marker: commit, abort, ...
        got = fetch(lw, 1, start, 1)
        assert values_of(got.records) == [v % i for i in range(n) for v in (b"v%d", b"w%d")]
        kinds = [ABORT_MARKER if i % 3 == 1 else COMMIT_MARKER for i in range(n)]
        assert control_kinds(got.records) == kinds
        assert len(got.aborted_transactions) == n // 3


def test_slow_markers_neither_delay_end_txn_nor_look_like_missing_replicas() -> None:
    """Markers far slower than the broker waits: EndTxn is still answered once the
    Prepare state is durable, the producer's next EndTxn CONCURRENT_TRANSACTIONS (as Kafka
    4.4 answered it in the same state), a transactions v2 batch
    CONCURRENT_TRANSACTIONS, which the producer retries, and one before v12
    NOT_ENOUGH_REPLICAS, as Kafka maps a busy coordinator for older producers."""
    with slow_marker_cluster(1.5) as (c, w, lw, tid, slow):
        pid, epoch = init_ok(w, tid)
        assert (
            produce_v(lw, 12, tid, 1, batch(pid, epoch, 0, [b"a"]))
            .partition_responses[0]
            .error_code
            == 0
        )
        began = time.monotonic()
        code, pid, epoch = end_txn_v5(w, tid, pid, epoch, True)
        assert code == 0 and time.monotonic() - began < 1.0
        assert state_of(w, tid) == "PrepareCommit"
        # The next EndTxn, under the epoch the last one returned, waits as in Kafka: a
        # commit or abort of nothing must not fence the producer or fail it.
        for commit in (True, False):
            code = end_txn_v5(w, tid, pid, epoch, commit)[0]
            assert code == ErrorCode.CONCURRENT_TRANSACTIONS, code
        began = time.monotonic()
        p = produce_v(lw, 12, tid, 1, batch(pid, epoch, 0, [b"b"])).partition_responses[0]
        waited = time.monotonic() - began
        assert p.error_code == ErrorCode.CONCURRENT_TRANSACTIONS, p
        assert 0.1 <= waited < 1.0, waited  # asked again for add.partitions...max.ms (100)
        p = produce_v(lw, 11, tid, 1, batch(pid, epoch, 0, [b"b"])).partition_responses[0]
        assert p.error_code == ErrorCode.NOT_ENOUGH_REPLICAS, p
        assert wait_for(lambda: state_of(w, tid) == "CompleteCommit")
        p = produce_v(lw, 12, tid, 1, batch(pid, epoch, 0, [b"b"])).partition_responses[0]
        assert p.error_code == 0, p
        began = time.monotonic()
        assert end_txn_v5(w, tid, pid, epoch, True) == (0, pid, epoch + 1)
        assert time.monotonic() - began < 1.0


def test_a_transactions_v2_producer_past_its_timeout_is_fenced(w: WireClient) -> None:
    tid = new_id()
    pid, epoch = init_ok(w, tid, timeout=200)
    assert (
        produce_v(w, 12, tid, 1, batch(pid, epoch, 0, [b"slow"])).partition_responses[0].error_code
        == 0
    )
    assert wait_for(lambda: state_of(w, tid) == "CompleteAbort", timeout=5)
    # One epoch on, as Kafka 4.4: the producer's own EndTxn reads as a retry of the abort.
    [s] = describe(w, [tid]).transaction_states
    assert s.producer_epoch == epoch + 1
    assert end_txn_v5(w, tid, pid, epoch, True)[0] == ErrorCode.INVALID_TXN_STATE
    assert end_txn_v5(w, tid, pid, epoch, False) == (0, pid, epoch + 1)
    late = produce_v(w, 12, tid, 1, batch(pid, epoch, 1, [b"late"])).partition_responses[0]
    assert late.error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_a_new_producer_fences_a_transactions_v2_one_epoch_on(w: WireClient) -> None:
    """The answers Kafka 4.4 gave to this sequence (one node, measured)."""
    tid = new_id()
    pid, epoch = init_ok(w, tid)
    p = produce_v(w, 12, tid, 1, batch(pid, epoch, 0, [b"open"])).partition_responses[0]
    assert p.error_code == 0
    assert init(w, tid).error_code == ErrorCode.CONCURRENT_TRANSACTIONS  # aborting it
    assert wait_for(lambda: state_of(w, tid) == "CompleteAbort")
    [s] = describe(w, [tid]).transaction_states
    assert s.producer_epoch == epoch + 1
    assert end_txn_v5(w, tid, pid, epoch, True)[0] == ErrorCode.INVALID_TXN_STATE
    assert end_txn_v5(w, tid, pid, epoch, False) == (0, pid, epoch + 1)
    assert init_ok(w, tid) == (pid, epoch + 2)


def test_end_txn_v5_state_rules_and_retries(w: WireClient) -> None:
    tid = new_id()
    pid, epoch = init_ok(w, tid)
    assert end_txn_v5(w, tid, pid, epoch, True)[0] == ErrorCode.INVALID_TXN_STATE  # Empty
    assert end_txn_v5(w, tid, pid, epoch + 1, False)[0] == ErrorCode.PRODUCER_FENCED
    assert end_txn_v5(w, tid, pid + 1000, epoch, False)[0] == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert (
        produce_v(w, 12, tid, 0, batch(pid, epoch, 0, [b"a"])).partition_responses[0].error_code
        == 0
    )
    assert end_txn_v5(w, tid, pid, epoch, True) == (0, pid, epoch + 1)
    assert wait_for(lambda: state_of(w, tid) == "CompleteCommit")
    # A retry names the epoch before the bump: the same outcome is done, the other is not.
    assert end_txn_v5(w, tid, pid, epoch, True) == (0, pid, epoch + 1)
    assert end_txn_v5(w, tid, pid, epoch, False)[0] == ErrorCode.INVALID_TXN_STATE
    # At the current epoch a commit has nothing to commit; an abort bumps again.
    assert end_txn_v5(w, tid, pid, epoch + 1, True)[0] == ErrorCode.INVALID_TXN_STATE
    assert end_txn_v5(w, tid, pid, epoch + 1, False) == (0, pid, epoch + 2)
    # Below v5 nothing is bumped: the old rules hold.
    assert end_txn(w, tid, pid, epoch + 2, False, version=4) == 0  # CompleteAbort, abort


def test_end_txn_v5_moves_to_a_new_producer_id_when_the_epochs_run_out(
    cluster: BackgroundCluster, w: WireClient
) -> None:
    tid = new_id()
    pid, _ = init_ok(w, tid)
    last = 2**15 - 2  # the highest epoch a producer id is given

    def exhaust() -> None:
        assert cluster.cluster is not None
        for broker in cluster.cluster.brokers:
            txn = broker.txn_coordinator.txns.get(tid)
            if txn is not None:
                txn.producer_epoch = last

    cluster.call(exhaust)
    assert (
        produce_v(w, 12, tid, 0, batch(pid, last, 0, [b"a"])).partition_responses[0].error_code == 0
    )
    code, new_pid, new_epoch = end_txn_v5(w, tid, pid, last, True)
    assert (code, new_epoch) == (0, 0) and new_pid != pid
    assert wait_for(lambda: state_of(w, tid) == "CompleteCommit")
    # The retry of that EndTxn names the old producer id and epoch.
    assert end_txn_v5(w, tid, pid, last, True) == (0, new_pid, 0)
    assert (
        produce_v(w, 12, tid, 0, batch(new_pid, 0, 0, [b"b"])).partition_responses[0].error_code
        == 0
    )
    assert end_txn_v5(w, tid, new_pid, 0, False) == (0, new_pid, 1)


def txn_commit_offset_v(
    w: WireClient, version: int, tid: str, group: str, pid: int, epoch: int, topic: Any
) -> int:
    """TxnOffsetCommit at ``version`` of offset 7 for partition 0 of ``topic`` (a name, or
    from v6 a topic id)."""
    Req: Any = message_type(28, "request")
    named = {"topic_id": topic} if version >= 6 else {"name": topic}
    r = w.call(
        28,
        version,
        Req(
            transactional_id=tid,
            group_id=group,
            producer_id=pid,
            producer_epoch=epoch,
            topics=[
                Req.TxnOffsetCommitRequestTopic(
                    **named,
                    partitions=[
                        Req.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=7)
                    ],
                )
            ],
        ),
    )
    [t] = r.topics
    if version >= 6:
        assert t.topic_id == topic
    return int(t.partitions[0].error_code)


def test_txn_offset_commit_outside_the_transaction_per_version(w: WireClient) -> None:
    tid, group = new_id(), new_id("group")
    pid, epoch = init_ok(w, tid)
    # Not added by AddOffsetsToTxn: refused before v5, INVALID_TXN_STATE before v4.
    assert txn_commit_offset_v(w, 3, tid, group, pid, epoch, TOPIC) == ErrorCode.INVALID_TXN_STATE
    abortable = ErrorCode.TRANSACTION_ABORTABLE
    assert txn_commit_offset_v(w, 4, tid, group, pid, epoch, TOPIC) == abortable
    assert state_of(w, tid) == "Empty"
    # From v5 the broker adds the group's offsets partition to the transaction.
    assert txn_commit_offset_v(w, 5, tid, group, pid, epoch, TOPIC) == 0
    assert [t for t, _ in partitions_of(w, tid)] == [OFFSETS_TOPIC]
    assert _committed(w, group) == -1
    assert end_txn_v5(w, tid, pid, epoch, True) == (0, pid, epoch + 1)
    assert wait_for(lambda: _committed(w, group) == 7)
    # A fenced epoch stays the epoch error.
    code = txn_commit_offset_v(w, 5, tid, group, pid, epoch, TOPIC)
    assert code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_txn_offset_commit_v6_and_produce_v13_name_topics_by_id(w: WireClient) -> None:
    tid, group = new_id(), new_id("group")
    pid, epoch = init_ok(w, tid)
    topic_id = topic_ids(w)[TOPIC]
    unknown = uuid.uuid4()
    r = produce_v(w, 13, tid, 0, batch(pid, epoch, 0, [b"by-id"]))
    assert (r.topic_id, r.partition_responses[0].error_code) == (topic_id, 0)
    assert txn_commit_offset_v(w, 6, tid, group, pid, epoch, topic_id) == 0
    assert txn_commit_offset_v(w, 6, tid, group, pid, epoch, unknown) == ErrorCode.UNKNOWN_TOPIC_ID
    assert {t for t, _ in partitions_of(w, tid)} == {TOPIC, OFFSETS_TOPIC}
    assert end_txn_v5(w, tid, pid, epoch, True)[0] == 0
    assert wait_for(lambda: _committed(w, group) == 7)
    t = produce_v(w, 13, None, 0, batch(-1, -1, -1, [b"x"], False), topic_id=unknown)
    assert (t.topic_id, t.partition_responses[0].error_code) == (
        unknown,
        ErrorCode.UNKNOWN_TOPIC_ID,
    )


def test_add_partitions_v4_batches_transactions_and_verifies(w: WireClient) -> None:
    Req: Any = message_type(24, "request")
    a, b = new_id(), new_id()
    pa, ea = init_ok(w, a)
    pb, eb = init_ok(w, b)

    def txn(tid: str, pid: int, epoch: int, verify: bool) -> Any:
        return Req.AddPartitionsToTxnTransaction(
            transactional_id=tid,
            producer_id=pid,
            producer_epoch=epoch,
            verify_only=verify,
            topics=[Req.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0])],
        )

    def codes(r: Any) -> dict[str, int]:
        return {
            t.transactional_id: t.topic_results[0].results_by_partition[0].partition_error_code
            for t in r.results_by_transaction
        }

    r = w.call(24, 4, Req(transactions=[txn(a, pa, ea, True), txn(b, pb, eb, False)]))
    assert r.error_code == 0
    assert codes(r) == {a: ErrorCode.INVALID_TXN_STATE, b: 0}  # a has not added it
    r = w.call(24, 4, Req(transactions=[txn(b, pb, eb, True), txn(a, pa, ea + 1, False)]))
    assert codes(r) == {b: 0, a: ErrorCode.PRODUCER_FENCED}
    # v5 (KIP-890), as Kafka 4.4 answers: outside the transaction is abortable; an older
    # epoch is fenced.
    r = w.call(24, 5, Req(transactions=[txn(a, pa, ea, True), txn(b, pb, eb - 1, True)]))
    assert codes(r) == {a: ErrorCode.TRANSACTION_ABORTABLE, b: ErrorCode.PRODUCER_FENCED}
    assert end_txn(w, b, pb, eb, False) == 0


def test_a_new_coordinator_takes_over_open_transactions() -> None:
    configs = {**CONFIGS, "transaction.state.log.num.partitions": "1"}
    with BackgroundCluster(3, configs=configs) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        with WireClient(c.bootstrap) as w:
            assert w.call(10, 3, req(10, key="x", key_type=1)).error_code == 0
        state = md.partition("__transaction_state", 0)
        assert state is not None and len(state.replicas) == 3
        old = state.leader
        # The data partitions live on the two other brokers, replicated between them.
        others = [n for n in range(3) if n != old]
        c.call(lambda: md.create_topic(TOPIC, assignments={0: others, 1: others[::-1]}))
        tid = new_id("failover")

        def client(node: int) -> WireClient:
            b = md.brokers[node]
            return WireClient(f"{b.host}:{b.port}")

        with client(old) as coord:
            pid, epoch = init_ok(coord, tid)
            assert add_partitions(coord, tid, pid, epoch, [0, 1]) == {0: 0, 1: 0}
            aborted_id = new_id("failover")
            apid, aepoch = init_ok(coord, aborted_id)
            assert add_partitions(coord, aborted_id, apid, aepoch, [0]) == {0: 0}
        with client(others[0]) as lw:
            assert produce(lw, tid, 0, batch(pid, epoch, 0, [b"kept"])).error_code == 0
            assert produce(lw, aborted_id, 0, batch(apid, aepoch, 0, [b"gone"])).error_code == 0
        with client(old) as coord:
            assert end_txn(coord, aborted_id, apid, aepoch, False) == 0
            assert wait_for(lambda: state_of(coord, aborted_id) == "CompleteAbort")
        c.run(c.cluster.pause_broker(old))
        new = wait_for(
            lambda: (lambda p: p.leader if p.leader != old else None)(
                md.partition("__transaction_state", 0)
            )
        )
        assert new is not None and new != old
        with client(new) as coord:
            [s] = describe(coord, [tid]).transaction_states
            assert (s.error_code, s.transaction_state, s.producer_id) == (0, "Ongoing", pid)
            assert [(t.topic, list(t.partitions)) for t in s.topics] == [(TOPIC, [0, 1])]
            assert end_txn(coord, tid, pid, epoch, True) == 0
            assert wait_for(lambda: state_of(coord, tid) == "CompleteCommit")
        # Partition 0's follower (now or later its leader) knows the aborted range too.
        c.run(c.cluster.pause_broker(others[0]))
        leader0 = wait_for(
            lambda: (lambda p: p.leader if p.leader == others[1] else None)(md.partition(TOPIC, 0))
        )
        assert leader0 == others[1]
        with client(others[1]) as lw:
            got = fetch(lw, 0, 0, 1)
            assert values_of(got.records) == [b"kept", b"gone"]
            assert [(a.producer_id, a.first_offset) for a in got.aborted_transactions] == [
                (apid, 1)
            ]
            assert control_kinds(got.records) == [ABORT_MARKER, COMMIT_MARKER]


def test_idle_transactional_ids_expire() -> None:
    configs = {
        **CONFIGS,
        "transactional.id.expiration.ms": "300",
        "transaction.remove.expired.transaction.cleanup.interval.ms": "100",
    }
    with BackgroundCluster(configs=configs) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic(TOPIC, 1, 1))
        with WireClient(c.bootstrap) as w:
            assert w.call(10, 3, req(10, key="x", key_type=1)).error_code == 0
            idle, busy = new_id("idle"), new_id("busy")
            pid, _ = init_ok(w, idle)
            bpid, bepoch = init_ok(w, busy, timeout=60000)
            assert add_partitions(w, busy, bpid, bepoch, [0]) == {0: 0}

            def gone() -> bool:
                [s] = describe(w, [idle]).transaction_states
                return bool(s.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)

            assert wait_for(gone, timeout=5)
            # An open transaction is never expired, however long it is idle.
            assert state_of(w, busy) == "Ongoing"
            listed = _list(w, 0, state_filters=[], producer_id_filters=[])
            assert [s.transactional_id for s in listed.transaction_states] == [busy]
            # The id starts over with a new producer id.
            new_pid, epoch = init_ok(w, idle)
            assert new_pid != pid and epoch == 0


def test_a_completed_transaction_deadline_lets_go_of_the_ids_metadata() -> None:
    """A transaction's deadline stays on its id's watcher list until the purgatory's
    purge (1000 completions later) once the transaction ended or timed out: it must not
    keep the id's metadata meanwhile, or every replaced or expired id's stays with it."""
    clock = ManualClock(0)
    timer = Timer(clock)
    purgatory: DelayedOperationPurgatory[DelayedTxnTimeout] = DelayedOperationPurgatory(
        "TxnTimeout", timer
    )
    aborted: list[TxnMetadata] = []
    coordinator: Any = SimpleNamespace(txns={}, _abort_timed_out=aborted.append)
    ended = coordinator.txns["ended"] = TxnMetadata("ended", 1, state=TxnState.ONGOING)
    late = coordinator.txns["late"] = TxnMetadata("late", 2, state=TxnState.ONGOING)
    ops = [DelayedTxnTimeout(coordinator, ended, 60_000), DelayedTxnTimeout(coordinator, late, 5)]
    for op, txn in zip(ops, (ended, late), strict=True):
        assert not purgatory.try_complete_else_watch(op, [txn.transactional_id])
    ended.state = TxnState.COMPLETE_COMMIT
    assert purgatory.check_and_complete("ended") == 1
    for _ in range(6):
        clock.advance(1)
        timer.advance_clock()
    assert aborted == [late]  # the late one's deadline aborted it
    assert all(op.is_completed for op in ops)
    assert ended not in gc.get_referents(ops[0]) and late not in gc.get_referents(ops[1])
