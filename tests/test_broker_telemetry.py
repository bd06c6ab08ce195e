"""Client telemetry (KIP-714): client metrics subscriptions reach clients through
GetTelemetrySubscriptions, PushTelemetry is checked as Kafka checks it, and what clients
push is kept for the control API."""

from __future__ import annotations

import gzip
import json
import time
import urllib.request
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from broker_helpers import BrokerProcess, WireClient
from kafkagen.generated.api_versions import ApiVersionsRequest
from kafkagen.generated.get_telemetry_subscriptions import GetTelemetrySubscriptionsRequest
from kafkagen.generated.incremental_alter_configs import IncrementalAlterConfigsRequest
from kafkagen.generated.push_telemetry import PushTelemetryRequest
from kafkagen.runtime.broker.cluster import TELEMETRY_EXPIRY_S, BackgroundCluster
from kafkagen.runtime.broker.config.store import ConfigStore
from kafkagen.runtime.broker.metadata.cluster_metadata import ClusterMetadata
from kafkagen.runtime.broker.telemetry.client_telemetry import ClientTelemetry
from kafkagen.runtime.errors import ErrorCode

ZERO = UUID(int=0)
CLIENT_METRICS = 16
ON = {"kafkagen.client.telemetry.enable": "true", "telemetry.max.bytes": "2048"}


def advertised(w: WireClient) -> set[int]:
    request = ApiVersionsRequest(client_software_name="test", client_software_version="1")
    answer = w.call(18, 3, request)
    assert answer.error_code == 0
    return {k.api_key for k in answer.api_keys}


def subscribe(w: WireClient, name: str, **configs: str | None) -> None:
    """Set (a value) or delete (None) configs of client metrics resource ``name``."""
    Req = IncrementalAlterConfigsRequest
    changes = [
        Req.AlterableConfig(
            name=k.replace("_", "."), config_operation=1 if v is None else 0, value=v
        )
        for k, v in configs.items()
    ]
    resource = Req.AlterConfigsResource(
        resource_type=CLIENT_METRICS, resource_name=name, configs=changes
    )
    assert w.call(44, 1, Req(resources=[resource])).responses[0].error_code == 0


def get(w: WireClient, instance: UUID = ZERO) -> Any:
    return w.call(71, 0, GetTelemetrySubscriptionsRequest(client_instance_id=instance))


def push(w: WireClient, instance: UUID, subscription: int, payload: bytes = b"", **kw: Any) -> int:
    r = w.call(
        72,
        0,
        PushTelemetryRequest(
            client_instance_id=instance,
            subscription_id=subscription,
            metrics=payload,
            **kw,
        ),
    )
    return int(r.error_code)


def otlp(*names: str) -> bytes:
    """An OTLP MetricsData with one resource and scope holding metrics of these names."""

    def field(number: int, payload: bytes) -> bytes:
        return bytes([number << 3 | 2]) + _varint(len(payload)) + payload

    metrics = b"".join(field(2, field(1, n.encode())) for n in names)
    return field(1, field(2, metrics))


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def test_the_telemetry_apis_are_advertised_and_pushes_kept_only_when_telemetry_is_on() -> None:
    with BackgroundCluster(1) as off, WireClient(off.bootstrap) as w:
        assert not advertised(w) & {71, 72}
        # Still answered, as Kafka does; a push is checked and dropped.
        granted = get(w)
        assert granted.error_code == 0
        assert push(w, granted.client_instance_id, granted.subscription_id, otlp("a")) == 0
        assert off.call(lambda: list(off.cluster.brokers[0].services.telemetry.pushes)) == []
    with BackgroundCluster(1, configs=ON) as on, WireClient(on.bootstrap) as w:
        assert advertised(w) >= {71, 72}


def test_a_client_gets_an_instance_id_and_the_subscriptions_that_match_it() -> None:
    with BackgroundCluster(1, configs=ON) as c, WireClient(c.bootstrap) as w:
        first = get(w)
        assert first.error_code == 0
        instance = first.client_instance_id
        assert instance != ZERO
        # No resource: nothing to push, asked again after Kafka's default interval.
        assert (first.requested_metrics, first.push_interval_ms) == ([], 300000)
        assert first.accepted_compression_types == [4, 3, 1, 2]
        assert (first.telemetry_max_bytes, first.delta_temporality) == (2048, True)
        # Asking again within the interval is throttled.
        assert get(w, instance).error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
        subscribe(w, "prod", metrics="org.apache.kafka.producer.", interval_ms="2000")
        subscribe(w, "mine", metrics="org.apache.kafka.consumer.", interval_ms="1000",
                  match="client_id=te.*,client_source_address=127\\.0\\.0\\.1")  # fmt: skip
        subscribe(w, "other", metrics="*", interval_ms="100", match="client_id=someone-else")
        # A changed subscription is answered at once, under a new subscription id.
        second = get(w, instance)
        assert second.error_code == 0
        assert second.client_instance_id == instance
        assert second.subscription_id != first.subscription_id
        assert second.requested_metrics == [
            "org.apache.kafka.consumer.",
            "org.apache.kafka.producer.",
        ]
        assert second.push_interval_ms == 1000
        # "*" in a matching resource: every metric.
        subscribe(w, "other", match="client_id=test")
        third = get(w, instance)
        assert (third.requested_metrics, third.push_interval_ms) == (["*"], 100)
        # The instance id is part of the hash: another instance, another id.
        assert get(w).subscription_id != third.subscription_id


