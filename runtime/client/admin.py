"""Admin helpers that return whole listings, walking cursor pagination (seed 001) to the end.

Thirteen admin APIs gained, at one new version each, a ``ResponsePaginationLimit`` and a
``Cursor`` in the request and a ``NextCursor`` in the response. Each helper here sends the
paged version when the broker advertises it, copies every ``NextCursor`` into the next
request's ``Cursor`` until it comes back null, and merges the pages into one response of the
usual shape. Against a broker without the paged version, the helper sends the newest older
version once and gets the whole answer in one response.

The page size is the client's ``max.request.pagination.size.limit`` (`KafkaClient`
``pagination_limit``, 2000 by default); the broker clamps it to its own limit of the same
name. Each request goes where Kafka's admin client sends it: group APIs to each group's
coordinator, transaction APIs to each id's coordinator (or to every broker for listings),
ListOffsets and DescribeProducers to each partition's leader, DescribeLogDirs to the brokers
asked about, broker config resources to that broker, the rest to the connected broker.

Every helper takes ``on_page`` (called with the broker's address and each response as it
arrives, for progress or checks), ``limit`` (instead of the client's page size) and
``paginate=False`` (one unpaged request per broker even when the paged version is there).
See docs/pagination.md for the order, the cursor and the limits of each API.
"""

from __future__ import annotations

import asyncio
import heapq
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from kafkagen.generated.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from kafkagen.generated.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from kafkagen.generated.describe_configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafkagen.generated.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from kafkagen.generated.describe_log_dirs import DescribeLogDirsRequest, DescribeLogDirsResponse
from kafkagen.generated.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
)
from kafkagen.generated.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)
from kafkagen.generated.list_groups import ListGroupsRequest, ListGroupsResponse
from kafkagen.generated.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from kafkagen.generated.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from kafkagen.generated.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafkagen.generated.metadata import MetadataRequest, MetadataResponse
from kafkagen.generated.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from kafkagen.runtime.errors import (
    KafkaError,
    LeaderNotAvailableError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    error_for_code,
)
from kafkagen.runtime.message import Message, Struct
from kafkagen.runtime.pagination import PAGINATED_APIS, paged_version
from kafkagen.runtime.topic_partition import TopicPartition

from .builders import (
    ANY_VERSION,
    CoordinatorType,
    GroupOffsets,
    Node,
    group_offsets,
    response_error,
)
from .client import KafkaClient
from .versions import VersionRange, api_name

__all__ = [
    "PAGED_SINCE",
    "ConfigResource",
    "PageObserver",
    "PaginationError",
    "consumer_group_describe_all",
    "describe_acls_all",
    "describe_configs_all",
    "describe_groups_all",
    "describe_log_dirs_all",
    "describe_producers_all",
    "describe_transactions_all",
    "fetch_offsets_all",
    "list_groups_all",
    "list_offsets_all",
    "list_partition_reassignments_all",
    "list_topics_all",
    "list_transactions_all",
]

M = TypeVar("M", bound=Message)
T = TypeVar("T")

#: Called with the address of the broker that answered and each response (page).
PageObserver = Callable[[str, Message], None]


class PaginationError(RuntimeError):
    """A broker's pages do not lead to an end (it sent the same cursor twice)."""


@dataclass(frozen=True, slots=True)
class _Paging:
    #: The first version with ResponsePaginationLimit, Cursor and NextCursor.
    since: int
    #: The response's top-level list that pages cut.
    items: str
    #: Per nesting level: the field naming an entry and its nested list. A page may start
    #: inside the entry the previous page ended in; such halves are joined.
    nested: tuple[tuple[str, str], ...] = ()


_PAGING: dict[int, _Paging] = {
    2: _Paging(paged_version(2), "topics", (("name", "partitions"),)),
    3: _Paging(paged_version(3), "topics", (("name", "partitions"),)),
    # The paged version names topics by id (as OffsetFetch does from v10).
    9: _Paging(paged_version(9), "groups", (("group_id", "topics"), ("topic_id", "partitions"))),
    15: _Paging(paged_version(15), "groups", (("group_id", "members"),)),
    16: _Paging(paged_version(16), "groups"),
    29: _Paging(paged_version(29), "resources"),
    32: _Paging(paged_version(32), "results"),
    35: _Paging(paged_version(35), "results", (("log_dir", "topics"), ("name", "partitions"))),
    46: _Paging(paged_version(46), "topics", (("name", "partitions"),)),
    61: _Paging(
        paged_version(61),
        "topics",
        (("name", "partitions"), ("partition_index", "active_producers")),
    ),
    65: _Paging(paged_version(65), "transaction_states"),
    66: _Paging(paged_version(66), "transaction_states"),
    69: _Paging(paged_version(69), "groups", (("group_id", "members"),)),
}
assert sorted(_PAGING) == sorted(PAGINATED_APIS)

