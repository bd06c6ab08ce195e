"""Kafka's own tool reads the coordinators' state a kafkagen broker keeps on disk.

A broker (``kafkagen serve`` with ``log.dirs``) takes a real client's transaction, one of
transactions v2 (Produce v12, EndTxn v5), and a real client's consumer group with committed
offsets, then stops; Kafka 4.4.0's
``DumpLogSegments`` decodes the ``__consumer_offsets`` segment with ``--offsets-decoder``
and the ``__transaction_state`` segment with ``--transaction-log-decoder``, which it can
only do if the records are in Kafka's format.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from broker_helpers import BrokerProcess, WireClient, req
from kafkagen.generated import message_type
from kafkagen.runtime.records import Record, build_batch

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

KAFKA = "4.4.0"
TOPIC = "dumped"
GROUP = "dump-group"
NEW_GROUP = "dump-kip848"
TXN_ID = "dump-txn"
TXN_V2_ID = "dump-txn-v2"
#: One line per record: ``| offset: N ... key: {json} payload: {json}``.
_RECORD = re.compile(r"^\| offset: (\d+) .* key: (\{.*\}) payload: (.*)$")


def dump(segment: Path, decoder: str) -> list[tuple[dict[str, Any], Any]]:
    """(key, payload) of each record Kafka's DumpLogSegments prints for ``segment``."""
    from kafkagen.maven import classpath

    jars = classpath(
        [f"org.apache.kafka:kafka-tools:{KAFKA}", f"org.apache.kafka:kafka_2.13:{KAFKA}"]
    )
    java = shutil.which("java")
    if java is None:
        pytest.skip("no java on PATH")
    out = subprocess.run(
        [java, "-cp", os.pathsep.join(map(str, jars)), "org.apache.kafka.tools.DumpLogSegments"]
        + [decoder, "--files", str(segment)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    unreadable = [line for line in out.splitlines() if "Error at offset" in line]
    assert not unreadable, "Kafka could not read:\n" + "\n".join(unreadable)
    records = []
    for line in out.splitlines():
        m = _RECORD.match(line)
        if m:
            payload = m.group(3)
            records.append(
                (json.loads(m.group(2)), None if payload == "<DELETE>" else json.loads(payload))
            )
    assert records, f"DumpLogSegments printed no record:\n{out}"
    return records


def consume_and_commit(bootstrap: str, group: str, **config: str) -> None:
    """Read the transaction's three records in ``group`` and commit offset 3."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **config,
        }
    )
    try:
        consumer.subscribe([TOPIC])
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 3 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen += 1
        assert seen == 3, f"group {group} read {seen} of the transaction's 3 records"
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, 3)], asynchronous=False)
    finally:
        consumer.close()


def run_clients(bootstrap: str) -> None:
    """A committed transaction of three records, then a classic group and a KIP-848 group
    that each read them and commit offset 3."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": TXN_ID})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(TOPIC, b"v%d" % i, partition=0)
    producer.commit_transaction(30)

    consume_and_commit(bootstrap, GROUP)
    consume_and_commit(bootstrap, NEW_GROUP, **{"group.protocol": "consumer"})
    transaction_v2(bootstrap)


def transaction_v2(bootstrap: str) -> None:
    """A committed transactions v2 transaction of one record: the broker adds the
    partition (Produce v12) and EndTxn v5 ends it under the next epoch."""
    P: Any = message_type(0, "request")
    with WireClient(bootstrap.split(",")[0]) as w:
        assert w.call(10, 3, req(10, key=TXN_V2_ID, key_type=1)).error_code == 0
        for _ in range(100):  # bounded: the state partition may still be loading
            init = w.call(22, 5, req(22, transactional_id=TXN_V2_ID, transaction_timeout_ms=60000))
            if init.error_code == 0:
                break
            time.sleep(0.05)
        assert init.error_code == 0, init
        records = build_batch(
            [Record(-1, int(time.time() * 1000), None, b"v2")],
            producer_id=init.producer_id,
            producer_epoch=init.producer_epoch,
            base_sequence=0,
            transactional=True,
        )
        topic = P.TopicProduceData(
            name=TOPIC, partition_data=[P.PartitionProduceData(index=0, records=records)]
        )
        produced = w.call(
            0, 12, P(transactional_id=TXN_V2_ID, acks=-1, timeout_ms=5000, topic_data=[topic])
        )
        assert produced.responses[0].partition_responses[0].error_code == 0, produced
        end = req(
            26,
            transactional_id=TXN_V2_ID,
            producer_id=init.producer_id,
            producer_epoch=init.producer_epoch,
            committed=True,
        )
        ended = w.call(26, 5, end)
        assert (ended.error_code, ended.producer_epoch) == (0, init.producer_epoch + 1)
        Describe: Any = message_type(65, "request")
        for _ in range(100):  # bounded: the Complete state follows the markers
            [state] = w.call(65, 0, Describe(transactional_ids=[TXN_V2_ID])).transaction_states
            if state.transaction_state == "CompleteCommit":
                break
            time.sleep(0.05)
        assert state.transaction_state == "CompleteCommit"


