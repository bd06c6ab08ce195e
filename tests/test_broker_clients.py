"""Real Kafka clients against a kafkagen broker (a subprocess on 127.0.0.1).

For each of confluent-kafka (librdkafka), kafka-python and aiokafka: create a topic,
produce 10,000 keyed messages with acks=all (idempotent), consume them in a group of three
members that commit as they go, and check that every message arrives exactly once, in
order per partition, with key, value, headers and timestamp intact; then a restarted
consumer resumes from the committed offsets.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from broker_helpers import BrokerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

N = 10_000
MORE = 1_000
PARTITIONS = 3
T0 = int(time.time() * 1000) - 60_000
DEADLINE = 90.0


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess(
        "group.initial.rebalance.delay.ms=0",
        "offsets.topic.num.partitions=5",
        "group.min.session.timeout.ms=1000",
    ) as b:
        yield b
        assert b.alive(), b.stderr_text()


@dataclass(frozen=True)
class Msg:
    partition: int
    offset: int
    key: bytes
    value: bytes
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int


def message(i: int) -> tuple[bytes, bytes, list[tuple[str, bytes]], int]:
    """The i-th message: key (shared by 100 messages, so keys repeat), value, headers, ts."""
    return (
        f"key-{i % 100}".encode(),
        f"value-{i}".encode() * (1 + i % 3),
        [("seq", str(i).encode()), ("origin", b"test")],
        T0 + i,
    )


class Collector:
    """What the group's consumers received, from any thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.received: list[tuple[int, Msg]] = []  # (consumer index, message)
        self.assignments: dict[int, set[int]] = {}

    def add(self, consumer: int, msg: Msg) -> None:
        with self.lock:
            self.received.append((consumer, msg))

    def count(self) -> int:
        with self.lock:
            return len(self.received)

    def stable(self, members: int) -> bool:
        with self.lock:
            parts = [p for ps in self.assignments.values() for p in ps]
            return (
                len(self.assignments) == members
                and all(self.assignments.values())
                and sorted(parts) == list(range(PARTITIONS))
            )


def check(sent: dict[tuple[int, int], Msg], collector: Collector) -> None:
    received = [m for _, m in collector.received]
    positions = [(m.partition, m.offset) for m in received]
    assert len(positions) == len(set(positions)), "a message arrived twice"
    assert set(positions) == set(
        sent
    ), f"missing {len(set(sent) - set(positions))}, unexpected {len(set(positions) - set(sent))}"
    for m in received:
        assert m == sent[(m.partition, m.offset)]
    # In order per partition, and each partition read by one consumer (no rebalance).
    by_partition: dict[int, list[tuple[int, int]]] = {}
    for consumer, m in collector.received:
        by_partition.setdefault(m.partition, []).append((consumer, m.offset))
    for partition, seen in by_partition.items():
        offsets = [o for _, o in seen]
        assert offsets == sorted(offsets), f"partition {partition} out of order"
        assert len({c for c, _ in seen}) == 1
    # Same key, same partition, in production order.
    first: dict[bytes, int] = {}
    for m in sent.values():
        assert first.setdefault(m.key, m.partition) == m.partition


def wait_until(cond: Callable[[], bool], what: str, timeout: float = DEADLINE) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# ------------------------------------------------------------------ confluent-kafka


def test_confluent_kafka_produce_consume_group_resume(broker: BrokerProcess) -> None:
    from confluent_kafka import Consumer, KafkaError, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = "ck-orders", "ck-group"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)

    def produce(start: int, count: int) -> dict[tuple[int, int], Msg]:
        p = Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
            }
        )
        sent: dict[tuple[int, int], Msg] = {}
        errors: list[Any] = []

        def report(i: int) -> Callable[[Any, Any], None]:
            def done(err: Any, m: Any) -> None:
                if err is not None:
                    errors.append(err)
                    return
                key, value, headers, ts = message(i)
                sent[(m.partition(), m.offset())] = Msg(
                    m.partition(), m.offset(), key, value, tuple(headers), ts
                )

            return done

        for i in range(start, start + count):
            key, value, headers, ts = message(i)
            while True:
                try:
                    p.produce(
                        topic, value, key, headers=headers, timestamp=ts, on_delivery=report(i)
                    )
                    break
                except BufferError:
                    p.poll(0.05)
            p.poll(0)
        assert p.flush(DEADLINE) == 0
        assert not errors, errors[:3]
        return sent

    def consumer(index: int, collector: Collector, stop: threading.Event) -> None:
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

        def on_assign(_c: Any, parts: list[Any]) -> None:
            with collector.lock:
                collector.assignments[index] = {p.partition for p in parts}

        c.subscribe([topic], on_assign=on_assign)
        try:
            while not stop.is_set():
                msgs = c.consume(500, 0.2)
                good = []
                for m in msgs:
                    if m.error():
                        assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                        continue
                    good.append(m)
                    collector.add(
                        index,
                        Msg(
                            m.partition(),
                            m.offset(),
                            m.key(),
                            m.value(),
                            tuple(m.headers() or ()),
                            m.timestamp()[1],
                        ),
                    )
                if good:
                    c.commit(asynchronous=False)
        finally:
            c.close()

    collector, stop = Collector(), threading.Event()
    threads = [
        threading.Thread(target=consumer, args=(i, collector, stop), daemon=True) for i in range(3)
    ]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: collector.stable(3), "three consumers sharing the partitions")
        sent = produce(0, N)
        wait_until(lambda: collector.count() >= N, f"{N} messages")
        time.sleep(0.5)  # anything extra (a duplicate) would arrive now
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    check(sent, collector)

    more = produce(N, MORE)
    again, stop2 = Collector(), threading.Event()
    t = threading.Thread(target=consumer, args=(9, again, stop2), daemon=True)
    t.start()
    try:
        wait_until(lambda: again.count() >= MORE, "the restarted consumer")
        time.sleep(0.5)
    finally:
        stop2.set()
        t.join(30)
    check(more, again)


