"""Groups of the consumer protocol (KIP-848): the group, its members and their epochs, and
their state as records of ``__consumer_offsets``.

The records are Kafka's own (record types 3 to 8, the codecs generated from its specs): for
the group its epoch, its subscribed topics and its assignment epoch; per member its
subscription, its target assignment and its current one (epochs, state, owned and revoking
partitions); null values when the group or member is gone. Committed offsets use the
records of classic groups. `consumer_group_manager` runs the protocol over these.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kafkagen.generated.consumer_group_current_member_assignment_key import (
    ConsumerGroupCurrentMemberAssignmentKey,
)
from kafkagen.generated.consumer_group_current_member_assignment_value import (
    ConsumerGroupCurrentMemberAssignmentValue,
)
from kafkagen.generated.consumer_group_member_metadata_key import ConsumerGroupMemberMetadataKey
from kafkagen.generated.consumer_group_member_metadata_value import (
    ConsumerGroupMemberMetadataValue,
)
from kafkagen.generated.consumer_group_metadata_key import ConsumerGroupMetadataKey
from kafkagen.generated.consumer_group_metadata_value import ConsumerGroupMetadataValue
from kafkagen.generated.consumer_group_partition_metadata_key import (
    ConsumerGroupPartitionMetadataKey,
)
from kafkagen.generated.consumer_group_partition_metadata_value import (
    ConsumerGroupPartitionMetadataValue,
)
from kafkagen.generated.consumer_group_target_assignment_member_key import (
    ConsumerGroupTargetAssignmentMemberKey,
)
from kafkagen.generated.consumer_group_target_assignment_member_value import (
    ConsumerGroupTargetAssignmentMemberValue,
)
from kafkagen.generated.consumer_group_target_assignment_metadata_key import (
    ConsumerGroupTargetAssignmentMetadataKey,
)
from kafkagen.generated.consumer_group_target_assignment_metadata_value import (
    ConsumerGroupTargetAssignmentMetadataValue,
)
from kafkagen.runtime.message import Message
from kafkagen.runtime.purgatory import DelayedOperation
from kafkagen.runtime.topic_partition import TopicPartition

from ..coordinator import record_format
from ..sorted_keys import SortedKeysDict
from .assignors import Assignment
from .group_model import OffsetEntry

__all__ = [
    "ConsumerGroup",
    "ConsumerGroupState",
    "ConsumerMember",
    "GROUP_METADATA",
    "HeartbeatResult",
    "MemberState",
    "StateRecords",
    "decode_group",
    "decode_state_key",
    "encode_group",
    "encode_group_records",
    "encode_member",
]

M = TypeVar("M", bound=Message)


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(enum.Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


@dataclass(eq=False, slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    #: What the member owns now (what it was last told), by topic id.
    assigned: Assignment = field(default_factory=dict)
    #: What it was told to give up and has not confirmed yet.
    pending_revocation: Assignment = field(default_factory=dict)
    session: DelayedOperation | None = None
    revocation: DelayedOperation | None = None


class ConsumerGroup:
    """One consumer-protocol group: epochs, members, target assignment, committed offsets."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        #: When the target was last computed (ms; 0: never): the next comes no sooner than
        #: ``consumer.assignment.interval.ms`` after it.
        self.assignment_timestamp_ms = 0
        self.members: dict[str, ConsumerMember] = {}
        self.static_members: dict[str, str] = {}
        self.target: dict[str, Assignment] = {}
        #: Subscribed topics as of the last assignment: name -> (topic id, partitions).
        self.subscription_metadata: dict[str, tuple[uuid.UUID, int]] = {}
        self.assignor_name = ""
        self.offsets: SortedKeysDict[TopicPartition, OffsetEntry] = SortedKeysDict()
        self.dead = False
        #: The state records last written (key -> value), by member id ("": the group's own).
        self.persisted: dict[str, dict[bytes, bytes]] = {}
        #: Members whose records may have changed since the last write (None: all of them).
        self.dirty: set[str] | None = None

    @property
    def state(self) -> ConsumerGroupState:
        if self.dead:
            return ConsumerGroupState.DEAD
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for m in self.members.values():
            if m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def owners(self) -> dict[tuple[uuid.UUID, int], str]:
        """(topic id, partition) -> the member that owns it or has yet to revoke it."""
        out: dict[tuple[uuid.UUID, int], str] = {}
        for m in self.members.values():
            for source in (m.assigned, m.pending_revocation):
                for topic_id, parts in source.items():
                    for p in parts:
                        out[(topic_id, p)] = m.member_id
        return out


