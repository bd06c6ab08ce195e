"""Share groups on an in-process broker, through the wire: delivery counts and the delivery
limit, lock expiry, acknowledgements of records another member holds, the in-flight cap,
one partition's state machine on its own, and the share APIs advertised only while
``share.version`` is finalized."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from broker_helpers import WireClient, assert_kafka_reads_coordinator_records
from kafkagen.generated.alter_share_group_offsets import AlterShareGroupOffsetsRequest
from kafkagen.generated.api_versions import ApiVersionsRequest
from kafkagen.generated.create_topics import CreateTopicsRequest
from kafkagen.generated.delete_topics import DeleteTopicsRequest
from kafkagen.generated.incremental_alter_configs import IncrementalAlterConfigsRequest
from kafkagen.generated.metadata import MetadataRequest
from kafkagen.generated.produce import ProduceRequest
from kafkagen.generated.share_fetch import ShareFetchRequest
from kafkagen.generated.share_group_describe import ShareGroupDescribeRequest
from kafkagen.generated.share_group_heartbeat import ShareGroupHeartbeatRequest
from kafkagen.generated.share_snapshot_key import ShareSnapshotKey
from kafkagen.generated.share_update_key import ShareUpdateKey
from kafkagen.generated.share_update_value import ShareUpdateValue
from kafkagen.generated.update_features import UpdateFeaturesRequest
from kafkagen.generated.write_share_group_state import (
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
)
from kafkagen.pytest_plugin import KafkaCluster, SyncControl
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.coordinator import record_format
from kafkagen.runtime.broker.share.persister import ShareStatePersister
from kafkagen.runtime.broker.share.share_coordinator import coordinator_key
from kafkagen.runtime.broker.share.share_group_model import ShareGroup, ShareMember
from kafkagen.runtime.broker.share.share_group_records import (
    decode_group,
    decode_state_key,
    encode_group,
)
from kafkagen.runtime.broker.share.share_partition import AckType, SharePartition
from kafkagen.runtime.client import connect
from kafkagen.runtime.errors import (
    ErrorCode,
    InvalidRecordStateError,
    InvalidRequestError,
    KafkaError,
)
from kafkagen.runtime.records import Record, build_batch, iter_batches
from kafkagen.runtime.topic_partition import TopicPartition

LOCK_MS = 1000
GROUP = "g"


@pytest.fixture(scope="module")
def cluster() -> Iterator[BackgroundCluster]:
    configs = {
        "group.share.record.lock.duration.ms": str(LOCK_MS),
        "group.share.delivery.count.limit": "2",
        "group.share.partition.max.record.locks": "100",
    }
    with BackgroundCluster(brokers=1, configs=configs) as c:
        yield c


class Member:
    """A member of the share group, fetching within its own share session."""

    def __init__(self, client: Any, topic_id: uuid.UUID, name: str, group: str = GROUP) -> None:
        self.client, self.topic_id, self.name, self.group = client, topic_id, name, group
        self.epoch = 0

    async def join(self, topic: str) -> None:
        r = await self.client.request(
            ShareGroupHeartbeatRequest(
                group_id=self.group,
                member_id=self.name,
                member_epoch=0,
                subscribed_topic_names=[topic],
            )
        )
        assert r.error_code == 0

    async def fetch(self, acks: list[tuple[int, int, int]] = (), wait_ms: int = 0) -> Any:  # type: ignore[assignment]
        F = ShareFetchRequest
        batches = [
            F.AcknowledgementBatch(first_offset=a, last_offset=b, acknowledge_types=[t])
            for a, b, t in acks
        ]
        r = await self.client.request(
            F(
                group_id=self.group,
                member_id=self.name,
                share_session_epoch=self.epoch,
                max_wait_ms=wait_ms,
                max_records=500,
                batch_size=500,
                topics=[
                    F.FetchTopic(
                        topic_id=self.topic_id,
                        partitions=[
                            F.FetchPartition(partition_index=0, acknowledgement_batches=batches)
                        ],
                    )
                ],
            )
        )
        assert r.error_code == 0
        self.epoch += 1
        return r


def acquired(r: Any) -> list[tuple[int, int, int]]:
    return [
        (a.first_offset, a.last_offset, a.delivery_count)
        for t in r.responses
        for p in t.partitions
        for a in p.acquired_records
    ]


def ack_errors(r: Any) -> list[int]:
    return [p.acknowledge_error_code for t in r.responses for p in t.partitions]


def run(cluster: BackgroundCluster, scenario: Any) -> None:
    """``scenario(client, topic, topic id, produce)`` on a new topic."""
    topic = f"share-{uuid.uuid4().hex[:8]}"
    _run_on(
        cluster, topic, lambda client, topic_id, produce: scenario(client, topic, topic_id, produce)
    )


def test_a_record_released_up_to_the_delivery_limit_is_archived(cluster: BackgroundCluster) -> None:
    async def scenario(client: Any, topic: str, topic_id: uuid.UUID, produce: Any) -> None:
        m = Member(client, topic_id, f"m-{uuid.uuid4().hex[:8]}")
        await m.join(topic)
        await m.fetch()  # opens the session; the group starts at the latest offset
        await produce(1)
        assert acquired(await m.fetch(wait_ms=2000)) == [(0, 0, 1)]
        # Released: the same request does not acquire it again, the next one does.
        r = await m.fetch(acks=[(0, 0, AckType.RELEASE)])
        assert acquired(r) == [] and ack_errors(r) == [0]
        assert acquired(await m.fetch()) == [(0, 0, 2)]
        # Released at the limit (2 deliveries): archived, never delivered again.
        await m.fetch(acks=[(0, 0, AckType.RELEASE)])
        assert acquired(await m.fetch()) == []
        await produce(1)
        assert acquired(await m.fetch(wait_ms=2000)) == [(1, 1, 1)]

    run(cluster, scenario)


def test_a_lock_that_runs_out_releases_the_record(cluster: BackgroundCluster) -> None:
    async def scenario(client: Any, topic: str, topic_id: uuid.UUID, produce: Any) -> None:
        a = Member(client, topic_id, f"a-{uuid.uuid4().hex[:8]}")
        b = Member(client, topic_id, f"b-{uuid.uuid4().hex[:8]}")
        await a.join(topic)
        await b.join(topic)
        await a.fetch()
        await b.fetch()
        await produce(2)
        assert acquired(await a.fetch(wait_ms=2000)) == [(0, 1, 1)]
        # b cannot acknowledge what a holds, and gets nothing while a's lock holds.
        r = await b.fetch(acks=[(0, 0, AckType.ACCEPT)])
        assert ack_errors(r) == [ErrorCode.INVALID_RECORD_STATE] and acquired(r) == []
        deadline = time.monotonic() + 10
        got: list[tuple[int, int, int]] = []
        while not got and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            got = acquired(await b.fetch())
        assert got == [(0, 1, 2)], "the expired records came back to b, delivered twice"
        # a's lock is gone: its acceptance now fails.
        r = await a.fetch(acks=[(0, 1, AckType.ACCEPT)])
        assert ack_errors(r) == [ErrorCode.INVALID_RECORD_STATE]

    run(cluster, scenario)


def test_no_more_records_are_in_flight_than_the_cap(cluster: BackgroundCluster) -> None:
    async def scenario(client: Any, topic: str, topic_id: uuid.UUID, produce: Any) -> None:
        m = Member(client, topic_id, f"m-{uuid.uuid4().hex[:8]}")
        await m.join(topic)
        await m.fetch()
        await produce(150)
        assert acquired(await m.fetch(wait_ms=2000)) == [(0, 99, 1)]  # the cap is 100
        assert acquired(await m.fetch()) == []
        assert acquired(await m.fetch(acks=[(0, 99, AckType.ACCEPT)])) == []
        assert acquired(await m.fetch()) == [(100, 149, 1)]

    run(cluster, scenario)


def test_a_session_ends_with_the_connection_that_opened_it() -> None:
    """As on Kafka 4.4: when a member's connection closes, its share session ends and what
    it held is released at once (the lock has a minute to run), and once no session of
    the group is left on the broker its share partitions leave memory."""
    configs = {"group.share.record.lock.duration.ms": "60000"}
    with BackgroundCluster(brokers=1, configs=configs) as c:
        assert c.cluster is not None
        manager = c.cluster.brokers[0].services.share_partitions
        host, port = c.bootstrap.rsplit(":", 1)

        async def scenario(client: Any, topic_id: uuid.UUID, produce: Any) -> None:
            stays = Member(client, topic_id, "stays")
            await stays.join("lingering")
            await stays.fetch()
            async with await connect(host, int(port)) as other:
                await other.find_coordinators([GROUP])
                goes = Member(other, topic_id, "goes")
                await goes.join("lingering")
                await goes.fetch()
                await produce(3)
                assert acquired(await goes.fetch(wait_ms=2000)) == [(0, 2, 1)]
                assert acquired(await stays.fetch()) == []  # held by the other member
            got: list[tuple[int, int, int]] = []
            deadline = time.monotonic() + 10
            while not got and time.monotonic() < deadline:
                got = acquired(await stays.fetch(wait_ms=500))
            assert got == [(0, 2, 2)], "the closed connection's records came back"
            assert c.call(lambda: sorted(m for _, m in manager._sessions)) == ["stays"]
            assert c.call(lambda: len(manager._partitions)) == 1

        _run_on(c, "lingering", scenario)
        deadline = time.monotonic() + 10
        while c.call(lambda: len(manager._sessions) + len(manager._partitions)):
            assert time.monotonic() < deadline, "a closed group's share state stayed"
            time.sleep(0.05)


def test_a_deleted_topics_share_state_goes_with_it(cluster: BackgroundCluster) -> None:
    """As Kafka's share coordinator once the metadata drops a topic: every group's state of
    it is deleted (a tombstone), and the leader's share partitions of it leave memory."""
    assert cluster.cluster is not None
    broker = cluster.cluster.brokers[0]
    seen: dict[str, Any] = {}

    async def scenario(client: Any, topic: str, topic_id: uuid.UUID, produce: Any) -> None:
        m = Member(client, topic_id, f"m-{uuid.uuid4().hex[:8]}")
        await m.join(topic)
        await m.fetch()
        await produce(2)
        assert acquired(await m.fetch(wait_ms=2000)) == [(0, 1, 1)]
        assert ack_errors(await m.fetch(acks=[(0, 1, AckType.ACCEPT)])) == [0]
        seen["topic_id"] = topic_id
        assert cluster.call(
            lambda: [k for k in broker.share_coordinator.states if k[1] == topic_id]
        )
        D = DeleteTopicsRequest
        r = await client.request(D(topics=[D.DeleteTopicState(name=topic)], timeout_ms=10000))
        assert r.responses[0].error_code == 0

    run(cluster, scenario)
    topic_id = seen["topic_id"]
    key = (GROUP, topic_id, 0)
    assert cluster.call(lambda: key not in broker.share_coordinator.states)
    assert cluster.call(
        lambda: not [k for k in broker.services.share_partitions._partitions if k[1][0] == topic_id]
    )

    def tombstoned() -> bool:
        tp = TopicPartition("__share_group_state", broker.share_coordinator.partition_of(key))
        last = None
        for stored in broker.replica_manager.partitions[tp].log.batches:
            for batch in iter_batches(stored.data, verify_crc=False):
                for r in batch:
                    k = record_format.decode_key(bytes(r.key), {0: ShareSnapshotKey})
                    if isinstance(k, ShareSnapshotKey) and (k.group_id, k.topic_id) == key[:2]:
                        last = r
        return last is not None and last.value is None

    assert cluster.call(tombstoned)


