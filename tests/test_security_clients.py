"""Real clients against secured brokers: confluent-kafka over SASL_SSL with SCRAM-SHA-512,
kafka-python with PLAIN, aiokafka with SCRAM-SHA-256, and confluent-kafka with a client
certificate (mTLS); each on an allowed path and a denied one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from broker_helpers import WireClient, req
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.security.acls import (
    AclBinding,
    AclOperation,
    AclPermission,
    PatternType,
)
from kafkagen.runtime.broker.security.acls import ResourceType as RT
from tls_helpers import Pki, make_pki

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
QUIET = {"log_level": 0, "logger": lambda *a: None}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _grant(cluster: BackgroundCluster, *bindings: AclBinding) -> None:
    def add() -> None:
        assert cluster.cluster is not None
        for b in bindings:
            cluster.cluster.metadata.acls.add(b)

    cluster.call(add)


def _allow(principal: str, rtype: int, name: str, op: int, prefixed: bool = False) -> AclBinding:
    pattern = PatternType.PREFIXED if prefixed else PatternType.LITERAL
    return AclBinding(rtype, name, pattern, principal, "*", op, AclPermission.ALLOW)


def _create_topics(cluster: BackgroundCluster, *names: str) -> None:
    def create() -> None:
        assert cluster.cluster is not None
        for n in names:
            cluster.cluster.metadata.create_topic(n, 1, 1)

    cluster.call(create)


# -- confluent-kafka, SASL_SSL with SCRAM-SHA-512 ---------------------------------------


@pytest.fixture(scope="module")
def sasl_ssl(pki: Pki) -> Iterator[BackgroundCluster]:
    configs = {
        "listeners": "SASL_SSL://127.0.0.1:0",
        "ssl.keystore.location": str(pki.broker),
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "authorizer.class.name": STANDARD,
        "super.users": "User:alice",
        "group.initial.rebalance.delay.ms": "0",
    }
    with BackgroundCluster(configs=configs, users=USERS) as c:
        _create_topics(c, "orders", "secrets")
        yield c


def _confluent(cluster: BackgroundCluster, pki: Pki, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": cluster.bootstrap,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(pki.ca),
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": password,
        **QUIET,
    }


def _deliver(conf: dict[str, Any], topic: str) -> Any:
    """Produce one record; the delivery error (None when written)."""
    from confluent_kafka import Producer

    outcome: list[Any] = []
    p = Producer({**conf, "message.timeout.ms": 8000, "retries": 0})
    p.produce(topic, b"v", on_delivery=lambda err, msg: outcome.append(err))
    p.flush(15)
    assert outcome, "no delivery report"
    return outcome[0]


def test_confluent_sasl_ssl_scram_allowed_and_denied(sasl_ssl: BackgroundCluster, pki: Pki) -> None:
    from confluent_kafka import Consumer, KafkaError, KafkaException

    alice = _confluent(sasl_ssl, pki, "alice", "alice-secret")
    bob = _confluent(sasl_ssl, pki, "bob", "bob-secret")
    assert _deliver(alice, "orders") is None
    err = _deliver(bob, "orders")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # A wrong password: the client reports an authentication error.
    errors: list[Any] = []
    from confluent_kafka import Producer

    p = Producer({**_confluent(sasl_ssl, pki, "bob", "nope"), "error_cb": errors.append})
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        p.poll(0.2)
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION
    # bob may write orders and read it in group g-bob.
    _grant(
        sasl_ssl,
        _allow("User:bob", RT.TOPIC, "orders", AclOperation.WRITE),
        _allow("User:bob", RT.TOPIC, "orders", AclOperation.READ),
        _allow("User:bob", RT.GROUP, "g-bob", AclOperation.READ),
    )
    assert _deliver(bob, "orders") is None
    c = Consumer({**bob, "group.id": "g-bob", "auto.offset.reset": "earliest"})
    try:
        c.subscribe(["orders"])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 2 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        assert got == [b"v", b"v"]
    finally:
        c.close()
    # Another group is denied with GROUP_AUTHORIZATION_FAILED.
    c = Consumer({**bob, "group.id": "g-other", "auto.offset.reset": "earliest"})
    try:
        c.subscribe(["orders"])
        seen = None
        deadline = time.monotonic() + 20
        while seen is None and time.monotonic() < deadline:
            try:
                m = c.poll(0.5)
            except KafkaException as e:
                seen = e.args[0].code()
                break
            if m is not None and m.error() is not None:
                seen = m.error().code()
        assert seen == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        c.close()


# -- kafka-python, SASL_PLAINTEXT with PLAIN ---------------------------------------------


@pytest.fixture(scope="module")
def sasl_plain() -> Iterator[BackgroundCluster]:
    configs = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "authorizer.class.name": STANDARD,
        "super.users": "User:alice",
        "group.initial.rebalance.delay.ms": "0",
    }
    with BackgroundCluster(configs=configs, users=USERS) as c:
        _create_topics(c, "events", "hidden")
        _grant(
            c,
            _allow("User:bob", RT.TOPIC, "ev", AclOperation.ALL, prefixed=True),
            _allow("User:bob", RT.GROUP, "g", AclOperation.READ, prefixed=True),
        )
        yield c


def test_kafka_python_plain_allowed_and_denied(sasl_plain: BackgroundCluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaTimeoutError, TopicAuthorizationFailedError

    conf = {
        "bootstrap_servers": sasl_plain.bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "bob",
        "sasl_plain_password": "bob-secret",
    }
    p = KafkaProducer(**conf, retries=0, max_block_ms=8000)
    try:
        p.send("events", b"one").get(10)
        with pytest.raises(TopicAuthorizationFailedError):
            p.send("hidden", b"no").get(10)
    finally:
        p.close(5)
    c = KafkaConsumer(
        "events", **conf, group_id="g1", auto_offset_reset="earliest", consumer_timeout_ms=8000
    )
    try:
        assert next(iter(c)).value == b"one"
        assert c.topics() == {"events"}  # "hidden" is not described to bob
    finally:
        c.close()
    # A wrong password: every connection fails authentication, so bootstrap never ends.
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaProducer(
            **{**conf, "sasl_plain_password": "wrong"},
            max_block_ms=3000,
            reconnect_backoff_max_ms=300,
        )


# -- aiokafka, SCRAM-SHA-256 -------------------------------------------------------------


def test_aiokafka_scram_allowed_and_denied(sasl_plain: BackgroundCluster) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.errors import KafkaConnectionError, TopicAuthorizationFailedError

    def conf(password: str) -> dict[str, Any]:
        return {
            "bootstrap_servers": sasl_plain.bootstrap,
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "SCRAM-SHA-256",
            "sasl_plain_username": "bob",
            "sasl_plain_password": password,
        }

    async def main() -> None:
        p = AIOKafkaProducer(**conf("bob-secret"), request_timeout_ms=8000)
        await p.start()
        try:
            await p.send_and_wait("events", b"aio")
            with pytest.raises(TopicAuthorizationFailedError):
                await p.send_and_wait("hidden", b"no")
        finally:
            await p.stop()
        c = AIOKafkaConsumer(
            "events", **conf("bob-secret"), group_id="g-aio", auto_offset_reset="earliest"
        )
        await c.start()
        try:
            values: list[bytes] = []
            deadline = time.monotonic() + 20
            while b"aio" not in values and time.monotonic() < deadline:
                batch = await c.getmany(timeout_ms=500)
                values += [m.value for msgs in batch.values() for m in msgs if m.value]
            assert b"aio" in values
        finally:
            await c.stop()
        bad = AIOKafkaProducer(**conf("wrong"), request_timeout_ms=3000)
        with pytest.raises(KafkaConnectionError):
            await bad.start()
        await bad.stop()

    asyncio.run(asyncio.wait_for(main(), 90))


# -- mTLS ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mtls(pki: Pki) -> Iterator[BackgroundCluster]:
    configs = {
        "listeners": "SSL://127.0.0.1:0",
        "ssl.keystore.location": str(pki.broker),
        "ssl.truststore.location": str(pki.ca),
        "ssl.client.auth": "required",
        "authorizer.class.name": STANDARD,
    }
    with BackgroundCluster(configs=configs) as c:
        _create_topics(c, "tls-topic")
        yield c


def _ssl_conf(cluster: BackgroundCluster, pki: Pki, cn: str | None) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": cluster.bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki.ca),
        **QUIET,
    }
    if cn is not None:
        cert, key = pki.client(cn)
        conf["ssl.certificate.location"] = str(cert)
        conf["ssl.key.location"] = str(key)
    return conf


def test_mtls_principal_is_the_certificate_subject(mtls: BackgroundCluster, pki: Pki) -> None:
    from confluent_kafka import KafkaError

    _grant(mtls, _allow("User:CN=writer,O=kafkagen", RT.TOPIC, "tls-topic", AclOperation.WRITE))
    assert _deliver(_ssl_conf(mtls, pki, "writer"), "tls-topic") is None
    err = _deliver(_ssl_conf(mtls, pki, "reader"), "tls-topic")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # Without a client certificate the TLS handshake itself fails.
    err = _deliver(_ssl_conf(mtls, pki, None), "tls-topic")
    assert err is not None and err.code() == KafkaError._MSG_TIMED_OUT


def test_plaintext_socket_on_a_tls_listener_is_dropped(mtls: BackgroundCluster) -> None:
    with WireClient(mtls.bootstrap, timeout=5) as w:
        w.send(18, 0, req(18))
        assert w.is_closed()
