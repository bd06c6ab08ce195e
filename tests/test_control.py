"""The control API in process: rules in front of handler dispatch, records, broker controls.

Requests go over real sockets (`WireClient`) to brokers started by the project's own pytest
plugin (``kafka_cluster``, ``kafka_control``, ``kafka_topic``).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from broker_helpers import WireClient, req
from kafkagen.generated import message_type
from kafkagen.pytest_plugin import KafkaCluster, SyncControl
from kafkagen.runtime.broker.control.interceptor import ControlError, Match
from kafkagen.runtime.records import Record, build_batch

PRODUCE, METADATA, FIND_COORDINATOR, API_VERSIONS, LIST_OFFSETS = 0, 3, 10, 18, 2
NOT_LEADER, COORDINATOR_NOT_AVAILABLE = 6, 15

ProduceRequest: Any = message_type(PRODUCE, "request")


def produce(topic: str, partitions: list[int], acks: int = 1) -> Any:
    return ProduceRequest(
        acks=acks,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[
                    ProduceRequest.PartitionProduceData(
                        index=p, records=build_batch([Record(-1, 1, b"k", b"v")])
                    )
                    for p in partitions
                ],
            )
        ],
    )


def errors_by_partition(response: Any) -> dict[int, int]:
    return {p.index: p.error_code for t in response.responses for p in t.partition_responses}


@pytest.mark.kafka_topic(partitions=2)
def test_error_on_one_partition_once_then_the_handler_serves_it(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl, kafka_topic: str
) -> None:
    kafka_control.add("Produce", topic=kafka_topic, partition=1, error="NOT_LEADER_OR_FOLLOWER")
    with WireClient(kafka_cluster.bootstrap_servers) as w:
        first = w.call(PRODUCE, 9, produce(kafka_topic, [0, 1]))
        assert errors_by_partition(first) == {0: 0, 1: NOT_LEADER}
        (topic,) = first.responses  # one entry for the topic, as Kafka answers
        failed = [p for p in topic.partition_responses if p.index == 1][0]
        assert failed.base_offset == -1  # as Kafka answers a failed partition
        second = w.call(PRODUCE, 9, produce(kafka_topic, [0, 1]))
        assert errors_by_partition(second) == {0: 0, 1: 0}
    # Partition 1 got only the second batch: the failed one was never appended.
    ends = {p: kafka_cluster.call(lambda p=p: _end(kafka_cluster, kafka_topic, p)) for p in (0, 1)}
    assert ends == {0: 2, 1: 1}
    assert kafka_control.rules == []
    outcomes = [r.outcome for r in kafka_control.find("Produce")]
    assert outcomes == ["error", "answered"]


def _end(kc: KafkaCluster, topic: str, partition: int) -> int:
    rm = kc.cluster.brokers[0].replica_manager
    for tp, p in rm.partitions.items():
        if tp.topic == topic and tp.partition == partition:
            return int(p.log.log_end_offset)
    raise AssertionError(f"no replica of {topic}-{partition}")


def test_top_level_error_times_n_then_until_removed(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl
) -> None:
    find = req(FIND_COORDINATOR, key="g1", key_type=0)
    kafka_control.add("FindCoordinator", error=COORDINATOR_NOT_AVAILABLE, times=2)
    with WireClient(kafka_cluster.bootstrap_servers) as w:
        codes = [w.call(FIND_COORDINATOR, 3, find).error_code for _ in range(3)]
        assert codes == [COORDINATOR_NOT_AVAILABLE, COORDINATOR_NOT_AVAILABLE, 0]
        rule = kafka_control.add("FindCoordinator", error=COORDINATOR_NOT_AVAILABLE, times=None)
        codes = [w.call(FIND_COORDINATOR, 3, find).error_code for _ in range(3)]
        assert codes == [COORDINATOR_NOT_AVAILABLE] * 3
        kafka_control.remove(rule.id)
        assert w.call(FIND_COORDINATOR, 3, find).error_code == 0


def test_matchers_broker_and_client_id(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl
) -> None:
    find = req(FIND_COORDINATOR, key="g1", key_type=0)
    kafka_control.add("FindCoordinator", client_id="other", error=COORDINATOR_NOT_AVAILABLE)
    kafka_control.add("FindCoordinator", broker=7, error=COORDINATOR_NOT_AVAILABLE)
    with WireClient(kafka_cluster.bootstrap_servers) as w:
        assert w.call(FIND_COORDINATOR, 3, find).error_code == 0  # client id "test", broker 0
        w.send(FIND_COORDINATOR, 3, find, client_id="other")
        assert w.receive(FIND_COORDINATOR, 3)[1].error_code == COORDINATOR_NOT_AVAILABLE


def test_delay_holds_the_answer(kafka_cluster: KafkaCluster, kafka_control: SyncControl) -> None:
    kafka_control.add("Metadata", delay_ms=400)
    with WireClient(kafka_cluster.bootstrap_servers) as w:
        started = time.monotonic()
        w.call(METADATA, 12, req(METADATA, topics=[]))
        delayed = time.monotonic() - started
        started = time.monotonic()
        w.call(METADATA, 12, req(METADATA, topics=[]))
        plain = time.monotonic() - started
    assert delayed >= 0.4 > plain


def test_drop_answers_nothing_but_later_requests_are_answered(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl
) -> None:
    kafka_control.add("Metadata", drop=True)
    with WireClient(kafka_cluster.bootstrap_servers) as w:
        w.send(METADATA, 12, req(METADATA, topics=[]))
        second = w.send(METADATA, 12, req(METADATA, topics=[]))
        cid, _ = w.receive(METADATA, 12)
        assert cid == second
    assert [r.outcome for r in kafka_control.find("Metadata")] == ["dropped", "answered"]


def test_close_closes_the_connection(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl
) -> None:
    kafka_control.add("Metadata", close=True)
    with WireClient(kafka_cluster.bootstrap_servers) as w:
        w.send(METADATA, 12, req(METADATA, topics=[]))
        assert w.is_closed()
    with WireClient(kafka_cluster.bootstrap_servers) as w:  # once: the next one is served
        assert w.call(METADATA, 12, req(METADATA, topics=[])).brokers


def test_hold_until_another_request_arrives(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl
) -> None:
    kafka_control.add("Metadata", hold_until={"api": "ApiVersions"})
    with WireClient(kafka_cluster.bootstrap_servers) as held:
        cid = held.send(METADATA, 12, req(METADATA, topics=[]))
        held.sock.settimeout(0.5)
        with pytest.raises(TimeoutError):
            held.sock.recv(1, 0x2)  # MSG_PEEK: nothing has been answered
        held.sock.settimeout(10)
        with WireClient(kafka_cluster.bootstrap_servers) as other:
            assert (
                other.call(
                    API_VERSIONS,
                    3,
                    req(API_VERSIONS, client_software_name="t", client_software_version="1"),
                ).error_code
                == 0
            )
        assert held.receive(METADATA, 12)[0] == cid


def test_whole_response_from_its_json_form(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl
) -> None:
    answer = {"throttleTimeMs": 7, "errorCode": 0, "nodeId": 42, "host": "elsewhere",
              "port": 1234, "errorMessage": None}  # fmt: skip
    kafka_control.add("FindCoordinator", response=answer)
    with WireClient(kafka_cluster.bootstrap_servers) as w:
        got = w.call(FIND_COORDINATOR, 3, req(FIND_COORDINATOR, key="g", key_type=0))
    assert (got.node_id, got.host, got.port, got.throttle_time_ms) == (42, "elsewhere", 1234, 7)


def test_records_hold_requests_and_responses(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl, kafka_topic: str
) -> None:
    with WireClient(kafka_cluster.bootstrap_servers) as w:
        w.call(PRODUCE, 9, produce(kafka_topic, [0]))
    (record,) = kafka_control.find("Produce")
    assert record.request.topic_data[0].name == kafka_topic
    assert errors_by_partition(record.response) == {0: 0}
    as_json = record.to_json()
    assert as_json["api"] == "Produce" and as_json["client_id"] == "test"
    assert as_json["response"]["responses"][0]["partitionResponses"][0]["errorCode"] == 0


def test_bad_rules_are_refused_with_the_reason(kafka_control: SyncControl) -> None:
    with pytest.raises(ControlError, match="at most one of"):
        kafka_control.add("Produce", error=6, drop=True)
    with pytest.raises(ControlError, match="unknown API 'Produse'"):
        kafka_control.add("Produse", error=6)
    with pytest.raises(ControlError, match="unknown error name"):
        kafka_control.add("Produce", error="NOT_A_LEADER")
    with pytest.raises(ControlError, match="no top-level error code"):
        kafka_control.add("CreateTopics", error=6)
    with pytest.raises(ControlError, match="needs a topic"):
        kafka_control.add("Produce", partition=0, error=6)
    assert kafka_control.rules == []


@pytest.mark.kafka_cluster(brokers=3, configs={"offsets.topic.replication.factor": 3})
def test_broker_controls_with_three_brokers(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl
) -> None:
    topic = kafka_cluster.create_topic(f"moves-{time.monotonic_ns()}", 1, 3)
    md = kafka_cluster.cluster.metadata
    leader = kafka_cluster.call(lambda: md.partition(topic, 0).leader)
    target = (leader + 1) % 3
    kafka_control.move_leader(topic, 0, target)
    assert kafka_cluster.call(lambda: md.partition(topic, 0).leader) == target

    kafka_control.stop_broker(target)
    new_leader = kafka_cluster.call(lambda: md.partition(topic, 0).leader)
    assert new_leader not in (target, -1)
    with WireClient(kafka_cluster.bootstrap_servers.split(",")[target]) as w:
        assert w.is_closed(2)  # a stopped broker refuses connections
    kafka_control.start_broker(target)
    with WireClient(kafka_cluster.bootstrap_servers.split(",")[target]) as w:
        assert w.call(METADATA, 12, req(METADATA, topics=[])).brokers

    with WireClient(kafka_cluster.bootstrap_servers) as w:
        w.call(FIND_COORDINATOR, 3, req(FIND_COORDINATOR, key="grp", key_type=0))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the offsets topic needs its ISR back
        try:
            _, coordinator = kafka_control.coordinator_of("grp")
            kafka_control.move_coordinator("grp", (coordinator + 1) % 3)
            break
        except ControlError:
            time.sleep(0.1)
    with WireClient(kafka_cluster.bootstrap_servers) as w:
        got = w.call(FIND_COORDINATOR, 3, req(FIND_COORDINATOR, key="grp", key_type=0))
    assert got.node_id == (coordinator + 1) % 3


def test_versions_change_while_clients_are_connected(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl
) -> None:
    with WireClient(kafka_cluster.bootstrap_servers) as w:
        assert w.call(METADATA, 12, req(METADATA, topics=[])).brokers
        kafka_control.set_versions(0, {"Metadata": 9})
        served = {
            k.api_key: k.max_version
            for k in w.call(
                API_VERSIONS,
                3,
                req(API_VERSIONS, client_software_name="t", client_software_version="1"),
            ).api_keys
        }
        assert served[METADATA] == 9
        w.send(METADATA, 12, req(METADATA, topics=[]))
        assert w.is_closed()  # v12 is no longer served
    assert kafka_control.versions(0)[METADATA][1] == 9
    kafka_control.reset()
    assert kafka_control.versions(0)[METADATA][1] >= 12


def test_reset_releases_held_requests(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl
) -> None:
    kafka_control.add("Metadata", hold_until=Match(api_key=LIST_OFFSETS))
    with WireClient(kafka_cluster.bootstrap_servers) as w:
        cid = w.send(METADATA, 12, req(METADATA, topics=[]))
        kafka_control.reset()
        assert w.receive(METADATA, 12)[0] == cid


def test_release_preset_plays_an_older_broker(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl
) -> None:
    from kafkagen.runtime.broker.release_presets import preset_ranges

    kafka_control.set_versions(0, preset="2.4")
    served = kafka_control.versions(0)
    old = preset_ranges("2.4")
    assert served[METADATA][1] == old[METADATA][1] == 9
    assert served[FIND_COORDINATOR][1] == 3
    assert 68 not in served  # ConsumerGroupHeartbeat came with 3.7
    # A preset and a cap together: the lower one wins.
    kafka_control.set_versions(0, {"Metadata": 5}, preset="2.4")
    assert kafka_control.versions(0)[METADATA][1] == 5
    with pytest.raises(ControlError, match="no preset for Kafka '1.0'"):
        kafka_control.set_versions(0, preset="1.0")


def test_release_preset_as_a_broker_config() -> None:
    from kafkagen.runtime.broker.cluster import BackgroundCluster

    with BackgroundCluster(configs={"kafkagen.api.version.preset": "2.8"}) as bg:
        with WireClient(bg.bootstrap) as w:
            got = w.call(
                API_VERSIONS,
                3,
                req(API_VERSIONS, client_software_name="t", client_software_version="1"),
            )
    served = {k.api_key: (k.min_version, k.max_version) for k in got.api_keys}
    assert served[METADATA] == (0, 11) and served[PRODUCE][1] == 9 and 68 not in served


def _fetch(topic_id: Any, topic: str, partitions: list[int]) -> Any:
    Fetch: Any = message_type(1, "request")
    return Fetch(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        topics=[
            Fetch.FetchTopic(
                topic=topic,
                topic_id=topic_id,
                partitions=[
                    Fetch.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1 << 20)
                    for p in partitions
                ],
            )
        ],
    )


@pytest.mark.kafka_topic(partitions=2)
@pytest.mark.parametrize("version", [12, 13])  # by topic name, by topic id
def test_fetch_error_on_one_partition(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl, kafka_topic: str, version: int
) -> None:
    md = kafka_cluster.cluster.metadata
    topic_id = kafka_cluster.call(lambda: md.topic(kafka_topic).topic_id)
    kafka_control.add("Fetch", topic=kafka_topic, partition=0, error="NOT_LEADER_OR_FOLLOWER")
    with WireClient(kafka_cluster.bootstrap_servers) as w:
        got = w.call(1, version, _fetch(topic_id, kafka_topic if version < 13 else "", [0, 1]))
    parts = {
        p.partition_index: (p.error_code, p.high_watermark)
        for t in got.responses
        for p in t.partitions
    }
    assert parts == {0: (NOT_LEADER, -1), 1: (0, 0)}
    if version >= 13:
        assert {t.topic_id for t in got.responses} == {topic_id}


@pytest.mark.kafka_topic(partitions=2)
def test_list_offsets_and_offset_for_leader_epoch_errors_per_partition(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl, kafka_topic: str
) -> None:
    LO: Any = message_type(LIST_OFFSETS, "request")
    lo = LO(
        replica_id=-1,
        topics=[
            LO.ListOffsetsTopic(
                name=kafka_topic,
                partitions=[
                    LO.ListOffsetsPartition(partition_index=p, timestamp=-1) for p in (0, 1)
                ],
            )
        ],
    )
    OE: Any = message_type(23, "request")
    oe = OE(
        replica_id=-1,
        topics=[
            OE.OffsetForLeaderTopic(
                topic=kafka_topic,
                partitions=[
                    OE.OffsetForLeaderPartition(partition=p, leader_epoch=0) for p in (0, 1)
                ],
            )
        ],
    )
    kafka_control.add("ListOffsets", topic=kafka_topic, partition=1, error=NOT_LEADER)
    kafka_control.add("OffsetForLeaderEpoch", topic=kafka_topic, error="FENCED_LEADER_EPOCH")
    with WireClient(kafka_cluster.bootstrap_servers) as w:
        got = w.call(LIST_OFFSETS, 7, lo)
        assert {p.partition_index: p.error_code for p in got.topics[0].partitions} == {
            0: 0,
            1: NOT_LEADER,
        }
        got = w.call(23, 4, oe)  # no partition named: every partition of the topic
        assert {p.partition: p.error_code for t in got.topics for p in t.partitions} == {
            0: 74,
            1: 74,
        }