def test_the_start_offset_moves_past_finished_records_only() -> None:
    sp = SharePartition(start_offset=10, delivery_limit=3, max_in_flight=100)
    ranges, used, _ = sp.acquire("m", [(10, 14)], end=15, max_records=100)
    assert ranges == [(10, 14, 1)] and used == {0}
    assert sp.end_offset == 14
    sp.acknowledge("m", 11, 11, [AckType.ACCEPT], 0)
    assert sp.start_offset == 10  # 10 is still acquired
    sp.acknowledge("m", 10, 10, [AckType.REJECT], 0)
    assert sp.start_offset == 12
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("other", 12, 12, [AckType.ACCEPT], 0)
    with pytest.raises(InvalidRequestError):
        sp.acknowledge("m", 12, 13, [AckType.ACCEPT, AckType.ACCEPT, AckType.ACCEPT], 0)
    # One type per offset: 12 released, 13 and 14 accepted.
    sp.acknowledge("m", 12, 14, [AckType.RELEASE, AckType.ACCEPT, AckType.ACCEPT], 0)
    assert sp.start_offset == 12
    ranges, _, _ = sp.acquire("m", [(10, 14)], end=15, max_records=100)
    assert ranges == [(12, 12, 2)]
    sp.acknowledge("m", 12, 12, [AckType.ACCEPT], 0)
    assert sp.start_offset == 15 and sp.in_flight() == 0