#: Topic id of a topic asked for by name only (below OffsetFetch v10).
_NO_ID = uuid.UUID(int=0)

#: API key -> the first version that pages its answer.
PAGED_SINCE: dict[int, int] = {k: p.since for k, p in sorted(_PAGING.items())}


# --------------------------------------------------------------------------- the walk


def _version(
    client: KafkaClient, api_key: int, paginate: bool, wanted: VersionRange | None = None
) -> int:
    """The version to use: the newest both sides have (the paged one included when the
    broker advertises it), or the newest unpaged one when ``paginate`` is off."""
    usable = client.versions.usable(api_key, wanted, unstable=True)
    top = usable.max
    if not paginate:
        top = min(top, _PAGING[api_key].since - 1)
        if top < usable.min:
            raise UnsupportedVersionError(
                f"{api_name(api_key)}: no unpaged version in {usable} (paged from "
                f"v{_PAGING[api_key].since})"
            )
    return top


def _cursor_type(request_type: type[Message]) -> type[Struct]:
    """The request's cursor struct class (its one nested struct named ``...Cursor``)."""
    for name, value in vars(request_type).items():
        if name.endswith("Cursor") and isinstance(value, type) and issubclass(value, Struct):
            return value
    raise TypeError(f"{request_type.__name__} has no cursor struct")


def _cursor_fields(cursor: Struct) -> tuple[tuple[str, Any], ...]:
    names: tuple[str, ...] = cursor.__slots__
    return tuple((a, getattr(cursor, a)) for a in names if a != "unknown_tagged_fields")


def _extend(into: list[Any], more: Iterable[Any], nested: Sequence[tuple[str, str]]) -> None:
    """Append ``more`` to ``into``, joining an entry split over two pages."""
    if not nested:
        into.extend(more)
        return
    key, child = nested[0]
    for item in more:
        if into and getattr(into[-1], key) == getattr(item, key):
            _extend(getattr(into[-1], child), getattr(item, child), nested[1:])
        else:
            into.append(item)


async def _walk(
    client: KafkaClient,
    request: M,
    version: int,
    limit: int | None,
    on_page: PageObserver | None,
) -> Any:
    """Send ``request`` at ``version``; when that version pages, follow NextCursor to the
    end and return the pages merged into the first response."""
    api_key = type(request).API_KEY
    assert api_key is not None
    paging = _PAGING[api_key]
    if version < paging.since:
        response = await client.request(request, version)
        _raise_top_error(response, client, version)
        if on_page is not None:
            on_page(client.connection.address, response)
        return response
    request_any: Any = request
    request_any.response_pagination_limit = client.pagination_limit if limit is None else limit
    request_any.cursor = None
    cursor_type = _cursor_type(type(request))
    merged: Any = None
    seen: set[tuple[tuple[str, Any], ...]] = set()
    while True:
        page: Any = await client.request(request, version)
        _raise_top_error(page, client, version)
        if on_page is not None:
            on_page(client.connection.address, page)
        if merged is None:
            merged = page
        else:
            _extend(getattr(merged, paging.items), getattr(page, paging.items), paging.nested)
        next_cursor = page.next_cursor
        if next_cursor is None:
            merged.next_cursor = None
            return merged
        fields = _cursor_fields(next_cursor)
        if fields in seen:
            shown = ", ".join(f"{k}={v!r}" for k, v in fields)
            raise PaginationError(
                f"{api_name(api_key)} v{version} to {client.connection.address}: the broker "
                f"sent the cursor ({shown}) a second time, so its pages would never end"
            )
        seen.add(fields)
        request_any.cursor = cursor_type(**dict(fields))


def _raise_top_error(response: Message, client: KafkaClient, version: int) -> None:
    """A response-wide error fails the call (per-item errors stay in the result)."""
    code = getattr(response, "error_code", 0)
    if code:
        api_key = type(response).API_KEY
        assert api_key is not None
        detail = getattr(response, "error_message", None)
        where = f"{api_name(api_key)} v{version} from {client.connection.address}"
        raise error_for_code(code)(f"{where}: {detail}" if detail else where)


