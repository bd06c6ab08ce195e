"""Properties of cursor pagination (seed 001), for every paged API, under Hypothesis.

Each API gets a state machine that drives a real in-process broker (a cluster that is never
started: no sockets, a manual clock) through its request path: the request is encoded,
decoded as the server decodes it, handled, and the answer encoded and decoded again. The
machine draws the broker's max.request.pagination.size.limit, a starting state made by the
real APIs (CreateTopics, JoinGroup, OffsetCommit, Produce, CreateAcls, ...), a request with
repeats and unknown entries and a limit; then it interleaves pages with changes (creations
and deletions through the same APIs) until the walk ends. At every page it also asks the
unpaged version, and at the end it checks:

- a request that names an entry twice is refused at once: INVALID_REQUEST, null NextCursor;
- no NextCursor comes twice in a walk (the client helpers' guard is never needed);
- otherwise the walk ends within (items + 1) pages, items counted over every answer seen;
- its items come in the documented order, each at most once (strictly increasing keys);
- every item present in all the unpaged answers taken during the walk is in it, and every
  item in it was in one of them;
- every entry the request names is answered on some page (as an error, or without items);
- no page holds more than the effective limit of counted items;
- without changes, the pages joined equal the unpaged answer.

Sizes: up to 5 of 6 topics with 1-4 partitions each, up to 4 of 5 classic groups with 1-4
members and 0-3 standalone commits, up to 3 of 4 consumer groups with 1-4 members, 6
transactional ids, up to 4 of 9 producer ids a partition, up to 10 ACL bindings over 16
resources; requests of up to 7 entries, one in five with a repeat; limits -1 to 9, broker
limits 1 to 6. Each example runs up to ``STEPS`` steps (pages, changes, further walks on
the same state). The slow test runs ``EXAMPLES`` examples per API (about 40 s for all 13
on one core), the quick one ``QUICK_EXAMPLES`` (about 10 s).
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal
from unittest import mock

import pytest
from broker_helpers import Harness
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from kafkagen.generated import message_type
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.errors import ErrorCode, InvalidRequestError
from kafkagen.runtime.handlers import load_handlers
from kafkagen.runtime.message import Message, Struct
from kafkagen.runtime.pagination import paged_version
from kafkagen.runtime.records import Record, build_batch

EXAMPLES = 100
QUICK_EXAMPLES = 15
STEPS = 12

INVALID_REQUEST = InvalidRequestError.code
TOPICS = [f"t{i}" for i in range(6)]
UNKNOWN_TOPIC = "missing"
GROUPS = [f"g{i}" for i in range(5)]
CONSUMER_GROUPS = [f"c{i}" for i in range(4)]
TXN_IDS = [f"x{i}" for i in range(6)]
ACL_NAMES = ["a", "ab", "b", "c"]


def Req(api_key: int, kind: Literal["request", "response"]) -> Any:
    """The message class (typed loosely: the fields differ per API)."""
    return message_type(api_key, kind)


class _Answer:
    """The server's slot for one request, as a handler sees it: keeps the response."""

    def __init__(self) -> None:
        self.response: Message | None = None
        self.answered = False

    def send(self, response: Message, version: int) -> None:
        self.response, self.answered = response, True

    def send_nothing(self) -> None:
        self.answered = True

    def close(self, reason: str) -> None:
        raise AssertionError(f"the broker closed the connection: {reason}")

    def gone(self) -> bool:
        return False


