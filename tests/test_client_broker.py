"""The client against the project's own broker: batching when the broker has the batched
version, one request per key when its ApiVersions stops below it, identical results.

The broker runs in this process (a 3-broker `BackgroundCluster` on 127.0.0.1), so a test
can wrap its handlers: each wrapper counts the requests the broker serves and, to play an
older broker, lowers the highest version it advertises and accepts. The patch lasts one
`pytest.MonkeyPatch.context()`; both set-ups talk to the same cluster, so their results can
be compared exactly.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from kafkagen.generated.create_topics import CreateTopicsRequest, CreateTopicsResponse
from kafkagen.generated.describe_quorum import DescribeQuorumRequest
from kafkagen.generated.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from kafkagen.runtime.broker.api import HANDLERS, RequestContext, load_handlers
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.client import (
    BatchingUnsupportedError,
    CommittedOffset,
    CoordinatorType,
    KafkaClient,
    Node,
    TopicPartition,
    VersionMismatchError,
    connect,
)
from kafkagen.runtime.errors import InvalidRequestError, KafkaError, NotCoordinatorError

pytestmark = pytest.mark.timeout(120)

OFFSET_FETCH = 9
FIND_COORDINATOR = 10
API_VERSIONS = 18
TOPIC = "orders"
PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster() -> Iterator[BackgroundCluster]:
    with BackgroundCluster(
        3,
        configs={"offsets.topic.num.partitions": "12", "offsets.topic.replication.factor": "1"},
    ) as c:
        yield c


class Probe:
    """Which requests the broker served, as (API key, version), in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def versions(self, api_key: int) -> list[int]:
        return [v for k, v in self.seen if k == api_key]


def serve(mp: pytest.MonkeyPatch, caps: Mapping[int, int] | None = None) -> Probe:
    """Count what the broker serves; ``caps``: API key -> highest version to serve."""
    probe = Probe()
    load_handlers()
    for key in (OFFSET_FETCH, FIND_COORDINATOR, API_VERSIONS):
        original = HANDLERS[key]

        def handle(ctx: RequestContext, request: Any, inner: Any = original.handle) -> None:
            probe.seen.append((ctx.api_key, ctx.api_version))
            inner(ctx, request)

        top = (caps or {}).get(key)
        changes: dict[str, Any] = {"handle": handle}
        if top is not None:
            changes.update(max_version=top, max_unstable_version=top)
        mp.setitem(HANDLERS, key, dataclasses.replace(original, **changes))
    return probe


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