async def _ask_coordinators(
    client: KafkaClient,
    by_node: Mapping[Node, list[str]],
    api_key: int,
    build: Callable[[list[str]], Message],
    paginate: bool,
    limit: int | None,
    on_page: PageObserver | None,
) -> list[Any]:
    """One walk per coordinator, of the request ``build`` makes for the keys it owns."""

    async def ask(node: Node, mine: list[str]) -> Any:
        other = await client.for_node(node.host, node.port)
        return await _walk(other, build(mine), _version(other, api_key, paginate), limit, on_page)

    return await _gather([ask(n, mine) for n, mine in by_node.items()])


async def _gather(calls: Sequence[Coroutine[Any, Any, T]]) -> list[T]:
    tasks = [asyncio.ensure_future(c) for c in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


# --------------------------------------------------------------------------- cluster layout


async def _metadata(client: KafkaClient, topics: Iterable[str] | None) -> MetadataResponse:
    """Brokers, controller and (some) topics, unpaged when possible: routing only."""
    return await list_topics_all(client, topics)


def _brokers(md: MetadataResponse) -> dict[int, tuple[str, int]]:
    return {b.node_id: (b.host, b.port) for b in md.brokers}


async def _client_of(client: KafkaClient, md: MetadataResponse, node_id: int) -> KafkaClient:
    address = _brokers(md).get(node_id)
    if address is None:
        raise LeaderNotAvailableError(f"broker {node_id} is not in the cluster's metadata")
    return await client.for_node(*address)


def _by_topic(tps: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    out: dict[str, list[int]] = {}
    for tp in tps:
        out.setdefault(tp.topic, []).append(tp.partition)
    return list(out.items())


def _partitions(tps: Iterable[TopicPartition | tuple[str, int]]) -> list[TopicPartition]:
    if isinstance(tps, str | bytes):
        raise TypeError("pass (topic, partition) pairs, not one string")
    return list(dict.fromkeys(TopicPartition(*tp) for tp in tps))


async def _leaders(
    client: KafkaClient, tps: Sequence[TopicPartition]
) -> tuple[MetadataResponse, dict[int, list[TopicPartition]], dict[TopicPartition, KafkaError]]:
    """Each partition's leader; partitions without one get their error instead."""
    md = await _metadata(client, sorted({tp.topic for tp in tps}))
    leader: dict[TopicPartition, int] = {}
    topic_error: dict[str, int] = {}
    for t in md.topics:
        if t.name is None:
            continue
        if t.error_code:
            topic_error[t.name] = t.error_code
        for p in t.partitions:
            leader[TopicPartition(t.name, p.partition_index)] = p.leader_id
    alive = _brokers(md)
    by_leader: dict[int, list[TopicPartition]] = {}
    errors: dict[TopicPartition, KafkaError] = {}
    for tp in tps:
        node = leader.get(tp)
        if node is None:
            code = topic_error.get(tp.topic, UnknownTopicOrPartitionError.code)
            errors[tp] = error_for_code(code)(f"no partition {tp.topic}-{tp.partition}")
        elif node < 0 or node not in alive:
            errors[tp] = LeaderNotAvailableError(f"{tp.topic}-{tp.partition} has no leader")
        else:
            by_leader.setdefault(node, []).append(tp)
    return md, by_leader, errors


async def _coordinators(
    client: KafkaClient, keys: Sequence[str], key_type: CoordinatorType
) -> tuple[dict[Node, list[str]], dict[str, KafkaError]]:
    found = await client.find_coordinators(keys, key_type)
    by_node: dict[Node, list[str]] = {}
    errors: dict[str, KafkaError] = {}
    for key in keys:
        where = found[key]
        if isinstance(where, KafkaError):
            errors[key] = where
        else:
            by_node.setdefault(where, []).append(key)
    return by_node, errors


def _keys(keys: Iterable[str], noun: str) -> list[str]:
    if isinstance(keys, str | bytes):
        raise TypeError(f"pass a list of {noun}s, not one string")
    return list(dict.fromkeys(keys))


# --------------------------------------------------------------------------- Metadata


async def list_topics_all(
    client: KafkaClient,
    topics: Iterable[str] | None = None,
    *,
    include_authorized_operations: bool = False,
    paginate: bool = True,
    limit: int | None = None,
    on_page: PageObserver | None = None,
) -> MetadataResponse:
    """Metadata of every topic (``topics=None``) or of the ones named, all partitions.

    Paged (v14) by partition, topics by name then partition index for a full listing and
    in request order for named topics. Never creates a topic.
    """
    names = None if topics is None else _keys(topics, "topic")
    version = _version(client, 3, paginate, VersionRange(1, ANY_VERSION))
    request = MetadataRequest(
        topics=(
            None if names is None else [MetadataRequest.MetadataRequestTopic(name=n) for n in names]
        ),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=include_authorized_operations,
    )
    response: MetadataResponse = await _walk(client, request, version, limit, on_page)
    return response


# --------------------------------------------------------------------------- ListOffsets


async def list_offsets_all(
    client: KafkaClient,
    partitions: Mapping[TopicPartition, int] | Iterable[TopicPartition | tuple[str, int]],
    *,
    timestamp: int = -1,
    isolation_level: int = 0,
    paginate: bool = True,
    limit: int | None = None,
    on_page: PageObserver | None = None,
) -> ListOffsetsResponse:
    """Offsets of the partitions (a mapping gives each its own timestamp; otherwise
    ``timestamp``: -1 latest, -2 earliest, ...), asked of each partition's leader.

    Paged (v12) by partition in request order. The merged answer lists the topics and
    partitions in the caller's order; a partition without a leader carries its error.
    """
    if isinstance(partitions, Mapping):
        stamps = {TopicPartition(*tp): ts for tp, ts in partitions.items()}
    else:
        stamps = dict.fromkeys(_partitions(partitions), timestamp)
    tps = list(stamps)
    md, by_leader, errors = await _leaders(client, tps)

    async def ask(node: int, mine: list[TopicPartition]) -> ListOffsetsResponse:
        other = await _client_of(client, md, node)
        version = _version(other, 2, paginate, VersionRange(1, ANY_VERSION))
        request = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=isolation_level,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=name,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(
                            partition_index=i, timestamp=stamps[TopicPartition(name, i)]
                        )
                        for i in indexes
                    ],
                )
                for name, indexes in _by_topic(mine)
            ],
        )
        response: ListOffsetsResponse = await _walk(other, request, version, limit, on_page)
        return response

    found: dict[TopicPartition, Any] = {}
    for response in await _gather([ask(n, mine) for n, mine in by_leader.items()]):
        for t in response.topics:
            for p in t.partitions:
                found[TopicPartition(t.name, p.partition_index)] = p
    for tp, error in errors.items():
        found[tp] = ListOffsetsResponse.ListOffsetsPartitionResponse(
            partition_index=tp.partition, error_code=error.code
        )
    return ListOffsetsResponse(
        topics=[
            ListOffsetsResponse.ListOffsetsTopicResponse(
                name=name,
                partitions=[found[TopicPartition(name, i)] for i in indexes if (name, i) in found],
            )
            for name, indexes in _by_topic(tps)
        ]
    )