class World:
    """A cluster of ``brokers`` brokers, asked through broker 0's request path."""

    def __init__(self, broker_limit: int, brokers: int = 1) -> None:
        self.harness = Harness(
            brokers,
            max_request_pagination_size_limit=str(broker_limit),
            offsets_topic_num_partitions="1",
            offsets_topic_replication_factor="1",
            transaction_state_log_num_partitions="1",
            transaction_state_log_replication_factor="1",
            group_initial_rebalance_delay_ms="0",
        )
        self.broker = self.harness.cluster.brokers[0]
        assert self.broker.group_coordinator.ensure_offsets_topic()
        assert self.broker.txn_coordinator.ensure_state_topic()
        self.broker_limit = broker_limit
        self.handlers = load_handlers()
        self.pending: list[_Answer] = []

    def send(self, key: int, version: int, request: Message) -> _Answer:
        """Encode, decode as the server does, and hand to the handler; the answer slot."""
        handler = self.handlers[key]
        decoded = handler.request_type.decode(request.encode(version), version)
        answer = _Answer()
        ctx = RequestContext(self.broker.services, key, version, 1, "prop", "/127.0.0.1", answer)
        handler.handle(ctx, decoded)
        return answer

    def call(
        self, key: int, version: int, request: Message, ids: dict[str, uuid.UUID] | None = None
    ) -> Any:
        """The decoded answer; the manual clock moves (bounded) while the handler waits.

        OffsetFetch from v10 goes by topic id: the machine's requests name topics, so they
        get their ids here (an unknown name a made-up one) and the answer its names back,
        as a client that looked the ids up would do. A walk passes its ``ids``: a client
        looks them up once and resends the same request with each cursor, so a topic
        deleted or created between pages keeps the id the walk started with.
        """
        by_id = self._offset_fetch_ids(request, ids) if key == 9 and version >= 10 else {}
        answer = self.send(key, version, request)
        for _ in range(100):
            if answer.answered:
                break
            self.harness.advance(100)
        assert answer.response is not None, f"API {key} v{version} did not answer"
        wire = answer.response.encode(version)
        decoded: Any = message_type(key, "response").decode(wire, version)
        for g in decoded.groups if by_id else ():
            for t in g.topics:
                t.name = by_id[t.topic_id]
        return decoded

    def _offset_fetch_ids(
        self, request: Any, pinned: dict[str, uuid.UUID] | None
    ) -> dict[uuid.UUID, str]:
        ids = {name: info.topic_id for name, info in self.broker.metadata.topics.items()}
        by_id = {topic_id: name for name, topic_id in ids.items()}
        for g in request.groups:
            for t in g.topics or ():
                topic_id = ids.get(t.name) or uuid.uuid5(uuid.NAMESPACE_URL, t.name)
                if pinned is not None:
                    topic_id = pinned.setdefault(t.name, topic_id)
                t.topic_id = topic_id
                by_id[t.topic_id] = t.name
        return by_id

    # ---- state through the real APIs

    def create_topic(self, name: str, partitions: int) -> None:
        ct: Any = Req(19, "request")
        self.call(
            19,
            5,
            ct(
                topics=[
                    ct.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)
                ],
                timeout_ms=1000,
            ),
        )

    def delete_topic(self, name: str) -> None:
        self.call(20, 5, Req(20, "request")(topic_names=[name], timeout_ms=1000))

    def commit(self, group: str, topic: str, partition: int, offset: int) -> None:
        oc: Any = Req(8, "request")
        part = oc.OffsetCommitRequestPartition(partition_index=partition, committed_offset=offset)
        self.call(
            8,
            8,
            oc(
                group_id=group,
                generation_id_or_member_epoch=-1,
                topics=[oc.OffsetCommitRequestTopic(name=topic, partitions=[part])],
            ),
        )

    def join(self, group: str, count: int) -> None:
        """``count`` members join together; they may still be rebalancing afterwards."""
        jg: Any = Req(11, "request")
        for _ in range(count):
            self.pending.append(
                self.send(
                    11,
                    3,
                    jg(
                        group_id=group,
                        session_timeout_ms=600_000,
                        rebalance_timeout_ms=600_000,
                        member_id="",
                        protocol_type="consumer",
                        protocols=[jg.JoinGroupRequestProtocol(name="range", metadata=b"")],
                    ),
                )
            )
        self.harness.advance(100)

    def produce(self, topic: str, partition: int, producer_id: int) -> None:
        batch = build_batch(
            [Record(-1, 1, b"k", b"v")], producer_id=producer_id, producer_epoch=0, base_sequence=0
        )
        pr: Any = Req(0, "request")
        self.call(
            0,
            9,
            pr(
                acks=1,
                timeout_ms=1000,
                topic_data=[
                    pr.TopicProduceData(
                        name=topic,
                        partition_data=[pr.PartitionProduceData(index=partition, records=batch)],
                    )
                ],
            ),
        )

    def topics(self) -> dict[str, int]:
        return {t.name: len(t.partitions) for t in self.broker.metadata.topics.values()}


def next_request_cursor(request_type: type[Message], next_cursor: Struct) -> Struct:
    """The response's NextCursor as the request's Cursor: same struct name, same fields."""
    cls = getattr(request_type, type(next_cursor).__name__)
    slots: tuple[str, ...] = next_cursor.__slots__
    names = [n for n in slots if n != "unknown_tagged_fields"]
    made: Struct = cls(**{n: getattr(next_cursor, n) for n in names})
    return made


# --------------------------------------------------------------------------- the APIs


@dataclass
class Api:
    """What the machine needs to know of one paged API."""

    key: int
    paged: int
    unpaged: int
    #: Draws the starting state.
    seed: Callable[[World, st.DataObject], None]
    #: Draws the request's entries (None: a full listing).
    entries: Callable[[World, st.DataObject], Any]
    #: The request for those entries at the limit and cursor.
    build: Callable[[Any, int, Any], Message]
    #: The items of an answer, each (order key, payload).
    items: Callable[[Any, Any], list[tuple[Any, Any]]]
    #: Whether the entries name something twice.
    repeats: Callable[[Any], bool]
    #: Whether an answer is the refusal (INVALID_REQUEST) of the whole request.
    refused: Callable[[Any], bool]
    #: Changes between pages.
    changes: Sequence[Callable[[World, st.DataObject], None]]
    #: Counted items of a page, when that is not the number of items.
    counted: Callable[[Any, list[tuple[Any, Any]]], int] | None = None
    #: Whether a page respects the effective limit, when items are not what is counted.
    fits: Callable[[Any, int], bool] | None = None
    brokers: int = 1
    #: The request's entries, and those an answer holds (errors included): every entry
    #: asked for must be answered on some page, even one that lost its items meanwhile.
    asked: Callable[[Any], set[Any]] | None = None
    answered: Callable[[Any], set[Any]] | None = None


def _dupes(keys: Sequence[Any]) -> bool:
    return len(set(keys)) != len(keys)


def _everything(w: World, data: st.DataObject) -> None:
    """A full listing: the request names no entries."""
    return None


def _no_repeats_possible(entries: None) -> bool:
    return False


def _refused_whole(r: Any) -> bool:
    """The top-level error code says INVALID_REQUEST."""
    return bool(r.error_code == INVALID_REQUEST)


def _refused_every_group(r: Any) -> bool:
    return bool(r.groups) and all(g.error_code == INVALID_REQUEST for g in r.groups)


def _seed_topics(w: World, data: st.DataObject) -> None:
    for name in data.draw(st.lists(st.sampled_from(TOPICS), max_size=5, unique=True)):
        w.create_topic(name, data.draw(st.integers(1, 4)))


