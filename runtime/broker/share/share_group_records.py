"""A share group's state records in ``__consumer_offsets``, in Kafka 4.4's formats.

Record types (key and value structs generated from Kafka's record specs, value version 0):

- 11 group metadata: the group epoch (metadata hash 0: kafkagen assigns from the topics
  as they are, so a loaded group is assigned again only when a member heartbeats);
- 10 member metadata: rack, client id and host, subscribed topic names;
- 12 target assignment metadata: the assignment epoch;
- 13 target assignment member and 14 current member assignment: the member's partitions
  (the same: share members take a new assignment at once, state 0, nothing to revoke);
- 15 state partition metadata: the partitions whose share state is initialised.

A member that leaves tombstones its three records; a deleted group tombstones all of them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping

from kafkagen.generated.share_group_current_member_assignment_key import (
    ShareGroupCurrentMemberAssignmentKey,
)
from kafkagen.generated.share_group_current_member_assignment_value import (
    ShareGroupCurrentMemberAssignmentValue,
)
from kafkagen.generated.share_group_member_metadata_key import ShareGroupMemberMetadataKey
from kafkagen.generated.share_group_member_metadata_value import ShareGroupMemberMetadataValue
from kafkagen.generated.share_group_metadata_key import ShareGroupMetadataKey
from kafkagen.generated.share_group_metadata_value import ShareGroupMetadataValue
from kafkagen.generated.share_group_state_partition_metadata_key import (
    ShareGroupStatePartitionMetadataKey,
)
from kafkagen.generated.share_group_state_partition_metadata_value import (
    ShareGroupStatePartitionMetadataValue,
)
from kafkagen.generated.share_group_target_assignment_member_key import (
    ShareGroupTargetAssignmentMemberKey,
)
from kafkagen.generated.share_group_target_assignment_member_value import (
    ShareGroupTargetAssignmentMemberValue,
)
from kafkagen.generated.share_group_target_assignment_metadata_key import (
    ShareGroupTargetAssignmentMetadataKey,
)
from kafkagen.generated.share_group_target_assignment_metadata_value import (
    ShareGroupTargetAssignmentMetadataValue,
)
from kafkagen.runtime.message import Message

from ..coordinator import record_format
from .share_group_model import Assignment, ShareGroup, ShareMember

__all__ = ["GROUP_METADATA", "decode_group", "decode_state_key", "encode_group"]

_MEMBER_METADATA = 10
GROUP_METADATA = 11
_TARGET_ASSIGNMENT_METADATA = 12
_TARGET_ASSIGNMENT_MEMBER = 13
_CURRENT_MEMBER_ASSIGNMENT = 14
_STATE_PARTITION_METADATA = 15
_KEY_TYPES: dict[int, type[Message]] = {
    _MEMBER_METADATA: ShareGroupMemberMetadataKey,
    GROUP_METADATA: ShareGroupMetadataKey,
    _TARGET_ASSIGNMENT_METADATA: ShareGroupTargetAssignmentMetadataKey,
    _TARGET_ASSIGNMENT_MEMBER: ShareGroupTargetAssignmentMemberKey,
    _CURRENT_MEMBER_ASSIGNMENT: ShareGroupCurrentMemberAssignmentKey,
    _STATE_PARTITION_METADATA: ShareGroupStatePartitionMetadataKey,
}
#: (member id or "" for the group's records, record type) -> a record's value.
StateRecords = dict[tuple[str, int], bytes]


def decode_state_key(key: bytes) -> tuple[str, str, int] | None:
    """(group id, member id or "", record type) of a share group's record key; None for
    any other record type. Raises ValueError if the key does not decode."""
    return record_format.decode_state_key(key, _KEY_TYPES)


def _partitions(a: Assignment) -> list[tuple[uuid.UUID, list[int]]]:
    return [(t, sorted(ps)) for t, ps in sorted(a.items(), key=lambda kv: str(kv[0])) if ps]


def encode_group(
    group: ShareGroup, topic_name: Callable[[uuid.UUID], str]
) -> dict[str, dict[bytes, bytes]]:
    """Every state record of the group: member id ("" for the group's own) -> key ->
    value. ``topic_name`` names a topic id (the state partition record carries names)."""
    gid = group.group_id
    info = ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo
    out = {
        "": dict(
            [
                record_format.record(
                    ShareGroupMetadataKey(group_id=gid),
                    ShareGroupMetadataValue(epoch=group.group_epoch, metadata_hash=0),
                ),
                record_format.record(
                    ShareGroupTargetAssignmentMetadataKey(group_id=gid),
                    ShareGroupTargetAssignmentMetadataValue(
                        assignment_epoch=group.assignment_epoch
                    ),
                ),
                record_format.record(
                    ShareGroupStatePartitionMetadataKey(group_id=gid),
                    ShareGroupStatePartitionMetadataValue(
                        initializing_topics=[],
                        initialized_topics=[
                            info(topic_id=t, topic_name=topic_name(t), partitions=ps)
                            for t, ps in _partitions(group.initialized)
                        ],
                        deleting_topics=[],
                    ),
                ),
            ]
        )
    }
    for mid, m in group.members.items():
        out[mid] = _encode_member(gid, m)
    return out


def _encode_member(gid: str, m: ShareMember) -> dict[bytes, bytes]:
    mid = m.member_id
    target = ShareGroupTargetAssignmentMemberValue.TopicPartition
    current = ShareGroupCurrentMemberAssignmentValue.TopicPartitions
    return dict(
        [
            record_format.record(
                ShareGroupMemberMetadataKey(group_id=gid, member_id=mid),
                ShareGroupMemberMetadataValue(
                    rack_id=m.rack_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=list(m.subscribed),
                ),
            ),
            record_format.record(
                ShareGroupTargetAssignmentMemberKey(group_id=gid, member_id=mid),
                ShareGroupTargetAssignmentMemberValue(
                    topic_partitions=[
                        target(topic_id=t, partitions=ps) for t, ps in _partitions(m.assignment)
                    ]
                ),
            ),
            record_format.record(
                ShareGroupCurrentMemberAssignmentKey(group_id=gid, member_id=mid),
                ShareGroupCurrentMemberAssignmentValue(
                    member_epoch=m.member_epoch,
                    previous_member_epoch=m.member_epoch,
                    state=0,
                    assigned_partitions=[
                        current(topic_id=t, partitions=ps) for t, ps in _partitions(m.assignment)
                    ],
                ),
            ),
        ]
    )


def decode_group(group_id: str, records: Mapping[tuple[str, int], bytes]) -> ShareGroup:
    """The group its last state records describe (its group metadata record must be
    there). Raises ValueError if a record does not decode."""
    meta = record_format.decode_value(ShareGroupMetadataValue, records["", GROUP_METADATA])
    group = ShareGroup(group_id, group_epoch=meta.epoch)
    target = records.get(("", _TARGET_ASSIGNMENT_METADATA))
    if target is not None:
        v = record_format.decode_value(ShareGroupTargetAssignmentMetadataValue, target)
        group.assignment_epoch = v.assignment_epoch
    state = records.get(("", _STATE_PARTITION_METADATA))
    if state is not None:
        s = record_format.decode_value(ShareGroupStatePartitionMetadataValue, state)
        group.initialized = {t.topic_id: list(t.partitions) for t in s.initialized_topics}
    for mid in sorted({m for m, _ in records if m}):
        about = records.get((mid, _MEMBER_METADATA))
        if about is None:
            continue  # tombstoned
        md = record_format.decode_value(ShareGroupMemberMetadataValue, about)
        member = ShareMember(
            mid, 0, md.client_id, md.client_host, md.rack_id, list(md.subscribed_topic_names)
        )
        current = records.get((mid, _CURRENT_MEMBER_ASSIGNMENT))
        if current is not None:
            c = record_format.decode_value(ShareGroupCurrentMemberAssignmentValue, current)
            member.member_epoch = c.member_epoch
            member.assignment = {t.topic_id: list(t.partitions) for t in c.assigned_partitions}
        group.members[mid] = member
    return group