# --------------------------------------------------------------------------- DescribeProducers


async def describe_producers_all(
    client: KafkaClient,
    partitions: Iterable[TopicPartition | tuple[str, int]],
    *,
    paginate: bool = True,
    limit: int | None = None,
    on_page: PageObserver | None = None,
) -> DescribeProducersResponse:
    """The active idempotent producers of each partition, asked of its leader.

    Paged (v1) by producer: partitions in request order, producers newest (highest id)
    first within a partition. The merged answer keeps the caller's order.
    """
    tps = _partitions(partitions)
    md, by_leader, errors = await _leaders(client, tps)

    async def ask(node: int, mine: list[TopicPartition]) -> DescribeProducersResponse:
        other = await _client_of(client, md, node)
        version = _version(other, 61, paginate)
        request = DescribeProducersRequest(
            topics=[
                DescribeProducersRequest.TopicRequest(name=name, partition_indexes=indexes)
                for name, indexes in _by_topic(mine)
            ]
        )
        response: DescribeProducersResponse = await _walk(other, request, version, limit, on_page)
        return response

    found: dict[TopicPartition, Any] = {}
    for response in await _gather([ask(n, mine) for n, mine in by_leader.items()]):
        for t in response.topics:
            for p in t.partitions:
                found[TopicPartition(t.name, p.partition_index)] = p
    for tp, error in errors.items():
        found[tp] = DescribeProducersResponse.PartitionResponse(
            partition_index=tp.partition, error_code=error.code, error_message=error.message
        )
    return DescribeProducersResponse(
        topics=[
            DescribeProducersResponse.TopicResponse(
                name=name,
                partitions=[found[TopicPartition(name, i)] for i in indexes if (name, i) in found],
            )
            for name, indexes in _by_topic(tps)
        ]
    )


