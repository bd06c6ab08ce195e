"""Request builders: one logical request in, one or more wire requests out, one result back.

A builder knows its API key and the versions it can use, turns the version range negotiated
with a broker into a list of ``(version, request)`` pairs, and merges the responses into one
result. That is the "one-to-many mapping" of KIP-347: a batched request (FindCoordinator
v4+, OffsetFetch v8+) goes out as ONE request when the broker supports the batched version,
and as one single-key request per key otherwise. Either way the merged result is the same
per-key map, and a key's error stays with that key instead of failing the whole call.

Kafka's own builders refuse to build a batch below the batched version
(``NoBatchedFindCoordinatorsException``); ``split=False`` (or ``batched_only``) keeps that
behaviour, for callers who would rather know than send N requests.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar

from kafkagen.generated.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafkagen.generated.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from kafkagen.runtime.errors import (
    KafkaError,
    TopicAuthorizationFailedError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    error_for_code,
)
from kafkagen.runtime.message import Message
from kafkagen.runtime.topic_partition import TopicPartition

from .versions import VersionRange, api_name

__all__ = [
    "BatchedKeysBuilder",
    "BatchingUnsupportedError",
    "CommittedOffset",
    "CoordinatorType",
    "Exchange",
    "FindCoordinatorBuilder",
    "GroupOffsets",
    "Node",
    "OffsetFetchBuilder",
    "RequestBuilder",
    "group_offsets",
    "response_error",
]

#: The top of a version range that a builder does not limit.
ANY_VERSION = 0x7FFF

R = TypeVar("R")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
B = TypeVar("B", bound="BatchedKeysBuilder[Any, Any]")
M = TypeVar("M", bound=Message)


class Exchange(NamedTuple):
    """One request as sent and the response it got."""

    version: int
    request: Message
    response: Message


class BatchingUnsupportedError(UnsupportedVersionError):
    """Several keys cannot share one request at the usable version, and splitting is off."""


class RequestBuilder(ABC, Generic[R]):
    """One logical request to one broker, whatever the number of wire requests it takes."""

    api_key: ClassVar[int]

    def versions(self) -> VersionRange:
        """The versions this builder can use; the codec's own range narrows it further.

        Override when a request needs a feature of a later version (a key type, a flag).
        """
        return VersionRange(0, ANY_VERSION)

    @abstractmethod
    def build(self, usable: VersionRange) -> list[tuple[int, Message]]:
        """The wire requests, each with its version, for the versions both sides support.

        May be empty when there is nothing to ask; `merge` then gets no exchanges.
        """

    @abstractmethod
    def merge(self, exchanges: Sequence[Exchange]) -> R:
        """One result from the responses, given in the order `build` returned the requests."""


class BatchedKeysBuilder(RequestBuilder[dict[K, V | KafkaError]], Generic[K, V]):
    """A request about many keys that carries one key before ``batched_since`` and a list
    of keys from then on; the result maps every key to its value or its own error."""

    #: The first version whose request carries several keys.
    batched_since: ClassVar[int]
    #: What a key is, for error messages ("key", "group").
    key_noun: ClassVar[str] = "key"

    def __init__(self, keys: Iterable[K], *, split: bool = True) -> None:
        if isinstance(keys, str | bytes):
            # A lone string would otherwise become one key per character.
            raise TypeError(f"pass a list of {self.key_noun}s, not one string")
        self.keys: list[K] = list(dict.fromkeys(keys))  # unique, in the caller's order
        self.split = split

    @classmethod
    def batched_only(cls: type[B], *args: Any, **kwargs: Any) -> B:
        """The builder that refuses to split, as Kafka's ``Builder.build`` does."""
        return cls(*args, split=False, **kwargs)

    def build(self, usable: VersionRange) -> list[tuple[int, Message]]:
        if not self.keys:
            return []
        version = usable.max
        if version >= self.batched_since:
            return [(version, self.batched_request(self.keys, version))]
        if len(self.keys) > 1 and not self.split:
            name = api_name(self.api_key)
            raise BatchingUnsupportedError(
                f"cannot put {len(self.keys)} {self.key_noun}s in one {name} v{version} "
                f"request: {name} carries several {self.key_noun}s from v{self.batched_since}, "
                f"and the usable versions are {usable}; build with split=True to send one "
                f"request per {self.key_noun}"
            )
        return [(version, self.single_request(key, version)) for key in self.keys]

    def merge(self, exchanges: Sequence[Exchange]) -> dict[K, V | KafkaError]:
        found: dict[K, V | KafkaError] = {}
        for exchange in exchanges:
            found.update(self.results(exchange))
        # Only the keys asked for, in their order; one the broker skipped gets an error
        # rather than silently vanishing from the result.
        return {k: found[k] if k in found else self.missing(k) for k in self.keys}

    def missing(self, key: K) -> KafkaError:
        return UnknownServerError(f"the broker's response did not mention {self.key_noun} {key!r}")

    @abstractmethod
    def batched_request(self, keys: Sequence[K], version: int) -> Message:
        """A request for all ``keys`` at ``version`` (>= ``batched_since``)."""

    @abstractmethod
    def single_request(self, key: K, version: int) -> Message:
        """A request for one key at ``version`` (< ``batched_since``)."""

    @abstractmethod
    def results(self, exchange: Exchange) -> Mapping[K, V | KafkaError]:
        """The per-key results one response holds."""


