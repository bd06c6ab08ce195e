"""In-process faults (the control API's `Faults`) with real clients over real sockets:
a cut-off leader is fenced and acknowledges nothing it could lose with acks=all, keeps
its stale metadata until the heal, a cut-off follower
leaves the ISR and comes back after the heal, transaction markers wait for the heal, a
slow disk or network delays answers, a skewed clock moves LogAppendTime, and a consumer
whose application stops polling keeps its place in its group while the group's coordinator
is paused and moves."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from broker_helpers import WireClient, req
from confluent_kafka import Consumer, Producer, TopicPartition
from kafkagen.generated import message_type
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.records import Record, build_batch
from kafkagen.runtime.topic_partition import TopicPartition as KafkagenPartition

pytestmark = pytest.mark.slow

LAG_MS, SESSION_MS = 1000, 4000
API_VERSIONS = 18
HELLO = req(API_VERSIONS, client_software_name="t", client_software_version="1")
Metadata, Produce = message_type(3, "request"), message_type(0, "request")


@contextmanager
def cluster(session_ms: int, **extra: str) -> Iterator[BackgroundCluster]:
    """Three brokers and the topic "f", its one partition led by broker 0; ``extra``
    configs with dots written as underscores."""
    configs = {
        "replica.lag.time.max.ms": str(LAG_MS),
        "broker.session.timeout.ms": str(session_ms),
        "min.insync.replicas": "2",
        **{k.replace("_", "."): v for k, v in extra.items()},
    }
    with BackgroundCluster(brokers=3, configs=configs) as c:
        c.call(lambda: c.cluster.metadata.create_topic("f", assignments={0: [0, 1, 2]}))
        yield c


@pytest.fixture
def bg() -> Iterator[BackgroundCluster]:
    with cluster(SESSION_MS) as c:
        yield c


def state(bg: BackgroundCluster) -> tuple[int, list[int]]:
    """The partition's leader and ISR in the controller's image."""

    def read() -> tuple[int, list[int]]:
        p = bg.cluster.metadata.partition("f", 0)
        return p.leader, list(p.isr)

    return bg.call(read)


def wait_for(cond: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"waited {timeout} s for {what}")
        time.sleep(0.05)


def address(bg: BackgroundCluster, *brokers: int) -> str:
    """bootstrap.servers naming only ``brokers``."""
    return ",".join(f"127.0.0.1:{bg.cluster.brokers[b].info.port}" for b in brokers)


def produce(
    bg: BackgroundCluster, values: list[str], timeout_ms: int, bootstrap: str = ""
) -> dict[str, Any]:
    """Send with acks=all; each value -> its delivery error (None: acknowledged)."""
    p = Producer(
        {
            "bootstrap.servers": bootstrap or bg.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "message.timeout.ms": timeout_ms,
        }
    )
    out: dict[str, Any] = {}
    for v in values:
        p.produce("f", v.encode(), partition=0, on_delivery=lambda e, m: out.update(
            {m.value().decode(): e}))  # fmt: skip
    p.flush(timeout_ms / 1000 + 10)
    return out


def read_all(bg: BackgroundCluster) -> list[str]:
    c = Consumer(
        {"bootstrap.servers": bg.bootstrap, "group.id": "check", "enable.auto.commit": False}
    )
    c.assign([TopicPartition("f", 0, 0)])
    got: list[str] = []
    end = time.monotonic() + 20
    while time.monotonic() < end:
        m = c.poll(0.5)
        if m is None and got:
            break
        if m is not None and m.error() is None:
            got.append(m.value().decode())
    c.close()
    return got


def log_end(bg: BackgroundCluster, broker: int) -> int:
    rm = bg.cluster.brokers[broker].replica_manager
    return bg.call(lambda: rm.partitions[KafkagenPartition("f", 0)].log.log_end_offset)


def test_a_cut_off_leader_acknowledges_nothing_is_fenced_and_rejoins(
    bg: BackgroundCluster,
) -> None:
    before = produce(bg, [f"a{i}" for i in range(20)], 10_000)
    assert set(before.values()) == {None}
    assert state(bg) == (0, [0, 1, 2])
    faults = bg.cluster.faults
    bg.call(lambda: faults.cut([0]))
    # Nothing reaches the followers, and the leader cannot shrink the ISR without the
    # controller: acks=all cannot complete, so a send that gives up first fails.
    lost = produce(bg, ["lonely"], 2500)
    assert lost["lonely"] is not None
    assert state(bg) == (0, [0, 1, 2])
    assert log_end(bg, 0) > 20 and log_end(bg, 1) == 20  # written, not replicated
    # After broker.session.timeout.ms the controller fences it; the others lead.
    wait_for(lambda: bg.call(lambda: faults.fenced == {0}), "the fencing")
    leader, isr = state(bg)
    assert leader == 1 and isr == [1, 2]
    # Broker 0 still believes it leads (its image is stale): the producer asks the others.
    during = produce(bg, [f"b{i}" for i in range(20)], 20_000, address(bg, 1, 2))
    assert set(during.values()) == {None}
    bg.call(faults.heal)
    # Back: it truncates what it alone had, catches up, and the ISR expands.
    wait_for(lambda: state(bg)[1] == [0, 1, 2], "the ISR to expand")
    wait_for(lambda: log_end(bg, 0) == log_end(bg, 1) == 40, "broker 0 to catch up")
    got = read_all(bg)
    assert sorted(got) == sorted([*before, *during])  # every acknowledged write, once


def leader_seen_by(bg: BackgroundCluster, broker: int) -> int:
    """The leader of "f" that ``broker``'s Metadata answer names."""
    with WireClient(address(bg, broker)) as w:
        answer = w.call(3, 12, req(3, topics=[Metadata.MetadataRequestTopic(name="f")]))
    return answer.topics[0].partitions[0].leader_id