@dataclass(slots=True)
class HeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    #: None: the member's assignment did not change (nothing to send).
    assignment: Assignment | None


# -- the group and member state records (Kafka's, see the module's doc) -------------------


#: Record types of KIP-848 groups in ``__consumer_offsets`` -> key struct.
GROUP_METADATA = 3
_PARTITION_METADATA = 4
_MEMBER_METADATA = 5
_TARGET_ASSIGNMENT_METADATA = 6
_TARGET_ASSIGNMENT_MEMBER = 7
_CURRENT_MEMBER_ASSIGNMENT = 8
_KEY_TYPES: dict[int, type[Message]] = {
    GROUP_METADATA: ConsumerGroupMetadataKey,
    _PARTITION_METADATA: ConsumerGroupPartitionMetadataKey,
    _MEMBER_METADATA: ConsumerGroupMemberMetadataKey,
    _TARGET_ASSIGNMENT_METADATA: ConsumerGroupTargetAssignmentMetadataKey,
    _TARGET_ASSIGNMENT_MEMBER: ConsumerGroupTargetAssignmentMemberKey,
    _CURRENT_MEMBER_ASSIGNMENT: ConsumerGroupCurrentMemberAssignmentKey,
}
#: Kafka's ids of a member's reconciliation state.
_MEMBER_STATE_IDS = {
    MemberState.STABLE: 0,
    MemberState.UNREVOKED_PARTITIONS: 1,
    MemberState.UNRELEASED_PARTITIONS: 2,
}
_MEMBER_STATES = {v: k for k, v in _MEMBER_STATE_IDS.items()}

#: (member id or "" for the group's records, record type) -> a record's value.
StateRecords = dict[tuple[str, int], bytes]


def decode_state_key(
    key: bytes, key_types: Mapping[int, type[Message]] = _KEY_TYPES
) -> tuple[str, str, int] | None:
    """(group id, member id or "", record type) of a KIP-848 group's record key (or of
    the record types in ``key_types``: the streams groups'); None for any other record
    type. Raises ValueError if the key does not decode."""
    return record_format.decode_state_key(key, key_types)


def _partitions(a: Assignment) -> list[tuple[uuid.UUID, list[int]]]:
    return [(t, sorted(ps)) for t, ps in sorted(a.items(), key=lambda kv: str(kv[0])) if ps]


def encode_group_records(group: ConsumerGroup) -> dict[bytes, bytes]:
    """The group's own records: its epoch, its subscribed topics, its assignment epoch."""
    gid = group.group_id
    topics = [
        ConsumerGroupPartitionMetadataValue.TopicMetadata(
            topic_id=tid, topic_name=name, num_partitions=n, partition_metadata=[]
        )
        for name, (tid, n) in sorted(group.subscription_metadata.items())
    ]
    return dict(
        [
            record_format.record(
                ConsumerGroupMetadataKey(group_id=gid),
                ConsumerGroupMetadataValue(epoch=group.group_epoch),
            ),
            record_format.record(
                ConsumerGroupPartitionMetadataKey(group_id=gid),
                ConsumerGroupPartitionMetadataValue(topics=topics),
            ),
            record_format.record(
                ConsumerGroupTargetAssignmentMetadataKey(group_id=gid),
                ConsumerGroupTargetAssignmentMetadataValue(
                    assignment_epoch=group.assignment_epoch,
                    assignment_timestamp=group.assignment_timestamp_ms,
                ),
            ),
        ]
    )