def _expect(obj: Message, cls: type[M]) -> M:
    if not isinstance(obj, cls):
        raise TypeError(f"expected a {cls.__name__}, got {type(obj).__name__}")
    return obj


def response_error(code: int, message: str | None) -> KafkaError:
    """The error for a response's code, with the broker's message when it sent one."""
    return error_for_code(code)(message or None)


# --------------------------------------------------------------------------- FindCoordinator


class CoordinatorType(enum.IntEnum):
    """FindCoordinator's key types."""

    GROUP = 0
    TRANSACTION = 1
    SHARE = 2


#: The first FindCoordinator version that knows each key type (v0 has no key type field).
_KEY_TYPE_SINCE = {
    CoordinatorType.GROUP: 0,
    CoordinatorType.TRANSACTION: 1,
    CoordinatorType.SHARE: 6,
}


@dataclass(frozen=True, slots=True)
class Node:
    """A broker, as FindCoordinator names a coordinator."""

    node_id: int
    host: str
    port: int


class FindCoordinatorBuilder(BatchedKeysBuilder[str, Node]):
    """The coordinators of many keys: one v4+ request, or one request per key below v4.

    Result: key -> `Node`, or the key's `KafkaError` (below v4 the response's top-level
    error belongs to the one key that request asked about).
    """

    api_key: ClassVar[int] = 10
    batched_since: ClassVar[int] = 4

    def __init__(
        self,
        keys: Iterable[str],
        key_type: CoordinatorType | int = CoordinatorType.GROUP,
        *,
        split: bool = True,
    ) -> None:
        super().__init__(keys, split=split)
        self.key_type = CoordinatorType(key_type)

    def versions(self) -> VersionRange:
        return VersionRange(_KEY_TYPE_SINCE[self.key_type], ANY_VERSION)

    def batched_request(self, keys: Sequence[str], version: int) -> Message:
        return FindCoordinatorRequest(key_type=self.key_type, coordinator_keys=list(keys))

    def single_request(self, key: str, version: int) -> Message:
        # v0 has no key type: versions() keeps other types off it, and GROUP is its default.
        return FindCoordinatorRequest(key=key, key_type=self.key_type if version >= 1 else 0)

    def results(self, exchange: Exchange) -> dict[str, Node | KafkaError]:
        response = _expect(exchange.response, FindCoordinatorResponse)
        if exchange.version >= self.batched_since:
            return {c.key: _coordinator(c) for c in response.coordinators}
        request = _expect(exchange.request, FindCoordinatorRequest)
        return {request.key: _coordinator(response)}


def _coordinator(
    r: FindCoordinatorResponse | FindCoordinatorResponse.Coordinator,
) -> Node | KafkaError:
    if r.error_code:
        return response_error(r.error_code, r.error_message)
    return Node(r.node_id, r.host, r.port)


# --------------------------------------------------------------------------- OffsetFetch


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """A partition's committed offset; ``leader_epoch`` is -1 when unknown (before v5)."""

    offset: int
    leader_epoch: int
    metadata: str | None


#: A group's offsets: a partition maps to its committed offset, to None when nothing is
#: committed (the broker answers offset -1), or to that partition's own error.
GroupOffsets = dict[TopicPartition, CommittedOffset | None | KafkaError]