def produce_answer(
    bg: BackgroundCluster, broker: int, value: bytes, acks: int, topic: str = "f", version: int = 9
) -> Any:
    """One Produce of ``value`` to partition 0 of ``topic`` through broker ``broker``,
    waiting at most 1.5 s; the partition's answer."""
    records = build_batch([Record(-1, 1, b"k", value)])
    data = Produce.PartitionProduceData(index=0, records=records)
    produce = Produce.TopicProduceData(name=topic, partition_data=[data])
    with WireClient(address(bg, broker)) as w:
        answer = w.call(0, version, req(0, acks=acks, timeout_ms=1500, topic_data=[produce]))
    return answer.responses[0].partition_responses[0]


def produce_once(bg: BackgroundCluster, broker: int, value: bytes, acks: int) -> int:
    """`produce_answer` to "f": its error code."""
    return int(produce_answer(bg, broker, value, acks).error_code)


def test_a_fenced_leader_keeps_its_stale_view_until_the_heal(bg: BackgroundCluster) -> None:
    """Kafka's broker learns metadata from the controller's log: cut off, it still believes
    it leads after the controller moved leadership. It acknowledges acks=1 writes that the
    heal truncates, and times acks=all out; the majority side sees the new leader at once."""
    before = produce(bg, [f"a{i}" for i in range(5)], 10_000)
    assert set(before.values()) == {None}
    faults = bg.cluster.faults
    bg.call(lambda: faults.cut([0]))
    wait_for(lambda: bg.call(lambda: faults.fenced == {0}), "the fencing")
    assert state(bg) == (1, [1, 2])
    assert leader_seen_by(bg, 1) == leader_seen_by(bg, 2) == 1
    assert leader_seen_by(bg, 0) == 0  # its image, kept since the cut
    assert produce_once(bg, 0, b"doomed", acks=1) == ErrorCode.NONE
    assert produce_once(bg, 0, b"waits", acks=-1) == ErrorCode.REQUEST_TIMED_OUT
    assert produce_once(bg, 1, b"kept", acks=-1) == ErrorCode.NONE
    assert log_end(bg, 0) == 7 and log_end(bg, 1) == 6
    bg.call(faults.heal)
    assert leader_seen_by(bg, 0) == 1  # caught up at once
    # It follows broker 1 now: its two lone records are truncated, "kept" replicated.
    wait_for(lambda: state(bg)[1] == [0, 1, 2], "the ISR to expand")
    wait_for(lambda: log_end(bg, 0) == log_end(bg, 1) == 6, "broker 0 to truncate")
    assert produce_once(bg, 0, b"refused", acks=-1) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert sorted(read_all(bg)) == sorted([*before, "kept"])


def test_a_cut_off_broker_knows_no_topic_created_after_the_cut(bg: BackgroundCluster) -> None:
    """Produce is answered from the broker's own image: a topic created while it was cut
    off is unknown to it (as to a Kafka broker that has not fetched the metadata log);
    after the heal it knows the topic and names its leader (KIP-951, v10+)."""
    faults = bg.cluster.faults
    bg.call(lambda: faults.cut([2]))
    bg.call(lambda: bg.cluster.metadata.create_topic("late", assignments={0: [0, 1]}))

    unknown = produce_answer(bg, 2, b"v", acks=1, topic="late", version=10)
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    bg.call(faults.heal)
    known = produce_answer(bg, 2, b"v", acks=1, topic="late", version=10)
    assert known.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert known.current_leader.leader_id == 0