def test_records_of_an_aborted_batch_are_archived_undelivered() -> None:
    sp = SharePartition(start_offset=0, delivery_limit=3, max_in_flight=100)
    batches = [(0, 1), (2, 2), (3, 4), (5, 5)]  # data, marker, aborted data, marker
    ranges, used, _ = sp.acquire("m", batches, end=6, max_records=100, aborted=frozenset({2}))
    assert ranges == [(0, 2, 1), (5, 5, 1)] and used == {0, 1, 3}
    sp.acknowledge("m", 0, 2, [AckType.ACCEPT], 0)
    assert sp.start_offset == 5  # moved past the archived records
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("m", 3, 3, [AckType.ACCEPT], 0)


VERSIONS = ApiVersionsRequest(client_software_name="test", client_software_version="1")


async def configured_member(
    client: Any, topic: str, topic_id: uuid.UUID, group: str, name: str, value: str
) -> Member:
    """A member of ``group`` (given the group config ``name``) with its session open."""
    Alter = IncrementalAlterConfigsRequest
    r = await client.request(
        Alter(
            resources=[
                Alter.AlterConfigsResource(
                    resource_type=32,  # GROUP
                    resource_name=group,
                    configs=[Alter.AlterableConfig(name=name, config_operation=0, value=value)],
                )
            ],
            validate_only=False,
        )
    )
    assert r.responses[0].error_code == 0
    m = Member(client, topic_id, f"m-{uuid.uuid4().hex[:8]}", group)
    await m.join(topic)
    await m.fetch()
    return m


def test_renewals_are_refused_when_the_group_disables_them(cluster: BackgroundCluster) -> None:
    group = f"nr-{uuid.uuid4().hex[:8]}"

    async def scenario(client: Any, topic: str, topic_id: uuid.UUID, produce: Any) -> None:
        m = await configured_member(
            client, topic, topic_id, group, "share.renew.acknowledge.enable", "false"
        )
        await produce(2)
        assert acquired(await m.fetch(wait_ms=2000)) == [(0, 1, 1)]
        r = await m.fetch(acks=[(0, 1, AckType.RENEW)])
        assert ack_errors(r) == [ErrorCode.INVALID_RECORD_STATE]
        # Still held by the member: accepting them succeeds.
        assert ack_errors(await m.fetch(acks=[(0, 1, AckType.ACCEPT)])) == [0]

    run(cluster, scenario)