def encode_member(group: ConsumerGroup, m: ConsumerMember) -> dict[bytes, bytes]:
    """A member's records: its subscription, its target assignment, its current one."""
    gid, mid = group.group_id, m.member_id
    current = ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions
    target = ConsumerGroupTargetAssignmentMemberValue.TopicPartition
    return dict(
        [
            record_format.record(
                ConsumerGroupMemberMetadataKey(group_id=gid, member_id=mid),
                ConsumerGroupMemberMetadataValue(
                    instance_id=m.instance_id,
                    rack_id=m.rack_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=list(m.subscribed_topic_names),
                    subscribed_topic_regex=m.subscribed_topic_regex,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    server_assignor=m.server_assignor,
                    # Null, as Kafka writes it for a member of the consumer protocol (an
                    # empty struct, the field's default, would make it a classic member).
                    classic_member_metadata=None,
                ),
            ),
            record_format.record(
                ConsumerGroupTargetAssignmentMemberKey(group_id=gid, member_id=mid),
                ConsumerGroupTargetAssignmentMemberValue(
                    topic_partitions=[
                        target(topic_id=t, partitions=ps)
                        for t, ps in _partitions(group.target.get(mid, {}))
                    ]
                ),
            ),
            record_format.record(
                ConsumerGroupCurrentMemberAssignmentKey(group_id=gid, member_id=mid),
                ConsumerGroupCurrentMemberAssignmentValue(
                    member_epoch=m.member_epoch,
                    previous_member_epoch=m.previous_member_epoch,
                    state=_MEMBER_STATE_IDS[m.state],
                    assigned_partitions=[
                        current(topic_id=t, partitions=ps) for t, ps in _partitions(m.assigned)
                    ],
                    partitions_pending_revocation=[
                        current(topic_id=t, partitions=ps)
                        for t, ps in _partitions(m.pending_revocation)
                    ],
                ),
            ),
        ]
    )


def encode_group(group: ConsumerGroup) -> dict[bytes, bytes]:
    """All of the group's state records: key -> value."""
    out = encode_group_records(group)
    for m in group.members.values():
        out.update(encode_member(group, m))
    return out


def _assignment(topics: Iterable[Any]) -> Assignment:
    return {t.topic_id: set(t.partitions) for t in topics}


def decode_group(group_id: str, records: StateRecords) -> ConsumerGroup:
    """The group its state records describe (see `StateRecords`).

    Raises ValueError naming what is wrong (a member without its assignment, say).
    """

    def value(member_id: str, record_type: int, cls: type[M]) -> M:
        data = records.get((member_id, record_type))
        if data is None:
            who = f"member {member_id!r}" if member_id else "the group"
            raise ValueError(f"group {group_id!r}: {who} has no {cls.__name__} record")
        return record_format.decode_value(cls, data)

    group = ConsumerGroup(group_id)
    group.group_epoch = value("", GROUP_METADATA, ConsumerGroupMetadataValue).epoch
    assigned = value("", _TARGET_ASSIGNMENT_METADATA, ConsumerGroupTargetAssignmentMetadataValue)
    group.assignment_epoch = assigned.assignment_epoch
    group.assignment_timestamp_ms = assigned.assignment_timestamp
    if ("", _PARTITION_METADATA) in records:
        topics = value("", _PARTITION_METADATA, ConsumerGroupPartitionMetadataValue).topics
        group.subscription_metadata = {t.topic_name: (t.topic_id, t.num_partitions) for t in topics}
    for member_id, record_type in sorted(records):
        if record_type != _MEMBER_METADATA:
            continue
        meta = value(member_id, _MEMBER_METADATA, ConsumerGroupMemberMetadataValue)
        now = value(
            member_id, _CURRENT_MEMBER_ASSIGNMENT, ConsumerGroupCurrentMemberAssignmentValue
        )
        if now.state not in _MEMBER_STATES:
            raise ValueError(
                f"group {group_id!r}: member {member_id!r} in unknown state {now.state}"
            )
        member = ConsumerMember(
            member_id,
            meta.instance_id,
            meta.rack_id,
            meta.client_id,
            meta.client_host,
            meta.rebalance_timeout_ms,
            list(meta.subscribed_topic_names),
            meta.subscribed_topic_regex,
            meta.server_assignor,
            member_epoch=now.member_epoch,
            previous_member_epoch=now.previous_member_epoch,
            state=_MEMBER_STATES[now.state],
            assigned=_assignment(now.assigned_partitions),
            pending_revocation=_assignment(now.partitions_pending_revocation),
        )
        group.members[member_id] = member
        if (member_id, _TARGET_ASSIGNMENT_MEMBER) in records:
            target = value(
                member_id, _TARGET_ASSIGNMENT_MEMBER, ConsumerGroupTargetAssignmentMemberValue
            )
            group.target[member_id] = _assignment(target.topic_partitions)
        if member.instance_id is not None:
            group.static_members[member.instance_id] = member_id
    return group