def test_a_cut_off_broker_creates_no_topic() -> None:
    """Auto-creation asks the controller: a cut-off broker answers LEADER_NOT_AVAILABLE
    and creates nothing, as Kafka's does; one on the controller's side creates it."""
    with cluster(SESSION_MS, auto_create_topics_enable="true") as bg:
        bg.call(lambda: bg.cluster.faults.cut([2]))

        def ask(broker: int, name: str) -> int:
            topic = Metadata.MetadataRequestTopic(name=name)
            with WireClient(address(bg, broker)) as w:
                r = w.call(3, 9, req(3, topics=[topic], allow_auto_topic_creation=True))
            return int(r.topics[0].error_code)

        assert ask(2, "auto-cut") == ErrorCode.LEADER_NOT_AVAILABLE
        assert bg.call(lambda: bg.cluster.metadata.topic("auto-cut")) is None
        assert ask(0, "auto-kept") == ErrorCode.NONE
        assert bg.call(lambda: bg.cluster.metadata.topic("auto-kept")) is not None


def test_a_cut_off_broker_names_the_coordinator_it_knows(bg: BackgroundCluster) -> None:
    """FindCoordinator answers from the broker's own image: cut off and fenced, broker 2
    still names itself for the groups whose offsets partition it led, while the others
    name the new leader; after the heal all three agree."""

    def coordinator(broker: int, group: str) -> int:
        with WireClient(address(bg, broker)) as w:
            answer = w.call(10, 3, req(10, key=group, key_type=0))
        assert answer.error_code == 0, answer
        return int(answer.node_id)

    group = next(g for g in (f"g{i}" for i in range(200)) if coordinator(0, g) == 2)
    faults = bg.cluster.faults
    bg.call(lambda: faults.cut([2]))
    wait_for(lambda: bg.call(lambda: faults.fenced == {2}), "the fencing")
    wait_for(lambda: coordinator(0, group) != 2, "the offsets partition to move")
    moved = coordinator(0, group)
    assert coordinator(1, group) == moved
    assert coordinator(2, group) == 2  # its image, kept since the cut
    bg.call(faults.heal)
    assert coordinator(2, group) == moved


def test_a_partition_shrinks_the_isr_of_the_majority_and_fences_the_minority(
    bg: BackgroundCluster,
) -> None:
    faults = bg.cluster.faults
    bg.call(lambda: faults.cut([2]))
    assert bg.call(faults.to_json)["controller_side"] == [0, 1]
    # The leader reaches the controller: the follower it cannot hear leaves the ISR after
    # replica.lag.time.max.ms, and acks=all goes on with min.insync.replicas=2.
    wait_for(lambda: state(bg) == (0, [0, 1]), "the ISR to shrink", timeout=SESSION_MS / 1000)
    acked = produce(bg, [f"c{i}" for i in range(10)], 10_000)
    assert set(acked.values()) == {None}
    wait_for(lambda: bg.call(lambda: faults.fenced == {2}), "the fencing")
    bg.call(faults.heal)
    wait_for(lambda: state(bg)[1] == [0, 1, 2], "the ISR to expand")
    # The leader's followers on their own side hold the majority: the leader is fenced.
    bg.call(lambda: faults.cut([1, 2]))
    assert bg.call(faults.to_json)["controller_side"] == [1, 2]
    wait_for(lambda: bg.call(lambda: faults.fenced == {0}), "the leader's fencing")
    assert state(bg) == (1, [1, 2])
    bg.call(faults.heal)
    wait_for(lambda: state(bg)[1] == [0, 1, 2], "the ISR to expand again")
    assert sorted(read_all(bg)) == sorted(acked)