# --------------------------------------------------------------------------- DescribeLogDirs


async def describe_log_dirs_all(
    client: KafkaClient,
    topics: Mapping[str, Iterable[int]] | None = None,
    *,
    brokers: Iterable[int] | None = None,
    paginate: bool = True,
    limit: int | None = None,
    on_page: PageObserver | None = None,
) -> dict[int, DescribeLogDirsResponse]:
    """Each broker's log directories and the replicas in them: every replica
    (``topics=None``) or those of the partitions named. ``brokers``: which to ask (all).

    Paged (v6) by partition, per broker: topics by name then partition for a full
    listing, request order otherwise. The result maps broker id to its merged answer.
    """
    md = await _metadata(client, [])
    known = _brokers(md)
    chosen = sorted(known) if brokers is None else list(dict.fromkeys(brokers))
    for node in chosen:
        if node not in known:
            raise ValueError(f"broker {node} is not in the cluster (brokers: {sorted(known)})")
    wanted = (
        None
        if topics is None
        else [
            DescribeLogDirsRequest.DescribableLogDirTopic(
                topic=name, partitions=list(dict.fromkeys(indexes))  # each once: no repeats
            )
            for name, indexes in topics.items()
        ]
    )

    async def ask(node: int) -> DescribeLogDirsResponse:
        other = await client.for_node(*known[node])
        version = _version(other, 35, paginate)
        request = DescribeLogDirsRequest(topics=None if wanted is None else list(wanted))
        response: DescribeLogDirsResponse = await _walk(other, request, version, limit, on_page)
        return response

    answers = await _gather([ask(n) for n in chosen])
    return dict(zip(chosen, answers, strict=True))


# ---------------------------------------------------------- ListPartitionReassignments


async def list_partition_reassignments_all(
    client: KafkaClient,
    partitions: Iterable[TopicPartition | tuple[str, int]] | None = None,
    *,
    timeout_ms: int = 60_000,
    paginate: bool = True,
    limit: int | None = None,
    on_page: PageObserver | None = None,
) -> ListPartitionReassignmentsResponse:
    """Ongoing reassignments (all, or of the partitions named), asked of the controller.

    Paged (v1) by partition: topics by name then partition (request order when named).
    """
    md = await _metadata(client, [])
    target = client
    if md.controller_id in _brokers(md):
        target = await _client_of(client, md, md.controller_id)
    version = _version(target, 46, paginate)
    topics = (
        None
        if partitions is None
        else [
            ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(
                name=name, partition_indexes=indexes
            )
            for name, indexes in _by_topic(_partitions(partitions))
        ]
    )
    request = ListPartitionReassignmentsRequest(timeout_ms=timeout_ms, topics=topics)
    response: ListPartitionReassignmentsResponse = await _walk(
        target, request, version, limit, on_page
    )
    return response


# --------------------------------------------------------------------------- ListGroups


async def list_groups_all(
    client: KafkaClient,
    *,
    states: Iterable[str] = (),
    types: Iterable[str] = (),
    paginate: bool = True,
    limit: int | None = None,
    on_page: PageObserver | None = None,
) -> ListGroupsResponse:
    """Every group of the cluster (each broker lists those it coordinates), optionally
    filtered by state (v4+) and type (v5+).

    Paged (v6) by group, by group id; the merged answer is sorted by group id.
    """
    state_list, type_list = list(states), list(types)
    low = 5 if type_list else 4 if state_list else 0
    md = await _metadata(client, [])

    async def ask(address: tuple[str, int]) -> ListGroupsResponse:
        other = await client.for_node(*address)
        version = _version(other, 16, paginate, VersionRange(low, ANY_VERSION))
        request = ListGroupsRequest(states_filter=state_list, types_filter=type_list)
        response: ListGroupsResponse = await _walk(other, request, version, limit, on_page)
        return response

    answers = await _gather([ask(a) for _, a in sorted(_brokers(md).items())])
    merged = ListGroupsResponse(error_code=0)
    merged.groups = list(
        heapq.merge(*(sorted(a.groups, key=_group_id) for a in answers), key=_group_id)
    )
    return merged


def _group_id(g: ListGroupsResponse.ListedGroup) -> str:
    return g.group_id


