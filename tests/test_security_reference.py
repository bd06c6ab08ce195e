"""The ACL scenarios against Apache Kafka too: the same requests, authenticated with
SASL/PLAIN, sent to Kafka 4.4.0 (StandardAuthorizer) and to kafkagen, must get the same
answers (error codes, hidden topics, authorized operations)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_helpers import WireClient, req
from kafkagen.generated import message_type
from kafkagen.reference import KafkaReference
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.security.acls import AclOperation as OP
from kafkagen.runtime.broker.security.acls import AclPermission, PatternType
from kafkagen.runtime.broker.security.acls import ResourceType as RT
from kafkagen.runtime.records import Record, build_batch

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
USERS = {"alice": "alice-secret", "bob": "bob-secret"}


class SecuredKafka(KafkaReference):
    """Kafka with a SASL_PLAINTEXT listener for the test's users beside the PLAINTEXT one
    its nodes use among themselves (whose anonymous principal is a super user)."""

    def __init__(self) -> None:
        super().__init__(
            1,
            configs={
                "authorizer.class.name": STANDARD,
                "super.users": "User:ANONYMOUS;User:alice",
                "sasl.enabled.mechanisms": "PLAIN",
            },
        )
        self.sasl_port = 0

    def _write_properties(self, node: int, port: int, controller_port: int, voters: str) -> Path:
        path = super()._write_properties(node, port, controller_port, voters)
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.sasl_port = s.getsockname()[1]
        jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required " + " ".join(
            f'user_{u}="{p}"' for u, p in USERS.items()
        )
        props = {}
        for line in path.read_text().splitlines():
            key, _, value = line.partition("=")
            props[key] = value
        sasl = f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}"
        props["listeners"] += f",{sasl}"
        props["advertised.listeners"] += f",{sasl}"
        props["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
        props["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = jaas + ";"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path


@pytest.fixture(scope="module")
def kafka() -> Iterator[str]:
    try:
        ref = SecuredKafka().start()
    except Exception as e:  # no JVM or Maven here: nothing to compare with
        pytest.skip(f"Apache Kafka cannot be started: {str(e)[:200]}")
    try:
        yield f"127.0.0.1:{ref.sasl_port}"
    finally:
        ref.stop()


@pytest.fixture(scope="module")
def kafkagen() -> Iterator[str]:
    configs = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "authorizer.class.name": STANDARD,
        "super.users": "User:alice",
    }
    with BackgroundCluster(configs=configs, users=USERS) as c:
        yield c.bootstrap


def _login(bootstrap: str, user: str) -> WireClient:
    w = WireClient(bootstrap)
    assert w.call(17, 1, req(17, mechanism="PLAIN")).error_code == 0
    r = w.call(36, 2, req(36, auth_bytes=f"\0{user}\0{USERS[user]}".encode()))
    assert r.error_code == 0, r
    return w


def _acl(w: WireClient, rtype: int, name: str, pattern: int, op: int, allow: bool = True) -> None:
    Req: Any = message_type(30, "request")
    permission = AclPermission.ALLOW if allow else AclPermission.DENY
    creation = Req.AclCreation(
        resource_type=rtype,
        resource_name=name,
        resource_pattern_type=pattern,
        principal="User:bob",
        host="*",
        operation=op,
        permission_type=permission,
    )
    assert w.call(30, 3, Req(creations=[creation])).results[0].error_code == 0


def _produce(w: WireClient, topic: str) -> int:
    Req: Any = message_type(0, "request")
    data = Req.TopicProduceData(
        name=topic,
        partition_data=[
            Req.PartitionProduceData(index=0, records=build_batch([Record(-1, 1, b"k", b"v")]))
        ],
    )
    r = w.call(0, 9, Req(acks=1, timeout_ms=5000, topic_data=[data]))
    code: int = r.responses[0].partition_responses[0].error_code
    return code


def _find_coordinator(w: WireClient, group: str) -> int:
    """FindCoordinator's error, once the offsets topic exists (Kafka creates it on the
    first lookup and answers COORDINATOR_NOT_AVAILABLE meanwhile)."""
    deadline = time.monotonic() + 20
    while True:
        code: int = w.call(10, 3, req(10, key=group, key_type=0)).error_code
        if code != 15 or time.monotonic() > deadline:
            return code
        time.sleep(0.3)


def _scenario(bootstrap: str, tag: str) -> dict[str, object]:
    """What bob gets, before and after alice grants him some ACLs."""
    a, b, hidden = f"{tag}-open", f"{tag}-read", f"{tag}-hidden"
    seen: dict[str, object] = {}
    Meta: Any = message_type(3, "request")
    with _login(bootstrap, "alice") as alice:
        CT: Any = message_type(19, "request")
        topics = [
            CT.CreatableTopic(
                name=n, num_partitions=1, replication_factor=1, assignments=[], configs=[]
            )
            for n in (a, b, hidden)
        ]
        r = alice.call(19, 7, CT(topics=topics, timeout_ms=10000))
        assert [t.error_code for t in r.topics] == [0, 0, 0], r
        with _login(bootstrap, "bob") as bob:
            seen["produce before"] = _produce(bob, a)
            seen["find group before"] = bob.call(
                10, 3, req(10, key=f"{tag}-g", key_type=0)
            ).error_code
        _acl(alice, RT.TOPIC, a, PatternType.LITERAL, OP.WRITE)
        _acl(alice, RT.TOPIC, b, PatternType.LITERAL, OP.READ)
        _acl(alice, RT.TOPIC, f"{tag}-", PatternType.PREFIXED, OP.DESCRIBE_CONFIGS)
        _acl(alice, RT.TOPIC, b, PatternType.LITERAL, OP.DESCRIBE_CONFIGS, allow=False)
        _acl(alice, RT.GROUP, f"{tag}-g", PatternType.PREFIXED, OP.READ)
        time.sleep(1.0)  # Kafka applies new ACLs from its metadata log shortly after
    with _login(bootstrap, "bob") as bob:
        seen["produce allowed"] = _produce(bob, a)
        seen["produce read-only"] = _produce(bob, b)
        r = bob.call(3, 12, Meta(topics=None, include_topic_authorized_operations=True))
        mine = {t.name: t.topic_authorized_operations for t in r.topics if t.name.startswith(tag)}
        seen["listed"] = {n.removeprefix(tag) for n in mine}
        seen["operations"] = {n.removeprefix(tag): ops for n, ops in mine.items()}
        r = bob.call(3, 12, Meta(topics=[Meta.MetadataRequestTopic(name=hidden)]))
        seen["named hidden"] = r.topics[0].error_code
        r = bob.call(3, 12, Meta(topics=[Meta.MetadataRequestTopic(name=f"{tag}-absent")]))
        seen["named absent"] = r.topics[0].error_code
        seen["find group"] = _find_coordinator(bob, f"{tag}-g1")
        seen["find other group"] = bob.call(10, 3, req(10, key="zz", key_type=0)).error_code
        DC: Any = message_type(32, "request")
        r = bob.call(
            32,
            4,
            DC(
                resources=[
                    DC.DescribeConfigsResource(
                        resource_type=2, resource_name=n, configuration_keys=["retention.ms"]
                    )
                    for n in (a, b, hidden)
                ]
            ),
        )
        seen["describe configs"] = [x.error_code for x in r.results]
        seen["create acls"] = (
            bob.call(
                30,
                3,
                message_type(30, "request")(
                    creations=[
                        message_type(30, "request").AclCreation(
                            resource_type=RT.TOPIC,
                            resource_name="x",
                            resource_pattern_type=PatternType.LITERAL,
                            principal="User:bob",
                            host="*",
                            operation=OP.ALL,
                            permission_type=AclPermission.ALLOW,
                        )
                    ]
                ),
            )
            .results[0]
            .error_code
        )
        r = bob.call(
            29,
            3,
            req(
                29,
                resource_type_filter=1,
                resource_name_filter=None,
                pattern_type_filter=1,
                principal_filter=None,
                host_filter=None,
                operation=1,
                permission_type=1,
            ),
        )
        seen["describe acls"] = r.error_code
    return seen


def test_acl_scenarios_match_apache_kafka(kafka: str, kafkagen: str) -> None:
    ours = _scenario(kafkagen, "sec")
    theirs = _scenario(kafka, "sec")
    print("kafkagen:", ours)
    print("kafka:   ", theirs)
    assert ours == theirs