def find(cluster: BackgroundCluster, keys: list[str], **kwargs: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with await connect(*address(cluster), client_id="client-test") as client:
            return await client.find_coordinators(keys, **kwargs)

    return asyncio.run(go())


# --------------------------------------------------------------------------- FindCoordinator


@pytest.mark.parametrize("n", [1, 2, 500])
def test_one_batched_request_or_one_per_key_with_identical_results(
    cluster: BackgroundCluster, n: int
) -> None:
    keys = [f"group-{n}-{i}" for i in range(n)]
    with pytest.MonkeyPatch.context() as mp:
        probe = serve(mp, {FIND_COORDINATOR: 3})
        capped = find(cluster, keys)
    assert probe.versions(FIND_COORDINATOR) == [3] * n  # one request per key
    with pytest.MonkeyPatch.context() as mp:
        probe = serve(mp)
        uncapped = find(cluster, keys)
    assert probe.versions(FIND_COORDINATOR) == [6]  # one request for all keys
    assert capped == uncapped == true_coordinators(cluster, keys)
    assert list(capped) == keys
    if n == 500:  # the keys really spread over the three brokers
        assert {node.node_id for node in uncapped.values()} == {0, 1, 2}


def test_per_key_errors_are_kept_in_both_set_ups(cluster: BackgroundCluster) -> None:
    keys = ["good", "", "also-good"]  # an empty group id is INVALID_REQUEST
    with pytest.MonkeyPatch.context() as mp:
        serve(mp, {FIND_COORDINATOR: 3})
        capped = find(cluster, keys)
    with pytest.MonkeyPatch.context() as mp:
        serve(mp)
        uncapped = find(cluster, keys)
    assert isinstance(capped[""], InvalidRequestError)
    assert isinstance(uncapped[""], InvalidRequestError)
    assert plain(capped) == plain(uncapped)
    assert capped["good"] == true_coordinators(cluster, ["good"])["good"]


def test_several_keys_without_splitting_fail_on_the_capped_broker_only(
    cluster: BackgroundCluster,
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        probe = serve(mp, {FIND_COORDINATOR: 3})
        with pytest.raises(BatchingUnsupportedError, match="usable versions are v0-3"):
            find(cluster, ["a", "b"], split=False)
        assert find(cluster, ["a"], split=False) == true_coordinators(cluster, ["a"])
    assert probe.versions(FIND_COORDINATOR) == [3]  # the refused batch sent nothing
    with pytest.MonkeyPatch.context() as mp:
        probe = serve(mp)
        assert find(cluster, ["a", "b"], split=False) == true_coordinators(cluster, ["a", "b"])
    assert probe.versions(FIND_COORDINATOR) == [6]


def test_share_keys_need_v6_and_the_capped_broker_is_refused_before_sending(
    cluster: BackgroundCluster,
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        probe = serve(mp, {FIND_COORDINATOR: 3})
        with pytest.raises(VersionMismatchError, match="client needs v6, the broker supports v0-3"):
            find(cluster, ["s"], key_type=CoordinatorType.SHARE)
    assert probe.versions(FIND_COORDINATOR) == []
    # The project's broker has no share coordinator: that is the key's own error.
    assert isinstance(find(cluster, ["s"], key_type=2)["s"], InvalidRequestError)


def test_an_api_the_broker_lacks_is_named_with_its_ranges(cluster: BackgroundCluster) -> None:
    async def go() -> None:
        async with await connect(*address(cluster)) as client:
            with pytest.raises(VersionMismatchError) as info:
                await client.request(DescribeQuorumRequest())
            text = str(info.value)
            assert "does not support DescribeQuorum (API key 55)" in text
            assert "FindCoordinator v0-6" in text and "ApiVersions v0-4" in text
            assert not client.closed  # nothing was sent, the connection is fine

    asyncio.run(go())


def test_handshake_retries_at_the_broker_api_versions_version(cluster: BackgroundCluster) -> None:
    with pytest.MonkeyPatch.context() as mp:
        probe = serve(mp, {API_VERSIONS: 2})

        async def go() -> None:
            async with await connect(*address(cluster)) as client:
                assert client.versions.get(API_VERSIONS) == (0, 2)
                found = await client.find_coordinators(["x"])
                assert found == true_coordinators(cluster, ["x"])

        asyncio.run(go())
    # The v4 request is answered in the v0 layout (the broker handles it as version 0),
    # then the client asks again at v2, the highest the broker listed.
    assert probe.versions(API_VERSIONS) == [0, 2]


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
    response = await client.request(request)
    assert isinstance(response, OffsetCommitResponse)
    assert [p.error_code for t in response.topics for p in t.partitions] == [0] * len(offsets)


def test_offset_fetch_one_v8_plus_request_or_one_per_group_below_v8(
    cluster: BackgroundCluster,
) -> None:
    tp = [TopicPartition(TOPIC, i) for i in range(PARTITIONS)]
    candidates = [f"offsets-group-{i}" for i in range(40)]
    owners = true_coordinators(cluster, candidates)
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

    async def setup() -> None:
        async with await connect(*address(cluster)) as client:
            await create_topic(client)
            for group, offsets in committed.items():
                await commit(client, group, offsets)

    asyncio.run(setup())

    async def fetch() -> dict[str, Any]:
        async with await connect(*address(cluster)) as client:
            return await client.fetch_offsets(wanted)

    results = {}
    for cap in (7, None):
        with pytest.MonkeyPatch.context() as mp:
            probe = serve(mp, {OFFSET_FETCH: 7} if cap else None)
            results[cap] = fetch_result = asyncio.run(fetch())
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
    cluster: BackgroundCluster, n: int
) -> None:
    """kafka-python's admin client batches at v4+ when advertised and splits otherwise;
    both ways it must get the coordinators the cluster (and our client) report."""
    from kafka.admin import KafkaAdminClient

    keys = [f"kp-group-{n}-{i}" for i in range(n)]
    found: dict[int | None, dict[str, int]] = {}
    for cap in (3, None):
        with pytest.MonkeyPatch.context() as mp:
            probe = serve(mp, {FIND_COORDINATOR: cap} if cap else None)
            admin = KafkaAdminClient(
                bootstrap_servers=cluster.bootstrap,
                client_id="kafka-python-admin-test",
                request_timeout_ms=10_000,
            )
            try:
                # The lookup every group operation of the admin client starts with.
                found[cap] = admin._manager.run(admin._find_coordinator_ids, keys)
            finally:
                admin.close()
        versions = probe.versions(FIND_COORDINATOR)
        if cap:
            assert versions == [3] * n  # its highest single-key version, once per key
        else:
            assert len(versions) == 1 and versions[0] >= 4, versions
    expected = {k: node.node_id for k, node in true_coordinators(cluster, keys).items()}
    assert found[3] == found[None] == expected
    ours = find(cluster, keys)
    assert {k: v.node_id for k, v in ours.items()} == expected