# --------------------------------------------------------------------------- DescribeGroups


async def describe_groups_all(
    client: KafkaClient,
    groups: Iterable[str],
    *,
    include_authorized_operations: bool = False,
    paginate: bool = True,
    limit: int | None = None,
    on_page: PageObserver | None = None,
) -> DescribeGroupsResponse:
    """Classic groups with all their members, asked of each group's coordinator.

    Paged (v7) by member: groups in request order, members by member id within a group.
    A group whose coordinator cannot be found is answered with that error.
    """
    ids = _keys(groups, "group")
    by_node, errors = await _coordinators(client, ids, CoordinatorType.GROUP)

    def build(mine: list[str]) -> DescribeGroupsRequest:
        return DescribeGroupsRequest(
            groups=mine, include_authorized_operations=include_authorized_operations
        )

    found: dict[str, DescribeGroupsResponse.DescribedGroup] = {}
    answers = await _ask_coordinators(client, by_node, 15, build, paginate, limit, on_page)
    for response in answers:
        for g in response.groups:
            found[g.group_id] = g
    for group_id, error in errors.items():
        found[group_id] = DescribeGroupsResponse.DescribedGroup(
            error_code=error.code, group_id=group_id
        )
    return DescribeGroupsResponse(groups=[found[g] for g in ids if g in found])


# --------------------------------------------------------------------------- ConsumerGroupDescribe


async def consumer_group_describe_all(
    client: KafkaClient,
    groups: Iterable[str],
    *,
    include_authorized_operations: bool = False,
    paginate: bool = True,
    limit: int | None = None,
    on_page: PageObserver | None = None,
) -> ConsumerGroupDescribeResponse:
    """Consumer-protocol groups with all their members, asked of each group's coordinator.

    Paged (v2) by member: groups in request order, members by member id within a group.
    """
    ids = _keys(groups, "group")
    by_node, errors = await _coordinators(client, ids, CoordinatorType.GROUP)

    def build(mine: list[str]) -> ConsumerGroupDescribeRequest:
        return ConsumerGroupDescribeRequest(
            group_ids=mine, include_authorized_operations=include_authorized_operations
        )

    found: dict[str, ConsumerGroupDescribeResponse.DescribedGroup] = {}
    answers = await _ask_coordinators(client, by_node, 69, build, paginate, limit, on_page)
    for response in answers:
        for g in response.groups:
            found[g.group_id] = g
    for group_id, error in errors.items():
        found[group_id] = ConsumerGroupDescribeResponse.DescribedGroup(
            error_code=error.code, error_message=error.message, group_id=group_id
        )
    return ConsumerGroupDescribeResponse(groups=[found[g] for g in ids if g in found])


# --------------------------------------------------------------------------- OffsetFetch