def test_transaction_markers_wait_for_a_cut_to_heal() -> None:
    """The coordinator cannot reach the cut-off leader: the commit is answered once its
    PrepareCommit is durable, and the marker lands only after the heal (no fencing here:
    the session outlasts the cut), as Kafka's marker channel retries until it gets through."""
    with cluster(session_ms=60_000) as bg:
        # A transactional id coordinated elsewhere than on broker 0, the leader of "f".
        b1 = bg.cluster.brokers[1].info
        with WireClient(f"{b1.host}:{b1.port}") as w:
            find = (w.call(10, 3, req(10, key=f"m-{i}", key_type=1)) for i in range(50))
            tid, coordinator = next(
                (f"m-{i}", f.node_id) for i, f in enumerate(find) if f.node_id > 0
            )
        txns = bg.cluster.brokers[coordinator].txn_coordinator.txns
        p = Producer({"bootstrap.servers": bg.bootstrap, "transactional.id": tid})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce("f", b"across", partition=0)
        p.flush(10)
        before = log_end(bg, 0)
        faults = bg.cluster.faults
        bg.call(lambda: faults.cut([0]))
        p.commit_transaction(30)
        time.sleep(2)
        assert bg.call(lambda: txns[tid].state.value) == "PrepareCommit"
        assert log_end(bg, 0) == before  # no marker crossed the cut
        bg.call(faults.heal)
        wait_for(lambda: bg.call(lambda: txns[tid].state.value) == "CompleteCommit", "the marker")
        assert log_end(bg, 0) == before + 1
        c = Consumer(
            {
                "bootstrap.servers": bg.bootstrap,
                "group.id": "committed",
                "isolation.level": "read_committed",
            }
        )
        c.assign([TopicPartition("f", 0, 0)])
        got = [m.value() for m in c.consume(10, 10) if m.error() is None]
        c.close()
        assert got == [b"across"]


def test_a_broker_cut_off_from_clients_answers_nothing_until_healed(
    bg: BackgroundCluster,
) -> None:
    """Requests sent across the cut are answered, in order, once it heals (TCP delivers
    them late; a client that waits for them must not wait out its request timeout)."""
    faults = bg.cluster.faults
    bg.call(lambda: faults.cut([1], clients=False))
    b1 = bg.cluster.brokers[1].info
    with WireClient(f"{b1.host}:{b1.port}", timeout=1.0) as w:
        sent = [w.send(API_VERSIONS, 3, HELLO) for _ in range(3)]
        with pytest.raises(TimeoutError):
            w.read_frame()
        with WireClient(f"{b1.host}:{b1.port}", timeout=1.0) as gone:
            gone.send(API_VERSIONS, 3, HELLO)  # its client closes before the heal
        bg.call(faults.heal)
        answered = [w.receive(API_VERSIONS, 3) for _ in sent]
        assert [cid for cid, _ in answered] == sent
        assert all(body.error_code == 0 for _, body in answered)
        assert bg.call(lambda: faults._undelivered) == []
    with WireClient(f"{b1.host}:{b1.port}") as w:
        assert w.call(API_VERSIONS, 3, HELLO).error_code == 0


def test_a_slow_disk_delays_acks_and_a_slow_network_every_answer(
    bg: BackgroundCluster,
) -> None:
    faults = bg.cluster.faults
    p = Producer({"bootstrap.servers": bg.bootstrap, "acks": "all", "linger.ms": 0})

    def timed_send() -> float:
        done: list[Any] = []
        start = time.monotonic()
        p.produce("f", b"x", partition=0, on_delivery=lambda e, m: done.append(e))
        p.flush(10)
        assert done == [None]
        return time.monotonic() - start

    quick = min(timed_send() for _ in range(3))
    bg.call(lambda: faults.slow_disk(0, 400))
    # The leader's append, then its followers' reads from it, wait 400 ms each.
    slow = timed_send()
    assert slow >= quick + 0.7, (quick, slow)
    bg.call(faults.heal)
    bg.call(lambda: faults.slow_network(0, 300))
    b0 = bg.cluster.brokers[0].info
    with WireClient(f"{b0.host}:{b0.port}") as w:
        start = time.monotonic()
        w.call(API_VERSIONS, 3, HELLO)
        assert time.monotonic() - start >= 0.3


def test_a_skewed_clock_stamps_log_append_time(bg: BackgroundCluster) -> None:
    bg.call(
        lambda: bg.cluster.metadata.create_topic(
            "stamped", assignments={0: [2]}, configs={"message.timestamp.type": "LogAppendTime"}
        )
    )
    faults = bg.cluster.faults
    bg.call(lambda: faults.skew_clock(2, 3_600_000))
    # One replica, under the cluster's min.insync.replicas=2: acks=1.
    p = Producer({"bootstrap.servers": bg.bootstrap, "acks": 1})
    stamps: list[int] = []
    p.produce("stamped", b"t", on_delivery=lambda e, m: stamps.append(m.timestamp()[1]))
    p.flush(20)
    now_ms = time.time() * 1000
    assert len(stamps) == 1 and abs(stamps[0] - (now_ms + 3_600_000)) < 10_000