def _create_topic(w: World, data: st.DataObject) -> None:
    w.create_topic(data.draw(st.sampled_from(TOPICS)), data.draw(st.integers(1, 4)))


def _delete_topic(w: World, data: st.DataObject) -> None:
    names = sorted(w.topics())
    names = [n for n in names if not n.startswith("__")]
    if names:
        w.delete_topic(data.draw(st.sampled_from(names)))


TOPIC_CHANGES = (_create_topic, _delete_topic)


def _with_repeat(data: st.DataObject, entries: list[Any], copy: Callable[[Any], Any]) -> None:
    """One walk in five, a copy of an entry (made by ``copy``) goes somewhere in the list."""
    if entries and data.draw(st.integers(0, 4), label="repeat") == 0:
        at = data.draw(st.integers(0, len(entries)), label="repeat at")
        entries.insert(at, copy(data.draw(st.sampled_from(entries), label="repeated")))


def _names(data: st.DataObject, pool: list[str], max_size: int = 5) -> list[str]:
    """Names to ask for (unknown ones among them), sometimes with a repeat."""
    names = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=max_size, unique=True))
    _with_repeat(data, names, lambda n: n)
    return names


def _topic_partitions(data: st.DataObject) -> list[tuple[str, list[int]]]:
    """Topics with partitions to ask for; a topic may come back later with other partitions,
    and sometimes a partition is named twice."""
    names = data.draw(
        st.lists(st.sampled_from([*TOPICS, UNKNOWN_TOPIC]), min_size=1, max_size=4, unique=True)
    )
    entries = [
        (n, data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=4, unique=True)))
        for n in names
    ]
    if len(entries[0][1]) > 1 and data.draw(st.booleans(), label="split"):
        name, ps = entries[0]
        entries[0] = (name, ps[:1])
        entries.append((name, ps[1:]))  # the same topic again, other partitions
    _with_repeat(data, entries, lambda e: (e[0], e[1][:1]))
    return entries


def _all_or_partitions(w: World, data: st.DataObject) -> list[tuple[str, list[int]]] | None:
    """None (everything) half the time, else topics with partitions."""
    return None if data.draw(st.booleans(), label="all") else _topic_partitions(data)


def _partition_repeats(entries: list[tuple[str, list[int]]] | None) -> bool:
    return entries is not None and _dupes(_flat(entries))


def _flat(entries: list[tuple[str, list[int]]]) -> list[tuple[str, int]]:
    return [(t, p) for t, ps in entries for p in ps]


# ---- Metadata (3)


def _metadata_build(entries: Any, limit: int, cursor: Any) -> Any:
    r: Any = Req(3, "request")
    topics = None if entries is None else [r.MetadataRequestTopic(name=n) for n in entries]
    return r(
        topics=topics,
        allow_auto_topic_creation=False,
        response_pagination_limit=limit,
        cursor=cursor,
    )


def _metadata_items(entries: Any, r: Any) -> list[tuple[Any, Any]]:
    out = []
    for t in r.topics:
        if t.error_code:
            continue
        first = 0 if entries is None else entries.index(t.name)
        for p in t.partitions:
            key = (t.name, p.partition_index) if entries is None else (first, p.partition_index)
            out.append((key, (t.name, p.partition_index, p.leader_id, tuple(p.replica_nodes))))
    return out


METADATA = Api(
    3,
    paged_version(3),
    12,
    _seed_topics,
    lambda w, data: (
        None if data.draw(st.booleans(), label="all") else _names(data, [*TOPICS, UNKNOWN_TOPIC])
    ),
    _metadata_build,
    _metadata_items,
    lambda e: e is not None and _dupes(e),
    lambda r: bool(r.topics) and all(t.error_code == INVALID_REQUEST for t in r.topics),
    TOPIC_CHANGES,
    asked=lambda e: set(e or ()),
    answered=lambda r: {t.name for t in r.topics},
)


# ---- ListOffsets (2)


def _list_offsets_build(entries: Any, limit: int, cursor: Any) -> Any:
    r: Any = Req(2, "request")
    return r(
        replica_id=-1,
        topics=[
            r.ListOffsetsTopic(
                name=t,
                partitions=[r.ListOffsetsPartition(partition_index=p, timestamp=-1) for p in ps],
            )
            for t, ps in entries
        ],
        response_pagination_limit=limit,
        cursor=cursor,
    )


def _list_offsets_items(entries: Any, r: Any) -> list[tuple[Any, Any]]:
    flat = _flat(entries)
    return [
        (
            flat.index((t.name, p.partition_index)),
            (t.name, p.partition_index, p.error_code, p.offset),
        )
        for t in r.topics
        for p in t.partitions
    ]


def _seed_offsets(w: World, data: st.DataObject) -> None:
    _seed_topics(w, data)
    _produce_some(w, data)


def _produce_some(w: World, data: st.DataObject) -> None:
    topics = w.topics()
    names = sorted(n for n in topics if not n.startswith("__"))
    if names:
        name = data.draw(st.sampled_from(names))
        w.produce(name, data.draw(st.integers(0, topics[name] - 1)), -1)


LIST_OFFSETS = Api(
    2,
    paged_version(2),
    10,
    _seed_offsets,
    lambda w, data: _topic_partitions(data),
    _list_offsets_build,
    _list_offsets_items,
    lambda e: _dupes(_flat(e)),
    lambda r: all(p.error_code == INVALID_REQUEST for t in r.topics for p in t.partitions),
    (*TOPIC_CHANGES, _produce_some),
    asked=lambda e: set(_flat(e)),
    answered=lambda r: {(t.name, p.partition_index) for t in r.topics for p in t.partitions},
)