#: Below v2 the group's error is only in the partitions; these two are a partition's own.
_PARTITION_ERRORS = frozenset(
    {UnknownTopicOrPartitionError.code, TopicAuthorizationFailedError.code}
)

#: v10 names topics by id (a metadata lookup) and the paged version needs follow-up
#: requests: this builder makes neither, so it stays below both.
_OFFSET_FETCH_MAX = 9


class OffsetFetchBuilder(BatchedKeysBuilder[str, GroupOffsets]):
    """The committed offsets of many groups: one v8+ request, or one per group below v8.

    ``groups`` maps a group id to the partitions wanted, or to None for all of them (which
    needs v2+); a plain list of group ids asks for all partitions of each. Result: group ->
    `GroupOffsets`, or the group's `KafkaError`.
    """

    api_key: ClassVar[int] = 9
    batched_since: ClassVar[int] = 8
    key_noun: ClassVar[str] = "group"

    def __init__(
        self,
        groups: Mapping[str, Iterable[TopicPartition] | None] | Iterable[str],
        *,
        require_stable: bool = False,
        split: bool = True,
    ) -> None:
        if isinstance(groups, str | bytes):
            raise TypeError("pass a list of groups, not one string")
        if isinstance(groups, Mapping):
            wanted: dict[str, list[TopicPartition] | None] = {
                g: None if tps is None else [TopicPartition(*tp) for tp in tps]
                for g, tps in groups.items()
            }
        else:
            wanted = dict.fromkeys(groups)
        super().__init__(wanted, split=split)
        self.partitions = wanted
        self.require_stable = require_stable

    def versions(self) -> VersionRange:
        # Kafka's builder can drop require_stable below v7 silently; failing says why.
        low = 0
        if any(tps is None for tps in self.partitions.values()):
            low = 2
        if self.require_stable:
            low = 7
        return VersionRange(low, _OFFSET_FETCH_MAX)

    def batched_request(self, keys: Sequence[str], version: int) -> Message:
        group_type = OffsetFetchRequest.OffsetFetchRequestGroup
        topic_type = OffsetFetchRequest.OffsetFetchRequestTopics
        groups = []
        for g in keys:
            tps = self.partitions[g]
            topics = (
                None
                if tps is None
                else [topic_type(name=t, partition_indexes=ps) for t, ps in _by_topic(tps)]
            )
            groups.append(group_type(group_id=g, topics=topics))
        return OffsetFetchRequest(groups=groups, require_stable=self.require_stable)

    def single_request(self, key: str, version: int) -> Message:
        topic_type = OffsetFetchRequest.OffsetFetchRequestTopic
        tps = self.partitions[key]
        topics = (
            None
            if tps is None
            else [topic_type(name=t, partition_indexes=ps) for t, ps in _by_topic(tps)]
        )
        return OffsetFetchRequest(group_id=key, topics=topics, require_stable=self.require_stable)

    def results(self, exchange: Exchange) -> dict[str, GroupOffsets | KafkaError]:
        response = _expect(exchange.response, OffsetFetchResponse)
        if exchange.version >= self.batched_since:
            return {
                g.group_id: (
                    response_error(g.error_code, None) if g.error_code else group_offsets(g.topics)
                )
                for g in response.groups
            }
        request = _expect(exchange.request, OffsetFetchRequest)
        if exchange.version >= 2:
            code = response.error_code
        else:
            code = next(
                (
                    p.error_code
                    for t in response.topics
                    for p in t.partitions
                    if p.error_code and p.error_code not in _PARTITION_ERRORS
                ),
                0,
            )
        offsets = response_error(code, None) if code else group_offsets(response.topics)
        return {request.group_id: offsets}


def _by_topic(tps: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return list(by_topic.items())


def group_offsets(
    topics: (
        Sequence[OffsetFetchResponse.OffsetFetchResponseTopic]
        | Sequence[OffsetFetchResponse.OffsetFetchResponseTopics]
    ),
) -> GroupOffsets:
    out: GroupOffsets = {}
    for t in topics:
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            if p.error_code:
                out[tp] = response_error(p.error_code, None)
            elif p.committed_offset < 0:
                out[tp] = None
            else:
                # The decoder leaves committed_leader_epoch at -1 before v5.
                out[tp] = CommittedOffset(p.committed_offset, p.committed_leader_epoch, p.metadata)
    return out
