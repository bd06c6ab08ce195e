"""Seed 001's paginated admin responses, served at the unstable versions when enabled.

Walking the pages with a small limit gives every item exactly once, in order, and the
broker's max.request.pagination.size.limit caps what a request may ask for.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from broker_helpers import WireClient
from kafkagen.generated import message_type
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.group.group_model import OffsetEntry
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.pagination import paged_version
from kafkagen.runtime.records import Record, build_batch
from kafkagen.runtime.topic_partition import TopicPartition

pytestmark = pytest.mark.timeout(60)


def _setup(c: BackgroundCluster) -> None:
    cl = c.cluster
    assert cl is not None
    md = cl.metadata
    md.create_topic("a", 3, 1)
    md.create_topic("b", 2, 1)
    rm = cl.brokers[0].replica_manager
    for pid in (5, 9, 7):
        data = build_batch(
            [Record(-1, 1, b"k", b"v")], producer_id=pid, producer_epoch=0, base_sequence=0
        )
        rm.append_records({TopicPartition("a", 0): data}, 1, 1000, lambda r: None)
    gc = cl.brokers[0].group_coordinator
    gc.ensure_offsets_topic()
    for g in ("g1", "g2", "g3"):
        offsets = {TopicPartition("a", i): OffsetEntry(i, -1, "", 0) for i in range(3)}
        gc.offsets.commit(g, -1, "", None, offsets, lambda r: None)


@pytest.fixture(scope="module")
def cluster() -> Iterator[BackgroundCluster]:
    with BackgroundCluster(
        configs={
            "unstable.api.versions.enable": "true",
            "max.request.pagination.size.limit": "4",
            "offsets.topic.num.partitions": "1",
        }
    ) as c:
        c.call(lambda: _setup(c))
        yield c


def _walk(
    w: WireClient,
    key: int,
    version: int,
    build: Callable[[Any], Any],
    items: Callable[[Any], list[Any]],
    cursor_of: Callable[[Any], Any],
    max_pages: int = 20,
) -> tuple[list[Any], int]:
    """Every item over all pages (and the number of pages), following NextCursor."""
    got: list[Any] = []
    cursor = None
    for page in range(1, max_pages + 1):
        r = w.call(key, version, build(cursor))
        got += items(r)
        cursor = cursor_of(r)
        if cursor is None:
            return got, page
    raise AssertionError("pagination did not end")


def test_unstable_versions_are_served_when_enabled(cluster: BackgroundCluster) -> None:
    Req = message_type(18, "request")
    with WireClient(cluster.bootstrap) as w:
        r = w.call(18, 3, Req(client_software_name="t", client_software_version="1"))
        top = {k.api_key: k.max_version for k in r.api_keys}
    # Seed 001's versions sit one above Kafka 4.4.0's latest: Metadata v13 is Kafka's own.
    assert top[3] == 14 and top[16] == 6 and top[61] == 1 and top[9] == 11


def test_metadata_pages_partitions(cluster: BackgroundCluster) -> None:
    Req = message_type(3, "request")
    with WireClient(cluster.bootstrap) as w:
        got, pages = _walk(
            w,
            3,
            paged_version(3),
            lambda c: Req(
                topics=None,
                response_pagination_limit=2,
                cursor=c and Req.Cursor(topic_name=c.topic_name, partition_index=c.partition_index),
            ),
            lambda r: [(t.name, p.partition_index) for t in r.topics for p in t.partitions],
            lambda r: r.next_cursor,
        )
    topics = sorted({t for t, _ in got})
    assert [x for x in got if x[0] in ("a", "b")] == [
        ("a", 0),
        ("a", 1),
        ("a", 2),
        ("b", 0),
        ("b", 1),
    ]
    assert len(got) == len(set(got)) and "a" in topics


def test_list_groups_pages_by_group_id(cluster: BackgroundCluster) -> None:
    Req = message_type(16, "request")
    with WireClient(cluster.bootstrap) as w:
        got, pages = _walk(
            w,
            16,
            paged_version(16),
            lambda c: Req(
                response_pagination_limit=1, cursor=c and Req.GroupCursor(group_id=c.group_id)
            ),
            lambda r: [g.group_id for g in r.groups],
            lambda r: r.next_cursor,
        )
    assert got == ["g1", "g2", "g3"] and pages == 3


@pytest.mark.parametrize("limit", [0, -5])
def test_a_limit_below_one_counts_as_one(cluster: BackgroundCluster, limit: int) -> None:
    Req = message_type(16, "request")
    with WireClient(cluster.bootstrap) as w:
        got, pages = _walk(
            w,
            16,
            paged_version(16),
            lambda c: Req(
                response_pagination_limit=limit, cursor=c and Req.GroupCursor(group_id=c.group_id)
            ),
            lambda r: [g.group_id for g in r.groups],
            lambda r: r.next_cursor,
        )
    assert got == ["g1", "g2", "g3"] and pages == 3


def test_broker_limit_caps_the_request(cluster: BackgroundCluster) -> None:
    Req = message_type(9, "request")
    with WireClient(cluster.bootstrap) as w:
        r = w.call(
            9,
            paged_version(9),
            Req(
                groups=[Req.OffsetFetchRequestGroup(group_id=g, topics=None) for g in ("g1", "g2")],
                response_pagination_limit=1000,
            ),
        )
    assert sum(len(t.partitions) for g in r.groups for t in g.topics) == 4
    assert r.next_cursor is not None


def test_offset_fetch_pages_over_groups(cluster: BackgroundCluster) -> None:
    Req = message_type(9, "request")
    groups = [Req.OffsetFetchRequestGroup(group_id=g, topics=None) for g in ("g1", "g2", "g3")]
    with WireClient(cluster.bootstrap) as w:
        # The paged version sits above v10, where topics go by id.
        md = w.call(3, 12, message_type(3, "request")(topics=None))
        names = {t.topic_id: t.name for t in md.topics}
        got, _ = _walk(
            w,
            9,
            paged_version(9),
            lambda c: Req(
                groups=groups,
                response_pagination_limit=2,
                cursor=c
                and Req.OffsetFetchCursor(
                    group_id=c.group_id, topic_name=c.topic_name, partition_index=c.partition_index
                ),
            ),
            lambda r: [
                (g.group_id, names[t.topic_id], t.name, p.partition_index, p.committed_offset)
                for g in r.groups
                for t in g.topics
                for p in t.partitions
            ],
            lambda r: r.next_cursor,
        )
    assert got == [(g, "a", "", i, i) for g in ("g1", "g2", "g3") for i in range(3)]


def test_describe_producers_pages_newest_first(cluster: BackgroundCluster) -> None:
    Req = message_type(61, "request")
    with WireClient(cluster.bootstrap) as w:
        got, pages = _walk(
            w,
            61,
            paged_version(61),
            lambda c: Req(
                topics=[Req.TopicRequest(name="a", partition_indexes=[0, 1])],
                response_pagination_limit=2,
                cursor=c
                and Req.ProducerStateCursor(
                    topic_name=c.topic_name,
                    partition_index=c.partition_index,
                    producer_id=c.producer_id,
                ),
            ),
            lambda r: [
                p.producer_id
                for t in r.topics
                for part in t.partitions
                for p in part.active_producers
            ],
            lambda r: r.next_cursor,
        )
    assert got == [9, 7, 5] and pages == 2


def test_list_offsets_pages_partitions(cluster: BackgroundCluster) -> None:
    Req = message_type(2, "request")
    topics = [
        Req.ListOffsetsTopic(
            name=n,
            partitions=[
                Req.ListOffsetsPartition(partition_index=i, timestamp=-1) for i in range(k)
            ],
        )
        for n, k in (("a", 3), ("b", 2))
    ]
    with WireClient(cluster.bootstrap) as w:
        got, pages = _walk(
            w,
            2,
            paged_version(2),
            lambda c: Req(
                topics=topics,
                response_pagination_limit=2,
                cursor=c and Req.Cursor(topic_name=c.topic_name, partition_index=c.partition_index),
            ),
            lambda r: [
                (t.name, p.partition_index, p.offset) for t in r.topics for p in t.partitions
            ],
            lambda r: r.next_cursor,
        )
    assert got == [("a", 0, 3), ("a", 1, 0), ("a", 2, 0), ("b", 0, 0), ("b", 1, 0)]
    assert pages == 3


def test_describe_log_dirs_pages_partitions(cluster: BackgroundCluster) -> None:
    Req = message_type(35, "request")
    with WireClient(cluster.bootstrap) as w:
        got, _ = _walk(
            w,
            35,
            paged_version(35),
            lambda c: Req(
                topics=None,
                response_pagination_limit=2,
                cursor=c
                and Req.Cursor(
                    topic_name=c.topic_name, partition_index=c.partition_index, log_dir=c.log_dir
                ),
            ),
            lambda r: [
                (t.name, p.partition_index)
                for d in r.results
                for t in d.topics
                for p in t.partitions
            ],
            lambda r: r.next_cursor,
        )
    assert [x for x in got if x[0] != "__consumer_offsets"] == [
        ("a", 0),
        ("a", 1),
        ("a", 2),
        ("b", 0),
        ("b", 1),
    ]
    assert len(got) == len(set(got))


def test_describe_configs_pages_whole_resources(cluster: BackgroundCluster) -> None:
    Req = message_type(32, "request")
    resources = [
        Req.DescribeConfigsResource(resource_type=2, resource_name=n, configuration_keys=None)
        for n in ("a", "b")
    ]
    with WireClient(cluster.bootstrap) as w:
        got, pages = _walk(
            w,
            32,
            paged_version(32),
            lambda c: Req(
                resources=resources,
                response_pagination_limit=3,
                cursor=c
                and Req.ResourceCursor(
                    resource_name=c.resource_name, resource_type=c.resource_type
                ),
            ),
            lambda r: [res.resource_name for res in r.results],
            lambda r: r.next_cursor,
        )
    assert got == ["a", "b"] and pages == 2


def test_describe_acls_pages_resources(cluster: BackgroundCluster) -> None:
    from kafkagen.runtime.broker.security.acls import AclBinding

    assert cluster.cluster is not None
    store = cluster.cluster.metadata.acls
    for name in ("t3", "t1", "t2"):
        cluster.call(lambda n=name: store.add(AclBinding(2, n, 3, "User:u", "*", 3, 3)))
    Req = message_type(29, "request")
    with WireClient(cluster.bootstrap) as w:
        got, pages = _walk(
            w,
            29,
            paged_version(29),
            lambda c: Req(
                resource_type_filter=1,
                resource_name_filter=None,
                principal_filter=None,
                host_filter=None,
                pattern_type_filter=1,
                operation=1,
                permission_type=1,
                response_pagination_limit=2,
                cursor=c
                and Req.ResourceCursor(
                    resource_name=c.resource_name, resource_type=c.resource_type
                ),
            ),
            lambda r: [res.resource_name for res in r.resources],
            lambda r: r.next_cursor,
        )
    assert got == ["t1", "t2", "t3"] and pages == 2


INVALID_REQUEST = 42


def test_a_partition_listed_twice_refuses_the_list_offsets_walk(cluster: BackgroundCluster) -> None:
    """[a:0, a:1, a:0] at limit 2 used to answer [0, 1] with NextCursor (a, 0) forever."""
    Req = message_type(2, "request")
    topics = [
        Req.ListOffsetsTopic(
            name="a",
            partitions=[
                Req.ListOffsetsPartition(partition_index=i, timestamp=-1) for i in (0, 1, 0)
            ],
        )
    ]
    with WireClient(cluster.bootstrap) as w:
        r = w.call(2, paged_version(2), Req(topics=topics, response_pagination_limit=2))
        unpaged = w.call(2, 10, Req(topics=topics))
    assert [p.error_code for t in r.topics for p in t.partitions] == [INVALID_REQUEST] * 3
    assert r.next_cursor is None
    # The unpaged version still answers the partitions and refuses only the second copy.
    assert [p.error_code for t in unpaged.topics for p in t.partitions] == [0, 0, INVALID_REQUEST]


def test_a_group_listed_twice_refuses_the_describe_groups_walk(cluster: BackgroundCluster) -> None:
    Req = message_type(15, "request")
    with WireClient(cluster.bootstrap) as w:
        r = w.call(15, paged_version(15), Req(groups=["g1", "g1"], response_pagination_limit=3))
    assert [(g.group_id, g.error_code) for g in r.groups] == [("g1", INVALID_REQUEST)] * 2
    assert r.next_cursor is None


def test_a_log_dir_cursor_at_a_deleted_topic_resumes_at_the_next_named_one(
    cluster: BackgroundCluster,
) -> None:
    assert cluster.cluster is not None
    md = cluster.cluster.metadata
    for name in ("la", "lb", "lc"):
        cluster.call(lambda n=name: md.create_topic(n, 2, 1))
    Req = message_type(35, "request")
    named = [Req.DescribableLogDirTopic(topic=n, partitions=[0, 1]) for n in ("la", "lb", "lc")]

    def listed(r: Any) -> list[tuple[str, int]]:
        return [
            (t.name, p.partition_index) for d in r.results for t in d.topics for p in t.partitions
        ]

    with WireClient(cluster.bootstrap) as w:
        first = w.call(35, paged_version(35), Req(topics=named, response_pagination_limit=3))
        assert listed(first) == [("la", 0), ("la", 1), ("lb", 0)]
        c = first.next_cursor
        assert (c.topic_name, c.partition_index) == ("lb", 1)
        deleted = w.call(20, 5, message_type(20, "request")(topic_names=["lb"], timeout_ms=5000))
        assert deleted.responses[0].error_code == 0
        cursor = Req.Cursor(topic_name="lb", partition_index=1, log_dir=c.log_dir)
        second = w.call(
            35, paged_version(35), Req(topics=named, response_pagination_limit=3, cursor=cursor)
        )
    assert listed(second) == [("lc", 0), ("lc", 1)]
    assert second.next_cursor is None


# --------------------------------------------------------------------------- Kafka's own
# The versions Kafka 4.4.0 added below the paged ones are served too, with their meaning.


def test_offset_fetch_v10_goes_by_topic_id_both_ways(cluster: BackgroundCluster) -> None:
    Req = message_type(9, "request")
    unknown = uuid.UUID(int=42)
    with WireClient(cluster.bootstrap) as w:
        md = w.call(3, 12, message_type(3, "request")(topics=None))
        a = next(t.topic_id for t in md.topics if t.name == "a")
        topics = [
            Req.OffsetFetchRequestTopics(topic_id=a, partition_indexes=[2, 0]),
            Req.OffsetFetchRequestTopics(topic_id=unknown, partition_indexes=[1]),
        ]
        r = w.call(9, 10, Req(groups=[Req.OffsetFetchRequestGroup(group_id="g2", topics=topics)]))
        everything = w.call(
            9, 10, Req(groups=[Req.OffsetFetchRequestGroup(group_id="g1", topics=None)])
        )
    [group] = r.groups
    got = [
        (t.topic_id, p.partition_index, p.committed_offset, p.error_code)
        for t in group.topics
        for p in t.partitions
    ]
    assert got == [(a, 2, 2, 0), (a, 0, 0, 0), (unknown, 1, -1, ErrorCode.UNKNOWN_TOPIC_ID)]
    assert [
        (t.topic_id, [p.partition_index for p in t.partitions]) for t in everything.groups[0].topics
    ] == [(a, [0, 1, 2])]


def test_describe_groups_v6_says_an_unknown_group_is_not_found(cluster: BackgroundCluster) -> None:
    Req = message_type(15, "request")
    with WireClient(cluster.bootstrap) as w:
        old = w.call(15, 5, Req(groups=["nobody"])).groups[0]
        new = w.call(15, 6, Req(groups=["nobody"])).groups[0]
    assert (old.error_code, old.group_state) == (0, "Dead")
    assert (new.error_code, new.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group nobody not found.",
    )


def test_metadata_v13_answers_with_a_top_level_error_code(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as w:
        r = w.call(3, 13, message_type(3, "request")(topics=None))
    assert r.error_code == 0
    assert {"a", "b"} <= {t.name for t in r.topics}
    assert r.next_cursor is None  # v13 is Kafka's: it does not page