# ---- OffsetFetch (9)


def _offset_fetch_entries(w: World, data: st.DataObject) -> Any:
    """Groups, each asking for all its offsets or for listed partitions (with repeats)."""
    groups = data.draw(
        st.lists(st.sampled_from([*GROUPS, "unknown-group"]), min_size=1, max_size=4, unique=True)
    )
    entries = [(g, _all_or_partitions(w, data)) for g in groups]
    _with_repeat(data, entries, lambda e: e)
    return entries


def _offset_fetch_build(entries: Any, limit: int, cursor: Any) -> Any:
    r: Any = Req(9, "request")
    return r(
        groups=[
            r.OffsetFetchRequestGroup(
                group_id=g,
                topics=(
                    None
                    if tps is None
                    else [r.OffsetFetchRequestTopics(name=t, partition_indexes=ps) for t, ps in tps]
                ),
            )
            for g, tps in entries
        ],
        response_pagination_limit=limit,
        cursor=cursor,
    )


def _offset_fetch_items(entries: Any, r: Any) -> list[tuple[Any, Any]]:
    groups = [g for g, _ in entries]
    listed = dict(entries)
    out = []
    for g in r.groups:
        gi = groups.index(g.group_id)
        tps = listed[g.group_id]
        for t in g.topics:
            for p in t.partitions:
                at = (t.name, p.partition_index)
                key = (gi, at) if tps is None else (gi, (_grouped(tps).index(at),))
                out.append((key, (g.group_id, *at, p.committed_offset, p.error_code)))
    return out


def _offset_fetch_repeats(entries: Any) -> bool:
    return _dupes([g for g, _ in entries]) or any(
        _dupes(_flat(tps)) for _, tps in entries if tps is not None
    )


def _seed_commits(w: World, data: st.DataObject) -> None:
    _seed_topics(w, data)
    for _ in range(data.draw(st.integers(0, 8))):
        _commit(w, data)


def _commit(w: World, data: st.DataObject) -> None:
    topics = {n: k for n, k in w.topics().items() if not n.startswith("__")}
    if topics:
        name = data.draw(st.sampled_from(sorted(topics)))
        w.commit(
            data.draw(st.sampled_from(GROUPS)),
            name,
            data.draw(st.integers(0, topics[name] - 1)),
            data.draw(st.integers(0, 99)),
        )


def _delete_offset(w: World, data: st.DataObject) -> None:
    od: Any = Req(47, "request")
    w.call(
        47,
        0,
        od(
            group_id=data.draw(st.sampled_from(GROUPS)),
            topics=[
                od.OffsetDeleteRequestTopic(
                    name=data.draw(st.sampled_from(TOPICS)),
                    partitions=[
                        od.OffsetDeleteRequestPartition(
                            partition_index=data.draw(st.integers(0, 3))
                        )
                    ],
                )
            ],
        ),
    )


def _delete_group(w: World, data: st.DataObject) -> None:
    w.call(42, 2, Req(42, "request")(groups_names=[data.draw(st.sampled_from(GROUPS))]))


OFFSET_FETCH = Api(
    9,
    paged_version(9),
    10,
    _seed_commits,
    _offset_fetch_entries,
    _offset_fetch_build,
    _offset_fetch_items,
    _offset_fetch_repeats,
    _refused_every_group,
    (_commit, _delete_offset, _delete_group, _delete_topic),
    asked=lambda e: {g for g, _ in e},
    answered=lambda r: {g.group_id for g in r.groups},
)


# ---- DescribeGroups (15) and ListGroups (16)


def _seed_groups(w: World, data: st.DataObject) -> None:
    _seed_topics(w, data)
    for g in data.draw(st.lists(st.sampled_from(GROUPS), max_size=4, unique=True)):
        w.join(g, data.draw(st.integers(1, 4)))
    for _ in range(data.draw(st.integers(0, 3))):
        _commit(w, data)


def _join(w: World, data: st.DataObject) -> None:
    w.join(data.draw(st.sampled_from(GROUPS)), 1)


def _leave(w: World, data: st.DataObject) -> None:
    group = w.broker.group_coordinator.describe_group(data.draw(st.sampled_from(GROUPS)))
    if group is not None and group.members:
        member = data.draw(st.sampled_from(sorted(group.members)))
        lg: Any = Req(13, "request")
        w.call(13, 3, lg(group_id=group.group_id, members=[lg.MemberIdentity(member_id=member)]))


def _describe_groups_items(entries: Any, r: Any) -> list[tuple[Any, Any]]:
    return [
        ((entries.index(g.group_id), m.member_id), (g.group_id, m.member_id, m.client_id))
        for g in r.groups
        for m in g.members
    ]


DESCRIBE_GROUPS = Api(
    15,
    paged_version(15),
    5,
    _seed_groups,
    lambda w, data: _names(data, [*GROUPS, "unknown-group"]),
    lambda e, limit, c: Req(15, "request")(groups=e, response_pagination_limit=limit, cursor=c),
    _describe_groups_items,
    _dupes,
    _refused_every_group,
    (_join, _leave, _commit, _delete_group),
    asked=set,
    answered=lambda r: {g.group_id for g in r.groups},
)

LIST_GROUPS = Api(
    16,
    paged_version(16),
    5,
    _seed_groups,
    _everything,
    lambda e, limit, c: Req(16, "request")(response_pagination_limit=limit, cursor=c),
    lambda e, r: [((g.group_id,), (g.group_id, g.group_state, g.group_type)) for g in r.groups],
    _no_repeats_possible,
    _refused_whole,
    (_join, _leave, _commit, _delete_group),
)