def delivered(r: Any) -> dict[int, bytes | None]:
    """The data records of a share fetch answer that were acquired, by offset."""
    held = {o for first, last, _ in acquired(r) for o in range(first, last + 1)}
    return {
        rec.offset: rec.value
        for t in r.responses
        for p in t.partitions
        for b in iter_batches(p.records or b"")
        if not b.is_control
        for rec in b
        if rec.offset in held
    }


@pytest.mark.slow
def test_read_committed_delivers_committed_records_only(cluster: BackgroundCluster) -> None:
    """A group with share.isolation.level=read_committed, fed by librdkafka's transactional
    producer: a committed transaction is delivered, an aborted one never is, and an open
    one waits for its commit."""
    from confluent_kafka import Producer

    group = f"rc-{uuid.uuid4().hex[:8]}"

    async def scenario(client: Any, topic: str, topic_id: uuid.UUID, produce: Any) -> None:
        m = await configured_member(
            client, topic, topic_id, group, "share.isolation.level", "read_committed"
        )
        p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": group})
        p.init_transactions(30)
        for value, commit in ((b"committed", True), (b"aborted", False), (b"open", None)):
            p.begin_transaction()
            p.produce(topic, value, partition=0)
            p.flush(30)  # written before the transaction ends
            if commit:
                p.commit_transaction(30)
            elif commit is False:
                p.abort_transaction(30)
        # Offsets: 0 committed, 1 its marker, 2 aborted, 3 its marker, 4 open.
        seen: dict[int, bytes | None] = {}
        offsets: set[int] = set()
        acks: list[tuple[int, int, int]] = []
        deadline = time.monotonic() + 20
        while 3 not in offsets and time.monotonic() < deadline:
            r = await m.fetch(acks=acks, wait_ms=500)
            acks = [(a, b, AckType.ACCEPT) for a, b, _ in acquired(r)]
            offsets |= {o for a, b, _ in acks for o in range(a, b + 1)}
            seen |= delivered(r)
        assert seen == {0: b"committed"}
        assert 2 not in offsets and 4 not in offsets, offsets
        # The open transaction is past the last stable offset until it commits.
        r = await m.fetch(acks=acks, wait_ms=300)
        assert acquired(r) == []
        p.commit_transaction(30)
        deadline = time.monotonic() + 20
        got: dict[int, bytes | None] = {}
        while not got and time.monotonic() < deadline:
            got = delivered(await m.fetch(wait_ms=500))
        assert got == {4: b"open"}

    run(cluster, scenario)


def test_share_apis_are_hidden_and_answer_unsupported_version_while_share_version_is_0() -> None:
    """With the feature at 0 the share APIs leave the listing (Kafka 4.4 keeps them there),
    and as Kafka 4.4 answers, the group APIs, fetches and acknowledgements are refused
    without a message, the offsets admin APIs with one."""
    with BackgroundCluster(1) as c:
        with WireClient(c.bootstrap) as w:

            def listed() -> dict[int, tuple[int, int]]:
                versions = w.call(18, 3, VERSIONS).api_keys
                return {k.api_key: (k.min_version, k.max_version) for k in versions}

            served = [(1, 1), (1, 1), (1, 2), (1, 2)]
            assert [listed().get(k) for k in (76, 77, 78, 79)] == served
            U = UpdateFeaturesRequest

            def set_level(level: int) -> None:
                update = U.FeatureUpdateKey(
                    feature="share.version", max_version_level=level, upgrade_type=1 if level else 2
                )
                assert w.call(57, 1, U(feature_updates=[update])).error_code == 0

            set_level(0)
            assert {76, 77, 78, 79} & set(listed()) == set() and 68 in listed()
            member = "m-off-0000000000000001"
            beat = w.call(
                76,
                1,
                ShareGroupHeartbeatRequest(
                    group_id="off", member_id=member, member_epoch=0, subscribed_topic_names=["t"]
                ),
            )
            assert (beat.error_code, beat.error_message) == (ErrorCode.UNSUPPORTED_VERSION, None)
            (described,) = w.call(77, 1, ShareGroupDescribeRequest(group_ids=["off"])).groups
            assert (described.error_code, described.error_message) == (35, None)
            fetch = w.call(
                78,
                1,
                ShareFetchRequest(
                    group_id="off", member_id=member, share_session_epoch=0, topics=[]
                ),
            )
            assert (fetch.error_code, fetch.error_message) == (35, None)
            alter = w.call(91, 0, AlterShareGroupOffsetsRequest(group_id="off", topics=[]))
            assert alter.error_code == 35 and alter.error_message
            set_level(1)
            beat = w.call(
                76,
                1,
                ShareGroupHeartbeatRequest(
                    group_id="off", member_id=member, member_epoch=0, subscribed_topic_names=["t"]
                ),
            )
            assert beat.error_code != ErrorCode.UNSUPPORTED_VERSION


