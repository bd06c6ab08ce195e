"""Real transactional clients against a kafkagen broker (a subprocess on 127.0.0.1).

Each client runs transactions that commit and transactions that abort on a topic of three
partitions; a read_committed consumer must then see exactly the committed messages, once
each and in order per partition, while a read_uncommitted one also sees the aborted ones
(so they really are in the log). confluent-kafka also runs a consume-transform-produce
round whose group offsets are committed with the transaction.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from broker_helpers import BrokerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

PARTITIONS = 3
DEADLINE = 60.0


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess(
        "group.initial.rebalance.delay.ms=0",
        "offsets.topic.num.partitions=3",
        "transaction.state.log.num.partitions=3",
        "group.min.session.timeout.ms=1000",
    ) as b:
        yield b
        assert b.alive(), b.stderr_text()


def create_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)


def plan(prefix: str) -> list[tuple[bool, list[bytes]]]:
    """Five transactions: (commit?, values). Aborts sit between commits."""
    out = []
    for t, commit in enumerate([True, False, True, False, True]):
        kind = "commit" if commit else "abort"
        out.append((commit, [f"{prefix}-{kind}-{t}-{i}".encode() for i in range(60)]))
    return out


def expected(transactions: list[tuple[bool, list[bytes]]], committed_only: bool) -> list[bytes]:
    return [v for commit, values in transactions if commit or not committed_only for v in values]


def read_all(bootstrap: str, topic: str, isolation: str, want: int) -> list[tuple[int, bytes]]:
    """(partition, value) of everything a fresh consumer reads, stopping once ``want``
    arrived and nothing more came for a second."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{topic}-{isolation}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + DEADLINE
    quiet_since = time.monotonic()
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None or m.error() is not None:
                if len(got) >= want and time.monotonic() - quiet_since > 1.0:
                    break
                continue
            got.append((int(m.partition() or 0), bytes(m.value() or b"")))
            quiet_since = time.monotonic()
    finally:
        c.close()
    return got


def check_read_committed(
    bootstrap: str, topic: str, transactions: list[tuple[bool, list[bytes]]]
) -> None:
    committed = expected(transactions, committed_only=True)
    got = read_all(bootstrap, topic, "read_committed", len(committed))
    values = [v for _, v in got]
    assert sorted(values) == sorted(committed), "read_committed must see exactly the commits"
    assert len(values) == len(set(values))
    # Per partition, in the order they were produced.
    rank = {v: i for i, v in enumerate(committed)}
    for p in range(PARTITIONS):
        ours = [rank[v] for q, v in got if q == p]
        assert ours == sorted(ours)
    everything = expected(transactions, committed_only=False)
    raw = [v for _, v in read_all(bootstrap, topic, "read_uncommitted", len(everything))]
    assert sorted(raw) == sorted(everything), "aborted messages stay in the log"


def wait_until(cond: Callable[[], bool], what: str, timeout: float = DEADLINE) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


# -- confluent-kafka ------------------------------------------------------------------------------


def test_confluent_kafka_transactions_commit_and_abort(broker: BrokerProcess) -> None:
    from confluent_kafka import Producer

    topic = "ck-txn"
    create_topic(broker.bootstrap, topic)
    transactions = plan("ck")
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "transactional.id": "ck-producer",
            "transaction.timeout.ms": 30000,
            "linger.ms": 5,
        }
    )
    p.init_transactions(DEADLINE)
    errors: list[Any] = []
    for commit, values in transactions:
        p.begin_transaction()
        for i, v in enumerate(values):
            p.produce(
                topic,
                v,
                partition=i % PARTITIONS,
                on_delivery=lambda err, _m: errors.append(err) if err else None,
            )
        p.flush(DEADLINE)
        if commit:
            p.commit_transaction(DEADLINE)
        else:
            p.abort_transaction(DEADLINE)
    assert not errors, errors[:3]
    check_read_committed(broker.bootstrap, topic, transactions)


