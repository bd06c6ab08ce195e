"""The client against the project's own broker: batching when the broker has the batched
version, one request per key when its ApiVersions stops below it, identical results.

Two 3-broker `BackgroundCluster`s on 127.0.0.1 run in this process: ``cluster`` serves every
version, ``old`` plays an older broker through ``kafkagen.api.version.max`` (FindCoordinator
up to v3, OffsetFetch up to v7, ApiVersions up to v2). The client's ``on_request`` observer
records what it sends, so a test can tell one batched request from one request per key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from broker_helpers import BrokerProcess, WireClient
from kafkagen.generated.api_versions import ApiVersionsRequest
from kafkagen.generated.broker_heartbeat import BrokerHeartbeatRequest
from kafkagen.generated.create_topics import CreateTopicsRequest, CreateTopicsResponse
from kafkagen.generated.find_coordinator import FindCoordinatorRequest
from kafkagen.generated.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from kafkagen.generated.produce import ProduceRequest
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.config.definitions import ConfigError
from kafkagen.runtime.broker.config.store import ConfigStore
from kafkagen.runtime.client import (
    BatchingUnsupportedError,
    CommittedOffset,
    CoordinatorType,
    KafkaClient,
    Node,
    VersionMismatchError,
    connect,
)
from kafkagen.runtime.errors import InvalidRequestError, KafkaError, NotCoordinatorError
from kafkagen.runtime.message import Message
from kafkagen.runtime.topic_partition import TopicPartition

pytestmark = pytest.mark.timeout(120)

OFFSET_FETCH = 9
FIND_COORDINATOR = 10
API_VERSIONS = 18
TOPIC = "orders"
PARTITIONS = 3
CAPS = "FindCoordinator:3,OffsetFetch:7,ApiVersions:2"
CLUSTER_CONFIGS = {"offsets.topic.num.partitions": "12", "offsets.topic.replication.factor": "1"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[BackgroundCluster]:
    with BackgroundCluster(3, configs=CLUSTER_CONFIGS) as c:
        yield c


@pytest.fixture(scope="module")
def old() -> Iterator[BackgroundCluster]:
    with BackgroundCluster(3, configs={**CLUSTER_CONFIGS, "kafkagen.api.version.max": CAPS}) as c:
        yield c


class Probe:
    """Which requests the client sent, as (API key, version), in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def __call__(self, request: Message, version: int) -> None:
        api_key = type(request).API_KEY
        assert api_key is not None
        self.seen.append((api_key, version))

    def versions(self, api_key: int) -> list[int]:
        return [v for k, v in self.seen if k == api_key]


def address(cluster: BackgroundCluster, broker: int = 0) -> tuple[str, int]:
    host, port = cluster.bootstrap.split(",")[broker].rsplit(":", 1)
    return host, int(port)


def true_coordinators(cluster: BackgroundCluster, keys: list[str]) -> dict[str, Node]:
    """What the cluster itself says, asked on its own thread."""

    def ask() -> dict[str, Node]:
        c = cluster.cluster
        assert c is not None
        out = {}
        for k in keys:
            node = c.brokers[0].group_coordinator.coordinator_for(k)
            info = c.metadata.brokers[node]
            out[k] = Node(info.node_id, info.host, info.port)
        return out

    result: dict[str, Node] = cluster.call(ask)
    return result


def plain(result: Mapping[Any, Any]) -> dict[Any, Any]:
    """Errors as (class, message), so that results compare with ==."""
    out: dict[Any, Any] = {}
    for k, v in result.items():
        if isinstance(v, KafkaError):
            out[k] = (type(v), v.message)
        elif isinstance(v, dict):
            out[k] = plain(v)
        else:
            out[k] = v
    return out


def find(
    cluster: BackgroundCluster, keys: list[str], probe: Probe | None = None, **kwargs: Any
) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with await connect(
            *address(cluster), client_id="client-test", on_request=probe
        ) as client:
            return await client.find_coordinators(keys, **kwargs)

    return asyncio.run(go())


def node_ids(found: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v.node_id if isinstance(v, Node) else v for k, v in found.items()}


# --------------------------------------------------------------------------- the version cap


