"""StreamsGroupHeartbeat (key 88, KIP-1071): Kafka Streams clients join, stay in and leave
a streams group; the answer carries the member's tasks when they changed, the statuses
that hold its assignment back (missing topics, ...) and, when the member's copy is stale,
which endpoint serves which partitions. The coordinator's streams-group manager does the
work. A group id a classic or consumer-protocol group holds answers GROUP_ID_NOT_FOUND.
While the protocol is off (`StreamsGroupManager.enabled`) every heartbeat answers
UNSUPPORTED_VERSION with no message.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafkagen.generated.streams_group_heartbeat import (
    StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.group.sticky_task_assignor import TaskOffsets, Tasks, TaskSet
from kafkagen.runtime.broker.group.streams_group import InternalTopic, Subtopology, Topology
from kafkagen.runtime.broker.group.streams_group_manager import HeartbeatResult
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import ErrorCode, GroupIdNotFoundError, InvalidRequestError, KafkaError

API_KEY = 88
Q = StreamsGroupHeartbeatRequest
R = StreamsGroupHeartbeatResponse


def handle(ctx: RequestContext, request: StreamsGroupHeartbeatRequest) -> None:
    group_id = request.group_id
    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, group_id):
        ctx.respond(R(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, member_id=""))
        return
    gc = ctx.broker.group_coordinator
    if not gc.streams.enabled():  # Kafka 4.4 answers so without a message
        ctx.respond(R(error_code=ErrorCode.UNSUPPORTED_VERSION, member_id=""))
        return

    def respond(result: HeartbeatResult | None, error: int) -> None:
        if result is None:
            ctx.respond(R(error_code=error, member_id=""))
        else:
            ctx.respond(_response(ctx.api_version, result))

    try:
        if group_id in gc.groups or group_id in gc.consumer.groups:
            raise GroupIdNotFoundError(f"Group {group_id} is not a streams group.")
        gc.streams.heartbeat(
            group_id=group_id,
            member_id=request.member_id,
            member_epoch=request.member_epoch,
            endpoint_epoch=request.endpoint_information_epoch,
            instance_id=request.instance_id,
            rack_id=request.rack_id,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            topology=_topology(request.topology),
            owned=_owned(request),
            process_id=request.process_id,
            user_endpoint=(
                None
                if request.user_endpoint is None
                else (request.user_endpoint.host, request.user_endpoint.port)
            ),
            client_tags=(
                None
                if request.client_tags is None
                else {kv.key: kv.value for kv in request.client_tags}
            ),
            task_offsets=_task_offsets(request.task_offsets),
            task_end_offsets=_task_offsets(request.task_end_offsets),
            shutdown_application=request.shutdown_application,
            client_id=ctx.client_id or "",
            client_host=ctx.client_host,
            respond=respond,
        )
    except KafkaError as e:
        ctx.respond(R(error_code=e.code, error_message=e.message, member_id=""))


def _response(api_version: int, result: HeartbeatResult) -> StreamsGroupHeartbeatResponse:
    response = R(
        error_code=0,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        task_offset_interval_ms=result.task_offset_interval_ms,
        endpoint_information_epoch=result.endpoint_epoch,
        status=[R.Status(status_code=c, status_detail=d) for c, d in result.statuses],
    )
    if api_version >= 1:
        response.acceptable_recovery_lag = result.acceptable_recovery_lag
    else:
        response.acceptable_recovery_lag_legacy = min(result.acceptable_recovery_lag, 2**31 - 1)
    if result.tasks is not None:
        response.active_tasks = _task_ids(result.tasks.active)
        response.standby_tasks = _task_ids(result.tasks.standby)
        response.warmup_tasks = _task_ids(result.tasks.warmup)
    if result.endpoints is not None:
        response.partitions_by_user_endpoint = [
            R.EndpointToPartitions(
                user_endpoint=R.Endpoint(host=host, port=port),
                active_partitions=_topic_partitions(active),
                standby_partitions=_topic_partitions(standby),
            )
            for (host, port), (active, standby) in sorted(result.endpoints.items())
        ]
    return response


def _topic_partitions(partitions: dict[str, set[int]]) -> list[R.TopicPartition]:
    return [
        R.TopicPartition(topic=t, partitions=sorted(ps))
        for t, ps in sorted(partitions.items())
        if ps
    ]


def _task_ids(tasks: TaskSet) -> list[R.TaskIds]:
    return [
        R.TaskIds(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items()) if ps
    ]


def _owned(request: StreamsGroupHeartbeatRequest) -> Tasks | None:
    kinds = (request.active_tasks, request.standby_tasks, request.warmup_tasks)
    if all(k is None for k in kinds):
        return None
    if any(k is None for k in kinds):
        raise InvalidRequestError("If one task-type is non-null, all must be non-null.")
    return Tasks(*(_task_set(k) for k in kinds))


def _task_set(ids: Sequence[Q.TaskIds] | None) -> TaskSet:
    out: TaskSet = {}
    for t in ids or ():
        out.setdefault(t.subtopology_id, set()).update(t.partitions)
    return out


def _task_offsets(offsets: Sequence[Q.TaskOffset] | None) -> TaskOffsets | None:
    if offsets is None:
        return None
    out: TaskOffsets = {}
    for o in offsets:
        out.setdefault(o.subtopology_id, {})[o.partition] = o.offset
    return out


def _topology(t: Q.Topology | None) -> Topology | None:
    if t is None:
        return None
    return Topology(
        t.epoch,
        tuple(
            Subtopology(
                s.subtopology_id,
                tuple(s.source_topics),
                tuple(s.repartition_sink_topics),
                tuple(_internal(i) for i in s.state_changelog_topics),
                tuple(_internal(i) for i in s.repartition_source_topics),
                tuple(
                    tuple(
                        [_at(s.source_topics, i) for i in g.source_topics]
                        + [
                            _at([r.name for r in s.repartition_source_topics], i)
                            for i in g.repartition_source_topics
                        ]
                    )
                    for g in s.copartition_groups
                ),
            )
            for s in t.subtopologies
        ),
    )


def _at(names: Sequence[str], index: int) -> str | None:
    """The topic a copartition group points at by index (None: no such topic; the
    coordinator refuses the topology)."""
    return names[index] if 0 <= index < len(names) else None


def _internal(i: Q.TopicInfo) -> InternalTopic:
    return InternalTopic(
        i.name,
        i.partitions,
        i.replication_factor,
        tuple((kv.key, kv.value) for kv in i.topic_configs),
    )