def test_acknowledged_records_stay_done_across_a_restart(tmp_path: Any) -> None:
    """The share state is read back from ``__share_group_state`` by a new process's
    brokers (kept with ``log.dirs``): accepted records are not delivered again, the
    others come again with their delivery counted."""
    topic = "durable"
    configs = {"log.dirs": str(tmp_path), "group.share.record.lock.duration.ms": "60000"}

    async def first(client: Any, topic_id: uuid.UUID, produce: Any) -> None:
        m = Member(client, topic_id, "m-first-0000000000001")
        await m.join(topic)
        await m.fetch()  # the group starts at the latest offset: nothing yet
        await produce(5)
        assert acquired(await m.fetch(wait_ms=2000)) == [(0, 4, 1)]
        r = await m.fetch(acks=[(0, 2, AckType.ACCEPT)])
        assert ack_errors(r) == [0]

    async def second(client: Any, topic_id: uuid.UUID, produce: Any) -> None:
        m = Member(client, topic_id, "m-second-000000000001")
        await m.join(topic)
        assert acquired(await m.fetch(wait_ms=2000)) == [(3, 4, 2)]

    for scenario in (first, second):
        with BackgroundCluster(brokers=1, configs=configs) as c:
            _run_on(c, topic, scenario)
            time.sleep(0.5)  # the last state records reach the log