def test_the_capped_broker_advertises_and_accepts_only_up_to_the_cap(
    old: BackgroundCluster, cluster: BackgroundCluster
) -> None:
    tops = {}
    for name, c in (("old", old), ("new", cluster)):
        with WireClient(c.bootstrap) as w:
            r = w.call(API_VERSIONS, 2, ApiVersionsRequest())
        tops[name] = {k.api_key: k.max_version for k in r.api_keys}
    assert tops["old"][FIND_COORDINATOR] == 3 and tops["old"][OFFSET_FETCH] == 7
    assert tops["old"][API_VERSIONS] == 2
    assert tops["new"][FIND_COORDINATOR] == 6 and tops["new"][OFFSET_FETCH] == 10
    # Uncapped APIs are advertised as before.
    assert {k: v for k, v in tops["old"].items() if k not in (9, 10, 18)} == {
        k: v for k, v in tops["new"].items() if k not in (9, 10, 18)
    }
    # A version above the cap is handled like any version the broker does not serve.
    with WireClient(old.bootstrap) as w:
        assert (
            w.call(FIND_COORDINATOR, 3, FindCoordinatorRequest(key="g", key_type=0)).error_code == 0
        )
        w.send(FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]))
        assert w.is_closed()


def test_a_cap_below_the_lowest_version_hides_the_api() -> None:
    # Kafka 4.0 serves Produce from v3: capped at v2 nothing is left, so it is not
    # advertised and a request at any version closes the connection like an unknown API.
    configs = {"kafkagen.api.version.preset": "4.0", "kafkagen.api.version.max": "Produce:2,19:2"}
    with BackgroundCluster(configs=configs) as c:
        with WireClient(c.bootstrap) as w:
            r = w.call(API_VERSIONS, 2, ApiVersionsRequest())
            ranges = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
            w.send(0, 3, ProduceRequest(acks=1, timeout_ms=1000, topic_data=[]))
            assert w.is_closed()
    assert 0 not in ranges
    assert ranges[19] == (2, 2)  # CreateTopics: 4.0 starts at v2, capped there


@pytest.mark.parametrize(
    "value, problem",
    [
        ("FindCoordinator", "is not API:version"),
        ("NoSuchApi:3", "'NoSuchApi' is not a known API name or key"),
        ("OffsetFetch:seven", "version 'seven' is not a number"),
        ("OffsetFetch:-1", "version must be 0 or more"),
        ("9:1,OffsetFetch:2", "capped twice"),
        ("999:1", "'999' is not a known API name or key"),
    ],
)
def test_a_bad_cap_is_refused_naming_the_entry(value: str, problem: str) -> None:
    with pytest.raises(ConfigError, match="kafkagen.api.version.max") as info:
        ConfigStore({"kafkagen.api.version.max": value})
    assert problem in str(info.value)


# --------------------------------------------------------------------------- FindCoordinator


@pytest.mark.parametrize("n", [1, 2, 500])
def test_one_batched_request_or_one_per_key_with_identical_results(
    cluster: BackgroundCluster, old: BackgroundCluster, n: int
) -> None:
    keys = [f"group-{n}-{i}" for i in range(n)]
    probe = Probe()
    capped = find(old, keys, probe)
    assert probe.versions(FIND_COORDINATOR) == [3] * n  # one request per key
    probe = Probe()
    uncapped = find(cluster, keys, probe)
    assert probe.versions(FIND_COORDINATOR) == [6]  # one request for all keys
    assert capped == true_coordinators(old, keys)
    assert uncapped == true_coordinators(cluster, keys)
    assert list(capped) == list(uncapped) == keys
    if n == 500:  # the keys really spread over the three brokers
        assert {node.node_id for node in uncapped.values()} == {0, 1, 2}
        assert {node.node_id for node in capped.values()} == {0, 1, 2}


def test_per_key_errors_are_kept_in_both_set_ups(
    cluster: BackgroundCluster, old: BackgroundCluster
) -> None:
    keys = ["good", "", "also-good"]  # an empty group id is INVALID_REQUEST
    capped = find(old, keys)
    uncapped = find(cluster, keys)
    assert isinstance(capped[""], InvalidRequestError)
    assert isinstance(uncapped[""], InvalidRequestError)
    assert plain({"": capped[""]}) == plain({"": uncapped[""]})
    assert capped["good"] == true_coordinators(old, ["good"])["good"]
    assert uncapped["good"] == true_coordinators(cluster, ["good"])["good"]