async def fetch_offsets_all(
    client: KafkaClient,
    groups: Mapping[str, Iterable[TopicPartition] | None] | Iterable[str],
    *,
    require_stable: bool = False,
    paginate: bool = True,
    limit: int | None = None,
    on_page: PageObserver | None = None,
) -> dict[str, GroupOffsets | KafkaError]:
    """Committed offsets of each group, asked of its coordinator; the result has the shape
    of `KafkaClient.fetch_offsets` (group -> its offsets or its error).

    Paged (v11) by partition over all the groups of one request: groups in request order,
    partitions in request order (by topic then partition for a group's full listing).
    Below v11 this is `KafkaClient.fetch_offsets` on each coordinator.
    """
    if isinstance(groups, str | bytes):
        raise TypeError("pass a list of groups, not one string")
    wanted: dict[str, list[TopicPartition] | None] = (
        {g: None if tps is None else _partitions(tps) for g, tps in groups.items()}
        if isinstance(groups, Mapping)
        else dict.fromkeys(_keys(groups, "group"))
    )
    ids = list(wanted)
    by_node, errors = await _coordinators(client, ids, CoordinatorType.GROUP)

    async def ask(node: Node, mine: list[str]) -> dict[str, GroupOffsets | KafkaError]:
        other = await client.for_node(node.host, node.port)
        low = 7 if require_stable else 8
        usable = other.versions.usable(9, unstable=True)
        if not paginate or usable.max < _PAGING[9].since or usable.max < low:
            return await other.fetch_offsets(
                {g: wanted[g] for g in mine}, require_stable=require_stable
            )
        version = _version(other, 9, paginate, VersionRange(8, ANY_VERSION))
        # v10+ names topics by id both ways: look the ids up once. A name the cluster does
        # not know has no id to ask by; its partitions get UNKNOWN_TOPIC_OR_PARTITION.
        ids: dict[str, uuid.UUID] = {}
        if version >= 10:
            ids = {t.name: t.topic_id for t in (await _metadata(other, None)).topics if t.name}
        unknown: dict[str, list[TopicPartition]] = {}
        groups = []
        for g in mine:
            topics = None
            if wanted[g] is not None:
                topics = []
                for name, indexes in _by_topic(wanted[g] or []):
                    if version >= 10 and name not in ids:
                        unknown.setdefault(g, []).extend(TopicPartition(name, i) for i in indexes)
                        continue
                    topics.append(
                        OffsetFetchRequest.OffsetFetchRequestTopics(
                            name=name, topic_id=ids.get(name, _NO_ID), partition_indexes=indexes
                        )
                    )
            groups.append(OffsetFetchRequest.OffsetFetchRequestGroup(group_id=g, topics=topics))
        request = OffsetFetchRequest(groups=groups, require_stable=require_stable)
        response: OffsetFetchResponse = await _walk(other, request, version, limit, on_page)
        names = {topic_id: name for name, topic_id in ids.items()}
        out: dict[str, GroupOffsets | KafkaError] = {}
        for group in response.groups:
            if version >= 10:
                group.topics = [t for t in group.topics if t.topic_id in names]
                for t in group.topics:
                    t.name = names[t.topic_id]
            if group.error_code:
                out[group.group_id] = response_error(group.error_code, None)
                continue
            offsets = group_offsets(group.topics)
            for tp in unknown.get(group.group_id, []):
                offsets[tp] = UnknownTopicOrPartitionError(f"no topic {tp.topic!r} in the cluster")
            out[group.group_id] = offsets
        for group_id in mine:
            out.setdefault(group_id, {})  # nothing committed and nothing asked for
        return out

    found: dict[str, GroupOffsets | KafkaError] = dict(errors)
    for part in await _gather([ask(n, mine) for n, mine in by_node.items()]):
        found.update(part)
    return {g: found[g] for g in ids}


# --------------------------------------------------------------------------- transactions


async def list_transactions_all(
    client: KafkaClient,
    *,
    states: Iterable[str] = (),
    producer_ids: Iterable[int] = (),
    duration_ms: int = -1,
    paginate: bool = True,
    limit: int | None = None,
    on_page: PageObserver | None = None,
) -> ListTransactionsResponse:
    """Every transaction of the cluster (each broker lists those it coordinates), filtered
    by state, producer id and (v1+) running for longer than ``duration_ms``.

    Paged (v3) by transactional id; the merged answer is sorted by transactional id.
    """
    state_list, pid_list = list(states), list(producer_ids)
    low = 1 if duration_ms >= 0 else 0
    md = await _metadata(client, [])

    async def ask(address: tuple[str, int]) -> ListTransactionsResponse:
        other = await client.for_node(*address)
        version = _version(other, 66, paginate, VersionRange(low, ANY_VERSION))
        request = ListTransactionsRequest(
            state_filters=state_list, producer_id_filters=pid_list, duration_filter=duration_ms
        )
        response: ListTransactionsResponse = await _walk(other, request, version, limit, on_page)
        return response

    answers = await _gather([ask(a) for _, a in sorted(_brokers(md).items())])
    merged = ListTransactionsResponse(error_code=0)
    merged.unknown_state_filters = sorted({s for a in answers for s in a.unknown_state_filters})
    merged.transaction_states = sorted(
        (t for a in answers for t in a.transaction_states),
        key=lambda t: (t.transactional_id, -t.producer_id),
    )
    return merged


async def describe_transactions_all(
    client: KafkaClient,
    transactional_ids: Iterable[str],
    *,
    paginate: bool = True,
    limit: int | None = None,
    on_page: PageObserver | None = None,
) -> DescribeTransactionsResponse:
    """The state of each transactional id, asked of its transaction coordinator.

    Paged (v1) by transactional id, in request order; the merged answer keeps that order.
    """
    ids = _keys(transactional_ids, "transactional id")
    by_node, errors = await _coordinators(client, ids, CoordinatorType.TRANSACTION)

    def build(mine: list[str]) -> DescribeTransactionsRequest:
        return DescribeTransactionsRequest(transactional_ids=mine)

    found: dict[str, DescribeTransactionsResponse.TransactionState] = {}
    answers = await _ask_coordinators(client, by_node, 65, build, paginate, limit, on_page)
    for response in answers:
        for t in response.transaction_states:
            found[t.transactional_id] = t
    for tid, error in errors.items():
        found[tid] = DescribeTransactionsResponse.TransactionState(
            error_code=error.code, transactional_id=tid
        )
    return DescribeTransactionsResponse(transaction_states=[found[t] for t in ids if t in found])


