"""Replication between brokers of one process: ISR, high watermark, failover, truncation."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from broker_helpers import Harness, WireClient
from kafkagen.generated import message_type
from kafkagen.generated.produce import ProduceRequest
from kafkagen.runtime.broker.cluster import BackgroundCluster, Cluster
from kafkagen.runtime.broker.storage.replica_manager import FetchInfo, FetchParams, ProduceResult
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.records import Record, build_batch, iter_records
from kafkagen.runtime.topic_partition import TopicPartition

R = TopicPartition("r", 0)


def batch(n: int, start: int = 0) -> bytes:
    return build_batch([Record(-1, 1000 + i, b"k", b"v%d" % (start + i)) for i in range(n)])


def follower_round(h: Harness, follower: int, leader: int, tp: TopicPartition = R) -> None:
    """One fetch of ``follower`` from ``leader``, applied by the follower's fetcher logic."""
    fetcher = h.cluster.brokers[follower].fetcher
    p = h.rm(follower).partitions[tp]
    epochs = p.log.epochs
    info = FetchInfo(
        p.log.log_end_offset,
        1 << 20,
        current_leader_epoch=p.leader_epoch,
        last_fetched_epoch=epochs[-1][0] if epochs else -1,
    )
    got: list[list[tuple[TopicPartition, object]]] = []
    params = FetchParams(replica_id=follower, shared=True)
    h.rm(leader).fetch_messages(params, [(tp, info)], got.append)
    fetcher._apply(leader, got[0])  # type: ignore[arg-type]


# ------------------------------------------------------------------ manual clock


def test_lagging_follower_leaves_the_isr_then_acks_all_completes() -> None:
    h = Harness(brokers=2)
    h.md.create_topic("r", assignments={0: [0, 1]})
    parked = h.produce(R, batch(2), acks=-1, timeout=60_000)
    assert parked == []
    h.advance(30_001)
    assert h.rm(0).check_isr() == 1
    assert h.md.partition("r", 0).isr == [0]  # type: ignore[union-attr]
    # With the follower out of the ISR the high watermark moves and the produce completes.
    assert parked and parked[0][R].error is None


def test_caught_up_follower_rejoins_the_isr() -> None:
    h = Harness(brokers=2)
    h.md.create_topic("r", assignments={0: [0, 1]})
    info = h.md.partition("r", 0)
    assert info is not None
    h.md.set_isr("r", 0, [0])
    h.produce(R, batch(3))
    follower_round(h, 1, 0)  # copies 0-2
    assert info.isr == [0]
    follower_round(h, 1, 0)  # fetches at 3 = the leader's end: caught up
    assert info.isr == [0, 1]


def test_the_high_watermark_stays_while_the_isr_is_below_min_insync_replicas() -> None:
    h = Harness(brokers=3, **{"min.insync.replicas": "2"})
    h.md.create_topic("r", assignments={0: [0, 1, 2]})
    info, leader = h.md.partition("r", 0), h.rm(0)
    assert info is not None
    h.md.set_isr("r", 0, [0])
    assert h.produce(R, batch(3))[0][R].error is None  # acks=1 is written...
    assert leader.partitions[R].high_watermark == 0  # ...but not committed
    follower_round(h, 1, 0)  # at the high watermark: joins, and copies 0-2
    assert info.isr == [0, 1] and leader.partitions[R].high_watermark == 0
    follower_round(h, 1, 0)  # fetches at 3: with two in sync the high watermark moves
    assert leader.partitions[R].high_watermark == 3


@pytest.mark.parametrize("unclean", [False, True])
def test_an_unclean_election_only_where_the_topic_allows_it(unclean: bool) -> None:
    h = Harness(brokers=2)
    configs = {"unclean.leader.election.enable": str(unclean).lower()}
    h.md.create_topic("r", assignments={0: [0, 1]}, configs=configs)
    h.md.set_isr("r", 0, [0])  # the follower fell behind
    h.md.broker_down(0)  # and the last in-sync replica went
    info = h.md.partition("r", 0)
    assert info is not None
    if unclean:
        assert (info.leader, info.isr, info.elr) == (1, [1], [])
    else:
        assert (info.leader, info.isr, info.elr) == (-1, [], [0])
    h.md.broker_up(0)
    assert info.leader == (1 if unclean else 0)