# ---- ConsumerGroupDescribe (69)


def _heartbeat(w: World, group: str, member: str = "", epoch: int = 0) -> None:
    hb: Any = Req(68, "request")
    w.call(
        68,
        0,
        hb(
            group_id=group,
            member_id=member,
            member_epoch=epoch,
            rebalance_timeout_ms=600_000,
            subscribed_topic_names=TOPICS[:2] if epoch == 0 else None,
            topic_partitions=[] if epoch == 0 else None,
        ),
    )


def _seed_consumer_groups(w: World, data: st.DataObject) -> None:
    _seed_topics(w, data)
    for g in data.draw(st.lists(st.sampled_from(CONSUMER_GROUPS), max_size=3, unique=True)):
        for _ in range(data.draw(st.integers(1, 4))):
            _heartbeat(w, g)


def _consumer_join(w: World, data: st.DataObject) -> None:
    _heartbeat(w, data.draw(st.sampled_from(CONSUMER_GROUPS)))


def _consumer_leave(w: World, data: st.DataObject) -> None:
    try:
        group = w.broker.group_coordinator.consumer.describe(
            data.draw(st.sampled_from(CONSUMER_GROUPS))
        )
    except Exception:  # not a group (yet): nothing to leave
        return
    if group.members:
        _heartbeat(w, group.group_id, data.draw(st.sampled_from(sorted(group.members))), -1)


CONSUMER_GROUP_DESCRIBE = Api(
    69,
    paged_version(69),
    0,
    _seed_consumer_groups,
    lambda w, data: _names(data, [*CONSUMER_GROUPS, "unknown-group"]),
    lambda e, limit, c: Req(69, "request")(group_ids=e, response_pagination_limit=limit, cursor=c),
    lambda e, r: [
        ((e.index(g.group_id), m.member_id), (g.group_id, m.member_id, m.member_epoch))
        for g in r.groups
        for m in g.members
    ],
    _dupes,
    _refused_every_group,
    (_consumer_join, _consumer_leave),
    asked=set,
    answered=lambda r: {g.group_id for g in r.groups},
)


# ---- DescribeAcls (29)


def _create_acl(w: World, data: st.DataObject) -> None:
    ca: Any = Req(30, "request")
    w.call(
        30,
        3,
        ca(
            creations=[
                ca.AclCreation(
                    resource_type=data.draw(st.sampled_from([2, 3])),
                    resource_name=data.draw(st.sampled_from(ACL_NAMES)),
                    resource_pattern_type=data.draw(st.sampled_from([3, 4])),
                    principal=data.draw(st.sampled_from(["User:u", "User:v"])),
                    host="*",
                    operation=3,
                    permission_type=3,
                )
            ]
        ),
    )


def _delete_acls(w: World, data: st.DataObject) -> None:
    da: Any = Req(31, "request")
    w.call(
        31,
        3,
        da(
            filters=[
                da.DeleteAclsFilter(
                    resource_type_filter=data.draw(st.sampled_from([2, 3])),
                    resource_name_filter=data.draw(st.sampled_from(ACL_NAMES)),
                    pattern_type_filter=1,
                    principal_filter=None,
                    host_filter=None,
                    operation=1,
                    permission_type=1,
                )
            ]
        ),
    )


def _seed_acls(w: World, data: st.DataObject) -> None:
    for _ in range(data.draw(st.integers(0, 10))):
        _create_acl(w, data)


def _acl_items(e: Any, r: Any) -> list[tuple[Any, Any]]:
    return [
        (
            (a.resource_type, a.resource_name, a.pattern_type),
            tuple(sorted((d.principal, d.operation) for d in a.acls)),
        )
        for a in r.resources
    ]


DESCRIBE_ACLS = Api(
    29,
    paged_version(29),
    3,
    _seed_acls,
    _everything,
    lambda e, limit, c: Req(29, "request")(
        resource_type_filter=1,
        resource_name_filter=None,
        pattern_type_filter=1,
        principal_filter=None,
        host_filter=None,
        operation=1,
        permission_type=1,
        response_pagination_limit=limit,
        cursor=c,
    ),
    _acl_items,
    _no_repeats_possible,
    _refused_whole,
    (_create_acl, _delete_acls),
    # A LITERAL and a PREFIXED resource of one type and name count as one.
    counted=lambda r, items: len({k[:2] for k, _ in items}),
)


# ---- DescribeConfigs (32)

CONFIG_KEYS = ["retention.ms", "cleanup.policy", "segment.bytes", "max.message.bytes"]


def _configs_entries(w: World, data: st.DataObject) -> Any:
    """Topic resources (unknown ones among them), each with some config keys."""
    entries = [
        (n, data.draw(st.lists(st.sampled_from(CONFIG_KEYS), min_size=1, max_size=4, unique=True)))
        for n in _names(data, [*TOPICS, UNKNOWN_TOPIC])
    ]
    return entries


def _alter_config(w: World, data: st.DataObject) -> None:
    ac: Any = Req(33, "request")
    w.call(
        33,
        2,
        ac(
            resources=[
                ac.AlterConfigsResource(
                    resource_type=2,
                    resource_name=data.draw(st.sampled_from(TOPICS)),
                    configs=[
                        ac.AlterableConfig(
                            name="retention.ms", value=str(data.draw(st.integers(1000, 9999)))
                        )
                    ],
                )
            ]
        ),
    )


