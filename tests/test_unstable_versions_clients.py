"""Real Kafka clients against a broker with unstable versions enabled (seed 001's paged
versions advertised): each client negotiates the versions it knows, so no request of
Kafka's released layouts may be read as one of kafkagen's own versions.

For confluent-kafka and kafka-python, a produce, a consume in a group with a commit, and
the admin calls of the paged APIs each client has (topics, groups, committed and latest
offsets, configs; with kafka-python also log dirs, producers and transactions); the broker
must close no connection, log no malformed request, and stay up.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from broker_helpers import BrokerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

MESSAGES = 200
DEADLINE = 60.0


@pytest.fixture()
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess(
        "unstable.api.versions.enable=true",
        "group.initial.rebalance.delay.ms=0",
        "offsets.topic.num.partitions=3",
    ) as b:
        yield b
        assert b.alive(), b.stderr_text()
        log = b.stderr_text()
        assert "malformed" not in log and "closing connection" not in log, log


def test_confluent_kafka_session_with_unstable_versions(broker: BrokerProcess) -> None:
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    topic, group = "ck-unstable", "ck-unstable-group"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    assert topic in admin.list_topics(timeout=30).topics
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for i in range(MESSAGES):
        p.produce(topic, b"v%d" % i, b"k%d" % i)
    assert p.flush(30) == 0
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + DEADLINE
    while len(got) < MESSAGES and time.monotonic() < deadline:
        got += [m.value() for m in c.consume(500, 0.5) if not m.error()]
    c.commit(asynchronous=False)
    described = admin.describe_consumer_groups([group])[group].result(30)
    c.close()
    assert sorted(got) == sorted(b"v%d" % i for i in range(MESSAGES))
    assert described.group_id == group and len(described.members) == 1
    listed = admin.list_consumer_groups().result(30)
    assert group in {g.group_id for g in listed.valid}
    offsets = (
        admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
        .result(30)
        .topic_partitions
    )
    assert sum(tp.offset for tp in offsets if tp.topic == topic) == MESSAGES
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(30)
    assert "retention.ms" in configs
    from confluent_kafka.admin import OffsetSpec

    ends = admin.list_offsets({TopicPartition(topic, i): OffsetSpec.latest() for i in (0, 1)})
    assert sum(f.result(30).offset for f in ends.values()) == MESSAGES


def test_kafka_python_session_with_unstable_versions(broker: BrokerProcess) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

    topic, group = "kp-unstable", "kp-unstable-group"
    partitions = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 2, 1)])
        assert topic in admin.list_topics()
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        for i in range(MESSAGES):
            producer.send(topic, key=b"k%d" % i, value=b"v%d" % i)
        producer.flush(30)
        producer.close(10)
        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=broker.bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        got: list[bytes] = []
        deadline = time.monotonic() + DEADLINE
        while len(got) < MESSAGES and time.monotonic() < deadline:
            for records in consumer.poll(500).values():
                got += [r.value for r in records]
        consumer.commit()
        described = admin.describe_groups([group])[group]
        consumer.close()
        assert sorted(got) == sorted(b"v%d" % i for i in range(MESSAGES))
        assert described["group_state"] == "Stable" and len(described["members"]) == 1
        # The admin calls of the paged APIs, each at the version the client picks.
        assert group in {g["group_id"] for g in admin.list_groups()}
        committed = admin.list_group_offsets({group: None})[group]
        assert sum(m.offset for m in committed.values()) == MESSAGES
        ends = admin.list_partition_offsets(dict.fromkeys(partitions, -1))
        assert sum(o.offset for o in ends.values()) == MESSAGES
        [log_dirs] = admin.describe_log_dirs()
        replicas = {
            (t["name"], p["partition_index"])
            for d in log_dirs["log_dirs"]
            for t in d["topics"]
            for p in t["partitions"]
        }
        assert {(topic, 0), (topic, 1)} <= replicas
        producers = admin.describe_producers(partitions)
        assert sum(len(s.active_producers) for s in producers.values()) >= 1
        assert admin.list_transactions() == {0: []}
        configs = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all"
        )
        assert "retention.ms" in configs["topic"][topic]
    finally:
        admin.close()