def test_keeping_up_follower_is_not_dropped_by_steady_appends() -> None:
    h = Harness(brokers=2)
    h.md.create_topic("r", assignments={0: [0, 1]})
    for _ in range(10):
        h.produce(R, batch(1))
        follower_round(h, 1, 0)  # always one batch behind when it fetches
        h.advance(5_000)
        h.rm(0).check_isr()
    assert h.md.partition("r", 0).isr == [0, 1]  # type: ignore[union-attr]


def test_failover_elects_an_in_sync_follower_with_a_new_epoch() -> None:
    h = Harness(brokers=2)
    h.md.create_topic("r", assignments={0: [0, 1]})
    h.md.broker_down(0)
    info = h.md.partition("r", 0)
    assert info is not None
    assert (info.leader, info.leader_epoch, info.isr) == (1, 1, [1])
    assert h.rm(1).partitions[R].is_leader and not h.rm(0).partitions[R].is_leader
    h.md.broker_up(0)
    assert info.leader == 1 and info.isr == [1]


def test_last_isr_member_down_leaves_the_partition_leaderless_until_it_returns() -> None:
    h = Harness(brokers=2)
    h.md.create_topic("r", assignments={0: [0, 1]})
    h.md.set_isr("r", 0, [0])
    h.md.broker_down(0)
    info = h.md.partition("r", 0)
    # With eligible leader replicas (Kafka 4.4's default) it leaves the ISR for the ELR.
    assert info is not None and info.leader == -1 and (info.isr, info.elr) == ([], [0])
    assert h.produce(R, batch(1), rm=1)[0][R].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    h.md.broker_up(0)
    assert (info.leader, info.isr, info.elr) == (0, [0], [])


def test_diverged_follower_truncates_to_the_new_leaders_log() -> None:
    h = Harness(brokers=2)
    h.md.create_topic("r", assignments={0: [0, 1]})
    h.produce(R, batch(3, 0))  # offsets 0-2, epoch 0
    follower_round(h, 1, 0)
    h.produce(R, batch(3, 3))  # offsets 3-5 on broker 0 only
    h.md.broker_down(0)  # broker 1 leads, epoch 1
    h.produce(R, batch(2, 100), rm=1)  # offsets 3-4, epoch 1
    h.md.broker_up(0)
    old = h.rm(0).partitions[R]
    assert old.log.log_end_offset == 6
    follower_round(h, 0, 1)  # diverged at epoch 0's end: truncate to 3
    assert old.log.log_end_offset == 3
    follower_round(h, 0, 1)
    new = h.rm(1).partitions[R]
    assert [b.data for b in old.log.batches] == [b.data for b in new.log.batches]
    values = [r.value for b in old.log.batches for r in iter_records(b.data)]
    assert values == [b"v0", b"v1", b"v2", b"v100", b"v101"]


def test_producer_state_follows_the_log_to_a_new_leader() -> None:
    h = Harness(brokers=2)
    h.md.create_topic("r", assignments={0: [0, 1]})
    b0 = build_batch([Record(-1, 1, b"k", b"v")], producer_id=77, producer_epoch=0, base_sequence=0)
    h.produce(R, b0)
    follower_round(h, 1, 0)
    h.md.broker_down(0)
    # The producer retries its batch against the new leader: a duplicate, not a new record.
    got = h.produce(R, b0, rm=1)
    assert got[0][R].error is None and got[0][R].base_offset == 0
    assert h.rm(1).partitions[R].log.log_end_offset == 1


# ------------------------------------------------------------------ live clusters


@pytest.fixture
def three() -> Iterator[BackgroundCluster]:
    with BackgroundCluster(3, configs={"offsets.topic.num.partitions": "3"}) as c:
        yield c


def _cluster(c: BackgroundCluster) -> Cluster:
    assert c.cluster is not None
    return c.cluster


def _produce(c: BackgroundCluster, data: bytes, acks: int = -1) -> ProduceResult:
    """Append through the partition leader's replica manager; wait for the answer."""
    cl = _cluster(c)
    done = threading.Event()
    out: list[ProduceResult] = []

    def go() -> None:
        info = cl.metadata.partition("r", 0)
        assert info is not None
        rm = cl.brokers[info.leader].replica_manager

        def cb(results: dict[TopicPartition, ProduceResult]) -> None:
            out.append(results[R])
            done.set()

        rm.append_records({R: data}, acks, 5000, cb)

    c.call(go)
    assert done.wait(10)
    return out[0]


