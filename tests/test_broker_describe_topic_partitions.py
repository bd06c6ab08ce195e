"""DescribeTopicPartitions (KIP-966) over real sockets: pages of partitions by topic name
then index, the broker's partition limit, the cursor rules, and the per-partition facts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from broker_helpers import WireClient
from kafkagen.generated.describe_topic_partitions import DescribeTopicPartitionsRequest as Req
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.security.acls import ResourceType
from kafkagen.runtime.broker.security.authorizer import OPERATIONS_BY_TYPE
from kafkagen.runtime.errors import ErrorCode

pytestmark = pytest.mark.timeout(120)
KEY = 75
#: Topic name -> partitions: 3,000 partitions in all, topics of very different sizes.
LAYOUT = {"t-big": 1500, "t-mid": 999, "a-one": 1, "m-some": 400, "z-last": 100}


@pytest.fixture(scope="module")
def cluster() -> Iterator[BackgroundCluster]:
    with BackgroundCluster(3) as c:
        assert c.cluster is not None
        md = c.cluster.metadata

        def setup() -> None:
            for name, n in LAYOUT.items():
                md.create_topic(name, n, 2)

        c.call(setup)
        yield c


def _walk(w: WireClient, limit: int, topics: list[str] | None = None) -> tuple[list[Any], int]:
    """(every (topic, partition) answer over all pages, number of pages)."""
    out: list[Any] = []
    cursor = None
    for page in range(1, 4000):
        req = Req(
            topics=[Req.TopicRequest(name=n) for n in topics or []],
            response_partition_limit=limit,
            cursor=cursor,
        )
        r = w.call(KEY, 0, req)
        n = 0
        for t in r.topics:
            assert t.error_code == 0, t.name
            for p in t.partitions:
                out.append((t.name, p.partition_index))
                n += 1
        assert n <= limit
        if r.next_cursor is None:
            return out, page
        cursor = Req.Cursor(
            topic_name=r.next_cursor.topic_name, partition_index=r.next_cursor.partition_index
        )
    raise AssertionError("pagination did not end")


def _expected() -> list[tuple[str, int]]:
    return [(name, i) for name in sorted(LAYOUT) for i in range(LAYOUT[name])]


@pytest.mark.slow
@pytest.mark.parametrize("limit", [1, 7, 2000])
def test_walking_3000_partitions_gives_each_once_in_order(
    cluster: BackgroundCluster, limit: int
) -> None:
    assert cluster.cluster is not None
    configs = cluster.cluster.configs
    with WireClient(cluster.bootstrap) as w:
        got, pages = _walk(w, limit)
        # Unpaged: one answer with everything, once the broker allows that many. The limit
        # is read-only (as in Kafka): a static value stands for a restart with it.
        limit_key = "max.request.partition.size.limit"
        cluster.call(lambda: configs.static.__setitem__(limit_key, "5000"))
        try:
            whole, whole_pages = _walk(w, 5000)
        finally:
            cluster.call(lambda: configs.static.pop(limit_key))
    assert whole_pages == 1
    assert got == _expected()
    assert len(set(got)) == 3000
    assert set(got) == set(whole)
    assert pages == -(-3000 // limit)


def test_broker_limit_defaults_to_2000(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as w:
        r = w.call(KEY, 0, Req(topics=[], response_partition_limit=5000))
    assert sum(len(t.partitions) for t in r.topics) == 2000
    assert (r.next_cursor.topic_name, r.next_cursor.partition_index) == ("t-mid", 99)


def test_partition_limit_config_caps_the_request() -> None:
    configs = {"max.request.partition.size.limit": "3", "max.request.pagination.size.limit": "50"}
    with BackgroundCluster(1, configs=configs) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic("x", 10, 1))
        with WireClient(c.bootstrap) as w:
            r = w.call(KEY, 0, Req(topics=[], response_partition_limit=100))
            assert [p.partition_index for p in r.topics[0].partitions] == [0, 1, 2]
            # Zero or negative limits still give one partition.
            r = w.call(KEY, 0, Req(topics=[], response_partition_limit=0))
            assert [p.partition_index for p in r.topics[0].partitions] == [0]


def test_explicit_topics_pages_and_unknown_topics(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as w:
        req = Req(
            topics=[Req.TopicRequest(name=n) for n in ("z-last", "nope", "a-one")],
            response_partition_limit=50,
        )
        r = w.call(KEY, 0, req)
        assert [(t.name, t.error_code, len(t.partitions)) for t in r.topics] == [
            ("a-one", 0, 1),
            ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0),
            ("z-last", 0, 49),
        ]
        assert (r.next_cursor.topic_name, r.next_cursor.partition_index) == ("z-last", 49)
        got, _ = _walk(w, 30, ["z-last", "a-one"])
        assert got == [("a-one", 0)] + [("z-last", i) for i in range(100)]


def test_page_ending_at_a_topic_end_points_at_the_next_topic(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as w:
        r = w.call(KEY, 0, Req(topics=[], response_partition_limit=1))
        assert [(t.name, len(t.partitions)) for t in r.topics] == [("a-one", 1)]
        assert (r.next_cursor.topic_name, r.next_cursor.partition_index) == ("m-some", 0)
        last = Req.Cursor(topic_name="z-last", partition_index=95)
        r = w.call(KEY, 0, Req(topics=[], response_partition_limit=5, cursor=last))
        assert [p.partition_index for p in r.topics[0].partitions] == [95, 96, 97, 98, 99]
        assert r.next_cursor is None


def test_bad_cursors_are_invalid_requests(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as w:
        asked = [Req.TopicRequest(name="a-one"), Req.TopicRequest(name="m-some")]
        outside = Req.Cursor(topic_name="t-big", partition_index=0)
        r = w.call(KEY, 0, Req(topics=asked, cursor=outside))
        assert [(t.name, t.error_code) for t in r.topics] == [
            ("a-one", ErrorCode.INVALID_REQUEST),
            ("m-some", ErrorCode.INVALID_REQUEST),
        ]
        negative = Req.Cursor(topic_name="m-some", partition_index=-1)
        r = w.call(KEY, 0, Req(topics=asked, cursor=negative))
        assert {t.error_code for t in r.topics} == {ErrorCode.INVALID_REQUEST}
        assert all(not t.partitions for t in r.topics)


def test_partition_facts_match_the_metadata(cluster: BackgroundCluster) -> None:
    assert cluster.cluster is not None
    md = cluster.cluster.metadata
    topic = cluster.call(lambda: md.topic("m-some"))
    with WireClient(cluster.bootstrap) as w:
        r = w.call(KEY, 0, Req(topics=[Req.TopicRequest(name="m-some")]))
    t = r.topics[0]
    assert t.topic_id == topic.topic_id and not t.is_internal
    # No authorizer: every operation a topic knows is allowed.
    assert t.topic_authorized_operations == sum(
        1 << op for op in OPERATIONS_BY_TYPE[ResourceType.TOPIC]
    )
    assert len(t.partitions) == 400
    for p in t.partitions:
        info = topic.partitions[p.partition_index]
        assert p.error_code == 0
        assert p.leader_id == info.leader and p.leader_epoch == info.leader_epoch
        assert list(p.replica_nodes) == info.replicas and len(info.replicas) == 2
        assert list(p.isr_nodes) == info.isr
        assert list(p.eligible_leader_replicas) == [] and list(p.offline_replicas) == []


def test_offline_replicas_show_a_paused_broker() -> None:
    with BackgroundCluster(3) as c:
        assert c.cluster is not None
        cl = c.cluster
        c.call(lambda: cl.metadata.create_topic("off", 12, 2))
        c.run(cl.pause_broker(2))
        with WireClient(cl.brokers[0].info.host + ":" + str(cl.brokers[0].info.port)) as w:
            r = w.call(KEY, 0, Req(topics=[Req.TopicRequest(name="off")]))
        parts = r.topics[0].partitions
        on_two = [p for p in parts if 2 in p.replica_nodes]
        assert on_two and all(list(p.offline_replicas) == [2] for p in on_two)
        assert all(p.leader_id != 2 for p in parts)
        assert all(2 not in p.isr_nodes for p in parts)


def test_api_versions_advertises_v0(cluster: BackgroundCluster) -> None:
    from kafkagen.generated.api_versions import ApiVersionsRequest

    with WireClient(cluster.bootstrap) as w:
        r = w.call(
            18,
            3,
            ApiVersionsRequest(client_software_name="t", client_software_version="1"),
        )
    keys = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert keys[KEY] == (0, 0)
    assert keys[45] == (0, 1)  # v1 (KIP-860) is Kafka 4.4's
    assert keys[46] == (0, 0)  # v1 is unstable and not enabled here
