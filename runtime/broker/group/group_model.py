"""The classic group model: a group's members, generation and state, and the state rules.

A classic group moves between Kafka's five states (`GroupState`); `Group.transition` allows
exactly the moves Kafka's ``GroupState`` allows, from the states each one may be entered
from, and refuses any other naming both states. The join/sync/heartbeat protocol that
drives the moves is in `group_coordinator`; committed offsets are kept in
`Group.offsets` and written by `_offset_store`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.purgatory import DelayedOperation
from kafkagen.runtime.topic_partition import TopicPartition

from ..sorted_keys import SortedKeysDict

__all__ = [
    "ENTERED_FROM",
    "Group",
    "GroupState",
    "IllegalGroupTransitionError",
    "JoinCallback",
    "JoinResult",
    "Member",
    "OffsetEntry",
    "SyncCallback",
    "SyncResult",
]


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


#: Kafka's rules for classic groups: the states from which each state may be entered.
ENTERED_FROM: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalGroupTransitionError(RuntimeError):
    """A move `ENTERED_FROM` does not allow: a bug in the protocol code, never a client's."""


@dataclass(slots=True)
class JoinResult:
    error: int = 0
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    #: Only for the leader: (member id, group instance id, metadata) of every member.
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    #: A returning static leader keeps the current assignment (KIP-814, v9+).
    skip_assignment: bool = False


@dataclass(slots=True)
class SyncResult:
    error: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


@dataclass(slots=True)
class OffsetEntry:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


@dataclass(eq=False, slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_callback: JoinCallback | None = None
    sync_callback: SyncCallback | None = None
    heartbeat: DelayedOperation | None = None
    is_new: bool = False

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def same_protocols(self, protocols: Sequence[tuple[str, bytes]]) -> bool:
        return list(self.protocols) == list(protocols)


class Group:
    """One classic group: members, generation, state, and its committed offsets."""

    def __init__(self, group_id: str, now_ms: int) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.state_timestamp = now_ms
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        #: Member ids handed out with MEMBER_ID_REQUIRED, waiting for the rejoin.
        self.pending_members: dict[str, DelayedOperation | None] = {}
        #: Sorted too, so OffsetFetch pages of a full listing start with a bisect.
        self.offsets: SortedKeysDict[TopicPartition, OffsetEntry] = SortedKeysDict()
        self.join_op: DelayedOperation | None = None
        self.new_member_added = False

    def transition(self, state: GroupState, now_ms: int) -> None:
        """Enter ``state``; raises `IllegalGroupTransitionError` unless Kafka allows the move."""
        if self.state not in ENTERED_FROM[state]:
            raise IllegalGroupTransitionError(
                f"group {self.group_id!r} cannot move from {self.state.value} to {state.value}"
            )
        self.state = state
        self.state_timestamp = now_ms

    def member_error(
        self, member_id: str, instance_id: str | None, *, must_be_member: bool = True
    ) -> int:
        """0, or the error for a member that is unknown or fenced by its static instance.

        ``must_be_member=False`` accepts a caller that is no member at all (an empty
        ``member_id``: a transactional producer outside the group).
        """
        if instance_id is not None:
            current = self.static_members.get(instance_id)
            if current is not None and current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members and (must_be_member or member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        return 0

    def has_all_members_joined(self) -> bool:
        return not self.pending_members and all(
            m.join_callback is not None for m in self.members.values()
        )

    def candidate_protocols(self) -> list[str]:
        members = list(self.members.values())
        if not members:
            return []
        common = [name for name, _ in members[0].protocols]
        for m in members[1:]:
            names = {name for name, _ in m.protocols}
            common = [c for c in common if c in names]
        return common

    def supports(self, protocol_type: str, protocols: Sequence[tuple[str, bytes]]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        names = {n for n, _ in protocols}
        return protocol_type == self.protocol_type and any(
            c in names for c in self.candidate_protocols()
        )

    def select_protocol(self) -> str:
        candidates = self.candidate_protocols()
        votes = dict.fromkeys(candidates, 0)
        for m in self.members.values():
            for name, _ in m.protocols:
                if name in votes:
                    votes[name] += 1
                    break
        return max(candidates, key=lambda c: votes[c])

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol only), None if unknown."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None
        from kafkagen.generated import other_type

        sub_type = other_type("ConsumerProtocolSubscription")
        topics: set[str] = set()
        for m in self.members.values():
            data = m.metadata_for(self.protocol_name)
            try:
                version = int.from_bytes(data[:2], "big", signed=True)
                version = min(max(version, 0), sub_type.HIGHEST_VERSION)
                sub, _ = sub_type.decode_prefix(memoryview(data)[2:], version)
            except Exception:
                return None
            topics.update(sub.topics)  # type: ignore[attr-defined]
        return topics


class MemberDeadline(DelayedOperation):
    """A member's session or revocation deadline in a coordinator-driven group: only a
    timeout or a replacement ends it; ``expire(op)`` runs when it times out."""

    __slots__ = ("_expire",)

    def __init__(self, delay_ms: int, expire: Callable[[MemberDeadline], None]) -> None:
        super().__init__(delay_ms)
        self._expire = expire

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        if self.is_expired:
            self._expire(self)
