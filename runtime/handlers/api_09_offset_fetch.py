"""OffsetFetch (key 9): committed offsets of a group (v8+: of several groups at once).

A partition with nothing committed answers offset -1 and no error, as Kafka does. The
coordinator caches offsets only once they are durable; offsets an open transaction has
committed (TxnOffsetCommit) are not visible yet, and from v7 a request that requires stable
offsets gets UNSTABLE_OFFSET_COMMIT for those partitions, so it retries after the
transaction ends.
From v10 (KIP-848) topics are named by id both ways: an id this cluster does not know
answers UNKNOWN_TOPIC_ID for its partitions (in its place in the request, so pages count it
like any topic, and a cursor names it by the id's text), and offsets of a topic that no
longer exists are left out of a full listing.
v11 (unstable, seed 001) pages the partitions over all groups (groups and listed partitions
in request order, a group's full listing by topic then partition); NextCursor names the
group, topic and partition the next page starts at. A listed partition's topic is named as
the request names it, by its id (as text): a topic deleted between two pages keeps its id
in the resent request but loses its name, and the cursor must still find its place. A full
listing goes by topic name, its order. Only what the page reaches is looked up: a full
listing starts with a bisect in the group's sorted offsets. A group or a group's
partition listed twice, or a cursor outside the request or with a negative index, answers
INVALID_REQUEST for every group.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafkagen.generated.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.group.group_model import OffsetEntry
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import ErrorCode, InvalidRequestError, KafkaError
from kafkagen.runtime.handlers._util import Pager, pagination_limit, repeated
from kafkagen.runtime.pagination import paged_version
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 9
PAGED = paged_version(API_KEY)
#: A NextCursor (topic, partition) meaning "this group's full listing from its start": the
#: page before did not show the group, so the next one does even if its offsets are gone.
_GROUP_START = ("", 0)
R = OffsetFetchResponse


def handle(ctx: RequestContext, request: OffsetFetchRequest) -> None:
    v = ctx.api_version
    unknown = _name_topics(ctx, request) if v >= 10 else {}
    if v >= PAGED:
        _page(ctx, request, unknown)
        return
    if v >= 8:
        groups = []
        for g in request.groups:
            wanted = None if g.topics is None else [(t.name, t.partition_indexes) for t in g.topics]
            error, topics = _fetch(
                ctx,
                g.group_id,
                wanted,
                R.OffsetFetchResponseTopics,
                R.OffsetFetchResponsePartitions,
                v,
                (g.member_id, g.member_epoch) if v >= 9 else None,
                stable=request.require_stable,
            )
            # A group-level error comes alone, without the partitions (as Kafka 4.4 does).
            groups.append(
                R.OffsetFetchResponseGroup(
                    group_id=g.group_id, topics=[] if error else topics, error_code=error
                )
            )
        response = OffsetFetchResponse(groups=groups)
        if v >= 10:
            _identify_topics(ctx, response, unknown)
        ctx.respond(response)
        return
    wanted = (
        None if request.topics is None else [(t.name, t.partition_indexes) for t in request.topics]
    )
    error, topics = _fetch(
        ctx,
        request.group_id,
        wanted,
        R.OffsetFetchResponseTopic,
        R.OffsetFetchResponsePartition,
        v,
        stable=v >= 7 and request.require_stable,
    )
    if error and v < 2:
        # No top-level error before v2: every partition carries it.
        for t in topics:
            for p in t.partitions:
                p.error_code = error
    ctx.respond(OffsetFetchResponse(topics=topics, error_code=error if v >= 2 else 0))


def _name_topics(ctx: RequestContext, request: OffsetFetchRequest) -> dict[str, uuid.UUID]:
    """v10+: give each topic asked for by id its name (in place), so that the rest works by
    name. An id no topic has is named by its own text, which no offsets are stored under;
    returns those names with their ids."""
    names = ctx.broker.metadata.topic_names
    unknown: dict[str, uuid.UUID] = {}
    for g in request.groups:
        for t in g.topics or ():
            name = names.get(t.topic_id)
            if name is None:
                name = str(t.topic_id)
                unknown[name] = t.topic_id
            t.name = name
    return unknown


def _identify_topics(
    ctx: RequestContext, response: OffsetFetchResponse, unknown: dict[str, uuid.UUID]
) -> None:
    """v10+: each answered topic gets its id. Topics asked for by an unknown id answer
    UNKNOWN_TOPIC_ID on every partition; offsets of a topic that no longer exists, which
    only a full listing finds, have no id to go by and are left out."""
    topics = ctx.broker.metadata.topics
    for g in response.groups:
        kept = []
        for t in g.topics:
            info = topics.get(t.name)
            if t.name in unknown:
                t.topic_id = unknown[t.name]
                for p in t.partitions:
                    p.committed_offset, p.metadata = -1, ""
                    p.error_code = ErrorCode.UNKNOWN_TOPIC_ID
            elif info is not None:
                t.topic_id = info.topic_id
            else:
                continue
            kept.append(t)
        g.topics = kept


def _fetch(
    ctx: RequestContext,
    group_id: str,
    wanted: list[tuple[str, list[int]]] | None,
    topic_cls: Any,
    partition_cls: Any,
    v: int,
    member: tuple[str | None, int] | None = None,
    *,
    stable: bool = False,
    window: tuple[TopicPartition | None, int] | None = None,
) -> tuple[int, list[Any]]:
    """A group's answer: (error code, topics). With ``window`` (start, count), a full
    listing holds only the first ``count`` offsets at or after ``start``."""
    gc = ctx.broker.group_coordinator
    if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        denied = [] if wanted is None else [(n, idx, False) for n, idx in wanted]
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, _topics(topic_cls, partition_cls, denied, v)
    describable: dict[str, bool] = {}

    def visible(topic: str) -> bool:
        if topic not in describable:
            describable[topic] = ctx.allowed(AclOperation.DESCRIBE, ResourceType.TOPIC, topic)
        return describable[topic]

    hidden = [] if wanted is None else [(n, idx) for n, idx in wanted if not visible(n)]
    if hidden:
        wanted = [(n, idx) for n, idx in wanted or () if visible(n)]
    tps = None if wanted is None else [TopicPartition(n, i) for n, idx in wanted for i in idx]
    # v9+: a member of a consumer-protocol group is checked against its epoch.
    member_id, member_epoch = (None, -1) if member is None else member
    items: list[tuple[TopicPartition, OffsetEntry | None]]
    try:
        if tps is None and window is not None:
            items = list(
                gc.offsets.fetch_from(
                    group_id, *window, member_id=member_id, member_epoch=member_epoch
                )
            )
        else:
            found = gc.offsets.fetch(group_id, tps, member_id=member_id, member_epoch=member_epoch)
            # Sorted when listing everything, so that pages follow one stable order.
            items = sorted(found.items()) if tps is None else list(found.items())
    except KafkaError as e:
        if wanted is None:
            return e.code, []
        return e.code, [
            topic_cls(name=n, partitions=[_partition(partition_cls, i, None, v) for i in idx])
            for n, idx in wanted
        ]
    by_topic: dict[str, list[Any]] = {}
    offsets = ctx.broker.group_coordinator.offsets
    for tp, entry in items:
        if tps is None and not visible(tp.topic):
            continue  # a full listing leaves out topics the sender may not describe
        out = _partition(partition_cls, tp.partition, entry, v)
        if stable and offsets.has_pending(group_id, tp):
            out.error_code = ErrorCode.UNSTABLE_OFFSET_COMMIT
        by_topic.setdefault(tp.topic, []).append(out)
    topics = [topic_cls(name=name, partitions=parts) for name, parts in by_topic.items()]
    if hidden:
        denied = [(n, idx, True) for n, idx in hidden]
        topics += _topics(topic_cls, partition_cls, denied, v)
    return 0, topics


def _topics(
    topic_cls: Any, partition_cls: Any, denied: list[tuple[str, list[int], bool]], v: int
) -> list[Any]:
    """Topics answered without offsets; ``True``: TOPIC_AUTHORIZATION_FAILED on each."""
    out = []
    for name, indexes, topic_denied in denied:
        parts = [_partition(partition_cls, i, None, v) for i in indexes]
        if topic_denied:
            for p in parts:
                p.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        out.append(topic_cls(name=name, partitions=parts))
    return out


def _partition(cls: Any, index: int, entry: OffsetEntry | None, v: int) -> Any:
    out = cls(partition_index=index, error_code=0)
    if entry is None:
        out.committed_offset = -1
        out.metadata = ""
    else:
        out.committed_offset = entry.offset
        out.metadata = entry.metadata
        if v >= 5:
            out.committed_leader_epoch = entry.leader_epoch
    return out


def _page(ctx: RequestContext, request: OffsetFetchRequest, unknown: dict[str, uuid.UUID]) -> None:
    """v11: groups from the cursor's on, each answered only as far as the page reaches; a
    full listing starts with a bisect in the group's sorted offsets."""
    c = request.cursor
    # Listed partitions are keyed by their topic's id text (the request's own identity for
    # them, stable when the topic goes away); a full listing's offsets by topic name.
    id_text = {t.name: str(t.topic_id) for g in request.groups for t in g.topics or ()}
    whole = False  # whether the cursor's group lists all its partitions (sorted)
    first = 0  # the groups before the cursor's have been answered by earlier pages
    problem = _repeat(request)
    if problem is None and c is not None:
        asked = {g.group_id: g for g in request.groups}
        group = asked.get(c.group_id)
        if group is None:
            problem = f"the cursor's group {c.group_id!r} was not asked for"
        elif c.partition_index < 0:
            problem = f"the cursor's partition index {c.partition_index} is negative"
        elif group.topics is not None and not any(
            str(t.topic_id) == c.topic_name and c.partition_index in t.partition_indexes
            for t in group.topics
        ):
            problem = f"the cursor {c.topic_name}-{c.partition_index} was not asked for"
        else:
            whole = group.topics is None
            first = next(i for i, g in enumerate(request.groups) if g.group_id == c.group_id)
    if problem is not None:
        code = InvalidRequestError(problem).code
        ctx.respond(
            OffsetFetchResponse(
                groups=[
                    R.OffsetFetchResponseGroup(group_id=g.group_id, topics=[], error_code=code)
                    for g in request.groups
                ]
            )
        )
        return
    pager = Pager(
        pagination_limit(ctx, request.response_pagination_limit),
        None if c is None else (c.group_id, c.topic_name, c.partition_index),
        sorted_keys=False,
        # A group's full listing is sorted, so a cursor at a deleted offset still works.
        request_prefix=1 if whole else 0,
        entry_start=_GROUP_START if whole else None,
    )
    page = []
    for g in request.groups[first:]:
        if pager.full:
            break
        window: tuple[TopicPartition | None, int] | None = (None, pager.remaining + 1)
        if pager.seeking:
            assert c is not None
            if whole and g.group_id == c.group_id:
                window = (TopicPartition(c.topic_name, c.partition_index), pager.remaining + 1)
            elif not whole:
                window = None  # looking for the cursor's exact item
        wanted = None if g.topics is None else [(t.name, t.partition_indexes) for t in g.topics]
        error, topics = _fetch(
            ctx,
            g.group_id,
            wanted,
            R.OffsetFetchResponseTopics,
            R.OffsetFetchResponsePartitions,
            ctx.api_version,
            (g.member_id, g.member_epoch),
            stable=request.require_stable,
            window=window,
        )
        if not topics:
            if pager.reaches((g.group_id,)):
                page.append(
                    R.OffsetFetchResponseGroup(group_id=g.group_id, topics=[], error_code=error)
                )
            continue
        kept = []
        for t in topics:
            topic = t.name if g.topics is None else id_text[t.name]
            t.partitions = [
                p for p in t.partitions if pager.take((g.group_id, topic, p.partition_index))
            ]
            if t.partitions:
                kept.append(t)
        if kept:
            page.append(
                R.OffsetFetchResponseGroup(group_id=g.group_id, topics=kept, error_code=error)
            )
    response = OffsetFetchResponse(groups=page)
    if pager.next is not None:
        group_id, topic, index = pager.next
        assert isinstance(group_id, str) and isinstance(topic, str) and isinstance(index, int)
        listing = next(g for g in request.groups if g.group_id == group_id)
        if listing.topics is None and (not page or page[-1].group_id != group_id):
            topic, index = _GROUP_START  # the next page starts with this group's listing
        response.next_cursor = R.OffsetFetchCursor(
            group_id=group_id, topic_name=topic, partition_index=index
        )
    _identify_topics(ctx, response, unknown)
    ctx.respond(response)


def _repeat(request: OffsetFetchRequest) -> str | None:
    """A group listed twice, or a partition listed twice within a group (seed 001's rule)."""
    problem = repeated((g.group_id for g in request.groups), "the group")
    for g in request.groups:
        if problem is None and g.topics is not None:
            problem = repeated(
                ((t.name, i) for t in g.topics for i in t.partition_indexes),
                f"for group {g.group_id!r} the partition",
            )
    return problem