def _configs_fit(r: Any, effective: int) -> bool:
    """Whole resources: at most the limit in configs, or a single resource."""
    return len(r.results) <= 1 or sum(len(x.configs) for x in r.results) <= effective


def _configs_build(entries: Any, limit: int, cursor: Any) -> Any:
    r: Any = Req(32, "request")
    return r(
        resources=[
            r.DescribeConfigsResource(resource_type=2, resource_name=n, configuration_keys=keys)
            for n, keys in entries
        ],
        response_pagination_limit=limit,
        cursor=cursor,
    )


DESCRIBE_CONFIGS = Api(
    32,
    paged_version(32),
    4,
    _seed_topics,
    _configs_entries,
    _configs_build,
    lambda e, r: [
        (
            (x.resource_type, x.resource_name),
            (x.error_code, tuple((c.name, c.value) for c in x.configs)),
        )
        for x in r.results
    ],
    lambda e: _dupes([n for n, _ in e]),
    lambda r: bool(r.results) and all(x.error_code == INVALID_REQUEST for x in r.results),
    (*TOPIC_CHANGES, _alter_config),
    fits=_configs_fit,
    asked=lambda e: {n for n, _ in e},
    answered=lambda r: {x.resource_name for x in r.results},
)


# ---- DescribeLogDirs (35)


def _log_dirs_build(entries: Any, limit: int, cursor: Any) -> Any:
    r: Any = Req(35, "request")
    topics = (
        None
        if entries is None
        else [r.DescribableLogDirTopic(topic=t, partitions=ps) for t, ps in entries]
    )
    return r(topics=topics, response_pagination_limit=limit, cursor=cursor)


def _grouped(entries: list[tuple[str, list[int]]]) -> list[tuple[str, int]]:
    """Named partitions in answer order: a topic's together, where it is first named."""
    named: dict[str, list[int]] = {}
    for t, ps in entries:
        named.setdefault(t, []).extend(ps)
    return [(t, p) for t, ps in named.items() for p in ps]


def _log_dirs_items(entries: Any, r: Any) -> list[tuple[Any, Any]]:
    order = None if entries is None else _grouped(entries)
    return [
        (
            (
                (t.name, p.partition_index)
                if order is None
                else (order.index((t.name, p.partition_index)),)
            ),
            (t.name, p.partition_index, p.partition_size),
        )
        for d in r.results
        for t in d.topics
        for p in t.partitions
    ]


DESCRIBE_LOG_DIRS = Api(
    35,
    paged_version(35),
    4,
    _seed_offsets,
    _all_or_partitions,
    _log_dirs_build,
    _log_dirs_items,
    _partition_repeats,
    _refused_whole,
    (*TOPIC_CHANGES, _produce_some),
)


# ---- ListPartitionReassignments (46), on two brokers: broker 1 never catches up


def _reassign(w: World, data: st.DataObject, cancel: bool = False) -> None:
    topics = {n: k for n, k in w.topics().items() if not n.startswith("__")}
    if not topics:
        return
    name = data.draw(st.sampled_from(sorted(topics)))
    index = data.draw(st.integers(0, topics[name] - 1))
    ap: Any = Req(45, "request")
    w.call(
        45,
        0,
        ap(
            timeout_ms=1000,
            topics=[
                ap.ReassignableTopic(
                    name=name,
                    partitions=[
                        ap.ReassignablePartition(
                            partition_index=index, replicas=None if cancel else [0, 1]
                        )
                    ],
                )
            ],
        ),
    )


def _seed_reassignments(w: World, data: st.DataObject) -> None:
    _seed_topics(w, data)
    for _ in range(data.draw(st.integers(0, 12))):
        _reassign(w, data)


def _reassignment_build(entries: Any, limit: int, cursor: Any) -> Any:
    r: Any = Req(46, "request")
    topics = (
        None
        if entries is None
        else [r.ListPartitionReassignmentsTopics(name=t, partition_indexes=ps) for t, ps in entries]
    )
    return r(timeout_ms=1000, topics=topics, response_pagination_limit=limit, cursor=cursor)


LIST_PARTITION_REASSIGNMENTS = Api(
    46,
    paged_version(46),
    0,
    _seed_reassignments,
    _all_or_partitions,
    _reassignment_build,
    lambda e, r: [
        ((t.name, p.partition_index), (tuple(p.replicas), tuple(p.adding_replicas)))
        for t in r.topics
        for p in t.partitions
    ],
    _partition_repeats,
    _refused_whole,
    (_reassign, lambda w, data: _reassign(w, data, cancel=True), _delete_topic, _create_topic),
    brokers=2,
)


# ---- DescribeProducers (61)


def _produce_as(w: World, data: st.DataObject) -> None:
    topics = {n: k for n, k in w.topics().items() if not n.startswith("__")}
    if topics:
        name = data.draw(st.sampled_from(sorted(topics)))
        w.produce(name, data.draw(st.integers(0, topics[name] - 1)), data.draw(st.integers(1, 6)))


def _seed_producers(w: World, data: st.DataObject) -> None:
    _seed_topics(w, data)
    for name, count in sorted(w.topics().items()):
        for index in range(count if not name.startswith("__") else 0):
            for pid in data.draw(st.lists(st.integers(1, 9), max_size=4, unique=True)):
                w.produce(name, index, pid)


def _producers_items(entries: Any, r: Any) -> list[tuple[Any, Any]]:
    flat = _flat(entries)
    return [
        (
            (flat.index((t.name, p.partition_index)), -s.producer_id),
            (t.name, p.partition_index, s.producer_id, s.last_sequence),
        )
        for t in r.topics
        for p in t.partitions
        for s in p.active_producers
    ]


