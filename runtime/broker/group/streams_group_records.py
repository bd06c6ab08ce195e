"""A streams group's state records in ``__consumer_offsets``, in Kafka 4.4's formats.

Record types (key struct and value struct generated from Kafka's record specs, value
version 0):

- 17 group metadata: the group epoch and a hash of the partition counts its topology was
  configured from (`metadata_hash`; Kafka hashes its topic metadata its own way, so a
  Kafka broker reading these records would configure the topology once more);
- 19 member metadata: a member's process, endpoint, client tags, topology epoch;
- 20 target assignment metadata: the epoch of the target assignment and when it was computed;
- 21 target assignment member: a member's target tasks (active, standby, warm-up);
- 22 current member assignment: a member's epochs, reconciliation state, tasks and tasks
  pending revocation;
- 23 topology: the group's topology, copartition groups as indexes into each subtopology's
  source and repartition source topics.

A member that leaves tombstones its three records; a deleted group tombstones all of them.
The configured topology is not written: the coordinator that loads the group configures it
again from the cluster's topics, and when the hash still matches, without a new group epoch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, TypeVar

from kafkagen.generated.streams_group_current_member_assignment_key import (
    StreamsGroupCurrentMemberAssignmentKey,
)
from kafkagen.generated.streams_group_current_member_assignment_value import (
    StreamsGroupCurrentMemberAssignmentValue,
)
from kafkagen.generated.streams_group_member_metadata_key import StreamsGroupMemberMetadataKey
from kafkagen.generated.streams_group_member_metadata_value import (
    StreamsGroupMemberMetadataValue,
)
from kafkagen.generated.streams_group_metadata_key import StreamsGroupMetadataKey
from kafkagen.generated.streams_group_metadata_value import StreamsGroupMetadataValue
from kafkagen.generated.streams_group_target_assignment_member_key import (
    StreamsGroupTargetAssignmentMemberKey,
)
from kafkagen.generated.streams_group_target_assignment_member_value import (
    StreamsGroupTargetAssignmentMemberValue,
)
from kafkagen.generated.streams_group_target_assignment_metadata_key import (
    StreamsGroupTargetAssignmentMetadataKey,
)
from kafkagen.generated.streams_group_target_assignment_metadata_value import (
    StreamsGroupTargetAssignmentMetadataValue,
)
from kafkagen.generated.streams_group_topology_key import StreamsGroupTopologyKey
from kafkagen.generated.streams_group_topology_value import StreamsGroupTopologyValue
from kafkagen.runtime.message import Message

from ..coordinator import record_format
from . import consumer_group
from .sticky_task_assignor import Tasks, TaskSet
from .streams_group import (
    InternalTopic,
    MemberState,
    StreamsGroup,
    StreamsMember,
    Subtopology,
    Topology,
)

__all__ = [
    "StreamsStateRecords",
    "decode_group",
    "decode_state_key",
    "encode_group",
    "encode_member",
]

GROUP_METADATA = 17
_MEMBER_METADATA = 19
_TARGET_ASSIGNMENT_METADATA = 20
_TARGET_ASSIGNMENT_MEMBER = 21
_CURRENT_MEMBER_ASSIGNMENT = 22
_TOPOLOGY = 23
_KEY_TYPES: dict[int, type[Message]] = {
    GROUP_METADATA: StreamsGroupMetadataKey,
    _MEMBER_METADATA: StreamsGroupMemberMetadataKey,
    _TARGET_ASSIGNMENT_METADATA: StreamsGroupTargetAssignmentMetadataKey,
    _TARGET_ASSIGNMENT_MEMBER: StreamsGroupTargetAssignmentMemberKey,
    _CURRENT_MEMBER_ASSIGNMENT: StreamsGroupCurrentMemberAssignmentKey,
    _TOPOLOGY: StreamsGroupTopologyKey,
}
#: Kafka's ids of a streams member's reconciliation state.
_STATE_IDS = {
    MemberState.STABLE: 0,
    MemberState.UNREVOKED_TASKS: 1,
    MemberState.UNRELEASED_TASKS: 2,
}
_STATES = {v: k for k, v in _STATE_IDS.items()}

#: (member id or "" for the group's records, record type) -> a record's value.
StreamsStateRecords = consumer_group.StateRecords

M = TypeVar("M", bound=Message)


def decode_state_key(key: bytes) -> tuple[str, str, int] | None:
    """(group id, member id or "", record type) of a streams group's record key; None for
    any other record type. Raises ValueError if the key does not decode."""
    return consumer_group.decode_state_key(key, _KEY_TYPES)


def metadata_hash(partitions: Mapping[str, int]) -> int:
    """A signed 64-bit hash of topic -> partition count (0 for none)."""
    if not partitions:
        return 0
    text = ";".join(f"{t}:{n}" for t, n in sorted(partitions.items())).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big", signed=True)


def _configured_hash(group: StreamsGroup) -> int:
    configured = group.configured
    if configured is None or configured.task_counts is None:
        return 0
    return metadata_hash(configured.source_partitions)


def _task_ids(cls: Any, tasks: TaskSet) -> list[Any]:
    return [cls(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items()) if ps]


def _tasks(ids: list[Any]) -> TaskSet:
    return {t.subtopology_id: set(t.partitions) for t in ids}


def _topology_value(topology: Topology) -> StreamsGroupTopologyValue:
    v = StreamsGroupTopologyValue

    def info(t: InternalTopic) -> StreamsGroupTopologyValue.TopicInfo:
        configs = [v.TopicConfig(key=k, value=x) for k, x in t.configs]
        return v.TopicInfo(
            name=t.name,
            partitions=t.partitions,
            replication_factor=t.replication_factor,
            topic_configs=configs,
        )

    def copartition(s: Subtopology, names: tuple[str | None, ...]) -> Any:
        repartition = [t.name for t in s.repartition_source_topics]
        return v.CopartitionGroup(
            source_topics=[s.source_topics.index(n) for n in names if n in s.source_topics],
            source_topic_regex=[],
            repartition_source_topics=[repartition.index(n) for n in names if n in repartition],
        )

    return v(
        epoch=topology.epoch,
        subtopologies=[
            v.Subtopology(
                subtopology_id=s.subtopology_id,
                source_topics=list(s.source_topics),
                source_topic_regex=[],
                state_changelog_topics=[info(t) for t in s.state_changelog_topics],
                repartition_sink_topics=list(s.repartition_sink_topics),
                repartition_source_topics=[info(t) for t in s.repartition_source_topics],
                copartition_groups=[copartition(s, g) for g in s.copartition_groups],
            )
            for s in topology.subtopologies
        ],
    )


def _topology(value: StreamsGroupTopologyValue) -> Topology:
    def internal(t: Any) -> InternalTopic:
        configs = tuple((c.key, c.value) for c in t.topic_configs)
        return InternalTopic(t.name, t.partitions, t.replication_factor, configs)

    subtopologies = []
    for s in value.subtopologies:
        repartition = tuple(internal(t) for t in s.repartition_source_topics)
        groups = tuple(
            tuple(s.source_topics[i] for i in g.source_topics)
            + tuple(repartition[i].name for i in g.repartition_source_topics)
            for g in s.copartition_groups
        )
        subtopologies.append(
            Subtopology(
                s.subtopology_id,
                tuple(s.source_topics),
                tuple(s.repartition_sink_topics),
                tuple(internal(t) for t in s.state_changelog_topics),
                repartition,
                groups,
            )
        )
    return Topology(value.epoch, tuple(subtopologies))


def encode_group(group: StreamsGroup) -> dict[bytes, bytes]:
    """The group's own records: its epoch, its topology, its target assignment's epoch."""
    gid = group.group_id
    records = [
        record_format.record(
            StreamsGroupMetadataKey(group_id=gid),
            StreamsGroupMetadataValue(
                epoch=group.group_epoch,
                metadata_hash=_configured_hash(group),
                last_assignment_configs=[
                    StreamsGroupMetadataValue.LastAssignmentConfig(key=k, value=v)
                    for k, v in sorted(group.assignment_configs.items())
                ],
            ),
        ),
        record_format.record(
            StreamsGroupTargetAssignmentMetadataKey(group_id=gid),
            StreamsGroupTargetAssignmentMetadataValue(
                assignment_epoch=group.assignment_epoch,
                assignment_timestamp=group.assignment_timestamp_ms,
            ),
        ),
    ]
    if group.topology is not None:
        records.append(
            record_format.record(
                StreamsGroupTopologyKey(group_id=gid), _topology_value(group.topology)
            )
        )
    return dict(records)


def encode_member(group: StreamsGroup, m: StreamsMember) -> dict[bytes, bytes]:
    """A member's records: its metadata, its target tasks, its current tasks."""
    gid, mid = group.group_id, m.member_id
    meta = StreamsGroupMemberMetadataValue
    target = group.target.get(mid, Tasks())
    current = StreamsGroupCurrentMemberAssignmentValue.TaskIds
    goal = StreamsGroupTargetAssignmentMemberValue.TaskIds
    endpoint = m.user_endpoint
    return dict(
        [
            record_format.record(
                StreamsGroupMemberMetadataKey(group_id=gid, member_id=mid),
                meta(
                    instance_id=m.instance_id,
                    rack_id=m.rack_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    topology_epoch=m.topology_epoch,
                    process_id=m.process_id,
                    user_endpoint=(
                        None
                        if endpoint is None
                        else meta.Endpoint(host=endpoint[0], port=endpoint[1])
                    ),
                    client_tags=[
                        meta.KeyValue(key=k, value=v) for k, v in sorted(m.client_tags.items())
                    ],
                ),
            ),
            record_format.record(
                StreamsGroupTargetAssignmentMemberKey(group_id=gid, member_id=mid),
                StreamsGroupTargetAssignmentMemberValue(
                    active_tasks=_task_ids(goal, target.active),
                    standby_tasks=_task_ids(goal, target.standby),
                    warmup_tasks=_task_ids(goal, target.warmup),
                ),
            ),
            record_format.record(
                StreamsGroupCurrentMemberAssignmentKey(group_id=gid, member_id=mid),
                StreamsGroupCurrentMemberAssignmentValue(
                    member_epoch=m.member_epoch,
                    previous_member_epoch=m.previous_member_epoch,
                    state=_STATE_IDS[m.state],
                    active_tasks=_task_ids(current, m.assigned.active),
                    standby_tasks=_task_ids(current, m.assigned.standby),
                    warmup_tasks=_task_ids(current, m.assigned.warmup),
                    active_tasks_pending_revocation=_task_ids(current, m.pending_revocation.active),
                    standby_tasks_pending_revocation=_task_ids(
                        current, m.pending_revocation.standby
                    ),
                    warmup_tasks_pending_revocation=_task_ids(current, m.pending_revocation.warmup),
                ),
            ),
        ]
    )