def _wait(cond: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.timeout(60)
def test_followers_replicate_and_acks_all_completes(three: BackgroundCluster) -> None:
    cl = _cluster(three)
    three.call(lambda: cl.metadata.create_topic("r", 1, 3))
    for i in range(20):
        assert _produce(three, batch(5, 5 * i)).error is None
    logs = three.call(
        lambda: [
            (
                b.replica_manager.partitions[R].log.log_end_offset,
                [x.data for x in b.replica_manager.partitions[R].log.batches],
            )
            for b in cl.brokers
        ]
    )
    assert all(end == 100 for end, _ in logs)
    assert logs[0][1] == logs[1][1] == logs[2][1]


@pytest.mark.timeout(60)
def test_pausing_the_leader_moves_leadership_and_writes_continue(
    three: BackgroundCluster,
) -> None:
    cl = _cluster(three)
    three.call(lambda: cl.metadata.create_topic("r", 1, 3))
    assert _produce(three, batch(10)).error is None
    old = three.call(lambda: cl.metadata.partition("r", 0).leader)  # type: ignore[union-attr]
    three.run(cl.pause_broker(old))
    info = three.call(lambda: cl.metadata.partition("r", 0))
    assert info.leader != old and info.leader_epoch == 1 and old not in info.isr
    assert _produce(three, batch(10, 10)).error is None
    three.run(cl.resume_broker(old))
    # The old leader catches up as a follower and rejoins the ISR.
    _wait(lambda: old in three.call(lambda: list(cl.metadata.partition("r", 0).isr)))  # type: ignore[union-attr]
    ends = three.call(
        lambda: [b.replica_manager.partitions[R].log.log_end_offset for b in cl.brokers]
    )
    assert ends == [20, 20, 20]


@pytest.mark.timeout(60)
def test_not_enough_replicas_while_a_follower_is_away() -> None:
    with BackgroundCluster(2, configs={"min.insync.replicas": "2"}) as c:
        cl = _cluster(c)
        c.call(lambda: cl.metadata.create_topic("r", assignments={0: [0, 1]}))
        assert _produce(c, batch(1)).error is None
        c.run(cl.pause_broker(1))
        assert _produce(c, batch(1)).error_code == ErrorCode.NOT_ENOUGH_REPLICAS
        assert _produce(c, batch(1), acks=1).error is None
        c.run(cl.resume_broker(1))
        _wait(lambda: c.call(lambda: len(cl.metadata.partition("r", 0).isr)) == 2)  # type: ignore[union-attr]
        assert _produce(c, batch(1)).error is None


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_clients_ride_through_a_leader_failover() -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as CTP

    with BackgroundCluster(
        3, configs={"offsets.topic.num.partitions": "3", "default.replication.factor": "3"}
    ) as c:
        cl = _cluster(c)
        c.call(lambda: cl.metadata.create_topic("r", 1, 3))
        p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "acks": "all"})
        errors: list[object] = []
        n = 4000
        for i in range(n):
            if i == n // 2:
                p.flush(30)
                leader = c.call(lambda: cl.metadata.partition("r", 0).leader)  # type: ignore[union-attr]
                c.run(cl.pause_broker(leader))
            p.produce("r", b"v%d" % i, b"k", on_delivery=lambda e, m: e and errors.append(e))
            p.poll(0)
        assert p.flush(60) == 0 and not errors
        c.run(cl.resume_broker(leader))
        consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "x"})
        consumer.assign([CTP("r", 0, 0)])
        values = []
        deadline = time.monotonic() + 30
        while len(values) < n and time.monotonic() < deadline:
            values += [m.value() for m in consumer.consume(1000, 0.5) if not m.error()]
        consumer.close()
        assert values == [b"v%d" % i for i in range(n)]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_failover_then_preferred_election_and_epoch_lookup() -> None:
    from broker_helpers import WireClient
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KTP
    from kafkagen.generated import message_type

    with BackgroundCluster(3, configs={"offsets.topic.num.partitions": "3"}) as c:
        cl = _cluster(c)
        c.call(lambda: cl.metadata.create_topic("r", assignments={0: [0, 1, 2]}))
        assert _produce(c, batch(5)).error is None  # epoch 0: offsets 0-4
        c.run(cl.pause_broker(0))
        assert _produce(c, batch(3)).error is None  # epoch 1: offsets 5-7
        c.run(cl.resume_broker(0))
        _wait(lambda: 0 in c.call(lambda: list(cl.metadata.partition("r", 0).isr)))  # type: ignore[union-attr]
        admin = KafkaAdminClient(bootstrap_servers=c.bootstrap)
        try:
            admin.elect_leaders(0, {"r": [0]})
            assert c.call(lambda: cl.metadata.partition("r", 0).leader) == 0  # type: ignore[union-attr]
            low = admin.delete_records({KTP("r", 0): 2})
            assert "low_watermark=2" in repr(low) or "2" in repr(low)
        finally:
            admin.close()
        # Epoch 0 ended where epoch 1 began; the current epoch (2) ends at the log end.
        Req = message_type(23, "request")
        req = Req(
            topics=[
                Req.OffsetForLeaderTopic(
                    topic="r",
                    partitions=[
                        Req.OffsetForLeaderPartition(partition=0, leader_epoch=e)
                        for e in (0, 1, 2, 9)
                    ],
                )
            ]
        )
        with WireClient(f"127.0.0.1:{cl.brokers[0].info.port}") as w:
            r = w.call(23, 4, req)
        got = [(p.leader_epoch, p.end_offset) for p in r.topics[0].partitions]
        assert got == [(0, 5), (1, 8), (2, 8), (-1, -1)]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_consumer_group_on_three_brokers_with_replicated_offsets() -> None:
    from confluent_kafka import Consumer, Producer

    with BackgroundCluster(
        3,
        configs={"offsets.topic.num.partitions": "6", "group.initial.rebalance.delay.ms": "0"},
    ) as c:
        cl = _cluster(c)
        c.call(lambda: cl.metadata.create_topic("spread", 6, 3))
        leaders = c.call(lambda: {p.leader for p in cl.metadata.topics["spread"].partitions})
        assert leaders == {0, 1, 2}
        p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True})
        n = 2000
        for i in range(n):
            p.produce("spread", b"v%d" % i, b"k%d" % i)
        assert p.flush(30) == 0
        seen: list[tuple[int, int]] = []
        lock = threading.Lock()
        stop = threading.Event()

        def consume() -> None:
            cons = Consumer(
                {
                    "bootstrap.servers": c.bootstrap,
                    "group.id": "spread",
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                }
            )
            cons.subscribe(["spread"])
            try:
                while not stop.is_set():
                    msgs = [m for m in cons.consume(500, 0.2) if not m.error()]
                    if msgs:
                        cons.commit(asynchronous=False)
                    with lock:
                        seen.extend((m.partition(), m.offset()) for m in msgs)
            finally:
                cons.close()

        threads = [threading.Thread(target=consume, daemon=True) for _ in range(2)]
        for t in threads:
            t.start()
        try:
            _wait(lambda: len(seen) >= n, timeout=60)
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        assert len(set(seen)) == n

        # Every replica of the offsets topic holds the commits (the last group metadata
        # write, at the consumers' leaving, may still be on its way).
        def sizes() -> list[int]:
            return c.call(  # type: ignore[no-any-return]
                lambda: [
                    sum(
                        p.log.log_end_offset
                        for tp, p in b.replica_manager.partitions.items()
                        if tp.topic == "__consumer_offsets"
                    )
                    for b in cl.brokers
                ]
            )

        _wait(lambda: len(set(sizes())) == 1)
        assert sizes()[0] > 0


