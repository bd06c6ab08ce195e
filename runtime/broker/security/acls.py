"""Stored ACL bindings and Kafka's filter semantics (CreateAcls, DescribeAcls, DeleteAcls).

The bindings are enforced by `authorizer.Authorizer` once ``authorizer.class.name`` is set.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass

from kafkagen.runtime.errors import InvalidRequestError

from ..sorted_keys import SortedKeysDict

__all__ = [
    "AclBinding",
    "AclFilter",
    "AclOperation",
    "AclPermission",
    "AclStore",
    "PatternType",
    "ResourceType",
]


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    def validate(self) -> None:
        """Raise INVALID_REQUEST for a binding that cannot be stored."""
        if self.resource_type not in ResourceType.__members__.values() or self.resource_type in (
            ResourceType.ANY,
            ResourceType.UNKNOWN,
        ):
            raise InvalidRequestError(f"invalid resource type {self.resource_type}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidRequestError(
                f"a stored ACL needs a LITERAL or PREFIXED pattern, not {self.pattern_type}"
            )
        if not self.resource_name:
            raise InvalidRequestError("the resource name cannot be empty")
        if self.operation not in AclOperation.__members__.values() or self.operation in (
            AclOperation.ANY,
            AclOperation.UNKNOWN,
        ):
            raise InvalidRequestError(f"invalid operation {self.operation}")
        if self.permission_type not in (AclPermission.ALLOW, AclPermission.DENY):
            raise InvalidRequestError(f"invalid permission type {self.permission_type}")
        kind, sep, name = self.principal.partition(":")
        if not sep or not kind or not name:
            raise InvalidRequestError(f"principal {self.principal!r} must look like 'User:alice'")


@dataclass(frozen=True, slots=True)
class AclFilter:
    """A filter as DescribeAcls and DeleteAcls send it; None fields match anything."""

    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission_type: int

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != b.resource_type:
            return False
        if not self._pattern_matches(b):
            return False
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != b.operation:
            return False
        return not (
            self.permission_type != AclPermission.ANY and self.permission_type != b.permission_type
        )

    def _pattern_matches(self, b: AclBinding) -> bool:
        name = self.resource_name
        pt = self.pattern_type
        if pt == PatternType.ANY:
            return name is None or name == b.resource_name
        if pt == PatternType.MATCH:
            # Every stored pattern that would apply to a resource of that name.
            if name is None:
                return True
            if b.pattern_type == PatternType.LITERAL:
                return b.resource_name in (name, WILDCARD)
            return b.pattern_type == PatternType.PREFIXED and name.startswith(b.resource_name)
        return pt == b.pattern_type and (name is None or name == b.resource_name)

    def validate(self) -> None:
        if self.pattern_type == PatternType.UNKNOWN or self.resource_type == ResourceType.UNKNOWN:
            raise InvalidRequestError("a filter cannot use the UNKNOWN resource or pattern type")
        if self.operation == AclOperation.UNKNOWN:
            raise InvalidRequestError("a filter cannot use the UNKNOWN operation")
        if self.permission_type == AclPermission.UNKNOWN:
            raise InvalidRequestError("a filter cannot use the UNKNOWN permission type")


#: A stored resource pattern: (resource type, resource name, pattern type).
ResourceKey = tuple[int, str, int]


class AclStore:
    """The cluster's ACL bindings, in creation order, also indexed by resource pattern in
    sorted order so that a DescribeAcls page starts with a bisect."""

    def __init__(self) -> None:
        self._bindings: dict[AclBinding, None] = {}
        self._by_resource: SortedKeysDict[ResourceKey, dict[AclBinding, None]] = SortedKeysDict()

    def __len__(self) -> int:
        return len(self._bindings)

    def add(self, binding: AclBinding) -> None:
        binding.validate()
        self._bindings[binding] = None
        key = (binding.resource_type, binding.resource_name, binding.pattern_type)
        self._by_resource.setdefault(key, {})[binding] = None

    def all(self) -> list[AclBinding]:
        return list(self._bindings)

    def find(self, flt: AclFilter) -> list[AclBinding]:
        return [b for b in self._bindings if flt.matches(b)]

    def resources_from(
        self, flt: AclFilter, start: tuple[int, str] | None
    ) -> Iterator[tuple[ResourceKey, list[AclBinding]]]:
        """Resource patterns by type, name and pattern type, from the first at or after
        ``start`` (type, name), each with its bindings that match ``flt`` in creation order;
        patterns with none are left out."""
        lowest: tuple[int, ...] | tuple[int, str] | None = start
        typed = flt.resource_type != ResourceType.ANY
        if typed and (lowest is None or lowest < (flt.resource_type,)):
            lowest = (flt.resource_type,)  # skip the other types' patterns
        for key in self._by_resource.keys_from(lowest):
            if typed and key[0] > flt.resource_type:
                return
            found = [b for b in self._by_resource[key] if flt.matches(b)]
            if found:
                yield key, found

    def delete(self, flt: AclFilter) -> list[AclBinding]:
        gone = self.find(flt)
        for b in gone:
            del self._bindings[b]
            key = (b.resource_type, b.resource_name, b.pattern_type)
            bindings = self._by_resource[key]
            del bindings[b]
            if not bindings:
                del self._by_resource[key]
        return gone