def test_pushes_are_checked_as_kafka_checks_them_and_kept() -> None:
    with BackgroundCluster(1, configs=ON) as c, WireClient(c.bootstrap) as w:
        assert c.cluster is not None
        subscribe(w, "all", metrics="org.apache.kafka.", interval_ms="100")
        granted = get(w)
        instance, sub = granted.client_instance_id, granted.subscription_id
        assert push(w, ZERO, sub) == ErrorCode.INVALID_REQUEST
        # The first push after a subscription is taken; one within the interval is not.
        payload = gzip.compress(otlp("org.apache.kafka.producer.record.queue.time.max", "b"))
        assert push(w, instance, sub, payload, compression_type=1) == 0
        assert push(w, instance, sub, payload, compression_type=1) == (
            ErrorCode.THROTTLING_QUOTA_EXCEEDED
        )
        time.sleep(0.15)
        assert push(w, instance, sub + 1) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        time.sleep(0.15)
        assert push(w, instance, sub, compression_type=9) == (
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        )
        time.sleep(0.15)
        assert push(w, instance, sub, bytes(2049)) == ErrorCode.TELEMETRY_TOO_LARGE
        time.sleep(0.15)
        assert push(w, instance, sub, b"\xff\xff") == ErrorCode.INVALID_RECORD
        # A terminating push passes the interval check; nothing is taken after it.
        assert push(w, instance, sub, otlp("c"), terminating=True) == 0
        assert push(w, instance, sub, otlp("c")) == ErrorCode.INVALID_REQUEST
        kept = c.call(lambda: list(c.cluster.brokers[0].services.telemetry.pushes))
        assert [(p.metrics, p.compression, p.terminating) for p in kept] == [
            (["b", "org.apache.kafka.producer.record.queue.time.max"], 1, False),
            (["c"], 0, True),
        ]
        assert kept[0].size == len(payload) and kept[0].instance_id and kept[0].client_id == "test"


# -- a real client -------------------------------------------------------------------------


