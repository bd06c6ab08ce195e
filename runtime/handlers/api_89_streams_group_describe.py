"""StreamsGroupDescribe (key 89, KIP-1071): state, epochs, topology and members of streams
groups, each member with its process, endpoint, current and target tasks.

Groups come in request order; an unknown group, or one of another protocol, answers
GROUP_ID_NOT_FOUND. Members come sorted by member id. v1 adds the assignor's name; the
topology description of KIP-1331 is not kept (see API 93), so it stays null, with the
status NOT_STORED when it was asked for. While the
protocol is off (`StreamsGroupManager.enabled`) every group answers UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from kafkagen.generated.streams_group_describe import (
    StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.group.sticky_task_assignor import TaskOffsets, Tasks, TaskSet
from kafkagen.runtime.broker.group.streams_group import ConfiguredTopology, InternalTopic, Topology
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import (
    ErrorCode,
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    InvalidGroupIdError,
    KafkaError,
)
from kafkagen.runtime.handlers._util import NOT_REQUESTED

API_KEY = 89
R = StreamsGroupDescribeResponse
Described = StreamsGroupDescribeResponse.DescribedGroup
#: The only task assignor served.
ASSIGNOR = "sticky"
#: The description status of a group whose description is not kept: asked for, a
#: described group answers so (Kafka 4.4.0 without a description plugin does too).
NOT_STORED = 1


def handle(ctx: RequestContext, request: StreamsGroupDescribeRequest) -> None:
    if not ctx.broker.group_coordinator.streams.enabled():  # every group, without a message
        off = [
            Described(error_code=ErrorCode.UNSUPPORTED_VERSION, group_id=g)
            for g in request.group_ids
        ]
        ctx.respond(R(groups=off))
        return
    ctx.respond(
        R(
            groups=[
                _describe(
                    ctx,
                    g,
                    request.include_authorized_operations,
                    request.include_topology_description,
                )
                for g in request.group_ids
            ]
        )
    )


def _describe(
    ctx: RequestContext, group_id: str, want_ops: bool, want_description: bool
) -> Described:
    ops = ctx.authorized_operations(ResourceType.GROUP, group_id) if want_ops else NOT_REQUESTED
    d = Described(error_code=0, group_id=group_id, authorized_operations=ops)
    if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        d.error_code = GroupAuthorizationFailedError.code
        return d
    if not group_id:
        d.error_code = InvalidGroupIdError.code
        return d
    gc = ctx.broker.group_coordinator
    try:
        if group_id in gc.consumer.groups or group_id in gc.groups:
            gc.log.check_owner(group_id)
            raise GroupIdNotFoundError(f"Group {group_id} is not a streams group.")
        group = gc.streams.describe(group_id)
    except KafkaError as e:
        d.error_code = e.code
        d.error_message = e.message
        return d
    d.group_state = group.state.value
    d.group_epoch = group.group_epoch
    d.assignment_epoch = group.assignment_epoch
    d.topology = None if group.topology is None else _topology(group.topology, group.configured)
    if ctx.api_version >= 1:
        d.assignor_name = ASSIGNOR
        if want_description:
            d.topology_description_status = NOT_STORED
    d.members = [
        R.Member(
            member_id=m.member_id,
            member_epoch=m.member_epoch,
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            client_id=m.client_id,
            client_host=m.client_host,
            topology_epoch=m.topology_epoch,
            process_id=m.process_id,
            user_endpoint=(
                None
                if m.user_endpoint is None
                else R.Endpoint(host=m.user_endpoint[0], port=m.user_endpoint[1])
            ),
            client_tags=[R.KeyValue(key=k, value=v) for k, v in sorted(m.client_tags.items())],
            task_offsets=_task_offsets(m.task_offsets),
            task_end_offsets=_task_offsets(m.task_end_offsets),
            assignment=_assignment(m.assigned),
            target_assignment=_assignment(group.target.get(m.member_id, Tasks())),
            is_classic=False,
        )
        for m in sorted(group.members.values(), key=lambda m: m.member_id)
    ]
    return d


def _task_offsets(offsets: TaskOffsets) -> list[R.TaskOffset]:
    return [
        R.TaskOffset(subtopology_id=sub, partition=p, offset=offset)
        for sub, by_partition in sorted(offsets.items())
        for p, offset in sorted(by_partition.items())
    ]


def _topology(t: Topology, configured: ConfiguredTopology | None) -> R.Topology:
    """The topology as the member sent it; once it is configured, its internal topics with
    the partition counts the coordinator gave them, as Kafka describes them."""
    tasks: dict[str, int] = {}
    counts: dict[str, int] = {}
    if configured is not None and configured.task_counts is not None:
        tasks, counts = configured.task_counts, configured.source_partitions
    return R.Topology(
        epoch=t.epoch,
        subtopologies=[
            R.Subtopology(
                subtopology_id=s.subtopology_id,
                source_topics=list(s.source_topics),
                repartition_sink_topics=list(s.repartition_sink_topics),
                state_changelog_topics=[
                    _topic_info(c, tasks.get(s.subtopology_id, c.partitions))
                    for c in s.state_changelog_topics
                ],
                repartition_source_topics=[
                    _topic_info(r, counts.get(r.name, r.partitions))
                    for r in s.repartition_source_topics
                ],
            )
            for s in t.subtopologies
        ],
    )


def _topic_info(t: InternalTopic, partitions: int) -> R.TopicInfo:
    return R.TopicInfo(
        name=t.name,
        partitions=partitions,
        replication_factor=t.replication_factor,
        topic_configs=[R.KeyValue(key=k, value=v) for k, v in t.configs],
    )


def _assignment(tasks: Tasks) -> R.Assignment:
    return R.Assignment(
        active_tasks=_task_ids(tasks.active),
        standby_tasks=_task_ids(tasks.standby),
        warmup_tasks=_task_ids(tasks.warmup),
    )


def _task_ids(tasks: TaskSet) -> list[R.TaskIds]:
    return [
        R.TaskIds(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items()) if ps
    ]