def test_kafkas_dump_log_segments_decodes_the_coordinators_segments(tmp_path: Path) -> None:
    with BrokerProcess(
        "offsets.topic.num.partitions=1",
        "transaction.state.log.num.partitions=1",
        "group.initial.rebalance.delay.ms=0",
        "group.consumer.heartbeat.interval.ms=500",
        # librdkafka's KIP-848 consumer speaks ConsumerGroupHeartbeat v1, unstable here; the
        # APIs whose unstable versions are the project's extensions stay at their stable ones.
        "unstable.api.versions.enable=true",
        "kafkagen.api.version.max=Metadata:12,ListOffsets:10,OffsetFetch:9,DescribeGroups:5,"
        "ListGroups:5",
        f"log.dirs={tmp_path}",
    ) as broker:
        run_clients(broker.bootstrap)
        assert broker.alive(), broker.stderr_text()
    segment = "00000000000000000000.log"
    node = tmp_path / "broker-0"

    offsets = dump(node / "__consumer_offsets-0" / segment, "--offsets-decoder")
    commits = [
        (key["data"], value) for key, value in offsets if key["type"] == "1" and value is not None
    ]
    assert ({"group": GROUP, "topic": TOPIC, "partition": 0}, "3") in [
        (k, v["version"]) for k, v in commits
    ]
    assert commits[-1][1]["data"]["offset"] == 3
    groups = [value for key, value in offsets if key == {"type": "2", "data": {"group": GROUP}}]
    joined = [g for g in groups if g is not None and g["data"]["members"]]
    assert joined, f"no group metadata with members in {groups}"
    member = joined[0]["data"]["members"][0]
    assert joined[0]["data"]["protocolType"] == "consumer"
    # Kafka decodes the member's subscription and assignment with the consumer protocol.
    assert member["subscription"]["topics"] == [TOPIC]
    assert member["assignment"]["assignedPartitions"] == [{"topic": TOPIC, "partitions": [0]}]

    # The KIP-848 group: its epoch, its member's subscription and assignment, its offsets.
    def of_group(record_type: str) -> list[Any]:
        return [
            value["data"]
            for key, value in offsets
            if key["type"] == record_type and key["data"]["groupId"] == NEW_GROUP and value
        ]

    assert of_group("3") and of_group("3")[-1]["epoch"] >= 1
    subscriptions = of_group("5")
    assert subscriptions and subscriptions[-1]["subscribedTopicNames"] == [TOPIC]
    # Not a classic member: a null ClassicMemberMetadata, in Kafka's tagged-field form.
    assert subscriptions[-1]["classicMemberMetadata"] is None
    current = of_group("8")
    assert current[-1]["assignedPartitions"][0]["partitions"] == [0]
    new_commits = [
        value["data"]["offset"]
        for key, value in offsets
        if key["type"] == "1" and key["data"]["group"] == NEW_GROUP and value
    ]
    assert new_commits[-1] == 3

    txns = dump(node / "__transaction_state-0" / segment, "--transaction-log-decoder")
    states = [
        value["data"]["transactionStatus"]
        for key, value in txns
        if key == {"type": "0", "data": {"transactionalId": TXN_ID}} and value is not None
    ]
    assert states[-3:] == ["Ongoing", "PrepareCommit", "CompleteCommit"], states
    ongoing = next(
        value["data"]
        for _, value in txns
        if value and value["data"]["transactionStatus"] == "Ongoing"
    )
    assert ongoing["transactionPartitions"] == [{"topic": TOPIC, "partitionIds": [0]}]
    # Transactions v2: value version 1, the client's transaction version, the bumped epoch.
    v2 = [
        value
        for key, value in txns
        if key == {"type": "0", "data": {"transactionalId": TXN_V2_ID}} and value is not None
    ]
    assert [v["data"]["transactionStatus"] for v in v2[-3:]] == [
        "Ongoing",
        "PrepareCommit",
        "CompleteCommit",
    ], v2
    ongoing_v2, _, complete_v2 = v2[-3:]
    assert {v["version"] for v in v2[-3:]} == {"1"}
    assert complete_v2["data"]["clientTransactionVersion"] == 2
    assert complete_v2["data"]["producerEpoch"] == ongoing_v2["data"]["producerEpoch"] + 1