def _run_on(cluster: BackgroundCluster, topic: str, scenario: Any) -> None:
    """``scenario(client, topic id, produce)`` on ``topic``, created if it is new."""

    async def go() -> None:
        host, port = cluster.bootstrap.rsplit(":", 1)
        async with await connect(host, int(port)) as client:
            await client.find_coordinators([GROUP])
            C = CreateTopicsRequest
            created = await client.request(
                C(
                    topics=[C.CreatableTopic(name=topic, num_partitions=1, replication_factor=1)],
                    timeout_ms=10000,
                )
            )
            topic_id = created.topics[0].topic_id
            if created.topics[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS:
                M = MetadataRequest
                md = await client.request(M(topics=[M.MetadataRequestTopic(name=topic)]))
                topic_id = md.topics[0].topic_id

            async def produce(count: int) -> None:
                records = [Record(key=b"k%d" % i, value=b"v") for i in range(count)]
                P = ProduceRequest
                r = await client.request(
                    P(
                        acks=-1,
                        timeout_ms=10000,
                        topic_data=[
                            P.TopicProduceData(
                                name=topic,
                                topic_id=topic_id,
                                partition_data=[
                                    P.PartitionProduceData(index=0, records=build_batch(records))
                                ],
                            )
                        ],
                    )
                )
                assert r.responses[0].partition_responses[0].error_code == 0

            await scenario(client, topic_id, produce)

    asyncio.run(go())


# -- the group's records and a coordinator that moves ------------------------------------


def _described_share_group(w: WireClient, group_id: str) -> dict[str, Any]:
    r = w.call(77, 1, ShareGroupDescribeRequest(group_ids=[group_id]))
    (group,) = r.to_json(1)["groups"]
    assert group["errorCode"] == 0, group
    return dict(group)


def _beat(w: WireClient, member: str, epoch: int, topic: str | None = None) -> Any:
    r = w.call(
        76,
        1,
        ShareGroupHeartbeatRequest(
            group_id="moving-share",
            member_id=member,
            member_epoch=epoch,
            subscribed_topic_names=None if topic is None else [topic],
        ),
    )
    assert r.error_code == 0, r
    return r


@pytest.mark.slow
@pytest.mark.kafka_cluster(
    brokers=3,
    configs={
        "offsets.topic.num.partitions": 1,
        "offsets.topic.replication.factor": 3,
        "group.share.session.timeout.ms": 30_000,
    },
)
def test_a_new_coordinator_rebuilds_the_share_group_from_its_records(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl
) -> None:
    """Members, their partitions and epochs, and the group's initialised share partitions
    are written to ``__consumer_offsets``; the broker that takes the partition over
    answers for the group as the old coordinator did, without a new group epoch."""
    kafka_cluster.create_topic("jobs", 4, 3)
    brokers = kafka_cluster.cluster.brokers
    kafka_cluster.call(brokers[0].group_coordinator.ensure_offsets_topic)
    addresses = kafka_cluster.bootstrap_servers.split(",")
    _, old = kafka_control.coordinator_of("moving-share")
    names = ["share-member-00000000001", "share-member-00000000002", "share-member-00000000003"]
    with WireClient(addresses[old]) as w:
        epochs = {name: _beat(w, name, 0, "jobs").member_epoch for name in names}
        for name in names:  # each takes the group's epoch
            epochs[name] = _beat(w, name, epochs[name]).member_epoch
        assert _beat(w, names[2], epochs[names[2]], None).member_epoch == epochs[names[2]]
        assert _beat(w, names[2], -1).member_epoch == -1  # leaves: its records go
        for name in names[:2]:
            epochs[name] = _beat(w, name, epochs[name]).member_epoch
        before = _described_share_group(w, "moving-share")
    assert sorted(m["memberId"] for m in before["members"]) == names[:2]
    assert _initialized(kafka_cluster, old) == {0, 1, 2, 3}
    _replicated(kafka_cluster, old)
    kafka_control.stop_broker(old)
    _, new = kafka_control.coordinator_of("moving-share")
    assert new not in (old, -1)
    with WireClient(addresses[new]) as w:
        assert _described_share_group(w, "moving-share") == before
        for name in names[:2]:
            r = _beat(w, name, epochs[name])
            assert r.member_epoch == epochs[name]  # no new epoch at the new coordinator
    assert _initialized(kafka_cluster, new) == {0, 1, 2, 3}


def _replicated(cluster: KafkaCluster, node: int) -> None:
    """Wait, at most 10 s, until ``__consumer_offsets``-0 on ``node`` has every record it
    wrote replicated (its high watermark at its log end)."""
    partition = cluster.cluster.brokers[node].replica_manager.partitions[
        TopicPartition("__consumer_offsets", 0)
    ]
    deadline = time.monotonic() + 10
    while cluster.call(lambda: partition.high_watermark < partition.log.log_end_offset):
        assert time.monotonic() < deadline, "the offsets topic was not replicated in 10 s"
        time.sleep(0.05)


def _initialized(cluster: KafkaCluster, node: int) -> set[int]:
    """The partitions of "jobs" whose share state the coordinator on ``node`` knows of."""
    shares = cluster.cluster.brokers[node].services.share_groups
    return set(*cluster.call(lambda: list(shares.groups["moving-share"].initialized.values())))


@pytest.mark.slow
def test_kafkas_group_coordinator_classes_read_the_share_records_as_written() -> None:
    """Kafka's record classes read the share records as kafkagen reads them, and kafkagen
    reads them back as the group it wrote."""
    topic = uuid.UUID(int=7)
    group = ShareGroup("g1", group_epoch=4, assignment_epoch=4, initialized={topic: [0, 2]})
    group.members["m1"] = ShareMember(
        "m1", 4, "client-1", "/127.0.0.1", "rack-a", ["jobs"], {topic: [0, 2]}
    )
    records = {
        k: v for values in encode_group(group, lambda t: "jobs").values() for k, v in values.items()
    }
    names = {
        10: "ShareGroupMemberMetadata",
        11: "ShareGroupMetadata",
        12: "ShareGroupTargetAssignmentMetadata",
        13: "ShareGroupTargetAssignmentMember",
        14: "ShareGroupCurrentMemberAssignment",
        15: "ShareGroupStatePartitionMetadata",
    }
    assert_kafka_reads_coordinator_records(records, names)
    # And what kafkagen writes, it reads back as the same group.
    replayed = {}
    for key, value in records.items():
        _, member_id, record_type = decode_state_key(key)  # type: ignore[misc]
        replayed[member_id, record_type] = value
    back = decode_group("g1", replayed)
    assert (back.group_epoch, back.assignment_epoch, back.initialized) == (4, 4, {topic: [0, 2]})
    assert back.members["m1"] == group.members["m1"]


# -- the leaders' writes to the share coordinator -----------------------------------------


def _state_updates(cluster: BackgroundCluster, key: tuple[str, uuid.UUID, int]) -> list[Any]:
    """The ShareUpdate values of ``key`` in ``__share_group_state``, in log order."""

    def read() -> list[Any]:
        assert cluster.cluster is not None
        out = []
        for b in cluster.cluster.brokers:
            coordinator = b.share_coordinator
            tp = TopicPartition("__share_group_state", coordinator.partition_of(key))
            partition = b.replica_manager.partitions.get(tp)
            if partition is None or partition.leader_id != b.node_id:
                continue
            for stored in partition.log.batches:
                for batch in iter_batches(stored.data, verify_crc=False):
                    for r in batch:
                        k = record_format.decode_key(bytes(r.key), {1: ShareUpdateKey})
                        if (
                            isinstance(k, ShareUpdateKey)
                            and (
                                k.group_id,
                                k.topic_id,
                                k.partition,
                            )
                            == key
                        ):
                            out.append(record_format.decode_value(ShareUpdateValue, bytes(r.value)))
        return out

    return list(cluster.call(read))


def _batches(value: Any) -> list[tuple[int, int, int, int]]:
    return [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        for b in value.state_batches
    ]


def test_a_leader_writes_only_the_records_that_changed(cluster: BackgroundCluster) -> None:
    """Each acknowledgement's ShareUpdate record holds the records it changed, not the
    whole in-flight window; the coordinator lays them over the state it keeps."""
    group = f"delta-{uuid.uuid4().hex[:8]}"
    seen: dict[str, Any] = {}

    async def scenario(client: Any, topic: str, topic_id: uuid.UUID, produce: Any) -> None:
        m = Member(client, topic_id, f"m-{uuid.uuid4().hex[:8]}", group)
        await m.join(topic)
        await m.fetch()  # the group starts at the latest offset
        await produce(10)
        assert acquired(await m.fetch(wait_ms=2000)) == [(0, 9, 1)]
        assert ack_errors(await m.fetch(acks=[(2, 2, AckType.ACCEPT)])) == [0]
        assert ack_errors(await m.fetch(acks=[(6, 6, AckType.REJECT)])) == [0]
        seen["topic_id"] = topic_id

    run(cluster, scenario)
    key = (group, seen["topic_id"], 0)
    deadline = time.monotonic() + 5
    updates = _state_updates(cluster, key)
    # The initial state, the acquisition, the two acknowledgements and the release.
    while len(updates) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
        updates = _state_updates(cluster, key)
    *_, acquisition, accepted, rejected, released = updates
    assert _batches(acquisition) == [(0, 9, 0, 1)]  # acquired: kept as available, counted
    assert _batches(accepted) == [(2, 2, 2, 1)] and accepted.start_offset == 0
    assert _batches(rejected) == [(6, 6, 4, 1)] and rejected.start_offset == 0
    # The member's connection closed: what it still held is released.
    assert _batches(released) == [(0, 1, 0, 1), (3, 5, 0, 1), (7, 9, 0, 1)]

    def kept() -> list[tuple[int, int, int, int]]:
        assert cluster.cluster is not None
        (state,) = [
            b.share_coordinator.states[key]
            for b in cluster.cluster.brokers
            if key in b.share_coordinator.states
        ]
        return list(state.batches)

    assert cluster.call(kept) == [
        (0, 1, 0, 1),
        (2, 2, 2, 1),
        (3, 5, 0, 1),
        (6, 6, 4, 1),
        (7, 9, 0, 1),
    ]


def test_an_acknowledgement_the_share_coordinator_cannot_get_fails_and_changes_nothing() -> None:
    """The leader of a partition cut off from the broker coordinating its share state
    answers an acknowledgement UNKNOWN_SERVER_ERROR, as Kafka 4.4's leader does once its
    persister gives up on the lost connection, and keeps the records as they were (still
    acquired by the member); a fetch of a partition whose state it cannot read answers
    that error for the partition. After the heal both work."""
    configs = {
        "group.share.record.lock.duration.ms": "60000",
        "offsets.topic.replication.factor": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        # An odd count, so that a group's coordinator does not fix its share coordinator.
        "share.coordinator.state.topic.num.partitions": "5",
    }
    topic = "cut-share"
    with BackgroundCluster(brokers=2, configs=configs) as bg:
        assert bg.cluster is not None
        faults = bg.cluster.faults

        async def go() -> None:
            b0 = bg.cluster.brokers[0]  # type: ignore[union-attr]
            async with await connect(b0.info.host, b0.info.port) as client:
                C = CreateTopicsRequest
                created = await client.request(
                    C(
                        topics=[
                            C.CreatableTopic(
                                name=topic,
                                num_partitions=-1,
                                replication_factor=-1,
                                assignments=[
                                    C.CreatableReplicaAssignment(partition_index=0, broker_ids=[0])
                                ],
                            )
                        ],
                        timeout_ms=10000,
                    )
                )
                assert created.topics[0].error_code == 0
                topic_id = created.topics[0].topic_id
                await client.find_coordinators(["any"])  # creates __consumer_offsets

                def pick() -> list[str]:
                    # Groups whose coordinator is broker 0 and whose share partition's
                    # state broker 1 coordinates.
                    fit = []
                    for i in range(500):
                        g = f"cut-{i}"
                        on_0 = b0.group_coordinator.log.coordinator_for(g) == 0
                        share_key = coordinator_key((g, topic_id, 0))
                        if on_0 and b0.share_coordinator.log.coordinator_for(share_key) == 1:
                            fit.append(g)
                    return fit[:2]

                group, other = bg.call(pick)

                async def produce(count: int) -> None:
                    P = ProduceRequest
                    records = build_batch([Record(key=b"k", value=b"v")] * count)
                    data = P.PartitionProduceData(index=0, records=records)
                    produced = await client.request(
                        P(
                            acks=-1,
                            timeout_ms=10000,
                            topic_data=[
                                P.TopicProduceData(
                                    name=topic, topic_id=topic_id, partition_data=[data]
                                )
                            ],
                        )
                    )
                    assert produced.responses[0].partition_responses[0].error_code == 0

                m = Member(client, topic_id, "m-cut-000000000000001", group)
                await m.join(topic)
                await m.fetch()
                # The other group's member joins (its partition gets its state) but has
                # not fetched: its leader has not read the state yet.
                late = Member(client, topic_id, "m-late-00000000000001", other)
                await late.join(topic)
                await produce(3)
                assert acquired(await m.fetch(wait_ms=2000)) == [(0, 2, 1)]

                bg.call(lambda: faults.cut([1]))
                r = await m.fetch(acks=[(0, 0, AckType.ACCEPT)])
                assert ack_errors(r) == [ErrorCode.UNKNOWN_SERVER_ERROR]
                r = await late.fetch()
                assert [p.error_code for t in r.responses for p in t.partitions] == [
                    ErrorCode.UNKNOWN_SERVER_ERROR
                ]
                bg.call(faults.heal)
                # Still acquired by the member: it accepts them now.
                r = await m.fetch(acks=[(0, 2, AckType.ACCEPT)])
                assert ack_errors(r) == [0]
                # The other group's partition starts at the latest offset once read.
                assert acquired(await late.fetch()) == []
                await produce(1)
                assert acquired(await late.fetch(wait_ms=2000)) == [(3, 3, 1)]

        asyncio.run(go())


class _Channel:
    """A share-state channel answering each write with the next error code given."""

    def __init__(self, codes: list[int]) -> None:
        self.codes = codes
        self.sent: list[int] = []

    def share_coordinator_node(self, sender: int, key: Any) -> int:
        return len(self.sent) % 2  # found again before each send: it moves between two

    def send_share_state(self, sender: int, node: int, request: Any, version: int) -> Any:
        self.sent.append(node)
        R = WriteShareGroupStateResponse
        data = WriteShareGroupStateRequest.decode(request.encode(version), version)
        (topic,) = data.topics
        code = self.codes.pop(0)
        return R(
            results=[
                R.WriteStateResult(
                    topic_id=topic.topic_id,
                    partitions=[R.PartitionResult(partition=0, error_code=code)],
                )
            ]
        )

    def share_state_keys(self, group_id: str) -> list[Any]:
        return []


def test_the_persister_retries_a_moving_coordinator_and_fails_on_other_errors() -> None:
    """NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS: the coordinator is found again and
    the write sent again, five times at most, then COORDINATOR_NOT_AVAILABLE; any other
    error fails the write at once, as Kafka 4.4's leader answers it."""
    topic_id = uuid.uuid4()
    state = SharePartition(0, 5, 10).snapshot()

    def write(codes: list[int]) -> tuple[int | None, list[int]]:
        channel = _Channel(codes)
        try:
            ShareStatePersister(0, channel).write("g", topic_id, 0, state, [(0, 0, 2, 1)])
        except KafkaError as e:
            return e.code, channel.sent
        return None, channel.sent

    moved = [ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]
    assert write([*moved, 0]) == (None, [0, 1, 0])
    assert write([*moved, *moved, ErrorCode.NOT_COORDINATOR]) == (
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        [0, 1, 0, 1, 0],
    )
    assert write([ErrorCode.FENCED_STATE_EPOCH]) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, [0])
    assert write([ErrorCode.FENCED_LEADER_EPOCH]) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, [0])
    assert write([ErrorCode.INVALID_REQUEST]) == (ErrorCode.UNKNOWN_SERVER_ERROR, [0])