# ------------------------------------------------------------------ kafka-python


def test_kafka_python_produce_consume_group_resume(broker: BrokerProcess) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import NewTopic

    topic, group = "kp-orders", "kp-group"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()

    def produce(start: int, count: int) -> dict[tuple[int, int], Msg]:
        # kafka-python's producer is idempotent by default (InitProducerId, sequences).
        p = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5)
        futures = []
        for i in range(start, start + count):
            key, value, headers, ts = message(i)
            futures.append(
                (i, p.send(topic, value=value, key=key, headers=headers, timestamp_ms=ts))
            )
        p.flush(DEADLINE)
        sent: dict[tuple[int, int], Msg] = {}
        for i, f in futures:
            md = f.get(10)
            key, value, headers, ts = message(i)
            sent[(md.partition, md.offset)] = Msg(
                md.partition, md.offset, key, value, tuple(headers), ts
            )
        p.close(10)
        return sent

    def consumer(index: int, collector: Collector, stop: threading.Event) -> None:
        from kafka import ConsumerRebalanceListener

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                pass

            def on_partitions_assigned(self, assigned: Any) -> None:
                with collector.lock:
                    collector.assignments[index] = {tp.partition for tp in assigned}

        c = KafkaConsumer(
            bootstrap_servers=broker.bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=10000,
            heartbeat_interval_ms=500,
        )
        c.subscribe([topic], listener=Listener())
        try:
            while not stop.is_set():
                # A long poll: kafka-python 3.0.12 loses a leader's assignment when a poll
                # times out while its SyncGroup is in flight (need_rejoin() turns false
                # before the join task ends, and nothing awaits it any more).
                batch = c.poll(2000)
                for tp, records in batch.items():
                    for r in records:
                        collector.add(
                            index,
                            Msg(
                                tp.partition,
                                r.offset,
                                r.key,
                                r.value,
                                tuple(r.headers),
                                r.timestamp,
                            ),
                        )
                if batch:
                    c.commit()
        finally:
            c.close()

    collector, stop = Collector(), threading.Event()
    threads = [
        threading.Thread(target=consumer, args=(i, collector, stop), daemon=True) for i in range(3)
    ]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: collector.stable(3), "three consumers sharing the partitions")
        sent = produce(0, N)
        wait_until(lambda: collector.count() >= N, f"{N} messages")
        time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    check(sent, collector)

    more = produce(N, MORE)
    again, stop2 = Collector(), threading.Event()
    t = threading.Thread(target=consumer, args=(9, again, stop2), daemon=True)
    t.start()
    try:
        wait_until(lambda: again.count() >= MORE, "the restarted consumer")
        time.sleep(0.5)
    finally:
        stop2.set()
        t.join(30)
    check(more, again)


# ------------------------------------------------------------------ aiokafka


def test_aiokafka_produce_consume_group_resume(broker: BrokerProcess) -> None:
    asyncio.run(asyncio.wait_for(_aiokafka(broker.bootstrap), 200))