def test_several_keys_without_splitting_fail_on_the_capped_broker_only(
    cluster: BackgroundCluster, old: BackgroundCluster
) -> None:
    probe = Probe()
    with pytest.raises(BatchingUnsupportedError, match="usable versions are v0-3"):
        find(old, ["a", "b"], probe, split=False)
    assert find(old, ["a"], probe, split=False) == true_coordinators(old, ["a"])
    assert probe.versions(FIND_COORDINATOR) == [3]  # the refused batch sent nothing
    probe = Probe()
    assert find(cluster, ["a", "b"], probe, split=False) == true_coordinators(cluster, ["a", "b"])
    assert probe.versions(FIND_COORDINATOR) == [6]


def test_share_keys_need_v6_and_the_capped_broker_is_refused_before_sending(
    cluster: BackgroundCluster, old: BackgroundCluster
) -> None:
    probe = Probe()
    with pytest.raises(VersionMismatchError, match="client needs v6, the broker supports v0-3"):
        find(old, ["s"], probe, key_type=CoordinatorType.SHARE)
    assert probe.versions(FIND_COORDINATOR) == []
    # The project's broker has no share coordinator: that is the key's own error.
    assert isinstance(find(cluster, ["s"], key_type=2)["s"], InvalidRequestError)


def test_an_api_the_broker_lacks_is_named_with_its_ranges(cluster: BackgroundCluster) -> None:
    async def go() -> None:
        async with await connect(*address(cluster)) as client:
            with pytest.raises(VersionMismatchError) as info:
                await client.request(BrokerHeartbeatRequest())
            text = str(info.value)
            assert "does not support BrokerHeartbeat (API key 63)" in text
            assert "FindCoordinator v0-6" in text and "ApiVersions v0-5" in text
            assert not client.closed  # nothing was sent, the connection is fine

    asyncio.run(go())


def test_handshake_retries_at_the_broker_api_versions_version(old: BackgroundCluster) -> None:
    async def go() -> None:
        # The v4 handshake is answered UNSUPPORTED_VERSION in the v0 layout; the client
        # asks again at v2, the highest the broker listed, and gets its answer.
        async with await connect(*address(old)) as client:
            assert client.versions.get(API_VERSIONS) == (0, 2)
            assert client.versions.get(FIND_COORDINATOR) == (0, 3)
            found = await client.find_coordinators(["x"])
            assert found == true_coordinators(old, ["x"])

    asyncio.run(go())


# --------------------------------------------------------------------------- OffsetFetch


async def create_topic(client: KafkaClient) -> None:
    topic = CreateTopicsRequest.CreatableTopic(
        name=TOPIC, num_partitions=PARTITIONS, replication_factor=1
    )
    response = await client.request(CreateTopicsRequest(topics=[topic], timeout_ms=10_000))
    assert isinstance(response, CreateTopicsResponse)
    assert response.topics[0].error_code in (0, 36)  # 36: TOPIC_ALREADY_EXISTS


async def commit(client: KafkaClient, group: str, offsets: Mapping[int, int]) -> None:
    """A standalone commit (no membership, generation -1), as admin tools do."""
    p = OffsetCommitRequest.OffsetCommitRequestPartition
    request = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(
                name=TOPIC,
                partitions=[
                    p(
                        partition_index=i,
                        committed_offset=o,
                        committed_leader_epoch=i + 1,
                        committed_metadata=f"{group}:{i}",
                    )
                    for i, o in offsets.items()
                ],
            )
        ],
    )
    response = await client.request(request, 9)  # the last version naming topics by name
    assert isinstance(response, OffsetCommitResponse)
    assert [p.error_code for t in response.topics for p in t.partitions] == [0] * len(offsets)