def test_without_a_majority_side_nobody_is_fenced(bg: BackgroundCluster) -> None:
    faults = bg.cluster.faults
    bg.call(lambda: faults.cut([0]))
    bg.call(lambda: faults.cut([1]))  # three sides of one broker each: no quorum anywhere
    assert bg.call(faults.to_json)["controller_side"] == []
    time.sleep(SESSION_MS / 1000 + 1)
    assert bg.call(lambda: faults.fenced) == set()
    assert state(bg) == (0, [0, 1, 2])  # and no ISR change went through


def test_a_broker_started_while_cut_off_registers_at_the_heal(bg: BackgroundCluster) -> None:
    cluster, faults = bg.cluster, bg.cluster.faults
    bg.run(cluster.pause_broker(2))
    bg.call(lambda: faults.cut([2]))
    bg.run(cluster.resume_broker(2))  # it serves, but the controller cannot hear it
    assert bg.call(lambda: cluster.metadata.brokers[2].alive) is False
    bg.call(faults.heal)
    assert bg.call(lambda: cluster.metadata.brokers[2].alive) is True
    wait_for(lambda: state(bg)[1] == [0, 1, 2], "the ISR to expand")


#: A group session well above the coordinator's pause (librdkafka's classic consumer
#: gives its assignment up by itself after a session without an answer), a fraction of
#: Kafka's 45 s default to keep the test short.
STALL_SESSION_MS, STALL_FENCE_MS = 8000, 2000


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_member_that_stops_polling_outlives_its_coordinators_pause_and_move(
    protocol: str,
) -> None:
    """A consumer whose application stops polling still heartbeats from librdkafka's own
    thread: while its coordinator is paused long enough to be fenced (the group moves to
    another broker) and for more than a session afterwards, it stays in the group with its
    partitions, as on Kafka 4.4 (docs/chaos.md); nobody else is given them."""
    group, topic = f"stalled-{protocol}", "s"
    configs = {
        "offsets_topic_num_partitions": "1",
        "group_initial_rebalance_delay_ms": "0",
        "group_consumer_min_session_timeout_ms": "1000",
        "group_consumer_session_timeout_ms": str(STALL_SESSION_MS),
        "group_consumer_min_heartbeat_interval_ms": "500",
        "group_consumer_heartbeat_interval_ms": "1000",
    }
    with cluster(STALL_FENCE_MS, **configs) as bg:
        assignments = {p: [p % 3, (p + 1) % 3, (p + 2) % 3] for p in range(6)}
        bg.call(lambda: bg.cluster.metadata.create_topic(topic, assignments=assignments))
        extra = {"session.timeout.ms": STALL_SESSION_MS, "heartbeat.interval.ms": 1000}
        consumers = [
            Consumer(
                {
                    "bootstrap.servers": bg.bootstrap,
                    "group.id": group,
                    "group.protocol": protocol,
                    "enable.auto.commit": False,
                    **(extra if protocol == "classic" else {}),
                }
            )
            for _ in range(3)
        ]
        owned: list[list[int]] = [[] for _ in consumers]

        def poll(*which: int, seconds: float) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                for i in which:
                    consumers[i].poll(0.05)
                    owned[i] = sorted(tp.partition for tp in consumers[i].assignment())

        def coordinator(seen_by: int = 0) -> int:
            gc = bg.cluster.brokers[seen_by].group_coordinator
            return int(bg.call(lambda: gc.coordinator_for(group)))

        def members_at(node: int) -> int:
            gc = bg.cluster.brokers[node].group_coordinator
            groups = gc.groups if protocol == "classic" else gc.consumer.groups
            return int(bg.call(lambda: len(groups[group].members) if group in groups else 0))

        try:
            for c in consumers:
                c.subscribe([topic])
            end = time.monotonic() + 30
            while [len(o) for o in owned] != [2, 2, 2] and time.monotonic() < end:
                poll(0, 1, 2, seconds=0.2)
            assert [len(o) for o in owned] == [2, 2, 2]
            stable = [list(o) for o in owned]
            # Consumer 2's application stalls from here; its librdkafka thread does not.
            paused = coordinator()
            bg.call(lambda: bg.cluster.faults.cut([paused], clients=False))
            poll(0, 1, seconds=STALL_FENCE_MS / 1000 + 1)  # the broker is fenced meanwhile
            moved = coordinator(seen_by=(paused + 1) % 3)  # the paused one's view is stale
            assert moved not in (paused, -1)
            bg.call(bg.cluster.faults.heal)
            poll(0, 1, seconds=STALL_SESSION_MS / 1000 + 2)
            assert members_at(moved) == 3
            assert owned[:2] == stable[:2]
            poll(0, 1, 2, seconds=2)
            assert owned == stable
            assert members_at(moved) == 3
        finally:
            for c in consumers:
                c.close()
