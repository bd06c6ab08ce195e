"""Share groups' membership (KIP-932): members join and leave with ShareGroupHeartbeat and
get their partitions from the coordinator, assigned by the simple assignor's rules.

A share group has no revocation phase: a partition may be consumed by several members at
once, so a member takes its new assignment with the group's epoch at once. Every subscribed
member gets partitions: with fewer members than partitions each partition goes to one
member; with more, each member gets one partition and partitions are shared.

Groups live in the coordinator's memory (Kafka also writes them to ``__consumer_offsets``):
they are lost when the coordinator moves. A member that does not heartbeat within
``group.share.session.timeout.ms`` is removed when its group is next used.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kafkagen.runtime.errors import (
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    InvalidRequestError,
    UnknownMemberIdError,
)

from ..config.store import ConfigStore
from ..coordinator.coordinator_log import CoordinatorLog
from ..metadata.cluster_metadata import ClusterMetadata
from ..sorted_keys import SortedKeysDict

__all__ = ["ASSIGNOR", "ShareGroup", "ShareGroupManager", "ShareMember"]

#: The only assignor of share groups, as Kafka names it.
ASSIGNOR = "simple"
LEAVE_EPOCH = -1

Assignment = dict[uuid.UUID, list[int]]


@dataclass(slots=True)
class ShareMember:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed: list[str]
    assignment: Assignment = field(default_factory=dict)
    #: When the member's session ends without a heartbeat (coordinator ms).
    deadline: int = 0


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    #: The member's partitions when they changed (or it joined); None otherwise.
    assignment: Assignment | None


class ShareGroupManager:
    """The share groups whose ``__consumer_offsets`` partitions this broker leads."""

    def __init__(
        self, node_id: int, configs: ConfigStore, metadata: ClusterMetadata, log: CoordinatorLog
    ) -> None:
        self.node_id = node_id
        self.configs = configs
        self.metadata = metadata
        #: The group coordinator's log: who coordinates which group id.
        self.log = log
        self.groups: SortedKeysDict[str, ShareGroup] = SortedKeysDict()

    def _cfg(self, name: str) -> int:
        return self.configs.broker_int(name, self.node_id)

    def owned_groups(self) -> list[ShareGroup]:
        """The share groups this broker coordinates, their expired members removed."""
        out = []
        for group in list(self.groups.values()):
            if self.log.owns(group.group_id):
                self._expire(group)
                out.append(group)
        return out

    def group(self, group_id: str) -> ShareGroup | None:
        """The group, None if unknown; raises NOT_COORDINATOR and the like."""
        self.log.check_owner(group_id)
        group = self.groups.get(group_id)
        if group is not None:
            self._expire(group)
        return group

    def heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        subscribed: list[str] | None,
        client_id: str,
        client_host: str,
    ) -> HeartbeatResult:
        """Join (epoch 0), stay or leave (-1); raises the heartbeat's error. ``member_id``
        is not empty: the handler answers an empty one before the coordinator, as Kafka."""
        if member_epoch < LEAVE_EPOCH:
            raise InvalidRequestError(f"MemberEpoch is {member_epoch}, it must be -1 or more.")
        if member_epoch == 0 and not subscribed:
            raise InvalidRequestError("SubscribedTopicNames must be set in first request.")
        group = self.group(group_id)
        member = None if group is None else group.members.get(member_id)
        if group is None and member_epoch != 0:
            raise GroupIdNotFoundError(f"Group {group_id} not found.")
        if member_epoch == LEAVE_EPOCH:
            if group is None or member is None:
                raise UnknownMemberIdError(f"member {member_id} is not in group {group_id}")
            del group.members[member_id]
            self._reassign(group)
            return HeartbeatResult(member_id, LEAVE_EPOCH, 0, None)
        interval = self._cfg("group.share.heartbeat.interval.ms")
        if member is None:
            if member_epoch != 0:
                raise UnknownMemberIdError(f"member {member_id} is not in group {group_id}")
            if group is None:
                group = self.groups[group_id] = ShareGroup(group_id)
            if len(group.members) >= self._cfg("group.share.max.size"):
                raise GroupMaxSizeReachedError(f"group {group_id} has reached its maximum size")
            member = group.members[member_id] = ShareMember(
                member_id, 0, client_id, client_host, rack_id, list(subscribed or [])
            )
        elif member_epoch not in (0, member.member_epoch):
            raise FencedMemberEpochError(
                f"member {member_id} is at epoch {member.member_epoch}, not {member_epoch}"
            )
        assert group is not None
        member.deadline = self.log.now_ms() + self._cfg("group.share.session.timeout.ms")
        if subscribed is not None and subscribed != member.subscribed:
            member.subscribed = list(subscribed)
        self._reassign(group)
        changed = member_epoch == 0 or member.member_epoch != group.group_epoch
        member.member_epoch = group.group_epoch
        return HeartbeatResult(
            member_id, member.member_epoch, interval, dict(member.assignment) if changed else None
        )

    def _expire(self, group: ShareGroup) -> None:
        now = self.log.now_ms()
        gone = [m for m, member in group.members.items() if member.deadline < now]
        for member_id in gone:
            del group.members[member_id]
        if gone:
            self._reassign(group)

    def _reassign(self, group: ShareGroup) -> None:
        """Recompute the group's assignment; a change bumps the group epoch."""
        target = _simple_assignment(group, self.metadata)
        current = {m: member.assignment for m, member in group.members.items()}
        if target == current and group.group_epoch:
            return
        group.group_epoch += 1
        group.assignment_epoch = group.group_epoch
        for member_id, assignment in target.items():
            group.members[member_id].assignment = assignment


def _simple_assignment(group: ShareGroup, metadata: ClusterMetadata) -> dict[str, Assignment]:
    out: dict[str, Assignment] = {m: {} for m in group.members}
    topics = sorted({t for member in group.members.values() for t in member.subscribed})
    for name in topics:
        info = metadata.topic(name)
        if info is None or not info.partitions:
            continue
        members = sorted(m for m, member in group.members.items() if name in member.subscribed)
        count = len(info.partitions)
        if len(members) <= count:
            for p in range(count):
                out[members[p % len(members)]].setdefault(info.topic_id, []).append(p)
        else:
            for i, member_id in enumerate(members):
                out[member_id][info.topic_id] = [i % count]
    return out
