"""Share groups' membership (KIP-932): members join and leave with ShareGroupHeartbeat and
get their partitions from the coordinator, assigned by the simple assignor's rules.

A share group has no revocation phase: a partition may be consumed by several members at
once, so a member takes its new assignment with the group's epoch at once. Every subscribed
member gets partitions: with fewer members than partitions each partition goes to one
member; with more, each member gets one partition and partitions are shared.

Groups are written to ``__consumer_offsets`` in Kafka's record formats
(`share_group_records`) after each change, and the broker that takes over a partition of
it reads them back: members, assignments and the initialised share partitions survive a
coordinator move, each member with a fresh session. A member that does not heartbeat
within ``group.share.session.timeout.ms`` is removed when its group is next used.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from kafkagen.runtime.errors import (
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    InvalidGroupIdError,
    InvalidRequestError,
    KafkaError,
    NonEmptyGroupError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
)
from kafkagen.runtime.records import Record, iter_batches

from ..config.group_configs import group_setting
from ..config.store import ConfigStore
from ..coordinator import record_format
from ..coordinator.coordinator_log import CoordinatorLog
from ..metadata.cluster_metadata import ClusterMetadata
from ..sorted_keys import SortedKeysDict
from ..storage.partition import Partition
from .persister import ShareStatePersister
from .share_group_model import Assignment, ShareGroup, ShareMember
from .share_group_records import GROUP_METADATA, decode_group, decode_state_key, encode_group
from .share_partition import PartitionState

__all__ = [
    "ASSIGNOR",
    "HeartbeatResult",
    "ShareGroup",
    "ShareGroupManager",
    "ShareMember",
    "TopicOffsets",
]

_log = logging.getLogger("kafkagen.broker.groups")

#: The only assignor of share groups, as Kafka names it.
ASSIGNOR = "simple"
LEAVE_EPOCH = -1

#: A topic's share-partition states for offsets administration: its name, its id (None:
#: no such topic) and each partition asked for with its state (None: never initialised).
TopicOffsets = tuple[str, uuid.UUID | None, list[tuple[int, PartitionState | None]]]


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
        self,
        node_id: int,
        configs: ConfigStore,
        metadata: ClusterMetadata,
        log: CoordinatorLog,
        persister: ShareStatePersister,
    ) -> None:
        self.node_id = node_id
        self.configs = configs
        self.metadata = metadata
        #: The group coordinator's log: who coordinates which group id.
        self.log = log
        #: The share partitions' state, which offsets administration reads and resets.
        self.persister = persister
        self.groups: SortedKeysDict[str, ShareGroup] = SortedKeysDict()
        log.add_listener(self._load, self._unload)

    def enabled(self) -> bool:
        """Share groups are served while the cluster has ``share.version`` finalized at 1 or
        more; else their APIs answer UNSUPPORTED_VERSION, as in Kafka 4.4 (ApiVersions
        hides them then, where Kafka's still lists them)."""
        return self.metadata.features.levels.get("share.version", 0) >= 1

    def _cfg(self, name: str) -> int:
        return self.configs.broker_int(name, self.node_id)

    def _group_cfg(self, group_id: str, name: str) -> str:
        """A group config of ``group_id`` (its own, else the broker's)."""
        return group_setting(
            self.configs, self.metadata.group_configs, group_id, name, self.node_id
        )

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

    def empty_group(self, group_id: str, create: bool = False) -> ShareGroup:
        """The group, which must have no member: what altering (``create``: a new group
        if none) or deleting its offsets, or deleting it, needs. Raises INVALID_GROUP_ID,
        GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP."""
        if not group_id:
            raise InvalidGroupIdError()
        group = self.group(group_id)
        if group is None and create:
            group = self.groups[group_id] = ShareGroup(group_id)
        if group is None:
            raise GroupIdNotFoundError(f"Group {group_id} not found.")
        if group.members:
            raise NonEmptyGroupError("The group is not empty.")  # Kafka's words: tools print them
        return group

    def delete(self, group_id: str) -> None:
        """Delete an empty group and its share partitions' state; raises as `empty_group`."""
        self.empty_group(group_id)
        group = self.groups.pop(group_id)
        self.persister.delete(group_id)
        keys = [key for values in group.persisted.values() for key in values]
        if keys:
            now = self.log.now_ms()
            self.log.append(group_id, [Record(-1, now, key, None) for key in keys], _ignore)

    def offsets(
        self, group_id: str, topics: list[tuple[str, list[int]]] | None
    ) -> list[TopicOffsets]:
        """The start of each partition asked for, or with None of every partition the group
        has state for (as Kafka, only that needs this broker to coordinate the group). A
        group or topic without state is no error: its partitions have none."""
        if topics is None:
            self.log.check_owner(group_id)
            known: dict[uuid.UUID, list[int]] = {}
            for topic_id, partition in sorted(self.persister.partitions_of(group_id)):
                known.setdefault(topic_id, []).append(partition)
            topics = [
                (self.metadata.topic_names[t], parts)
                for t, parts in known.items()
                if t in self.metadata.topic_names
            ]
        out: list[TopicOffsets] = []
        for name, partitions in topics:
            info = self.metadata.topic(name)
            if info is None:
                out.append((name, None, [(p, None) for p in partitions]))
                continue
            states = [(p, self._summary(group_id, info.topic_id, p)) for p in partitions]
            out.append((name, info.topic_id, states))
        return out

    def _summary(self, group_id: str, topic_id: uuid.UUID, partition: int) -> PartitionState | None:
        """The partition's start and records done, None when it has no state or its
        coordinator does not answer."""
        try:
            state = self.persister.summary(group_id, topic_id, partition)
        except KafkaError:
            return None
        return None if state.start_offset < 0 else state

    def alter_offsets(
        self, group_id: str, topics: list[tuple[str, list[tuple[int, int]]]]
    ) -> dict[tuple[str, int], KafkaError | None]:
        """Start the empty group's partitions again at the offsets given (topics that
        exist), creating the group if there is none: each partition's error,
        UNKNOWN_TOPIC_OR_PARTITION past the topic's partitions. Raises NON_EMPTY_GROUP
        for the whole request."""
        group = self.empty_group(group_id, create=True)
        out: dict[tuple[str, int], KafkaError | None] = {}
        for name, partitions in topics:
            info = self.metadata.topic(name)
            assert info is not None, "the handler answers unknown topics"
            for p, offset in partitions:
                if 0 <= p < len(info.partitions):
                    self.persister.initialize(group_id, info.topic_id, p, offset)
                    _mark_initialized(group, info.topic_id, p)
                    out[(name, p)] = None
                else:
                    out[(name, p)] = UnknownTopicOrPartitionError()
        self._persist(group)
        return out

    def delete_offsets(
        self, group_id: str, names: list[str]
    ) -> list[tuple[str, uuid.UUID | None, KafkaError | None]]:
        """Forget the empty group's state of those topics: each topic with its id and
        error. Raises GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP for the whole request."""
        group = self.empty_group(group_id)
        held = {topic_id for topic_id, _ in self.persister.partitions_of(group_id)}
        out: list[tuple[str, uuid.UUID | None, KafkaError | None]] = []
        for name in names:
            info = self.metadata.topic(name)
            if info is None:
                out.append((name, None, UnknownTopicOrPartitionError()))
            elif info.topic_id not in held:
                error = UnknownTopicOrPartitionError("There is no offset information to delete.")
                out.append((name, None, error))
            else:
                self.persister.delete(group_id, [info.topic_id])
                group.initialized.pop(info.topic_id, None)
                out.append((name, info.topic_id, None))
        self._persist(group)
        return out

    def heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        subscribed: list[str] | None,
        client_id: str,
        client_host: str,
        respond: Callable[[HeartbeatResult | None, int], None],
    ) -> None:
        """Join (epoch 0), stay or leave (-1); raises the heartbeat's error. ``member_id``
        is not empty: the handler answers an empty one before the coordinator, as Kafka.

        ``respond(result, error code)`` runs once the group's new state is written (at once
        when nothing changed), as Kafka answers; a failed write answers with its error."""
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
            left = HeartbeatResult(member_id, LEAVE_EPOCH, 0, None)
            self._persist(group, lambda code: respond(None if code else left, code))
            return
        interval = int(self._group_cfg(group_id, "share.heartbeat.interval.ms"))
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
        timeout = int(self._group_cfg(group_id, "share.session.timeout.ms"))
        member.deadline = self.log.now_ms() + timeout
        if subscribed is not None and subscribed != member.subscribed:
            member.subscribed = list(subscribed)
        self._reassign(group)
        changed = member_epoch == 0 or member.member_epoch != group.group_epoch
        member.member_epoch = group.group_epoch
        result = HeartbeatResult(
            member_id, member.member_epoch, interval, dict(member.assignment) if changed else None
        )
        self._persist(group, lambda code: respond(None if code else result, code))

    def _expire(self, group: ShareGroup) -> None:
        now = self.log.now_ms()
        gone = [m for m, member in group.members.items() if member.deadline < now]
        for member_id in gone:
            del group.members[member_id]
        if gone:
            self._reassign(group)
            self._persist(group)

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
            # As Kafka's coordinator, an assigned partition gets its share state at once;
            # its leader picks the start on first use.
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    if p in group.initialized.get(topic_id, ()):
                        continue
                    try:
                        self.persister.create(group.group_id, topic_id, p)
                    except KafkaError as e:
                        # Its leader initialises it on first use instead.
                        _log.warning("share state of %s not initialised: %s", group.group_id, e)
                    _mark_initialized(group, topic_id, p)

    # -- the group's records ------------------------------------------------------------

    def _persist(self, group: ShareGroup, done: Callable[[int], None] | None = None) -> None:
        """Write the state records that changed since the last write, and tombstones for
        the members gone; ``done(error code)`` when written (at once if nothing changed).
        A write that fails leaves the next change to write every record again."""
        wanted = encode_group(group, self._topic_name)
        records = record_format.changed_records(group.persisted, wanted, self.log.now_ms())
        group.persisted = wanted
        if not records:
            if done is not None:
                done(0)
            return

        def written(code: int) -> None:
            if code and group.persisted is wanted:
                group.persisted = {}
            if done is not None:
                done(code)

        self.log.append(group.group_id, records, written)

    def _topic_name(self, topic_id: uuid.UUID) -> str:
        return self.metadata.topic_names.get(topic_id, "")

    def _load(self, partition: Partition) -> None:
        """Rebuild the share groups of a ``__consumer_offsets`` partition this broker now
        leads from their last state records; every member gets a fresh session."""
        states: dict[str, dict[tuple[str, int], bytes]] = {}
        for b in partition.log.batches:
            for batch in iter_batches(b.data, verify_crc=False):
                if batch.is_control:
                    continue
                for r in batch:
                    try:
                        of = None if r.key is None else decode_state_key(r.key)
                    except ValueError:
                        continue  # the group coordinator reports keys it cannot read
                    if of is None:
                        continue
                    group_id, member_id, record_type = of
                    records = states.setdefault(group_id, {})
                    if r.value is None:
                        records.pop((member_id, record_type), None)
                    else:
                        records[member_id, record_type] = bytes(r.value)
        now = self.log.now_ms()
        for group_id, records in states.items():
            if ("", GROUP_METADATA) not in records:
                continue  # deleted
            try:
                group = decode_group(group_id, records)
            except (ValueError, KeyError, TypeError, IndexError) as e:
                _log.error("share group %s: unreadable state records skipped: %s", group_id, e)
                continue
            timeout = int(self._group_cfg(group_id, "share.session.timeout.ms"))
            for m in group.members.values():
                m.deadline = now + timeout
            group.persisted = encode_group(group, self._topic_name)
            self.groups[group_id] = group

    def _unload(self, index: int) -> None:
        for group_id in [g for g in self.groups if self.log.partition_of(g) == index]:
            del self.groups[group_id]


def _mark_initialized(group: ShareGroup, topic_id: uuid.UUID, partition: int) -> None:
    known = group.initialized.setdefault(topic_id, [])
    if partition not in known:
        known.append(partition)
        known.sort()


def _ignore(code: int) -> None:
    """A write fails when the partition's leadership moved: the group is unloaded then, and
    the next coordinator replays what was written."""


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