# --------------------------------------------------------------------------- DescribeAcls


async def describe_acls_all(
    client: KafkaClient,
    *,
    resource_type: int = 1,
    resource_name: str | None = None,
    pattern_type: int = 1,
    principal: str | None = None,
    host: str | None = None,
    operation: int = 1,
    permission_type: int = 1,
    paginate: bool = True,
    limit: int | None = None,
    on_page: PageObserver | None = None,
) -> DescribeAclsResponse:
    """The ACL bindings matching the filter (every one by default: ANY is 1 for the
    resource type, pattern type, operation and permission), grouped by resource.

    Paged (v4) by resource: by resource name, then type, then pattern type.
    """
    low = 0 if pattern_type == 3 else 1  # only LITERAL (3) exists before v1
    version = _version(client, 29, paginate, VersionRange(low, ANY_VERSION))
    request = DescribeAclsRequest(
        resource_type_filter=resource_type,
        resource_name_filter=resource_name,
        pattern_type_filter=pattern_type,
        principal_filter=principal,
        host_filter=host,
        operation=operation,
        permission_type=permission_type,
    )
    response: DescribeAclsResponse = await _walk(client, request, version, limit, on_page)
    return response


# --------------------------------------------------------------------------- DescribeConfigs


class ConfigResource(NamedTuple):
    """A config resource: type (2 topic, 4 broker, 8 broker logger), name, and the config
    names wanted (None: all)."""

    type: int
    name: str
    keys: Sequence[str] | None = None


#: Resource types answered by the broker they name.
_PER_BROKER = (4, 8)


async def describe_configs_all(
    client: KafkaClient,
    resources: Iterable[ConfigResource | tuple[int, str] | tuple[int, str, Sequence[str] | None]],
    *,
    include_synonyms: bool = False,
    include_documentation: bool = False,
    paginate: bool = True,
    limit: int | None = None,
    on_page: PageObserver | None = None,
) -> DescribeConfigsResponse:
    """The configs of each resource; a broker's own resources are asked of that broker.

    Paged (v5) by whole resources in request order, as many as fit in the limit counted
    in configs (at least one per page). The merged answer keeps the caller's order.
    """
    wanted = [ConfigResource(*r) for r in resources]
    seen_keys: set[tuple[int, str]] = set()
    for r in wanted:
        if (r.type, r.name) in seen_keys:
            raise ValueError(f"config resource (type {r.type}, {r.name!r}) is listed twice")
        seen_keys.add((r.type, r.name))
    md: MetadataResponse | None = None
    targets: dict[int, KafkaClient] = {}
    groups: dict[int, list[ConfigResource]] = {}
    for r in wanted:
        target = client
        if r.type in _PER_BROKER and r.name.isdigit():
            if md is None:
                md = await _metadata(client, [])
            where = _brokers(md).get(int(r.name))
            if where is not None:  # an unknown broker: the connected one answers the error
                target = await client.for_node(*where)
        targets[id(target)] = target
        groups.setdefault(id(target), []).append(r)
    low = 3 if include_documentation else 1 if include_synonyms else 0

    async def ask(other: KafkaClient, mine: list[ConfigResource]) -> DescribeConfigsResponse:
        version = _version(other, 32, paginate, VersionRange(low, ANY_VERSION))
        request = DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=r.type,
                    resource_name=r.name,
                    configuration_keys=None if r.keys is None else list(r.keys),
                )
                for r in mine
            ],
            include_synonyms=include_synonyms,
            include_documentation=include_documentation,
        )
        response: DescribeConfigsResponse = await _walk(other, request, version, limit, on_page)
        return response

    found: dict[tuple[int, str], DescribeConfigsResponse.DescribeConfigsResult] = {}
    for response in await _gather([ask(targets[t], mine) for t, mine in groups.items()]):
        for res in response.results:
            found[(res.resource_type, res.resource_name)] = res
    return DescribeConfigsResponse(
        results=[found[(r.type, r.name)] for r in wanted if (r.type, r.name) in found]
    )