@pytest.mark.parametrize("version", [3, 7, 9, 10, 11])
def test_produce_to_a_follower_answers_not_leader_at_every_version(version: int) -> None:
    with BackgroundCluster(brokers=2) as c:
        c.call(lambda: _cluster(c).metadata.create_topic("r", assignments={0: [0]}))
        follower = c.bootstrap.split(",")[1]
        Topic, Part = ProduceRequest.TopicProduceData, ProduceRequest.PartitionProduceData
        req = ProduceRequest(
            acks=1,
            timeout_ms=1000,
            topic_data=[Topic(name="r", partition_data=[Part(index=0, records=batch(1))])],
        )
        with WireClient(follower) as w:
            r = w.call(0, version, req)
    (p,) = r.responses[0].partition_responses
    assert p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    if version >= 10:  # KIP-951: where the leader is now, and how to reach it
        assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (0, 0)
        assert [n.node_id for n in r.node_endpoints] == [0]
    else:
        assert r.node_endpoints == []


# ------------------------------------------------------------------ producer state on followers


def _producer_rows(h: Harness, broker: int) -> dict[int, tuple[int, int, int, int, int]]:
    """What DescribeProducers reports of each producer of ``r``-0 on ``broker``."""
    producers = h.rm(broker).partitions[R].producers.producers
    return {
        pid: (
            e.epoch,
            e.last_seq,
            e.last_timestamp,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
        for pid, e in producers.items()
    }


def test_a_follower_keeps_the_leaders_producer_state_through_a_transaction() -> None:
    h = Harness(brokers=2)
    h.md.create_topic("r", assignments={0: [0, 1]})
    records = [Record(-1, 1000 + i, b"k", b"v") for i in range(3)]
    h.produce(R, build_batch(records, producer_id=7, producer_epoch=0, base_sequence=0))
    txn = build_batch(records, producer_id=8, producer_epoch=2, base_sequence=0, transactional=True)
    h.produce(R, txn)
    follower_round(h, 1, 0)
    open_txn = _producer_rows(h, 0)
    assert open_txn == {7: (0, 2, 1002, -1, -1), 8: (2, 2, 1002, -1, 3)}
    assert _producer_rows(h, 1) == open_txn
    h.rm(0).append_markers({R: (8, 2, True, 5)}, 1000, lambda _: None)
    follower_round(h, 1, 0)
    committed = _producer_rows(h, 0)
    assert committed[8] == (2, 2, 1002, 5, -1)  # the marker's coordinator epoch, no open txn
    assert _producer_rows(h, 1) == committed


def _ask(c: BackgroundCluster, node: int, api_key: int, version: int, request: object) -> Any:
    with WireClient(f"127.0.0.1:{_cluster(c).brokers[node].info.port}") as w:
        return w.call(api_key, version, request)  # type: ignore[arg-type]


@pytest.mark.timeout(60)
def test_describe_producers_is_answered_by_every_replica(three: BackgroundCluster) -> None:
    cl = _cluster(three)
    three.call(lambda: cl.metadata.create_topic("r", assignments={0: [0, 1]}))
    data = build_batch(
        [Record(-1, 1000, b"k", b"v")], producer_id=42, producer_epoch=3, base_sequence=0
    )
    assert _produce(three, data).error is None  # acks=-1: the follower has the batch
    Req = message_type(61, "request")
    ask = Req(
        topics=[
            Req.TopicRequest(name="r", partition_indexes=[0]),
            Req.TopicRequest(name="missing", partition_indexes=[0]),
        ]
    )
    got = {}
    for node in (0, 1, 2):  # the leader, the follower, a broker without a replica
        r = _ask(three, node, 61, 0, ask)
        got[node] = [
            (
                p.error_code,
                p.error_message,
                [
                    (s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp)
                    for s in p.active_producers
                ],
            )
            for t in r.topics
            for p in t.partitions
        ]
    unknown = got[0][1]
    assert unknown[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and unknown[1]
    assert got[0][0] == (0, None, [(42, 3, 0, 1000)])
    assert got[1] == got[0]
    assert got[2] == [(ErrorCode.NOT_LEADER_OR_FOLLOWER, None, []), unknown]


@pytest.mark.timeout(60)
def test_elect_leaders_of_every_partition_lists_only_the_elections_made(
    three: BackgroundCluster,
) -> None:
    cl = _cluster(three)
    three.call(lambda: cl.metadata.create_topic("e", assignments={0: [0, 1], 1: [1, 0]}))
    three.call(lambda: cl.metadata.move_leader("e", 0, 1))  # e-0 away from its preferred 0
    Req = message_type(43, "request")
    everything = Req(election_type=0, topic_partitions=None, timeout_ms=10000)
    named = Req(
        election_type=0,
        topic_partitions=[Req.TopicPartitions(topic="e", partitions=[0, 1])],
        timeout_ms=10000,
    )

    def rows(r: Any) -> dict[str, list[tuple[int, int]]]:
        return {
            t.topic: [(p.partition_id, p.error_code) for p in t.partition_result]
            for t in r.replica_election_results
        }

    first = rows(_ask(three, 0, 43, 2, everything))
    again = rows(_ask(three, 0, 43, 2, everything))
    topics = set(three.call(lambda: list(cl.metadata.topics)))
    assert first == {t: [(0, 0)] if t == "e" else [] for t in topics}
    assert three.call(lambda: cl.metadata.partition("e", 0).leader) == 0  # type: ignore[union-attr]
    assert again == {t: [] for t in topics}  # every topic named, no partition listed
    not_needed = ErrorCode.ELECTION_NOT_NEEDED
    assert rows(_ask(three, 0, 43, 2, named)) == {"e": [(0, not_needed), (1, not_needed)]}