async def _aiokafka(bootstrap: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    topic, group = "aio-orders", "aio-group"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        await admin.close()

    async def produce(start: int, count: int) -> dict[tuple[int, int], Msg]:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
        await p.start()
        try:
            futures = []
            for i in range(start, start + count):
                key, value, headers, ts = message(i)
                fut = await p.send(topic, value=value, key=key, headers=headers, timestamp_ms=ts)
                futures.append((i, fut))
            sent: dict[tuple[int, int], Msg] = {}
            for i, fut in futures:
                md = await fut
                key, value, headers, ts = message(i)
                # What was asked for, not what the client's metadata reports back.
                sent[(md.partition, md.offset)] = Msg(
                    md.partition, md.offset, key, value, tuple(headers), ts
                )
            return sent
        finally:
            await p.stop()

    async def consumer(index: int, collector: Collector, stop: asyncio.Event) -> None:
        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                pass

            def on_partitions_assigned(self, assigned: Any) -> None:
                with collector.lock:
                    collector.assignments[index] = {tp.partition for tp in assigned}

        c = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=10000,
            heartbeat_interval_ms=500,
        )
        c.subscribe([topic], listener=Listener())
        await c.start()
        try:
            while not stop.is_set():
                batch = await c.getmany(timeout_ms=200)
                for tp, records in batch.items():
                    for r in records:
                        collector.add(
                            index,
                            Msg(
                                tp.partition,
                                r.offset,
                                r.key,
                                r.value,
                                tuple(r.headers),
                                r.timestamp,
                            ),
                        )
                if batch:
                    await c.commit()
        finally:
            await c.stop()

    async def until(cond: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + DEADLINE
        while not cond():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.05)

    collector, stop = Collector(), asyncio.Event()
    tasks = [asyncio.create_task(consumer(i, collector, stop)) for i in range(3)]
    try:
        await until(lambda: collector.stable(3), "three consumers sharing the partitions")
        sent = await produce(0, N)
        await until(lambda: collector.count() >= N, f"{N} messages")
        await asyncio.sleep(0.5)
    finally:
        stop.set()
        await asyncio.gather(*tasks)
    check(sent, collector)

    more = await produce(N, MORE)
    again, stop2 = Collector(), asyncio.Event()
    task = asyncio.create_task(consumer(9, again, stop2))
    try:
        await until(lambda: again.count() >= MORE, "the restarted consumer")
        await asyncio.sleep(0.5)
    finally:
        stop2.set()
        await task
    check(more, again)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_are_stored_and_served_as_written(
    broker: BrokerProcess, codec: str
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"codec-{codec}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": codec})
    for i in range(300):
        p.produce(topic, b"value-%d-" % i * 10, b"k%d" % i)
    assert p.flush(30) == 0
    c = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": topic, "enable.auto.commit": False}
    )
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 300 and time.monotonic() < deadline:
        got += [(m.key(), m.value()) for m in c.consume(500, 0.5) if not m.error()]
    c.close()
    assert got == [(b"k%d" % i, b"value-%d-" % i * 10) for i in range(300)]


def test_static_member_restart_keeps_assignment_without_rebalance(broker: BrokerProcess) -> None:
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = "static-orders", "static-group"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(30)
    events: dict[str, list[tuple[str, set[int]]]] = {}
    lock = threading.Lock()

    def run(instance: str, stop: threading.Event) -> None:
        def assigned(_c: Any, parts: list[Any]) -> None:
            with lock:
                events.setdefault(instance, []).append(("assign", {p.partition for p in parts}))

        def revoked(_c: Any, parts: list[Any]) -> None:
            with lock:
                events.setdefault(instance, []).append(("revoke", {p.partition for p in parts}))

        c = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": group,
                "group.instance.id": instance,
                "session.timeout.ms": 10000,
                "enable.auto.commit": False,
            }
        )
        c.subscribe([topic], on_assign=assigned, on_revoke=revoked)
        try:
            while not stop.is_set():
                c.poll(0.1)
        finally:
            c.close()  # a static member does not leave the group on close

    def current(instance: str) -> set[int]:
        with lock:
            assigns = [parts for kind, parts in events.get(instance, []) if kind == "assign"]
        return assigns[-1] if assigns else set()

    stop1, stop2 = threading.Event(), threading.Event()
    t1 = threading.Thread(target=run, args=("s1", stop1), daemon=True)
    t2 = threading.Thread(target=run, args=("s2", stop2), daemon=True)
    t1.start()
    t2.start()
    try:
        wait_until(
            lambda: len(current("s1")) == 2 and len(current("s2")) == 2, "both static members"
        )
        before = current("s2")
        with lock:
            s1_events = len(events["s1"])
        stop2.set()
        t2.join(30)
        with lock:
            events.pop("s2")
        stop2 = threading.Event()
        t2 = threading.Thread(target=run, args=("s2", stop2), daemon=True)
        t2.start()
        wait_until(lambda: bool(current("s2")), "the restarted static member")
        assert current("s2") == before
        time.sleep(1.0)
        with lock:
            assert len(events["s1"]) == s1_events, "the other member saw a rebalance"
    finally:
        stop1.set()
        stop2.set()
        t1.join(30)
        t2.join(30)
