"""Real clients' error handling, shown through the control API (slow: real clients).

Each test injects one fault with ``kafka_control`` and asserts what the client did: what
it retried, how long it waited, that its message arrived exactly once.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from kafkagen.pytest_plugin import KafkaCluster, SyncControl

pytestmark = pytest.mark.slow

NOT_LEADER = 6


def log_end(kc: KafkaCluster, topic: str, partition: int = 0) -> int:
    def end() -> int:
        for tp, p in kc.cluster.brokers[0].replica_manager.partitions.items():
            if (tp.topic, tp.partition) == (topic, partition):
                return int(p.log.log_end_offset)
        raise AssertionError(f"no replica of {topic}-{partition}")

    return int(kc.call(end))


def produce_one(kc: KafkaCluster, topic: str, value: bytes) -> None:
    from confluent_kafka import Producer

    producer = Producer(kc.confluent_config())
    producer.produce(topic, value)
    assert producer.flush(20) == 0


def first_message(consumer: Any, limit: float) -> tuple[Any, float]:
    """The first message the consumer polls within ``limit`` seconds, and the wait; closes it."""
    started = time.monotonic()
    msg = None
    try:
        while msg is None and time.monotonic() - started < limit:
            msg = consumer.poll(0.2)
    finally:
        consumer.close()
    return msg, time.monotonic() - started


def between_produces(control: SyncControl) -> list[str]:
    """The APIs a client called between its failed Produce and the next one."""
    from kafkagen.runtime.broker.api import HANDLERS

    names = [(HANDLERS[r.api_key].name, r.outcome) for r in control.records]
    first = names.index(("Produce", "error"))
    second = names.index(("Produce", "answered"), first)
    seq = [n for n, _ in names[first + 1 : second]]
    print(f"between the failed Produce and its retry: {seq}")
    return seq


def test_librdkafka_retries_not_leader_once_on_produce(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl, kafka_topic: str
) -> None:
    from confluent_kafka import Producer

    kafka_control.add("Produce", topic=kafka_topic, partition=0, error="NOT_LEADER_OR_FOLLOWER")
    producer = Producer(kafka_cluster.confluent_config(**{"linger.ms": 0}))
    reports: list[tuple[Any, int]] = []
    producer.produce(kafka_topic, b"once", on_delivery=lambda e, m: reports.append((e, m.offset())))
    assert producer.flush(20) == 0
    assert reports == [(None, 0)]  # delivered, no error seen by the application
    produces = kafka_control.find("Produce")
    assert [r.outcome for r in produces] == ["error", "answered"]  # retried once
    between_produces(kafka_control)
    assert log_end(kafka_cluster, kafka_topic) == 1  # and written once


def test_kafka_python_retries_not_leader_once_on_produce(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl, kafka_topic: str
) -> None:
    from kafka import KafkaProducer

    kafka_control.add("Produce", topic=kafka_topic, partition=0, error="NOT_LEADER_OR_FOLLOWER")
    producer = KafkaProducer(**kafka_cluster.kafka_python_config(retries=3, linger_ms=0))
    try:
        meta = producer.send(kafka_topic, b"once", partition=0).get(timeout=20)
    finally:
        producer.close(5)
    assert meta.offset == 0
    outcomes = [r.outcome for r in kafka_control.find("Produce")]
    assert outcomes == ["error", "answered"]
    # kafka-python asks for metadata again between the error and its retry.
    assert "Metadata" in between_produces(kafka_control)
    assert log_end(kafka_cluster, kafka_topic) == 1


def test_aiokafka_retries_not_leader_once_on_produce(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl, kafka_topic: str
) -> None:
    from aiokafka import AIOKafkaProducer

    kafka_control.add("Produce", topic=kafka_topic, partition=0, error="NOT_LEADER_OR_FOLLOWER")

    async def send() -> Any:
        producer = AIOKafkaProducer(**kafka_cluster.aiokafka_config(linger_ms=0))
        await producer.start()
        try:
            return await asyncio.wait_for(
                producer.send_and_wait(kafka_topic, b"once", partition=0), 20
            )
        finally:
            await producer.stop()

    meta = asyncio.run(send())
    assert meta.offset == 0
    assert [r.outcome for r in kafka_control.find("Produce")] == ["error", "answered"]
    assert "Metadata" in between_produces(kafka_control)
    assert log_end(kafka_cluster, kafka_topic) == 1


def test_librdkafka_waits_out_a_delayed_fetch(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl, kafka_topic: str
) -> None:
    from confluent_kafka import Consumer, TopicPartition

    produce_one(kafka_cluster, kafka_topic, b"late")
    kafka_control.add("Fetch", topic=kafka_topic, delay_ms=2000)
    consumer = Consumer(
        kafka_cluster.confluent_config(
            **{"group.id": f"g-{kafka_topic}", "auto.offset.reset": "earliest"}
        )
    )
    consumer.assign([TopicPartition(kafka_topic, 0, 0)])
    msg, waited = first_message(consumer, 20)
    assert msg is not None and msg.error() is None and msg.value() == b"late"
    assert waited >= 2.0, waited  # the data came with the delayed answer
    print(f"librdkafka: first message {waited:.2f} s after assign, behind a 2 s Fetch delay")
    fetches = kafka_control.find("Fetch")
    assert fetches[0].rule is not None and fetches[0].outcome == "answered"


def test_librdkafka_rejoins_after_a_dropped_join_group(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl, kafka_topic: str
) -> None:
    from confluent_kafka import Consumer

    produce_one(kafka_cluster, kafka_topic, b"joined")
    kafka_control.add("JoinGroup", drop=True)
    consumer = Consumer(
        kafka_cluster.confluent_config(
            **{
                "group.id": f"g-{kafka_topic}",
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "max.poll.interval.ms": 7000,
            }
        )
    )
    consumer.subscribe([kafka_topic])
    msg, waited = first_message(consumer, 40)
    assert msg is not None and msg.value() == b"joined"
    joins = kafka_control.find("JoinGroup")
    assert joins[0].outcome == "dropped"
    assert any(j.outcome == "answered" for j in joins[1:])
    # librdkafka waited for the dropped answer (its JoinGroup timeout), then joined again.
    print(f"librdkafka: joined {waited:.1f} s after a dropped JoinGroup, {len(joins)} JoinGroups")
    assert waited > 3


def test_kafka_python_waits_its_rebalance_timeout_after_a_dropped_join_group(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl, kafka_topic: str
) -> None:
    from kafka import KafkaConsumer

    produce_one(kafka_cluster, kafka_topic, b"joined")
    kafka_control.add("JoinGroup", drop=True)
    started = time.monotonic()
    consumer = KafkaConsumer(
        kafka_topic,
        group_id=f"g-{kafka_topic}",
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        request_timeout_ms=8000,
        # kafka-python times a JoinGroup out by this (the rebalance timeout), not by
        # request_timeout_ms: with its default of 300 s it would wait five minutes.
        max_poll_interval_ms=7000,
        **kafka_cluster.kafka_python_config(),
    )
    got = None
    try:
        while got is None and time.monotonic() - started < 40:
            for records in consumer.poll(200).values():
                got = records[0].value
    finally:
        consumer.close()
    waited = time.monotonic() - started
    assert got == b"joined"
    joins = [j.outcome for j in kafka_control.find("JoinGroup")]
    assert joins[0] == "dropped" and "answered" in joins[1:]
    print(f"kafka-python: joined {waited:.1f} s after a dropped JoinGroup, {len(joins)} JoinGroups")
    assert waited > 7


def test_aiokafka_times_out_a_dropped_join_group_by_request_timeout(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl, kafka_topic: str
) -> None:
    from aiokafka import AIOKafkaConsumer

    produce_one(kafka_cluster, kafka_topic, b"joined")
    kafka_control.add("JoinGroup", drop=True)

    async def consume() -> tuple[bytes, float]:
        started = time.monotonic()
        consumer = AIOKafkaConsumer(
            kafka_topic,
            group_id=f"g-{kafka_topic}",
            auto_offset_reset="earliest",
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            request_timeout_ms=8000,
            **kafka_cluster.aiokafka_config(),
        )
        await consumer.start()
        try:
            msg = await asyncio.wait_for(consumer.getone(), 40)
        finally:
            await consumer.stop()
        return msg.value, time.monotonic() - started

    value, waited = asyncio.run(consume())
    assert value == b"joined"
    joins = [j.outcome for j in kafka_control.find("JoinGroup")]
    assert joins[0] == "dropped" and "answered" in joins[1:]
    print(f"aiokafka: joined {waited:.1f} s after a dropped JoinGroup, {len(joins)} JoinGroups")
    assert waited > 8


@pytest.mark.parametrize("release", ["2.4", "3.0"])
def test_librdkafka_against_a_release_preset(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl, kafka_topic: str, release: str
) -> None:
    from confluent_kafka import Consumer, TopicPartition
    from kafkagen.runtime.broker.release_presets import preset_ranges

    kafka_control.set_versions(0, preset=release)
    produce_one(kafka_cluster, kafka_topic, b"old")
    consumer = Consumer(kafka_cluster.confluent_config(**{"group.id": f"g-{kafka_topic}"}))
    consumer.assign([TopicPartition(kafka_topic, 0, 0)])
    msg, _ = first_message(consumer, 20)
    assert msg is not None and msg.value() == b"old"
    ranges = preset_ranges(release)
    used = {(r.api_key, r.api_version) for r in kafka_control.records}
    # Every request the client sent was at a version that release's broker served.
    assert all(v <= ranges[k][1] for k, v in used), sorted(used)
    assert (0, ranges[0][1]) in used and (1, ranges[1][1]) in used  # Produce, Fetch at the top
