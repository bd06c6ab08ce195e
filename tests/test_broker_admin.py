"""Admin calls of real clients against a kafkagen broker (a subprocess on 127.0.0.1).

Topics (create, grow, delete), configs (describe, alter, incremental), offsets by spec,
groups (list, describe, offsets, delete), the cluster, log dirs, producers and ACLs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from broker_helpers import BrokerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess(
        "group.initial.rebalance.delay.ms=0",
        "offsets.topic.num.partitions=3",
        "group.min.session.timeout.ms=1000",
    ) as b:
        yield b
        assert b.alive(), b.stderr_text()


def _produce(bootstrap: str, topic: str, n: int, ts0: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(n):
        p.produce(topic, b"v%d" % i, b"k", partition=0, timestamp=ts0 + i)
    assert p.flush(30) == 0


def _commit_as_group(bootstrap: str, topic: str, group: str, keep_open: bool = False) -> Any:
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
        }
    )
    c.subscribe([topic])
    deadline = time.monotonic() + 30
    got = 0
    while time.monotonic() < deadline and got == 0:
        for m in c.consume(100, 0.5):
            if not m.error():
                got += 1
    assert got, "the group consumed nothing"
    c.commit(asynchronous=False)
    if keep_open:
        return c
    c.close()
    return None


# ------------------------------------------------------------------ confluent-kafka


def test_confluent_admin(broker: BrokerProcess) -> None:
    from confluent_kafka import (
        ConsumerGroupState,
        KafkaException,
        TopicPartition,
    )
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        OffsetSpec,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = "ck-admin"
    admin.create_topics([NewTopic(topic, 2, 1, config={"retention.ms": "3600000"})])[topic].result(
        30
    )
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):
        admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)

    # Configs: the override, then an incremental change.
    res = ConfigResource(ResourceType.TOPIC, topic)
    configs = admin.describe_configs([res])[res].result(30)
    assert configs["retention.ms"].value == "3600000"
    assert configs["cleanup.policy"].value == "delete"
    change = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry(
                "cleanup.policy", "compact,delete", incremental_operation=AlterConfigOpType.SET
            )
        ],
    )
    admin.incremental_alter_configs([change])[change].result(30)
    assert admin.describe_configs([res])[res].result(30)["cleanup.policy"].value == "compact,delete"
    broker_res = ConfigResource(ResourceType.BROKER, "0")
    broker_configs = admin.describe_configs([broker_res])[broker_res].result(30)
    assert broker_configs["num.partitions"].value == "1"

    # Partitions and the cluster.
    admin.create_partitions([NewPartitions(topic, 4)])[topic].result(30)
    assert len(admin.list_topics(timeout=10).topics[topic].partitions) == 4
    cluster = admin.describe_cluster().result(30)
    assert len(cluster.nodes) == 1 and cluster.cluster_id

    # Offsets by spec.
    ts0 = int(time.time() * 1000) - 10_000
    _produce(broker.bootstrap, topic, 10, ts0)
    tp = TopicPartition(topic, 0)
    for spec, want in (
        (OffsetSpec.earliest(), 0),
        (OffsetSpec.latest(), 10),
        (OffsetSpec.max_timestamp(), 9),
        (OffsetSpec.for_timestamp(ts0 + 4), 4),
    ):
        result = admin.list_offsets({tp: spec})[tp].result(30)
        assert result.offset == want, spec

    # Deleting records moves the log start.
    deleted = admin.delete_records([TopicPartition(topic, 0, 5)])
    [fut] = deleted.values()
    assert fut.result(30).low_watermark == 5
    assert admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result(30).offset == 5

    # Groups.
    group = "ck-admin-group"
    consumer = _commit_as_group(broker.bootstrap, topic, group, keep_open=True)
    listed = admin.list_consumer_groups().result(30)
    assert group in {g.group_id for g in listed.valid}
    [described] = admin.describe_consumer_groups([group]).values()
    d = described.result(30)
    assert d.state == ConsumerGroupState.STABLE and len(d.members) == 1
    consumer.close()
    offsets = admin.list_consumer_group_offsets(
        [__import__("confluent_kafka").ConsumerGroupTopicPartitions(group)]
    )
    committed = {p.partition: p.offset for p in offsets[group].result(30).topic_partitions}
    assert committed.get(0) == 10
    admin.delete_consumer_groups([group])[group].result(30)
    assert group not in {g.group_id for g in admin.list_consumer_groups().result(30).valid}

    # ACLs: stored and described.
    acl = AclBinding(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    admin.create_acls([acl])[acl].result(30)
    flt = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert admin.describe_acls(flt).result(30) == [acl]
    assert admin.delete_acls([flt])[flt].result(30) == [acl]
    assert admin.describe_acls(flt).result(30) == []

    admin.delete_topics([topic])[topic].result(30)
    deadline = time.monotonic() + 10
    while topic in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline
        time.sleep(0.1)


# ------------------------------------------------------------------ kafka-python


def test_kafka_python_admin(broker: BrokerProcess) -> None:
    from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ConfigResource,
        ConfigResourceType,
        NewTopic,
        OffsetSpec,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        topic = "kp-admin"
        admin.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": "7200000"})])
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        assert "7200000" in repr(described)
        admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "5000"})]
        )
        assert "'5000'" in repr(
            admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        )
        cluster = admin.describe_cluster()
        assert "cluster_id" in repr(cluster)

        # Idempotent producer: its state shows in DescribeProducers.
        p = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        ts0 = int(time.time() * 1000) - 5000
        for i in range(5):
            p.send(topic, b"v", partition=0, timestamp_ms=ts0 + i)
        p.flush(30)
        p.close(10)
        tp = TopicPartition(topic, 0)
        offsets = admin.list_partition_offsets(
            {tp: OffsetSpec.EARLIEST}
        ) | admin.list_partition_offsets({TopicPartition(topic, 1): OffsetSpec.LATEST})
        assert offsets[tp].offset == 0 and offsets[TopicPartition(topic, 1)].offset == 0
        assert admin.list_partition_offsets({tp: OffsetSpec.LATEST})[tp].offset == 5
        assert admin.list_partition_offsets({tp: OffsetSpec.MAX_TIMESTAMP})[tp].offset == 4
        producers = admin.describe_producers([tp])
        assert len(producers[tp].active_producers) == 1
        assert producers[tp].active_producers[0].last_sequence == 4

        log_dirs = admin.describe_log_dirs()
        assert topic in repr(log_dirs)

        group = "kp-admin-group"
        _commit_as_group(broker.bootstrap, topic, group)
        assert group in repr(admin.list_groups())
        assert "Empty" in repr(admin.describe_groups([group]))
        assert "offset=5" in repr(admin.list_group_offsets(group))
        deleted = admin.delete_group_offsets(group, [tp])
        assert "NoError" in repr(deleted[tp])
        admin.delete_groups([group])
        assert group not in repr(admin.list_groups())

        pattern = ResourcePattern(ResourceType.GROUP, "team-", ACLResourcePatternType.PREFIXED)
        acl = ACL("User:bob", "*", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW, pattern)
        created = admin.create_acls([acl])
        assert created["succeeded"], created
        flt = ACLFilter(
            None,
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.GROUP, "team-blue", ACLResourcePatternType.MATCH),
        )
        acls, error = admin.describe_acls(flt)
        assert len(acls) == 1 and acls[0].principal == "User:bob"
        admin.delete_acls([flt])

        admin.delete_topics([topic])
        assert topic not in admin.list_topics()
    finally:
        admin.close()


# ------------------------------------------------------------------ aiokafka


def test_aiokafka_admin(broker: BrokerProcess) -> None:
    asyncio.run(asyncio.wait_for(_aiokafka_admin(broker.bootstrap), 90))


async def _aiokafka_admin(bootstrap: str) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        topic = "aio-admin"
        await admin.create_topics([NewTopic(topic, 3, 1)])
        assert topic in await admin.list_topics()
        configs = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        assert "retention.ms" in repr(configs)
        await admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "1000"})]
        )
        assert "'1000'" in repr(
            await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        )
        cluster = await admin.describe_cluster()
        assert len(cluster["brokers"]) == 1
        _produce(bootstrap, topic, 3, int(time.time() * 1000))
        group = "aio-admin-group"
        await asyncio.to_thread(_commit_as_group, bootstrap, topic, group)
        assert (group, "consumer") in await admin.list_consumer_groups()
        assert "Empty" in repr(await admin.describe_consumer_groups([group]))
        offsets = await admin.list_consumer_group_offsets(group)
        assert sum(o.offset for o in offsets.values()) == 3
        await admin.delete_topics([topic])
        assert topic not in await admin.list_topics()
    finally:
        await admin.close()
