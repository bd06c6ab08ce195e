"""kafka-python pinned to old protocol versions against kafkagen: message formats v0/v1.

``api_version=(0, 9)`` makes kafka-python produce with Produce v1 and fetch with Fetch v1
(magic 0 messages, no timestamps); ``(0, 10, 0)`` uses Produce v2 and Fetch v2 (magic 1,
timestamps). Messages, keys, timestamps and offsets must round trip, plain and gzip
compressed, and across formats: what a v2 producer wrote an old fetcher reads, and what an
old producer wrote a current consumer reads. A release preset must also look like that
release to kafka-python, which infers a broker's release from its ApiVersions.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafkagen.pytest_plugin import KafkaCluster, SyncControl
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.release_presets import preset_names

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

N = 30
T0 = int(time.time() * 1000) - 60_000
OLD = {"0.9": (0, 9), "0.10.0": (0, 10, 0)}
#: The Produce and Fetch versions kafka-python uses for each pinned release.
VERSIONS = {"0.9": (1, 1), "0.10.0": (2, 2)}
PRODUCE, FETCH = 0, 1


def send(bootstrap: str, topic: str, api_version: Any, compression: str | None) -> list[Any]:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        api_version=api_version,
        compression_type=compression,
        linger_ms=20,
        request_timeout_ms=10_000,
        **({} if api_version is not None else {"enable_idempotence": False}),
    )
    try:
        futures = [
            producer.send(
                topic,
                key=b"key-%d" % i,
                value=b"value-%d" % i * (1 + i % 3),
                partition=0,
                timestamp_ms=T0 + i,
            )
            for i in range(N)
        ]
        producer.flush(20)
        return [f.get(10) for f in futures]
    finally:
        producer.close(5)


def read(bootstrap: str, topic: str, api_version: Any) -> list[Any]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        api_version=api_version,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
    )
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got: list[Any] = []
        deadline = time.monotonic() + 30
        while len(got) < N and time.monotonic() < deadline:
            got.extend(consumer)
        return got
    finally:
        consumer.close()


def check(got: list[Any], timestamps: bool) -> None:
    assert [m.offset for m in got] == list(range(N))
    assert [(m.key, m.value) for m in got] == [
        (b"key-%d" % i, b"value-%d" % i * (1 + i % 3)) for i in range(N)
    ]
    stamps = [m.timestamp for m in got]
    if timestamps:
        assert stamps == [T0 + i for i in range(N)]
    else:
        assert all(ts in (None, -1) for ts in stamps), stamps


def used(control: SyncControl, api_key: int, topic: str) -> set[int]:
    return {
        r.api_version
        for r in control.records
        if r.api_key == api_key
        and r.request is not None
        and any(
            getattr(t, "name", getattr(t, "topic", None)) == topic
            for t in getattr(r.request, "topic_data", getattr(r.request, "topics", []))
        )
    }


@pytest.mark.parametrize("compression", [None, "gzip"])
@pytest.mark.parametrize("release", list(OLD))
def test_old_producer_and_consumer_round_trip(
    kafka_cluster: KafkaCluster,
    kafka_control: SyncControl,
    kafka_topic: str,
    release: str,
    compression: str | None,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    meta = send(bootstrap, kafka_topic, OLD[release], compression)
    assert [m.offset for m in meta] == list(range(N))
    check(read(bootstrap, kafka_topic, OLD[release]), timestamps=release != "0.9")
    produce_v, fetch_v = VERSIONS[release]
    assert used(kafka_control, PRODUCE, kafka_topic) == {produce_v}
    assert used(kafka_control, FETCH, kafka_topic) == {fetch_v}


@pytest.mark.parametrize("release", list(OLD))
def test_v2_batches_read_by_an_old_fetcher(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl, kafka_topic: str, release: str
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    send(bootstrap, kafka_topic, None, "gzip")
    assert min(used(kafka_control, PRODUCE, kafka_topic)) >= 3
    check(read(bootstrap, kafka_topic, OLD[release]), timestamps=release != "0.9")


@pytest.mark.parametrize("release", list(OLD))
def test_old_messages_read_by_a_current_consumer(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl, kafka_topic: str, release: str
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    send(bootstrap, kafka_topic, OLD[release], None)
    got = read(bootstrap, kafka_topic, None)
    assert min(used(kafka_control, FETCH, kafka_topic)) >= 4
    check(got, timestamps=release != "0.9")


def release_tuple(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


#: Where kafka-python's guess must differ: its marker for 3.4 is LeaderAndIsr v7, an API
#: between brokers that kafkagen does not serve; its newest marker is 4.3's (DescribeLogDirs
#: v5), so a 4.4 broker reads as 4.3.
CLIENT_VIEW = {"3.4": (3, 3), "4.4": (4, 3)}


@pytest.mark.parametrize("release", preset_names())
def test_kafka_python_sees_the_preset_release(release: str) -> None:
    with BackgroundCluster(configs={"kafkagen.api.version.preset": release}) as c:
        admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=10_000)
        try:
            seen = admin._client.check_version()  # what kafka-python infers from ApiVersions
        finally:
            admin.close()
    assert seen == CLIENT_VIEW.get(release, release_tuple(release))


def test_a_message_over_an_old_fetchers_limit_is_reported_too_large(
    kafka_cluster: KafkaCluster, kafka_topic: str
) -> None:
    from kafka.consumer.fetcher import RecordTooLargeError

    bootstrap = kafka_cluster.bootstrap_servers
    producer = KafkaProducer(bootstrap_servers=bootstrap, api_version=OLD["0.10.0"])
    try:
        producer.send(kafka_topic, value=b"x" * 2000, partition=0).get(10)
    finally:
        producer.close(5)
    for fetch_size, fits in ((1000, False), (100_000, True)):
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            api_version=OLD["0.10.0"],
            auto_offset_reset="earliest",
            consumer_timeout_ms=3000,
            max_partition_fetch_bytes=fetch_size,
        )
        try:
            consumer.assign([TopicPartition(kafka_topic, 0)])
            if fits:
                assert [len(m.value) for m in consumer] == [2000]
            else:
                # Fetch v2's limit is hard: the message arrives partial, as from Kafka.
                with pytest.raises(RecordTooLargeError):
                    list(consumer)
        finally:
            consumer.close()