def decode_group(group_id: str, records: StreamsStateRecords) -> tuple[StreamsGroup, int]:
    """The group its state records describe and the metadata hash they stored; raises
    ValueError naming what is missing."""

    def value(member_id: str, record_type: int, cls: type[M]) -> M:
        data = records.get((member_id, record_type))
        if data is None:
            who = f"member {member_id!r}" if member_id else "the group"
            raise ValueError(f"streams group {group_id!r}: {who} has no {cls.__name__} record")
        return record_format.decode_value(cls, data)

    group = StreamsGroup(group_id)
    metadata = value("", GROUP_METADATA, StreamsGroupMetadataValue)
    group.group_epoch = metadata.epoch
    group.assignment_configs = {c.key: c.value for c in metadata.last_assignment_configs or ()}
    target = value("", _TARGET_ASSIGNMENT_METADATA, StreamsGroupTargetAssignmentMetadataValue)
    group.assignment_epoch = target.assignment_epoch
    group.assignment_timestamp_ms = target.assignment_timestamp
    if ("", _TOPOLOGY) in records:
        group.topology = _topology(value("", _TOPOLOGY, StreamsGroupTopologyValue))
    for member_id, record_type in sorted(records):
        if record_type != _MEMBER_METADATA:
            continue
        meta = value(member_id, _MEMBER_METADATA, StreamsGroupMemberMetadataValue)
        now = value(member_id, _CURRENT_MEMBER_ASSIGNMENT, StreamsGroupCurrentMemberAssignmentValue)
        if now.state not in _STATES:
            raise ValueError(
                f"streams group {group_id!r}: member {member_id!r} in unknown state {now.state}"
            )
        ep = meta.user_endpoint
        group.members[member_id] = StreamsMember(
            member_id,
            meta.instance_id,
            meta.rack_id,
            meta.client_id,
            meta.client_host,
            meta.process_id,
            meta.rebalance_timeout_ms,
            meta.topology_epoch,
            user_endpoint=None if ep is None else (ep.host, ep.port),
            client_tags={kv.key: kv.value for kv in meta.client_tags},
            member_epoch=now.member_epoch,
            previous_member_epoch=now.previous_member_epoch,
            state=_STATES[now.state],
            assigned=Tasks(
                _tasks(now.active_tasks), _tasks(now.standby_tasks), _tasks(now.warmup_tasks)
            ),
            pending_revocation=Tasks(
                _tasks(now.active_tasks_pending_revocation),
                _tasks(now.standby_tasks_pending_revocation),
                _tasks(now.warmup_tasks_pending_revocation),
            ),
        )
        if (member_id, _TARGET_ASSIGNMENT_MEMBER) in records:
            t = value(member_id, _TARGET_ASSIGNMENT_MEMBER, StreamsGroupTargetAssignmentMemberValue)
            group.target[member_id] = Tasks(
                _tasks(t.active_tasks), _tasks(t.standby_tasks), _tasks(t.warmup_tasks)
            )
    return group, metadata.metadata_hash