def test_offset_fetch_one_v8_plus_request_or_one_per_group_below_v8(
    cluster: BackgroundCluster, old: BackgroundCluster
) -> None:
    tp = [TopicPartition(TOPIC, i) for i in range(PARTITIONS)]
    candidates = [f"offsets-group-{i}" for i in range(40)]
    owners = true_coordinators(cluster, candidates)
    # Both clusters are built alike, so they place the groups alike.
    assert node_ids(true_coordinators(old, candidates)) == node_ids(owners)
    mine = [g for g in candidates if owners[g].node_id == 0][:4]
    elsewhere = next(g for g in candidates if owners[g].node_id != 0)
    committed = {mine[0]: {0: 5, 1: 7}, mine[1]: {2: 11}, mine[2]: {0: 1, 1: 2, 2: 3}}
    # mine[3] has nothing committed; `elsewhere` is coordinated by another broker.
    wanted: dict[str, list[TopicPartition] | None] = {
        mine[0]: tp,
        mine[1]: None,  # all of its partitions
        mine[2]: [tp[2]],
        mine[3]: tp[:2],
        elsewhere: tp[:1],
    }

    async def setup(c: BackgroundCluster) -> None:
        async with await connect(*address(c)) as client:
            await create_topic(client)
            for group, offsets in committed.items():
                await commit(client, group, offsets)

    asyncio.run(setup(cluster))
    asyncio.run(setup(old))

    async def fetch(c: BackgroundCluster, probe: Probe) -> dict[str, Any]:
        async with await connect(*address(c), on_request=probe) as client:
            return await client.fetch_offsets(wanted)

    results = {}
    for cap, c in ((7, old), (None, cluster)):
        probe = Probe()
        results[cap] = fetch_result = asyncio.run(fetch(c, probe))
        assert probe.versions(OFFSET_FETCH) == ([7] * len(wanted) if cap else [9])
        assert list(fetch_result) == list(wanted)

    def offset(group: str, i: int) -> CommittedOffset:
        return CommittedOffset(committed[group][i], i + 1, f"{group}:{i}")

    assert plain(results[7]) == plain(results[None])
    assert plain(results[None]) == {
        mine[0]: {tp[0]: offset(mine[0], 0), tp[1]: offset(mine[0], 1), tp[2]: None},
        mine[1]: {tp[2]: offset(mine[1], 2)},
        mine[2]: {tp[2]: offset(mine[2], 2)},
        mine[3]: {tp[0]: None, tp[1]: None},
        elsewhere: (NotCoordinatorError, NotCoordinatorError.message),
    }


# --------------------------------------------------------------------------- kafka-python


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # kafka-python's own
@pytest.mark.parametrize("n", [1, 2, 50])
def test_kafka_python_admin_finds_the_same_coordinators_batched_or_split(
    cluster: BackgroundCluster, old: BackgroundCluster, n: int
) -> None:
    """kafka-python's admin client batches at v4+ when advertised and splits otherwise;
    both ways it must get the coordinators the cluster (and our client) report."""
    from kafka.admin import KafkaAdminClient

    keys = [f"kp-group-{n}-{i}" for i in range(n)]
    found: dict[str, dict[str, int]] = {}
    for name, c in (("old", old), ("new", cluster)):
        admin = KafkaAdminClient(
            bootstrap_servers=c.bootstrap,
            client_id="kafka-python-admin-test",
            request_timeout_ms=10_000,
        )
        try:
            # The lookup every group operation of the admin client starts with.
            found[name] = admin._manager.run(admin._find_coordinator_ids, keys)
            # admin.api_versions() maps keys to kafka-python's enum, which lacks API 93
            # that Kafka 4.4 lists; the raw table is what its version choice reads.
            top = admin._manager.broker_version_data.api_versions[FIND_COORDINATOR][1]
        finally:
            admin.close()
        # What kafka-python learnt from ApiVersions: below v4 it must send one key each.
        assert top == (3 if name == "old" else 6)
    assert node_ids(true_coordinators(old, keys)) == node_ids(true_coordinators(cluster, keys))
    expected = node_ids(true_coordinators(cluster, keys))
    assert found["old"] == found["new"] == expected
    assert node_ids(find(cluster, keys)) == expected


def test_kafkagen_serve_takes_the_cap_on_its_command_line() -> None:
    with BrokerProcess("kafkagen.api.version.max=OffsetFetch:7,10:3") as broker:
        with WireClient(broker.bootstrap) as w:
            r = w.call(API_VERSIONS, 2, ApiVersionsRequest())
        tops = {k.api_key: k.max_version for k in r.api_keys}
    assert tops[OFFSET_FETCH] == 7 and tops[FIND_COORDINATOR] == 3


def test_kafkagen_serve_refuses_a_bad_cap_naming_it() -> None:
    with pytest.raises(RuntimeError, match="kafkagen.api.version.max") as info:
        BrokerProcess("kafkagen.api.version.max=OffsetFetch", startup=20)
    assert "is not API:version" in str(info.value)