def _producers_build(entries: Any, limit: int, cursor: Any) -> Any:
    r: Any = Req(61, "request")
    return r(
        topics=[r.TopicRequest(name=t, partition_indexes=ps) for t, ps in entries],
        response_pagination_limit=limit,
        cursor=cursor,
    )


DESCRIBE_PRODUCERS = Api(
    61,
    paged_version(61),
    0,
    _seed_producers,
    lambda w, data: _topic_partitions(data),
    _producers_build,
    _producers_items,
    lambda e: _dupes(_flat(e)),
    lambda r: all(p.error_code == INVALID_REQUEST for t in r.topics for p in t.partitions),
    (_produce_as, *TOPIC_CHANGES),
    asked=lambda e: set(_flat(e)),
    answered=lambda r: {(t.name, p.partition_index) for t in r.topics for p in t.partitions},
)


# ---- DescribeTransactions (65) and ListTransactions (66)


def _init_txn(w: World, data: st.DataObject) -> None:
    ip: Any = Req(22, "request")
    w.call(
        22,
        4,
        ip(transactional_id=data.draw(st.sampled_from(TXN_IDS)), transaction_timeout_ms=600_000),
    )


def _seed_txns(w: World, data: st.DataObject) -> None:
    for _ in range(data.draw(st.integers(0, 6))):
        _init_txn(w, data)


DESCRIBE_TRANSACTIONS = Api(
    65,
    paged_version(65),
    0,
    _seed_txns,
    lambda w, data: _names(data, [*TXN_IDS, "unknown-id"], 7),
    lambda e, limit, c: Req(65, "request")(
        transactional_ids=e, response_pagination_limit=limit, cursor=c
    ),
    lambda e, r: [
        (
            (e.index(x.transactional_id),),
            (x.transactional_id, x.error_code, x.transaction_state, x.producer_epoch),
        )
        for x in r.transaction_states
    ],
    _dupes,
    lambda r: (
        bool(r.transaction_states)
        and all(x.error_code == INVALID_REQUEST for x in r.transaction_states)
    ),
    (_init_txn,),
    asked=set,
    answered=lambda r: {x.transactional_id for x in r.transaction_states},
)

LIST_TRANSACTIONS = Api(
    66,
    paged_version(66),
    1,
    _seed_txns,
    _everything,
    lambda e, limit, c: Req(66, "request")(
        state_filters=[],
        producer_id_filters=[],
        duration_filter=-1,
        response_pagination_limit=limit,
        cursor=c,
    ),
    lambda e, r: [
        ((x.transactional_id,), (x.producer_id, x.transaction_state)) for x in r.transaction_states
    ],
    _no_repeats_possible,
    _refused_whole,
    (_init_txn,),
)

APIS = [
    LIST_OFFSETS,
    METADATA,
    OFFSET_FETCH,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    DESCRIBE_ACLS,
    DESCRIBE_CONFIGS,
    DESCRIBE_LOG_DIRS,
    LIST_PARTITION_REASSIGNMENTS,
    DESCRIBE_PRODUCERS,
    DESCRIBE_TRANSACTIONS,
    LIST_TRANSACTIONS,
    CONSUMER_GROUP_DESCRIBE,
]


# --------------------------------------------------------------------------- the machine


def _replayable_uuid4() -> uuid.UUID:
    """A random version-4 UUID from ``random``, which Hypothesis seeds for every example."""
    return uuid.UUID(int=random.getrandbits(128), version=4)


