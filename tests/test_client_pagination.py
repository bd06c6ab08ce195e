"""The admin helpers walk cursor pagination (seed 001) to the end, at scale, against the
project's broker; and a broker capped below the paged versions gets one unpaged request.

One 3-broker cluster serves the module. Its state comes only from the real APIs: topics
from CreateTopics, configs from AlterConfigs, groups and members from JoinGroup and
ConsumerGroupHeartbeat, offsets from OffsetCommit, producer states from idempotent Produce,
transactional ids from InitProducerId, ACLs from CreateAcls, reassignments from
AlterPartitionReassignments. Every listing is walked with limits 1, 7 and 2000 (above the
broker's max.request.pagination.size.limit of 1000, so it is clamped): each item comes
exactly once, in the documented order, pages hold at most the effective limit, and the
union equals the unpaged answer of the version below the paged one.

ListOffsets, OffsetFetch, DescribeAcls and DescribeConfigs still build their whole answer
for every page, so a walk with limit 1 costs pages x items: those are walked with limit 1
over a few hundred items and with 7 and 2000 over the thousands.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable, Coroutine, Iterator, Sequence
from typing import Any, TypeVar

import pytest
from kafkagen.generated.alter_configs import AlterConfigsRequest
from kafkagen.generated.alter_partition_reassignments import AlterPartitionReassignmentsRequest
from kafkagen.generated.consumer_group_describe import ConsumerGroupDescribeRequest
from kafkagen.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from kafkagen.generated.create_acls import CreateAclsRequest
from kafkagen.generated.create_topics import CreateTopicsRequest
from kafkagen.generated.delete_acls import DeleteAclsRequest
from kafkagen.generated.delete_groups import DeleteGroupsRequest
from kafkagen.generated.delete_topics import DeleteTopicsRequest
from kafkagen.generated.describe_acls import DescribeAclsRequest
from kafkagen.generated.describe_configs import DescribeConfigsRequest
from kafkagen.generated.describe_groups import DescribeGroupsRequest
from kafkagen.generated.describe_log_dirs import DescribeLogDirsRequest
from kafkagen.generated.describe_producers import DescribeProducersRequest
from kafkagen.generated.describe_transactions import DescribeTransactionsRequest
from kafkagen.generated.init_producer_id import InitProducerIdRequest
from kafkagen.generated.join_group import JoinGroupRequest
from kafkagen.generated.leave_group import LeaveGroupRequest
from kafkagen.generated.list_groups import ListGroupsRequest, ListGroupsResponse
from kafkagen.generated.list_offsets import ListOffsetsRequest
from kafkagen.generated.list_partition_reassignments import ListPartitionReassignmentsRequest
from kafkagen.generated.list_transactions import ListTransactionsRequest
from kafkagen.generated.metadata import MetadataRequest
from kafkagen.generated.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from kafkagen.generated.offset_fetch import OffsetFetchRequest
from kafkagen.generated.produce import ProduceRequest
from kafkagen.runtime.broker.api import HANDLERS, RequestContext
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.client import CoordinatorType, KafkaClient, admin, connect
from kafkagen.runtime.errors import InvalidRequestError
from kafkagen.runtime.handlers import load_handlers
from kafkagen.runtime.message import Message
from kafkagen.runtime.pagination import paged_version
from kafkagen.runtime.records import Record, build_batch
from kafkagen.runtime.topic_partition import TopicPartition

pytestmark = [pytest.mark.timeout(900)]

T = TypeVar("T")

BROKER_LIMIT = 1000
LIMITS = (1, 7, 2000)
TOPICS = 300
PARTITIONS = 10  # 3,000 partitions
GROUPS = 5000
MEMBERS = 200
PRODUCERS = 1000
TRANSACTIONS = 1000
ACL_NAMES = 1000  # each a topic and a group resource, plus some prefixed ones

CONFIGS = {
    "unstable.api.versions.enable": "true",
    "max.request.pagination.size.limit": str(BROKER_LIMIT),
    "offsets.topic.num.partitions": "6",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.num.partitions": "6",
    "transaction.state.log.replication.factor": "1",
    "group.initial.rebalance.delay.ms": "300",
    "group.consumer.session.timeout.ms": "600000",
    "group.consumer.heartbeat.interval.ms": "300000",
    "queued.max.requests": "20000",
}


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def address(cluster: BackgroundCluster, broker: int = 0) -> tuple[str, int]:
    host, port = cluster.bootstrap.split(",")[broker].rsplit(":", 1)
    return host, int(port)


async def open_client(cluster: BackgroundCluster, **kwargs: Any) -> KafkaClient:
    kwargs.setdefault("max_in_flight", 20_000)
    kwargs.setdefault("request_timeout", 120.0)
    return await connect(*address(cluster), client_id="pagination-test", **kwargs)


def topic_name(i: int) -> str:
    return f"topic-{i:03d}"


# --------------------------------------------------------------------------- state


async def create_topics(
    client: KafkaClient,
    names: Sequence[str],
    partitions: int,
    replication_factor: int = 1,
    **extra: Any,
) -> None:
    for start in range(0, len(names), 50):  # batches keep each request small
        request = CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name=n,
                    num_partitions=partitions,
                    replication_factor=replication_factor,
                    **extra,
                )
                for n in names[start : start + 50]
            ],
            timeout_ms=60_000,
        )
        response: Any = await client.request(request)
        assert [t.error_code for t in response.topics] == [0] * len(request.topics)


async def by_coordinator(
    client: KafkaClient, keys: Sequence[str], key_type: CoordinatorType = CoordinatorType.GROUP
) -> list[tuple[KafkaClient, list[str]]]:
    found = await client.find_coordinators(keys, key_type)
    grouped: dict[Any, list[str]] = {}
    for k in keys:
        node = found[k]
        assert not isinstance(node, Exception), (k, node)
        grouped.setdefault(node, []).append(k)
    return [(await client.for_node(n.host, n.port), ks) for n, ks in grouped.items()]


async def join_classic(client: KafkaClient, group: str) -> str:
    """One member joins (JoinGroup v3: no MEMBER_ID_REQUIRED round); its member id."""
    request = JoinGroupRequest(
        group_id=group,
        session_timeout_ms=600_000,
        rebalance_timeout_ms=600_000,
        member_id="",
        protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
    )
    response: Any = await client.request(request, 3)
    assert response.error_code == 0, response
    member: str = response.member_id
    return member


@dataclasses.dataclass
class State:
    topics: list[str]
    groups: list[str]
    big_group: str
    members: list[str]
    offset_groups: list[str]
    empty_groups: list[str]
    producer_ids: list[int]


async def build_state(cluster: BackgroundCluster) -> State:
    async with await open_client(cluster) as client:
        topics = [topic_name(i) for i in range(TOPICS)]
        await create_topics(client, topics, PARTITIONS)
        await create_topics(client, ["producers"], 3)
        # Configs: every third topic gets its own retention.ms.
        alter = AlterConfigsRequest(
            resources=[
                AlterConfigsRequest.AlterConfigsResource(
                    resource_type=2,
                    resource_name=t,
                    configs=[
                        AlterConfigsRequest.AlterableConfig(
                            name="retention.ms", value=str(60_000 + i)
                        )
                    ],
                )
                for i, t in enumerate(topics)
                if i % 3 == 0
            ]
        )
        response: Any = await client.request(alter)
        assert {r.error_code for r in response.responses} == {0}

        # 5,000 classic groups of one member each, and one group of 200 members.
        groups = [f"group-{i:05d}" for i in range(GROUPS)]
        big = "big-group"
        joins = []
        for other, mine in await by_coordinator(client, [*groups, big]):
            joins += [join_classic(other, g) for g in mine if g != big]
            if big in mine:
                joins += [join_classic(other, big) for _ in range(MEMBERS)]
        await asyncio.gather(*joins)
        described = await admin.describe_groups_all(client, [big], paginate=False)
        members = sorted(m.member_id for m in described.groups[0].members)
        assert len(members) == MEMBERS

        # Offsets: one group commits all 3,000 partitions, four more a few each.
        offset_groups = ["offsets-all", "offsets-b", "offsets-c", "offsets-d", "offsets-e"]
        commits = []
        for other, mine in await by_coordinator(client, offset_groups):
            for g in mine:
                chosen = topics if g == "offsets-all" else topics[:: 37 + len(g)]
                commits.append(other.request(commit_request(g, chosen), COMMIT_BY_NAME))
        # 300 more groups that only committed an offset: Empty groups.
        empty_groups = [f"empty-{i:03d}" for i in range(300)]
        for other, mine in await by_coordinator(client, empty_groups):
            commits += [other.request(commit_request(g, topics[:1]), COMMIT_BY_NAME) for g in mine]
        for response in await asyncio.gather(*commits):
            assert {p.error_code for t in response.topics for p in t.partitions} == {0}

        # 1,000 idempotent producers, each producing once to one partition of "producers".
        pids = []
        for _ in range(PRODUCERS // 100):
            got: list[Any] = await asyncio.gather(
                *(client.request(InitProducerIdRequest(transactional_id=None)) for _ in range(100))
            )
            pids += [r.producer_id for r in got]
        assert len(set(pids)) == PRODUCERS
        md = await admin.list_topics_all(client, ["producers"], paginate=False)
        leaders = {p.partition_index: p.leader_id for p in md.topics[0].partitions}
        hosts = {b.node_id: (b.host, b.port) for b in md.brokers}
        produces = []
        for pid in pids:
            partition = pid % 3
            leader = await client.for_node(*hosts[leaders[partition]])
            batch = build_batch(
                [Record(-1, 1, b"k", b"v")], producer_id=pid, producer_epoch=0, base_sequence=0
            )
            produces.append(
                leader.request(produce_request(md.topics[0].topic_id, partition, batch))
            )
        for response in await asyncio.gather(*produces):
            assert response.responses[0].partition_responses[0].error_code == 0

        return State(
            topics,
            groups,
            big,
            members,
            offset_groups,
            [*offset_groups, *empty_groups],
            sorted(pids),
        )


#: The last OffsetCommit version naming topics by name (v10 names them by id).
COMMIT_BY_NAME = 9


def commit_request(group: str, topics: Sequence[str]) -> OffsetCommitRequest:
    """A standalone commit (no membership, generation -1), as admin tools make."""
    part = OffsetCommitRequest.OffsetCommitRequestPartition
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(
                name=t,
                partitions=[
                    part(partition_index=i, committed_offset=100 + i, committed_metadata="m")
                    for i in range(PARTITIONS)
                ],
            )
            for t in topics
        ],
    )


def produce_request(topic_id: uuid.UUID, partition: int, batch: bytes) -> ProduceRequest:
    """A Produce to "producers", named by name and by id (Produce v13 names it by id)."""
    return ProduceRequest(
        acks=1,
        timeout_ms=10_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="producers",
                topic_id=topic_id,
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=partition, records=batch)
                ],
            )
        ],
    )


@pytest.fixture(scope="module")
def cluster() -> Iterator[BackgroundCluster]:
    with BackgroundCluster(3, configs=CONFIGS) as c:
        yield c


@pytest.fixture(scope="module")
def state(cluster: BackgroundCluster) -> State:
    return run(build_state(cluster))


def needs_handlers(client: KafkaClient, *keys: int) -> None:
    """Skip when the broker does not serve these APIs (their handlers are still to come)."""
    missing = [k for k in keys if k not in client.versions]
    if missing:
        pytest.skip(f"the broker serves no API {missing}")


@pytest.fixture(scope="module")
def transactional_ids(cluster: BackgroundCluster, state: State) -> list[str]:
    """1,000 transactional ids, registered with their coordinators by InitProducerId."""

    async def go() -> list[str]:
        async with await open_client(cluster) as client:
            needs_handlers(client, 65, 66)
            txn_ids = [f"txn-{i:04d}" for i in range(TRANSACTIONS)]
            inits = []
            for other, mine in await by_coordinator(client, txn_ids, CoordinatorType.TRANSACTION):
                inits += [
                    other.request(
                        InitProducerIdRequest(transactional_id=t, transaction_timeout_ms=600_000)
                    )
                    for t in mine
                ]
            initialised: list[Any] = await asyncio.gather(*inits)
            assert {r.error_code for r in initialised} == {0}
            return txn_ids

    return run(go())


CONSUMER_GROUP = "consumer-group"


@pytest.fixture(scope="module")
def consumer_members(cluster: BackgroundCluster, state: State) -> list[str]:
    """A consumer-protocol group of 200 members, joined by ConsumerGroupHeartbeat v0."""

    async def go() -> list[str]:
        async with await open_client(cluster) as client:
            needs_handlers(client, 68, 69)
            [(other, _)] = await by_coordinator(client, [CONSUMER_GROUP])
            beats = [
                other.request(
                    ConsumerGroupHeartbeatRequest(
                        group_id=CONSUMER_GROUP,
                        member_id="",
                        member_epoch=0,
                        rebalance_timeout_ms=600_000,
                        subscribed_topic_names=[state.topics[0]],
                        topic_partitions=[],
                    ),
                    0,
                )
                for _ in range(MEMBERS)
            ]
            answers: list[Any] = await asyncio.gather(*beats)
            assert {r.error_code for r in answers} == {0}
            return sorted(r.member_id for r in answers)

    return run(go())


# --------------------------------------------------------------------------- the walk checks

Items = Callable[[Any], list[Any]]
Fetch = Callable[[KafkaClient, int | None, bool, admin.PageObserver], Coroutine[Any, Any, Any]]


class Pages:
    """What each broker answered, page by page, as item lists taken when the page came
    (merging later pages into the first one changes its lists)."""

    def __init__(self, items: Items) -> None:
        self.items = items
        self.by_broker: dict[str, list[list[Any]]] = {}

    def __call__(self, broker: str, page: Message) -> None:
        self.by_broker.setdefault(broker, []).append(self.items(page))


def check_walks(
    cluster: BackgroundCluster,
    fetch: Fetch,
    page_items: Items,
    result_items: Items,
    *,
    order: Callable[[Any], Any] | None = None,
    counted: bool = True,
    expect_at_least: int = 1,
    limits: Sequence[int] = LIMITS,
    same_order: bool = True,
    count: Callable[[list[Any]], int] = len,
) -> list[Any]:
    """Walk with each of ``limits`` and compare with the unpaged answer; returns its items.

    ``order`` sorts one broker's items into the documented order (None: no order check).
    ``counted``: each page holds at most the effective limit, so the page count is known.
    ``same_order``: the unpaged answer lists the items in the paged order too.
    ``count``: how many items a page's list counts for against the limit.
    """

    async def go(limit: int | None, paginate: bool, pages: Pages) -> Any:
        async with await open_client(cluster) as client:
            return await fetch(client, limit, paginate, pages)

    unpaged_pages = Pages(page_items)
    unpaged = run(go(None, False, unpaged_pages))
    expected = result_items(unpaged)
    assert len(expected) >= expect_at_least
    assert len(expected) == len(set(expected)), "the unpaged answer repeats items"
    # Below the paged version each broker answers in full, in one response.
    assert all(len(pages) == 1 for pages in unpaged_pages.by_broker.values())
    for limit in limits:
        pages = Pages(page_items)
        merged = run(go(limit, True, pages))
        effective = min(limit, BROKER_LIMIT)
        for broker, answered in pages.by_broker.items():
            flat = [item for page in answered for item in page]
            assert len(flat) == len(set(flat)), f"limit {limit}: {broker} repeated items"
            if order is not None:
                assert flat == sorted(flat, key=order), f"limit {limit}: {broker} out of order"
            if counted:
                assert max(count(p) for p in answered) <= effective
                total = sum(count(p) for p in answered)
                assert len(answered) == max(
                    1, -(-total // effective)
                ), f"limit {limit}: {len(answered)} pages for {total} items from {broker}"
        got = result_items(merged)
        assert len(got) == len(expected), f"limit {limit}: {len(got)} items, {len(expected)}"
        if same_order:
            assert got == expected, f"limit {limit}: the merged answer differs from the unpaged"
        else:
            assert set(got) == set(expected), f"limit {limit}: other items than the unpaged"
    return expected


def positions(values: Sequence[Any]) -> Callable[[Any], int]:
    index = {v: i for i, v in enumerate(values)}
    return lambda v: index[v]


# --------------------------------------------------------------------------- Metadata


def partitions_of(r: Any) -> list[Any]:
    return [(t.name, p.partition_index) for t in r.topics for p in t.partitions]


@pytest.mark.slow
def test_metadata_walks_every_partition_by_topic_then_partition(
    cluster: BackgroundCluster, state: State
) -> None:
    def fetch(c: KafkaClient, limit: int | None, paginate: bool, on: admin.PageObserver) -> Any:
        return admin.list_topics_all(c, limit=limit, paginate=paginate, on_page=on)

    got = check_walks(
        cluster,
        fetch,
        partitions_of,
        partitions_of,
        order=lambda x: x,
        expect_at_least=TOPICS * PARTITIONS,
    )
    assert {(t, p) for t in state.topics for p in range(PARTITIONS)} <= set(got)


@pytest.mark.slow
def test_metadata_of_named_topics_pages_in_request_order(
    cluster: BackgroundCluster, state: State
) -> None:
    names = list(reversed(state.topics))

    def fetch(c: KafkaClient, limit: int | None, paginate: bool, on: admin.PageObserver) -> Any:
        return admin.list_topics_all(c, names, limit=limit, paginate=paginate, on_page=on)

    wanted = [(t, p) for t in names for p in range(PARTITIONS)]
    got = check_walks(cluster, fetch, partitions_of, partitions_of, order=positions(wanted))
    assert got == wanted


# --------------------------------------------------------------------------- ListOffsets


@pytest.mark.slow
def test_list_offsets_walks_every_partition_of_each_leader(
    cluster: BackgroundCluster, state: State
) -> None:
    tps = [TopicPartition(t, p) for t in [*state.topics, "producers"] for p in range(PARTITIONS)]
    tps = [tp for tp in tps if tp.topic != "producers" or tp.partition < 3]

    def fetch(c: KafkaClient, limit: int | None, paginate: bool, on: admin.PageObserver) -> Any:
        return admin.list_offsets_all(c, tps, limit=limit, paginate=paginate, on_page=on)

    def items(r: Any) -> list[Any]:
        return [(t.name, p.partition_index, p.offset) for t in r.topics for p in t.partitions]

    order = positions([tuple(tp) for tp in tps])
    # Limit 1 is a page per partition: about 1,000 pages from each leader, each looking up
    # only its own partition.
    got = check_walks(cluster, fetch, items, items, order=lambda x: order(x[:2]))
    assert len(got) == TOPICS * PARTITIONS + 3
    assert [x[:2] for x in got] == [tuple(tp) for tp in tps]
    # The producers' records are really there: the latest offsets count them.
    assert sum(x[2] for x in got if x[0] == "producers") == PRODUCERS


# --------------------------------------------------------------------------- DescribeLogDirs


@pytest.mark.slow
def test_describe_log_dirs_walks_every_replica_of_each_broker(
    cluster: BackgroundCluster, state: State
) -> None:
    def fetch(c: KafkaClient, limit: int | None, paginate: bool, on: admin.PageObserver) -> Any:
        return admin.describe_log_dirs_all(c, limit=limit, paginate=paginate, on_page=on)

    def page_items(r: Any) -> list[Any]:
        return [
            (d.log_dir, t.name, p.partition_index)
            for d in r.results
            for t in d.topics
            for p in t.partitions
        ]

    def result_items(by_broker: Any) -> list[Any]:
        return [x for _, r in sorted(by_broker.items()) for x in page_items(r)]

    got = check_walks(cluster, fetch, page_items, result_items, order=lambda x: x)
    assert {(t, p) for _, t, p in got} >= {(t, p) for t in state.topics for p in range(PARTITIONS)}
    assert len({d for d, _, _ in got}) == 3  # one log dir per broker


# --------------------------------------------------------------------------- OffsetFetch


@pytest.mark.slow
def test_offset_fetch_walks_every_committed_partition_of_every_group(
    cluster: BackgroundCluster, state: State
) -> None:
    groups = state.offset_groups

    def fetch(c: KafkaClient, limit: int | None, paginate: bool, on: admin.PageObserver) -> Any:
        return admin.fetch_offsets_all(c, groups, limit=limit, paginate=paginate, on_page=on)

    def order(x: Any) -> Any:
        return (groups.index(x[0]), x[1], x[2])

    assert cluster.cluster is not None
    md = cluster.cluster.metadata
    names = cluster.call(lambda: dict(md.topic_names))

    def page_items(r: Any) -> list[Any]:
        if r.groups:  # v8+ (topics go by id from v10, so in the paged version)
            return [
                (g.group_id, t.name or names[t.topic_id], p.partition_index, p.committed_offset)
                for g in r.groups
                for t in g.topics
                for p in t.partitions
            ]
        return [(t.name, p.partition_index) for t in r.topics for p in t.partitions]

    def result_items(result: Any) -> list[Any]:
        return [
            (g, tp.topic, tp.partition, offset.offset)
            for g, offsets in result.items()
            for tp, offset in offsets.items()
        ]

    got = check_walks(
        cluster,
        fetch,
        page_items,
        result_items,
        order=order,
        counted=False,  # the unpaged answer below v8 is one request per group
        expect_at_least=TOPICS * PARTITIONS,
    )
    # Limit 1 walked them all, a page per partition: "offsets-all" alone is 3,000 pages,
    # each starting with a bisect in the group's sorted offsets.
    assert sum(1 for x in got if x[0] == "offsets-all") == TOPICS * PARTITIONS
    assert len(got) > TOPICS * PARTITIONS + 200  # the four smaller groups' too
    assert all(x[3] == 100 + x[2] for x in got)


# --------------------------------------------------------------------------- DescribeProducers


@pytest.mark.slow
def test_describe_producers_walks_every_producer_newest_first(
    cluster: BackgroundCluster, state: State
) -> None:
    tps = [TopicPartition("producers", p) for p in range(3)]

    def fetch(c: KafkaClient, limit: int | None, paginate: bool, on: admin.PageObserver) -> Any:
        return admin.describe_producers_all(c, tps, limit=limit, paginate=paginate, on_page=on)

    def items(r: Any) -> list[Any]:
        return [
            (p.partition_index, s.producer_id)
            for t in r.topics
            for p in t.partitions
            for s in p.active_producers
        ]

    got = check_walks(cluster, fetch, items, items, order=lambda x: (x[0], -x[1]))
    assert sorted(pid for _, pid in got) == state.producer_ids


# --------------------------------------------------------------------------- ListGroups


@pytest.mark.slow
def test_list_groups_walks_every_group_of_every_broker_by_id(
    cluster: BackgroundCluster, state: State
) -> None:
    def fetch(c: KafkaClient, limit: int | None, paginate: bool, on: admin.PageObserver) -> Any:
        return admin.list_groups_all(c, limit=limit, paginate=paginate, on_page=on)

    def items(r: Any) -> list[Any]:
        return [g.group_id for g in r.groups]

    got = check_walks(cluster, fetch, items, items, order=lambda x: x, expect_at_least=GROUPS)
    assert got == sorted(got)
    assert set(state.groups) | {state.big_group} | set(state.offset_groups) <= set(got)

    # Limit 1 over the empty groups: the ones with only committed offsets.
    def fetch_empty(
        c: KafkaClient, limit: int | None, paginate: bool, on: admin.PageObserver
    ) -> Any:
        return admin.list_groups_all(
            c, states=["Empty"], limit=limit, paginate=paginate, on_page=on
        )

    empty = check_walks(cluster, fetch_empty, items, items, order=lambda x: x, limits=(1,))
    assert set(state.empty_groups) <= set(empty) and len(empty) >= 300


# --------------------------------------------------------------------------- DescribeGroups


@pytest.mark.slow
def test_describe_groups_walks_the_members_by_member_id(
    cluster: BackgroundCluster, state: State
) -> None:
    groups = [state.groups[0], state.big_group, "no-such-group", *state.groups[1:40]]

    def fetch(c: KafkaClient, limit: int | None, paginate: bool, on: admin.PageObserver) -> Any:
        return admin.describe_groups_all(c, groups, limit=limit, paginate=paginate, on_page=on)

    def items(r: Any) -> list[Any]:
        return [(g.group_id, m.member_id) for g in r.groups for m in g.members]

    order = positions(groups)
    # Unpaged versions list members in join order, paged ones by member id.
    got = check_walks(
        cluster,
        fetch,
        items,
        items,
        order=lambda x: (order(x[0]), x[1]),
        same_order=False,
    )
    assert sorted(m for g, m in got if g == state.big_group) == state.members
    assert len(got) == MEMBERS + 40

    async def dead() -> Any:
        async with await open_client(cluster) as client:
            return await admin.describe_groups_all(client, groups, limit=1)

    described = {g.group_id: g for g in run(dead()).groups}
    assert list(described) == groups  # every group once, members or not
    assert described["no-such-group"].group_state == "Dead"


# ------------------------------------------------------------ ConsumerGroupDescribe


@pytest.mark.slow
def test_consumer_group_describe_walks_the_members_by_member_id(
    cluster: BackgroundCluster, consumer_members: list[str]
) -> None:
    groups = [CONSUMER_GROUP]

    def fetch(c: KafkaClient, limit: int | None, paginate: bool, on: admin.PageObserver) -> Any:
        return admin.consumer_group_describe_all(
            c, groups, limit=limit, paginate=paginate, on_page=on
        )

    def items(r: Any) -> list[Any]:
        return [(g.group_id, m.member_id) for g in r.groups for m in g.members]

    got = check_walks(cluster, fetch, items, items, order=lambda x: x)
    assert [m for _, m in got] == consumer_members


# --------------------------------------------------------------------------- transactions


@pytest.mark.slow
def test_list_transactions_walks_every_id_of_every_coordinator(
    cluster: BackgroundCluster, transactional_ids: list[str]
) -> None:
    def fetch(c: KafkaClient, limit: int | None, paginate: bool, on: admin.PageObserver) -> Any:
        return admin.list_transactions_all(c, limit=limit, paginate=paginate, on_page=on)

    def items(r: Any) -> list[Any]:
        return [(t.transactional_id, t.producer_id) for t in r.transaction_states]

    got = check_walks(cluster, fetch, items, items, order=lambda x: x[0])
    assert [t for t, _ in got] == transactional_ids


@pytest.mark.slow
def test_describe_transactions_walks_the_ids_in_request_order(
    cluster: BackgroundCluster, transactional_ids: list[str]
) -> None:
    ids = list(reversed(transactional_ids))

    def fetch(c: KafkaClient, limit: int | None, paginate: bool, on: admin.PageObserver) -> Any:
        return admin.describe_transactions_all(c, ids, limit=limit, paginate=paginate, on_page=on)

    def items(r: Any) -> list[Any]:
        return [(t.transactional_id, t.error_code) for t in r.transaction_states]

    order = positions(ids)
    got = check_walks(cluster, fetch, items, items, order=lambda x: order(x[0]))
    assert got == [(t, 0) for t in ids]


# --------------------------------------------------------------------------- DescribeAcls


async def create_acls(client: KafkaClient) -> None:
    creation = CreateAclsRequest.AclCreation
    made = []
    for i in range(ACL_NAMES):
        for rtype in (2, 3):  # TOPIC, GROUP
            made.append(
                creation(
                    resource_type=rtype,
                    resource_name=f"acl-{i:04d}",
                    resource_pattern_type=3,  # LITERAL
                    principal=f"User:u{i % 7}",
                    host="*",
                    operation=3,  # READ
                    permission_type=3,  # ALLOW
                )
            )
        if i % 50 == 0:  # a prefixed pattern sharing the literal's name and type
            made.append(
                creation(
                    resource_type=2,
                    resource_name=f"acl-{i:04d}",
                    resource_pattern_type=4,  # PREFIXED
                    principal="User:p",
                    host="*",
                    operation=3,
                    permission_type=3,
                )
            )
    response: Any = await client.request(CreateAclsRequest(creations=made))
    assert {r.error_code for r in response.results} == {0}


@pytest.fixture(scope="module")
def acls(cluster: BackgroundCluster, state: State) -> None:
    async def go() -> None:
        async with await open_client(cluster) as client:
            await create_acls(client)

    run(go())


@pytest.mark.slow
def test_describe_acls_walks_every_resource_in_order(
    cluster: BackgroundCluster, acls: None
) -> None:
    resource_type = 1  # ANY

    def fetch(c: KafkaClient, limit: int | None, paginate: bool, on: admin.PageObserver) -> Any:
        return admin.describe_acls_all(
            c, resource_type=resource_type, limit=limit, paginate=paginate, on_page=on
        )

    def items(r: Any) -> list[Any]:
        return [(x.resource_type, x.resource_name, x.pattern_type) for x in r.resources]

    got = check_walks(
        cluster,
        fetch,
        items,
        items,
        order=ACL_ORDER,
        expect_at_least=2 * ACL_NAMES,
        count=acl_count,
        same_order=False,  # unpaged versions list resources in the order they were made
    )
    # At limit 1 that is 2,000 pages: a page is one (type, name), with its PREFIXED twin.
    assert len(got) == 2 * ACL_NAMES + ACL_NAMES // 50
    # A filter on one type pages only that type's resources.
    resource_type = 3
    groups = check_walks(
        cluster,
        fetch,
        items,
        items,
        order=ACL_ORDER,
        limits=(1,),
        count=acl_count,
        same_order=False,
    )
    assert len(groups) == ACL_NAMES


def acl_count(page: list[Any]) -> int:
    """Resources of one type and name (LITERAL and PREFIXED) count once."""
    return len({(rtype, name) for rtype, name, _ in page})


#: The order DescribeAcls pages resources in.
ACL_ORDER: Callable[[Any], Any] = lambda x: x  # noqa: E731  (type, name, pattern type)


# --------------------------------------------------------------------------- DescribeConfigs

CONFIG_TOPICS = 1000  # one partition each, only for DescribeConfigs


@pytest.fixture(scope="module")
def config_topics(cluster: BackgroundCluster) -> list[str]:
    """1,000 more topics, every tenth with its own segment.ms. Made when DescribeConfigs
    first needs them, so the walks of partitions above do not grow by 1,000."""
    names = [f"config-{i:04d}" for i in range(CONFIG_TOPICS)]

    async def go() -> None:
        async with await open_client(cluster) as client:
            await create_topics(client, names, 1)
            alter = AlterConfigsRequest(
                resources=[
                    AlterConfigsRequest.AlterConfigsResource(
                        resource_type=2,
                        resource_name=n,
                        configs=[
                            AlterConfigsRequest.AlterableConfig(
                                name="segment.ms", value=str(3_600_000 + i)
                            )
                        ],
                    )
                    for i, n in enumerate(names)
                    if i % 10 == 0
                ]
            )
            response: Any = await client.request(alter)
            assert {r.error_code for r in response.responses} == {0}

    run(go())
    return names


@pytest.mark.slow
def test_describe_configs_walks_whole_resources_by_type_then_name(
    cluster: BackgroundCluster, state: State, config_topics: list[str]
) -> None:
    # 4 broker resources and 1,300 topics, in an order that is not the paged one.
    topics = sorted([*state.topics, *config_topics], reverse=True)
    resources = [(4, "1"), (4, "0"), (4, "2"), (4, "")] + [(2, t) for t in topics]

    def fetch(c: KafkaClient, limit: int | None, paginate: bool, on: admin.PageObserver) -> Any:
        return admin.describe_configs_all(c, resources, limit=limit, paginate=paginate, on_page=on)

    def items(r: Any) -> list[Any]:
        return [
            (x.resource_type, x.resource_name, c.name, c.value)
            for x in r.results
            for c in x.configs
        ]

    def by_type_then_name(x: Any) -> Any:
        return x[:2]

    # A page is whole resources, counted in configs, and at least one resource: a topic's
    # 37 configs make limits 1 and 7 one resource a page (1,304 pages), while limit 2000
    # holds about 50 resources a page. Each page describes only its own resources.
    got = check_walks(cluster, fetch, items, items, order=by_type_then_name, counted=False)
    # AlterConfigs' values are there, and only on the topics that got one.
    retention = {x[1]: x[3] for x in got if x[0] == 2 and x[2] == "retention.ms"}
    assert retention[state.topics[3]] == "60003" and retention[state.topics[4]] != "60004"
    segment = {x[1]: x[3] for x in got if x[0] == 2 and x[2] == "segment.ms"}
    assert segment[config_topics[990]] == "3600990" and segment[config_topics[991]] != "3600991"
    # The cluster default resource ("") lists only the configs set there: with eligible
    # leader replicas on, that is the min.insync.replicas the cluster was formatted with.
    assert len({x[:2] for x in got}) == len(resources) == 4 + TOPICS + CONFIG_TOPICS
    assert [x[2] for x in got if x[:2] == (4, "")] == ["min.insync.replicas"]
    assert [x[:2] for x in got if x[2] == "retention.ms"] == [
        r for r in resources if r[0] == 2
    ]  # the merged answer keeps the caller's order
    resources = resources[:64]

    # A page holds whole resources within the limit counted in configs, or a single one.
    pages: list[Any] = []

    async def walk() -> None:
        async with await open_client(cluster) as client:
            await admin.describe_configs_all(
                client, resources, limit=80, on_page=lambda _, p: pages.append(items(p))
            )

    run(walk())
    for page in pages:
        assert len(page) <= 80 or len({x[:2] for x in page}) == 1
    assert max(len({x[:2] for x in page}) for page in pages) >= 2

    # Limit 1: one resource a page, the page count the resource count.
    single: list[Any] = []

    async def walk_single() -> None:
        async with await open_client(cluster) as client:
            await admin.describe_configs_all(
                client, resources, limit=1, on_page=lambda _, p: single.append(items(p))
            )

    run(walk_single())
    counts = [len({x[:2] for x in page}) for page in single]
    assert counts == [1] * len(resources)


# --------------------------------------------------------------------------- cursors


def request_to(cluster: BackgroundCluster, broker: int, request: Message, version: int) -> Any:
    async def go() -> Any:
        async with await connect(*address(cluster, broker)) as client:
            return await client.request(request, version)

    return run(go())


async def coordinator(client: KafkaClient, key: str, key_type: int = 0) -> KafkaClient:
    node = (await client.find_coordinators([key], key_type))[key]
    assert not isinstance(node, Exception), node
    return await client.for_node(node.host, node.port)


def test_a_cursor_past_the_end_gives_an_empty_last_page(
    cluster: BackgroundCluster, state: State
) -> None:
    lg = request_to(
        cluster,
        0,
        ListGroupsRequest(cursor=ListGroupsRequest.GroupCursor(group_id="~")),
        paged_version(16),
    )
    assert (lg.error_code, lg.groups, lg.next_cursor) == (0, [], None)
    md = request_to(
        cluster,
        0,
        MetadataRequest(topics=None, cursor=MetadataRequest.Cursor(topic_name="~")),
        paged_version(3),
    )
    assert (list(md.topics), md.next_cursor) == ([], None)
    ld = request_to(
        cluster,
        1,
        DescribeLogDirsRequest(topics=None, cursor=DescribeLogDirsRequest.Cursor(topic_name="~")),
        paged_version(35),
    )
    assert ld.error_code == 0 and ld.next_cursor is None
    assert [t for d in ld.results for t in d.topics] == []
    acl = request_to(
        cluster,
        0,
        DescribeAclsRequest(
            resource_type_filter=1,
            pattern_type_filter=1,
            operation=1,
            permission_type=1,
            cursor=DescribeAclsRequest.ResourceCursor(resource_name="", resource_type=127),
        ),
        paged_version(29),
    )
    assert (acl.error_code, acl.resources, acl.next_cursor) == (0, [], None)


def test_a_cursor_at_a_deleted_item_resumes_at_the_next_one(
    cluster: BackgroundCluster, state: State
) -> None:
    async def go() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with await open_client(cluster) as client:
            # Topics: the middle one of three is deleted.
            names = ["gone-topic-a", "gone-topic-b", "gone-topic-c"]
            await create_topics(client, names, 2)
            deleted: Any = await client.request(
                DeleteTopicsRequest(topic_names=[names[1]], timeout_ms=30_000), 5
            )
            assert deleted.responses[0].error_code == 0
            out["metadata"] = await client.request(
                MetadataRequest(
                    topics=None,
                    response_pagination_limit=1,
                    cursor=MetadataRequest.Cursor(topic_name=names[1], partition_index=1),
                ),
                paged_version(3),
            )
            # Groups: an empty group (offsets only) is deleted.
            candidates = [f"gone-group-{i:02d}" for i in range(60)]
            found = await client.find_coordinators(candidates)
            same = [g for g in candidates if found[g] == found[candidates[0]]][:3]
            gone = same[1]  # three groups of one coordinator: the middle one goes
            other = await coordinator(client, gone)
            for g in same:
                committed: Any = await other.request(
                    commit_request(g, state.topics[:1]), COMMIT_BY_NAME
                )
                assert committed.topics[0].partitions[0].error_code == 0
            out["group_names"] = same
            answer: Any = await other.request(DeleteGroupsRequest(groups_names=[gone]))
            assert answer.results[0].error_code == 0
            out["groups"] = await other.request(
                ListGroupsRequest(
                    states_filter=["Empty"],
                    response_pagination_limit=1,
                    cursor=ListGroupsRequest.GroupCursor(group_id=gone),
                ),
                paged_version(16),
            )
            unpaged: Any = await other.request(ListGroupsRequest(states_filter=["Empty"]), 5)
            out["groups_after"] = min(g.group_id for g in unpaged.groups if g.group_id > gone)
            # ACLs: the middle resource's binding is deleted.
            acl_names = ["gone-acl-a", "gone-acl-b", "gone-acl-c"]
            created: Any = await client.request(
                CreateAclsRequest(
                    creations=[
                        CreateAclsRequest.AclCreation(
                            resource_type=2,
                            resource_name=n,
                            resource_pattern_type=3,
                            principal="User:gone",
                            host="*",
                            operation=3,
                            permission_type=3,
                        )
                        for n in acl_names
                    ]
                )
            )
            assert {r.error_code for r in created.results} == {0}
            removed: Any = await client.request(
                DeleteAclsRequest(
                    filters=[
                        DeleteAclsRequest.DeleteAclsFilter(
                            resource_type_filter=2,
                            resource_name_filter=acl_names[1],
                            pattern_type_filter=3,
                            principal_filter=None,
                            host_filter=None,
                            operation=1,
                            permission_type=1,
                        )
                    ]
                )
            )
            assert removed.filter_results[0].error_code == 0
            out["acls"] = await client.request(
                DescribeAclsRequest(
                    resource_type_filter=2,
                    resource_name_filter=None,
                    pattern_type_filter=3,
                    principal_filter="User:gone",
                    host_filter=None,
                    operation=1,
                    permission_type=1,
                    response_pagination_limit=1,
                    cursor=DescribeAclsRequest.ResourceCursor(
                        resource_name=acl_names[1], resource_type=2
                    ),
                ),
                paged_version(29),
            )
            # Members: the middle one of three leaves.
            leavers = "leavers"
            other = await coordinator(client, leavers)
            members = sorted(await asyncio.gather(*(join_classic(other, leavers) for _ in "abc")))
            left: Any = await other.request(
                LeaveGroupRequest(
                    group_id=leavers,
                    members=[LeaveGroupRequest.MemberIdentity(member_id=members[1])],
                )
            )
            assert left.error_code == 0
            out["members"] = (
                members,
                await other.request(
                    DescribeGroupsRequest(
                        groups=[leavers, "no-such-group"],
                        response_pagination_limit=1,
                        cursor=DescribeGroupsRequest.GroupMemberCursor(
                            group_id=leavers, member_id=members[1]
                        ),
                    ),
                    paged_version(15),
                ),
            )
            # Producers: a producer id that is not there (any more) resumes at the next older.
            [(leader, _)] = [
                (await client.for_node(b.host, b.port), b)
                for md in [await admin.list_topics_all(client, ["producers"], paginate=False)]
                for b in md.brokers
                if b.node_id == md.topics[0].partitions[0].leader_id
            ]
            in_p0 = [p for p in state.producer_ids if p % 3 == 0]
            out["producers"] = (
                in_p0,
                await leader.request(
                    DescribeProducersRequest(
                        topics=[
                            DescribeProducersRequest.TopicRequest(
                                name="producers", partition_indexes=[0]
                            )
                        ],
                        response_pagination_limit=1,
                        cursor=DescribeProducersRequest.ProducerStateCursor(
                            topic_name="producers", partition_index=0, producer_id=in_p0[100] + 1
                        ),
                    ),
                    paged_version(61),
                ),
            )
        return out

    out = run(go())
    md = out["metadata"]
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in md.topics] == [
        ("gone-topic-c", [0])
    ]
    assert md.next_cursor is not None
    groups = out["groups"]
    assert [g.group_id for g in groups.groups] == [out["groups_after"]] == out["group_names"][2:]
    acls = out["acls"]
    assert [r.resource_name for r in acls.resources] == ["gone-acl-c"]
    assert acls.next_cursor is None
    members, described = out["members"]
    # The member after the one that left; the unknown group has no members to count, so it
    # rides on the same page, and the walk is over.
    assert [(g.group_id, [m.member_id for m in g.members]) for g in described.groups] == [
        ("leavers", [members[2]]),
        ("no-such-group", []),
    ]
    assert described.next_cursor is None
    in_p0, producers = out["producers"]
    found = [s.producer_id for p in producers.topics[0].partitions for s in p.active_producers]
    assert found == [in_p0[100]]  # newest first: the next older producer of partition 0


def test_an_item_made_between_pages_appears_when_it_sorts_after_the_cursor(
    cluster: BackgroundCluster, state: State
) -> None:
    """The broker's sorted listings (groups, a group's offsets, ACL resources) take in what
    was made since the previous page."""

    async def go() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with await open_client(cluster) as client:
            # Groups: a, c, then b of one coordinator commit offsets (Empty groups).
            candidates = [f"late-group-{i:02d}" for i in range(60)]
            found = await client.find_coordinators(candidates)
            a, b, c = [g for g in candidates if found[g] == found[candidates[0]]][:3]
            other = await coordinator(client, a)
            list_groups = ListGroupsRequest(
                states_filter=["Empty"],
                response_pagination_limit=1,
                cursor=ListGroupsRequest.GroupCursor(group_id=a),
            )
            for g in (a, c):
                committed: Any = await other.request(
                    commit_request(g, state.topics[:1]), COMMIT_BY_NAME
                )
                assert committed.topics[0].partitions[0].error_code == 0
            out["groups_before"] = await other.request(list_groups, paged_version(16))
            committed = await other.request(commit_request(b, state.topics[:1]), COMMIT_BY_NAME)
            assert committed.topics[0].partitions[0].error_code == 0
            out["groups_after"] = await other.request(list_groups, paged_version(16))
            out["groups"] = (a, b, c)

            # Offsets: partitions 0 and 2 of a topic, then 1.
            group, topic = "late-offsets", state.topics[0]
            other = await coordinator(client, group)

            async def commit(*indexes: int) -> None:
                part = OffsetCommitRequest.OffsetCommitRequestPartition
                request = OffsetCommitRequest(
                    group_id=group,
                    generation_id_or_member_epoch=-1,
                    topics=[
                        OffsetCommitRequest.OffsetCommitRequestTopic(
                            name=topic,
                            partitions=[
                                part(partition_index=i, committed_offset=7) for i in indexes
                            ],
                        )
                    ],
                )
                response: Any = await other.request(request, COMMIT_BY_NAME)
                assert {p.error_code for t in response.topics for p in t.partitions} == {0}

            fetch = OffsetFetchRequest(
                groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=None)],
                response_pagination_limit=1,
                cursor=OffsetFetchRequest.OffsetFetchCursor(
                    group_id=group, topic_name=topic, partition_index=0
                ),
            )
            await commit(0, 2)
            out["offsets_before"] = await other.request(fetch, paged_version(9))
            await commit(1)
            out["offsets_after"] = await other.request(fetch, paged_version(9))

            # ACLs: resources a and c, then b.
            async def create(name: str) -> None:
                created: Any = await client.request(
                    CreateAclsRequest(
                        creations=[
                            CreateAclsRequest.AclCreation(
                                resource_type=2,
                                resource_name=name,
                                resource_pattern_type=3,
                                principal="User:late",
                                host="*",
                                operation=3,
                                permission_type=3,
                            )
                        ]
                    )
                )
                assert created.results[0].error_code == 0

            describe = DescribeAclsRequest(
                resource_type_filter=2,
                resource_name_filter=None,
                pattern_type_filter=3,
                principal_filter="User:late",
                host_filter=None,
                operation=1,
                permission_type=1,
                response_pagination_limit=1,
                cursor=DescribeAclsRequest.ResourceCursor(
                    resource_name="late-acl-a", resource_type=2
                ),
            )
            for name in ("late-acl-a", "late-acl-c"):
                await create(name)
            out["acls_before"] = await client.request(describe, paged_version(29))
            await create("late-acl-b")
            out["acls_after"] = await client.request(describe, paged_version(29))
        return out

    out = run(go())
    a, b, c = out["groups"]
    for key, following in (("groups_before", c), ("groups_after", b)):
        page = out[key]
        assert [g.group_id for g in page.groups] == [a], key
        assert page.next_cursor is not None and page.next_cursor.group_id == following, key
    for key, following in (("offsets_before", 2), ("offsets_after", 1)):
        page = out[key]
        assert [p.partition_index for g in page.groups for t in g.topics for p in t.partitions] == [
            0
        ], key
        assert page.next_cursor is not None, key
        assert page.next_cursor.partition_index == following, key
    for key, following_acl in (("acls_before", "late-acl-c"), ("acls_after", "late-acl-b")):
        page = out[key]
        assert [r.resource_name for r in page.resources] == ["late-acl-a"], key
        assert page.next_cursor is not None, key
        assert page.next_cursor.resource_name == following_acl, key


INVALID_REQUEST = InvalidRequestError.code


def test_a_cursor_outside_the_request_list_is_invalid_request(
    cluster: BackgroundCluster, state: State
) -> None:
    t0, t1 = state.topics[0], state.topics[1]
    lo = request_to(
        cluster,
        0,
        ListOffsetsRequest(
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=t0,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(partition_index=i, timestamp=-1)
                        for i in (0, 1)
                    ],
                )
            ],
            cursor=ListOffsetsRequest.Cursor(topic_name=t1, partition_index=0),
        ),
        paged_version(2),
    )
    assert [p.error_code for t in lo.topics for p in t.partitions] == [INVALID_REQUEST] * 2
    assert lo.next_cursor is None
    md = request_to(
        cluster,
        0,
        MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=t0)],
            cursor=MetadataRequest.Cursor(topic_name=t1, partition_index=0),
        ),
        paged_version(3),
    )
    assert [(t.name, t.error_code, len(t.partitions)) for t in md.topics] == [
        (t0, INVALID_REQUEST, 0)
    ]
    of = request_to(
        cluster,
        0,
        OffsetFetchRequest(
            groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id="offsets-c", topics=None)],
            cursor=OffsetFetchRequest.OffsetFetchCursor(group_id="offsets-d", topic_name=t0),
        ),
        paged_version(9),
    )
    assert [(g.group_id, g.error_code) for g in of.groups] == [("offsets-c", INVALID_REQUEST)]
    dg = request_to(
        cluster,
        0,
        DescribeGroupsRequest(
            groups=[state.groups[0]],
            cursor=DescribeGroupsRequest.GroupMemberCursor(group_id=state.groups[1]),
        ),
        paged_version(15),
    )
    assert [(g.group_id, g.error_code) for g in dg.groups] == [(state.groups[0], INVALID_REQUEST)]
    dc = request_to(
        cluster,
        0,
        DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=2, resource_name=t0, configuration_keys=None
                )
            ],
            cursor=DescribeConfigsRequest.ResourceCursor(resource_name=t1, resource_type=2),
        ),
        paged_version(32),
    )
    assert [(r.resource_name, r.error_code, r.configs) for r in dc.results] == [
        (t0, INVALID_REQUEST, [])
    ]
    dp = request_to(
        cluster,
        0,
        DescribeProducersRequest(
            topics=[DescribeProducersRequest.TopicRequest(name="producers", partition_indexes=[0])],
            cursor=DescribeProducersRequest.ProducerStateCursor(
                topic_name="producers", partition_index=1
            ),
        ),
        paged_version(61),
    )
    assert [p.error_code for t in dp.topics for p in t.partitions] == [INVALID_REQUEST]
    ld = request_to(
        cluster,
        0,
        DescribeLogDirsRequest(
            topics=[DescribeLogDirsRequest.DescribableLogDirTopic(topic=t0, partitions=[0])],
            cursor=DescribeLogDirsRequest.Cursor(topic_name=t0, partition_index=1),
        ),
        paged_version(35),
    )
    assert (ld.error_code, ld.results) == (INVALID_REQUEST, [])


def test_a_cursor_outside_the_request_list_is_invalid_request_for_the_newer_apis(
    cluster: BackgroundCluster, transactional_ids: list[str], consumer_members: list[str]
) -> None:
    dt = request_to(
        cluster,
        0,
        DescribeTransactionsRequest(
            transactional_ids=transactional_ids[:2],
            cursor=DescribeTransactionsRequest.TransactionalCursor(
                transactional_id=transactional_ids[5], producer_id=0
            ),
        ),
        paged_version(65),
    )
    assert [t.error_code for t in dt.transaction_states] == [INVALID_REQUEST] * 2
    assert dt.next_cursor is None
    cg = request_to(
        cluster,
        0,
        ConsumerGroupDescribeRequest(
            group_ids=[CONSUMER_GROUP],
            cursor=ConsumerGroupDescribeRequest.GroupMemberCursor(
                group_id="another-group", member_id=consumer_members[0]
            ),
        ),
        paged_version(69),
    )
    assert [g.error_code for g in cg.groups] == [INVALID_REQUEST]
    lt = request_to(
        cluster,
        0,
        ListTransactionsRequest(
            cursor=ListTransactionsRequest.TransactionalCursor(
                transactional_id=transactional_ids[0], producer_id=-1
            )
        ),
        paged_version(66),
    )
    assert lt.error_code == INVALID_REQUEST
    pr = request_to(
        cluster,
        0,
        ListPartitionReassignmentsRequest(
            topics=[
                ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(
                    name=topic_name(0), partition_indexes=[0]
                )
            ],
            cursor=ListPartitionReassignmentsRequest.Cursor(
                topic_name=topic_name(1), partition_index=0
            ),
        ),
        paged_version(46),
    )
    assert pr.error_code == INVALID_REQUEST


def test_a_negative_cursor_index_is_invalid_request(
    cluster: BackgroundCluster, state: State
) -> None:
    t0 = state.topics[0]
    md = request_to(
        cluster,
        0,
        MetadataRequest(
            topics=None, cursor=MetadataRequest.Cursor(topic_name=t0, partition_index=-1)
        ),
        paged_version(3),
    )
    assert [(t.name, t.error_code, len(t.partitions)) for t in md.topics] == [
        (t0, INVALID_REQUEST, 0)
    ]
    assert md.next_cursor is None
    ld = request_to(
        cluster,
        0,
        DescribeLogDirsRequest(
            topics=None, cursor=DescribeLogDirsRequest.Cursor(topic_name=t0, partition_index=-1)
        ),
        paged_version(35),
    )
    assert ld.error_code == INVALID_REQUEST
    lo = request_to(
        cluster,
        0,
        ListOffsetsRequest(
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=t0,
                    partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0)],
                )
            ],
            cursor=ListOffsetsRequest.Cursor(topic_name=t0, partition_index=-1),
        ),
        paged_version(2),
    )
    assert [p.error_code for t in lo.topics for p in t.partitions] == [INVALID_REQUEST]
    of = request_to(
        cluster,
        0,
        OffsetFetchRequest(
            groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id="offsets-c", topics=None)],
            cursor=OffsetFetchRequest.OffsetFetchCursor(
                group_id="offsets-c", topic_name=t0, partition_index=-1
            ),
        ),
        paged_version(9),
    )
    assert [g.error_code for g in of.groups] == [INVALID_REQUEST]
    dp = request_to(
        cluster,
        0,
        DescribeProducersRequest(
            topics=[DescribeProducersRequest.TopicRequest(name="producers", partition_indexes=[0])],
            cursor=DescribeProducersRequest.ProducerStateCursor(
                topic_name="producers", partition_index=-1
            ),
        ),
        paged_version(61),
    )
    assert [p.error_code for t in dp.topics for p in t.partitions] == [INVALID_REQUEST]


def test_a_limit_above_the_broker_limit_is_clamped(
    cluster: BackgroundCluster, state: State
) -> None:
    # Each broker coordinates well over 1,000 of the 5,000 groups.
    for broker in range(3):
        r = request_to(
            cluster, broker, ListGroupsRequest(response_pagination_limit=100_000), paged_version(16)
        )
        assert len(r.groups) == BROKER_LIMIT and r.next_cursor is not None
    # A limit of 0 or below is taken as 1.
    r = request_to(cluster, 0, ListGroupsRequest(response_pagination_limit=0), paged_version(16))
    assert len(r.groups) == 1 and r.next_cursor is not None


# --------------------------------------------------------------------------- client behaviour


def test_the_client_setting_sets_the_page_size(cluster: BackgroundCluster, state: State) -> None:
    async def go(**kwargs: Any) -> list[int]:
        sizes: list[int] = []
        async with await open_client(cluster, **kwargs) as client:
            assert client.pagination_limit == kwargs.get("pagination_limit", 7)
            await admin.list_topics_all(
                client, state.topics[:10], on_page=lambda _, p: sizes.append(len(partitions_of(p)))
            )
        return sizes

    assert run(go(configs={"max.request.pagination.size.limit": "7"})) == [7] * 14 + [2]
    assert run(go(pagination_limit=40)) == [40, 40, 20]
    for bad in (
        {"max.request.pagination.size.limit": "0"},
        {"max.request.pagination.size.limit": "x"},
    ):
        with pytest.raises(ValueError, match="max.request.pagination.size.limit"):
            run(go(configs=bad))
    with pytest.raises(ValueError, match="unknown client config 'max.poll.records'"):
        run(go(configs={"max.poll.records": "1"}))


def test_a_broker_that_repeats_its_cursor_is_stopped_with_a_clear_error(
    cluster: BackgroundCluster,
) -> None:
    def stuck(ctx: RequestContext, request: Any) -> None:
        ctx.respond(
            ListGroupsResponse(
                error_code=0,
                groups=[ListGroupsResponse.ListedGroup(group_id="same", group_state="Empty")],
                next_cursor=ListGroupsResponse.GroupCursor(group_id="same"),
            )
        )

    async def go() -> None:
        async with await open_client(cluster) as client:
            await admin.list_groups_all(client, limit=5)

    load_handlers()
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(HANDLERS, 16, dataclasses.replace(HANDLERS[16], load=lambda: stuck))
        with pytest.raises(admin.PaginationError, match=r"cursor \(group_id='same'\) a second"):
            run(go())


def test_a_broker_without_the_paged_versions_gets_one_unpaged_request() -> None:
    caps = "ListGroups:5,Metadata:12,DescribeGroups:5,OffsetFetch:9"
    groups = [f"old-{i:02d}" for i in range(30)]
    seen: dict[str, list[tuple[int, int]]] = {}
    answers: dict[str, Any] = {}
    for name, extra in (("old", {"kafkagen.api.version.max": caps}), ("new", {})):
        configs = {**CONFIGS, "offsets.topic.num.partitions": "1", **extra}
        with BackgroundCluster(configs=configs) as c:

            async def go(c: BackgroundCluster) -> Any:
                sent: list[tuple[int, int]] = []

                def note(request: Message, version: int) -> None:
                    sent.append((type(request).API_KEY or -1, version))

                async with await connect(
                    *address(c), pagination_limit=1, on_request=note
                ) as client:
                    await create_topics(client, ["t"], 4)
                    await client.find_coordinators(groups)  # creates the offsets topic
                    commits = [client.request(single_commit(g), COMMIT_BY_NAME) for g in groups]
                    for done in await asyncio.gather(*commits):
                        assert isinstance(done, OffsetCommitResponse)
                        assert done.topics[0].partitions[0].error_code == 0
                    sent.clear()
                    listed = await admin.list_groups_all(client)
                    topics = await admin.list_topics_all(client, ["t"])
                    offsets = await admin.fetch_offsets_all(client, groups[:3])
                return sent, listed, topics, offsets

            sent, listed, topics, offsets = run(go(c))
        seen[name] = [(k, v) for k, v in sent if k in (16, 3, 9)]
        answers[name] = (
            [g.group_id for g in listed.groups],
            partitions_of(topics),
            offsets,
        )
    assert [v for k, v in seen["old"] if k == 16] == [5]
    assert [v for k, v in seen["new"] if k == 16] == [paged_version(16)] * 30
    assert answers["old"][0] == answers["new"][0] == groups
    assert answers["old"][1] == answers["new"][1] == [("t", i) for i in range(4)]
    assert [v for k, v in seen["old"] if k == 9] == [9]
    assert [v for k, v in seen["new"] if k == 9] == [paged_version(9)] * 3
    assert answers["old"][2] == answers["new"][2]


def single_commit(group: str) -> OffsetCommitRequest:
    part = OffsetCommitRequest.OffsetCommitRequestPartition
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(
                name="t", partitions=[part(partition_index=0, committed_offset=5)]
            )
        ],
    )


# ------------------------------------------------------------ ListPartitionReassignments

REASSIGNED_TOPICS = 150  # x 10 partitions: 1,500 reassignments in progress


@pytest.mark.slow
def test_list_partition_reassignments_walks_every_ongoing_move() -> None:
    """Four brokers; broker 3 is paused, so moves that add it never finish."""
    configs = {**CONFIGS, "offsets.topic.num.partitions": "1"}
    with BackgroundCluster(4, configs=configs) as c:
        names = [f"moving-{i:03d}" for i in range(REASSIGNED_TOPICS)]

        async def create() -> None:
            assignment = CreateTopicsRequest.CreatableReplicaAssignment
            async with await open_client(c) as client:
                await create_topics(
                    client,
                    names,
                    -1,
                    -1,
                    assignments=[
                        assignment(partition_index=i, broker_ids=[i % 3]) for i in range(10)
                    ],
                )

        async def reassign() -> None:
            move = AlterPartitionReassignmentsRequest
            async with await open_client(c) as client:
                answer: Any = await client.request(
                    move(
                        timeout_ms=30_000,
                        topics=[
                            move.ReassignableTopic(
                                name=n,
                                partitions=[
                                    move.ReassignablePartition(
                                        partition_index=i, replicas=[i % 3, 3]
                                    )
                                    for i in range(10)
                                ],
                            )
                            for n in names
                        ],
                    )
                )
                assert answer.error_code == 0
                assert {p.error_code for t in answer.responses for p in t.partitions} == {0}

        run(create())
        assert c.cluster is not None
        c.run(c.cluster.pause_broker(3))
        run(reassign())

        def fetch(
            client: KafkaClient, limit: int | None, paginate: bool, on: admin.PageObserver
        ) -> Any:
            return admin.list_partition_reassignments_all(
                client, limit=limit, paginate=paginate, on_page=on
            )

        def items(r: Any) -> list[Any]:
            return [
                (t.name, p.partition_index, tuple(p.adding_replicas))
                for t in r.topics
                for p in t.partitions
            ]

        got = check_walks(c, fetch, items, items, order=lambda x: x[:2])
        assert [x[:2] for x in got] == [(n, i) for n in names for i in range(10)]
        assert {x[2] for x in got} == {(3,)}