def test_confluent_kafka_consume_transform_produce_commits_offsets_with_the_txn(
    broker: BrokerProcess,
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    source, sink, group = "ck-eos-in", "ck-eos-out", "ck-eos-group"
    create_topic(broker.bootstrap, source)
    create_topic(broker.bootstrap, sink)
    feeder = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(30):
        feeder.produce(source, f"in-{i}".encode(), partition=i % PARTITIONS)
    assert feeder.flush(DEADLINE) == 0

    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    c.assign([TopicPartition(source, p, 0) for p in range(PARTITIONS)])
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "ck-eos"})
    p.init_transactions(DEADLINE)

    def committed() -> dict[int, int]:
        parts = c.committed([TopicPartition(source, q) for q in range(PARTITIONS)], 10)
        return {tp.partition: tp.offset for tp in parts}

    def process(count: int, commit: bool) -> None:
        msgs: list[Any] = []
        deadline = time.monotonic() + DEADLINE
        while len(msgs) < count and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                msgs.append(m)
        assert len(msgs) == count
        p.begin_transaction()
        for m in msgs:
            p.produce(sink, b"out-" + m.value(), partition=m.partition())
        positions = c.position([TopicPartition(source, q) for q in range(PARTITIONS)])
        p.send_offsets_to_transaction(positions, c.consumer_group_metadata(), DEADLINE)
        if commit:
            p.commit_transaction(DEADLINE)
        else:
            p.abort_transaction(DEADLINE)

    try:
        process(30, commit=False)
        # Aborted: no offsets were committed for the group.
        assert all(o < 0 for o in committed().values()), committed()
        process_all_offsets = {q: 10 for q in range(PARTITIONS)}
        c.assign([TopicPartition(source, q, 0) for q in range(PARTITIONS)])  # rewind
        process(30, commit=True)
        wait_until(lambda: committed() == process_all_offsets, "the committed offsets")
    finally:
        c.close()
    out = read_all(broker.bootstrap, sink, "read_committed", 30)
    assert sorted(v for _, v in out) == sorted(f"out-in-{i}".encode() for i in range(30))


def test_confluent_kafka_second_producer_fences_the_first(broker: BrokerProcess) -> None:
    from confluent_kafka import KafkaException, Producer

    topic = "ck-fence"
    create_topic(broker.bootstrap, topic)
    conf = {"bootstrap.servers": broker.bootstrap, "transactional.id": "ck-fenced"}
    first = Producer(conf)
    first.init_transactions(DEADLINE)
    first.begin_transaction()
    first.produce(topic, b"zombie", partition=0)
    first.flush(DEADLINE)
    second = Producer(conf)
    second.init_transactions(DEADLINE)  # aborts the first one's transaction
    second.begin_transaction()
    second.produce(topic, b"winner", partition=0)
    second.commit_transaction(DEADLINE)
    with pytest.raises(KafkaException) as info:
        first.commit_transaction(10)
    assert info.value.args[0].fatal() or info.value.args[0].txn_requires_abort()
    got = read_all(broker.bootstrap, topic, "read_committed", 1)
    assert [v for _, v in got] == [b"winner"]


# -- kafka-python ---------------------------------------------------------------------------------


def test_kafka_python_transactions_commit_and_abort(broker: BrokerProcess) -> None:
    from kafka import KafkaProducer

    topic = "kp-txn"
    create_topic(broker.bootstrap, topic)
    transactions = plan("kp")
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="kp-producer")
    try:
        p.init_transactions()
        for commit, values in transactions:
            p.begin_transaction()
            futures = [p.send(topic, v, partition=i % PARTITIONS) for i, v in enumerate(values)]
            p.flush()
            for f in futures:
                f.get(timeout=DEADLINE)
            if commit:
                p.commit_transaction()
            else:
                p.abort_transaction()
    finally:
        p.close(timeout=10)
    check_read_committed(broker.bootstrap, topic, transactions)


# -- aiokafka -------------------------------------------------------------------------------------


def test_aiokafka_transactions_commit_and_abort(broker: BrokerProcess) -> None:
    topic = "aio-txn"
    create_topic(broker.bootstrap, topic)
    transactions = plan("aio")
    asyncio.run(_aiokafka(broker.bootstrap, topic, transactions))
    check_read_committed(broker.bootstrap, topic, transactions)


async def _aiokafka(
    bootstrap: str, topic: str, transactions: list[tuple[bool, list[bytes]]]
) -> None:
    from aiokafka import AIOKafkaProducer

    p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aio-producer")
    await p.start()
    try:
        for commit, values in transactions:
            await p.begin_transaction()
            for i, v in enumerate(values):
                await p.send(topic, v, partition=i % PARTITIONS)
            if commit:
                await p.commit_transaction()
            else:
                await p.abort_transaction()
    finally:
        await p.stop()