def test_one_requests_share_states_go_out_as_a_batch_per_state_partition() -> None:
    """As Kafka's coordinator writes what one request or event produced: initialising a
    hundred share partitions, or deleting their topic, makes one batch per partition of
    ``__share_group_state`` it touches, not a hundred; each key's state reads back from
    them, and after the deletion the last word of each is its tombstone."""
    from kafkagen.generated.initialize_share_group_state import (
        InitializeShareGroupStateRequest as Init,
    )

    configs = {
        "share.coordinator.state.topic.num.partitions": "3",
        "share.coordinator.state.topic.replication.factor": "1",
    }
    with BackgroundCluster(1, configs=configs) as c, WireClient(c.bootstrap) as w:
        assert c.cluster is not None
        md, coordinator = c.cluster.metadata, c.cluster.brokers[0].share_coordinator
        rm = c.cluster.brokers[0].replica_manager

        def until(done: Any) -> None:
            deadline = time.monotonic() + 10
            while not c.call(done):
                assert time.monotonic() < deadline
                time.sleep(0.02)

        c.call(lambda: (md.create_topic("wide", 100, 1), coordinator.log.ensure_topic()))
        until(lambda: len(coordinator.log.owned) == 3)
        topic_id = c.call(lambda: md.topic("wide").topic_id)  # type: ignore[union-attr]
        parts = [Init.PartitionData(partition=p, state_epoch=0, start_offset=7) for p in range(100)]
        request = Init(
            group_id=GROUP, topics=[Init.InitializeStateData(topic_id=topic_id, partitions=parts)]
        )
        r = w.call(83, 0, request)
        assert [p.error_code for p in r.results[0].partitions] == [0] * 100

        def state_log() -> tuple[int, dict[int, bool]]:
            """(batches, partition -> whether its last record is a tombstone)."""
            batches, last = 0, {}
            for i in range(3):
                for stored in rm.partitions[TopicPartition("__share_group_state", i)].log.batches:
                    batches += 1
                    for batch in iter_batches(stored.data, verify_crc=False):
                        for rec in batch:
                            k = record_format.decode_key(bytes(rec.key), {0: ShareSnapshotKey})
                            assert isinstance(k, ShareSnapshotKey)
                            last[k.partition] = rec.value is None
            return batches, last

        until(lambda: state_log()[0] >= 3)
        batches, last = c.call(state_log)
        assert batches == 3 and last == dict.fromkeys(range(100), False)
        assert c.call(
            lambda: {coordinator.states[(GROUP, topic_id, p)].start_offset for p in range(100)}
        ) == {7}
        c.call(lambda: md.delete_topic("wide"))
        until(lambda: state_log()[0] >= 6)
        batches, last = c.call(state_log)
        assert batches == 6 and last == dict.fromkeys(range(100), True)
        assert c.call(lambda: [k for k in coordinator.states if k[1] == topic_id]) == []