class PagedWalk(RuleBasedStateMachine):
    """One walk: pages, with changes drawn between them, checked when it ends."""

    api: ClassVar[Api]
    #: Examples, walks, pages and changes run (reported by the test).
    runs: ClassVar[dict[str, int]]

    def __init__(self) -> None:
        super().__init__()
        # The broker names members and topics with uuid4. How those ids sort decides where a
        # walk resumes after a member left, so when it ends and which rules may run next: a
        # replayed example must get the same ids, or Hypothesis sees its draws change
        # ("inconsistent data generation") and a seed would not reproduce a failure.
        self._ids = mock.patch("uuid.uuid4", _replayable_uuid4)
        self._ids.start()

    @initialize(data=st.data())
    def start(self, data: st.DataObject) -> None:
        api = self.api
        self.runs["examples"] += 1
        self.world = World(data.draw(st.integers(1, 6), label="broker limit"), api.brokers)
        api.seed(self.world, data)
        self.new_walk(data)

    @precondition(lambda self: self.done)
    @rule(data=st.data())
    def next_walk(self, data: st.DataObject) -> None:
        """The walk ended: check it, and start another on the state as it is now."""
        self.check()
        self.new_walk(data)

    def new_walk(self, data: st.DataObject) -> None:
        self.runs["walks"] += 1
        self.entries = self.api.entries(self.world, data)
        self.limit = data.draw(st.integers(-1, 9), label="limit")
        self.effective = max(min(self.world.broker_limit, self.limit), 1)
        self.cursor: Any = None
        self.topic_ids: dict[str, uuid.UUID] = {}  # what the walk's requests name topics by
        self.pages: list[list[tuple[Any, Any]]] = []
        self.unpaged: list[dict[Any, Any]] = []
        self.answered: set[Any] = set()
        self.cursors: set[str] = set()
        self.changed = False
        self.done = False

    def _unpaged(self) -> dict[Any, Any]:
        api = self.api
        if api.repeats(self.entries):
            return {}  # item keys name entries, which a repeat makes ambiguous
        request = api.build(self.entries, 2000, None)
        answer = self.world.call(api.key, api.unpaged, request)
        return dict(api.items(self.entries, answer))

    @precondition(lambda self: not self.done)
    @rule()
    def page(self) -> None:
        api = self.api
        self.runs["pages"] += 1
        self.unpaged.append(self._unpaged())
        request = api.build(self.entries, self.limit, self.cursor)
        answer = self.world.call(api.key, api.paged, request, self.topic_ids)
        if api.repeats(self.entries):
            assert api.refused(answer), f"a request with a repeat was answered: {answer}"
            assert answer.next_cursor is None
            self.pages.append([])
            self.done = True
            return
        items = api.items(self.entries, answer)
        self.pages.append(items)
        if api.answered is not None:
            self.answered |= api.answered(answer)
        self.runs["items"] += len(items)
        if api.fits is not None:
            assert api.fits(answer, self.effective), (self.effective, answer)
        else:
            counted = len(items) if api.counted is None else api.counted(answer, items)
            assert counted <= self.effective, (counted, self.effective, answer)
        if answer.next_cursor is None:
            self.done = True
            return
        self.cursor = next_request_cursor(type(request), answer.next_cursor)
        # What the client helpers' guard stops on: the broker must never need it.
        fields = repr(self.cursor)
        assert fields not in self.cursors, f"NextCursor {fields} came a second time"
        self.cursors.add(fields)
        seen = set().union(*self.unpaged, *(dict(p) for p in self.pages))
        assert len(self.pages) <= len(seen) + 1, f"{len(self.pages)} pages for {len(seen)} items"

    @precondition(lambda self: not self.done)
    @rule(data=st.data())
    def change(self, data: st.DataObject) -> None:
        data.draw(st.sampled_from(self.api.changes), label="change")(self.world, data)
        self.changed = True
        self.runs["changes"] += 1

    def teardown(self) -> None:
        try:
            if hasattr(self, "world"):
                self.check()
        finally:
            self._ids.stop()

    def check(self) -> None:
        """Finish the walk (bounded: the page rule fails one that is too long) and check it."""
        while not self.done:
            self.page()
        self.unpaged.append(self._unpaged())
        walked = [item for page in self.pages for item in page]
        if self.api.repeats(self.entries):
            assert len(self.pages) == 1
            return
        keys = [k for k, _ in walked]
        assert all(a < b for a, b in itertools.pairwise(keys)), f"order or repeat: {keys}"
        seen = set().union(*self.unpaged)
        survivors = set.intersection(*(set(u) for u in self.unpaged))
        assert set(keys) <= seen, f"items no unpaged answer had: {set(keys) - seen}"
        assert survivors <= set(keys), f"skipped: {survivors - set(keys)}"
        if self.api.asked is not None:
            missing = self.api.asked(self.entries) - self.answered
            assert not missing, f"entries no page answered: {missing}"
        if not self.changed:
            assert walked == sorted(self.unpaged[0].items()), (walked, self.unpaged[0])


def _machine(api: Api) -> type[PagedWalk]:
    runs = dict.fromkeys(("examples", "walks", "pages", "items", "changes"), 0)
    return type(f"Walk{api.key}", (PagedWalk,), {"api": api, "runs": runs})


def _run(api: Api, examples: int) -> dict[str, int]:
    machine = _machine(api)
    machine.TestCase.settings = settings(
        max_examples=examples,
        stateful_step_count=STEPS,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    machine.TestCase().runTest()
    runs = machine.runs
    print(f"API {api.key}: {runs}")
    assert runs["examples"] >= examples and runs["changes"] > 0 and runs["items"] >= examples // 2
    return runs


@pytest.mark.parametrize("api", APIS, ids=lambda a: f"api{a.key}")
def test_walks_end_in_order_and_skip_nothing_quick(api: Api) -> None:
    _run(api, QUICK_EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("api", APIS, ids=lambda a: f"api{a.key}")
def test_walks_end_in_order_and_skip_nothing(api: Api) -> None:
    _run(api, EXAMPLES)


def test_offset_fetch_cursor_survives_its_topic_deleted() -> None:
    """Issue 16's case, shrunk: a group lists partitions of a topic, one page is taken, the
    topic is deleted, and the same request (same topic id) resumes at the next partition,
    which is answered UNKNOWN_TOPIC_ID rather than the whole request refused."""
    world = World(broker_limit=1)
    world.create_topic("t1", 2)
    world.commit("g1", "t1", 0, 5)
    world.commit("g1", "t1", 1, 6)
    entries = [("g1", [("t1", [0, 1])])]
    ids: dict[str, uuid.UUID] = {}
    first = world.call(9, OFFSET_FETCH.paged, _offset_fetch_build(entries, 1, None), ids)
    assert [
        (p.partition_index, p.committed_offset) for p in first.groups[0].topics[0].partitions
    ] == [(0, 5)]
    assert first.next_cursor is not None
    assert first.next_cursor.topic_name == str(ids["t1"])  # the request's name for the topic
    world.delete_topic("t1")
    cursor = next_request_cursor(Req(9, "request"), first.next_cursor)
    second = world.call(9, OFFSET_FETCH.paged, _offset_fetch_build(entries, 1, cursor), ids)
    assert [(g.group_id, g.error_code) for g in second.groups] == [("g1", 0)]
    [topic] = second.groups[0].topics
    assert [(p.partition_index, p.error_code) for p in topic.partitions] == [
        (1, ErrorCode.UNKNOWN_TOPIC_ID)
    ]
    assert second.next_cursor is None