def pushes(control_url: str, client_id: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(control_url.rstrip("/") + "/telemetry", timeout=10) as r:
        answer = json.load(r)
    return [p for p in answer["pushes"] if p["client_id"] == client_id]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_librdkafka_pushes_the_subscribed_metrics_at_the_interval_until_unsubscribed() -> None:
    from confluent_kafka import Producer

    configs = [f"{k}={v}" for k, v in ON.items() if k != "telemetry.max.bytes"]
    with BrokerProcess(*configs, control=True) as b, WireClient(b.bootstrap) as w:
        match = "client_id=telemetry-.*,client_software_name=confluent-kafka-python"
        subscribe(
            w, "producers", metrics="org.apache.kafka.producer.", interval_ms="1000", match=match
        )
        p = Producer({"bootstrap.servers": b.bootstrap, "client.id": "telemetry-test"})
        try:
            deadline = time.monotonic() + 30
            while len(pushes(b.control_url, "telemetry-test")) < 4 and time.monotonic() < deadline:
                p.poll(0.2)
            seen = pushes(b.control_url, "telemetry-test")
            assert len(seen) >= 4, seen
            names = {n for s in seen for n in s["metrics"]}
            assert names and all(n.startswith("org.apache.kafka.producer.") for n in names)
            assert {s["compression"] for s in seen} <= {0, 1, 2, 3, 4}
            # About one push a second (the client jitters each interval).
            gaps = [b["time_ms"] - a["time_ms"] for a, b in zip(seen[1:], seen[2:], strict=False)]
            assert all(400 <= g <= 2500 for g in gaps), gaps
            subscribe(w, "producers", metrics=None, interval_ms=None, match=None)
            # The next push meets UNKNOWN_SUBSCRIPTION_ID, the client asks again and is
            # subscribed to nothing: the pushes stop.
            for _ in range(15):
                p.poll(0.2)
            settled = len(pushes(b.control_url, "telemetry-test"))
            for _ in range(20):
                p.poll(0.2)
            assert len(pushes(b.control_url, "telemetry-test")) == settled
        finally:
            p.flush(5)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_kafkas_java_client_pushes_the_subscribed_metrics_at_the_interval(
    tmp_path: Path,
) -> None:
    from kafka_tool_scenarios import topic
    from kafka_tools import Side

    configs = [f"{k}={v}" for k, v in ON.items() if k != "telemetry.max.bytes"]
    with BrokerProcess(*configs, control=True) as b, WireClient(b.bootstrap) as w:
        match = "client_id=java-perf,client_software_name=apache-kafka-java"
        subscribe(w, "java", metrics="org.apache.kafka.producer.", interval_ms="1000", match=match)
        side = Side(b.bootstrap, "tj", tmp_path)
        t = topic(side, "perf", rf=1)
        out = side.run(
            "kafka-producer-perf-test",
            *("--topic", t, "--num-records", "1000", "--record-size", "10"),
            *("--throughput", "100", "--producer-props", "bootstrap.servers={bootstrap}"),
            *("client.id=java-perf", "enable.metrics.push=true"),
        )
        assert out.exit == 0, out.describe()
        seen = pushes(b.control_url, "java-perf")
        # Ten seconds of producing at one push a second, from one client instance.
        assert len(seen) >= 3, seen
        assert len({s["client_instance_id"] for s in seen}) == 1
        names = {n for s in seen for n in s["metrics"]}
        assert names and all(n.startswith("org.apache.kafka.producer.") for n in names)
        gaps = [b["time_ms"] - a["time_ms"] for a, b in zip(seen[1:], seen[2:], strict=False)]
        assert all(400 <= g <= 2500 for g in gaps), gaps


def test_expired_instances_are_forgotten_not_kept_until_the_cache_is_full() -> None:
    """Kafka's client metrics manager removes an instance from its cache when its expiry
    (three push intervals, at least a minute) passes; clients that asked once and went
    away must not stay until 16,384 of them fill the cache."""
    now = [1_000_000]
    telemetry = ClientTelemetry(ClusterMetadata(ConfigStore()), 2048, time_ms=lambda: now[0])
    client = {"client_id": "c", "client_software_name": "s", "client_software_version": "1"}
    for _ in range(500):
        telemetry.subscription(ZERO, client)
    assert len(telemetry._instances) == 500
    # No resource: the default five-minute interval, so fifteen minutes of expiry.
    now[0] += 15 * 60_000 - 1
    telemetry.subscription(ZERO, client)
    assert len(telemetry._instances) == 501
    now[0] += 1
    telemetry.subscription(ZERO, client)
    assert len(telemetry._instances) == 2  # the 500 expired; the one asked later stays


def test_expired_instances_go_without_another_request() -> None:
    """The expiry is a timer in Kafka, not a check on the next request: a broker no
    client asks any more lets its instances go (the broker sweeps every few seconds)."""
    now = [1_000_000]
    telemetry = ClientTelemetry(ClusterMetadata(ConfigStore()), 2048, time_ms=lambda: now[0])
    client = {"client_id": "c", "client_software_name": "s", "client_software_version": "1"}
    for _ in range(300):
        telemetry.subscription(ZERO, client)
    now[0] += 15 * 60_000 - 1
    telemetry.forget_expired()
    assert len(telemetry._instances) == 300
    now[0] += 1
    telemetry.forget_expired()
    assert len(telemetry._instances) == 0


def test_a_broker_sweeps_its_expired_instances_on_a_timer() -> None:
    """On a running cluster the sweep is scheduled: an instance whose expiry passed is
    gone a sweep later with no request in between."""
    with BackgroundCluster(brokers=1) as c, WireClient(c.bootstrap) as w:
        assert c.cluster is not None
        telemetry = c.cluster.telemetry_of(c.cluster.brokers[0].node_id)
        w.call(71, 0, GetTelemetrySubscriptionsRequest(client_instance_id=ZERO))
        assert len(telemetry._instances) == 1
        real = telemetry.time_ms
        telemetry.time_ms = lambda: real() + 15 * 60_000  # the expiry has passed
        deadline = time.monotonic() + 3 * TELEMETRY_EXPIRY_S
        while telemetry._instances and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(telemetry._instances) == 0


def test_an_instance_goes_with_the_connection_that_made_it() -> None:
    """As Kafka's disconnect listener: closing the connection an instance was made on
    forgets it at once; an instance another connection made stays."""
    with BackgroundCluster(brokers=1) as c:
        assert c.cluster is not None
        telemetry = c.cluster.telemetry_of(c.cluster.brokers[0].node_id)
        with WireClient(c.bootstrap) as stays:
            kept = get(stays).client_instance_id
            with WireClient(c.bootstrap) as goes:
                gone = get(goes).client_instance_id
                assert c.call(lambda: set(telemetry._instances)) == {kept, gone}
            deadline = time.monotonic() + 10
            while gone in c.call(lambda: set(telemetry._instances)):
                assert time.monotonic() < deadline, "the closed connection's instance stayed"
                time.sleep(0.05)
            assert c.call(lambda: set(telemetry._instances)) == {kept}
            # The connection still open goes on with its instance.
            assert get(stays, kept).error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
