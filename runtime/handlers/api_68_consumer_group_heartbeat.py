"""ConsumerGroupHeartbeat (key 68, KIP-848): join, stay, reconcile and leave a group of the
consumer protocol. The coordinator's consumer-group manager does the work and answers once
the group's new state is durable; errors come back in the response with their message, and
the member id and epoch stay null and 0 then.
v1 adds SubscribedTopicRegex and expects the member to name itself.
"""

from __future__ import annotations

from kafkagen.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.group.assignors import Assignment
from kafkagen.runtime.broker.group.consumer_group import HeartbeatResult
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import ErrorCode, GroupIdNotFoundError, KafkaError

API_KEY = 68
R = ConsumerGroupHeartbeatResponse


def handle(ctx: RequestContext, request: ConsumerGroupHeartbeatRequest) -> None:
    owned: Assignment | None = None
    if request.topic_partitions is not None:
        owned = {}
        for t in request.topic_partitions:
            owned.setdefault(t.topic_id, set()).update(t.partitions)

    def respond(result: HeartbeatResult | None, error: int) -> None:
        if result is None:
            ctx.respond(R(error_code=error, error_message=None, member_id=None, member_epoch=0))
            return
        assignment = None
        if result.assignment is not None:
            assignment = R.Assignment(
                topic_partitions=[
                    R.TopicPartitions(topic_id=topic_id, partitions=sorted(parts))
                    for topic_id, parts in sorted(
                        result.assignment.items(), key=lambda kv: str(kv[0])
                    )
                ]
            )
        ctx.respond(
            R(
                error_code=0,
                error_message=None,
                member_id=result.member_id,
                member_epoch=result.member_epoch,
                heartbeat_interval_ms=result.heartbeat_interval_ms,
                assignment=assignment,
            )
        )

    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        respond(None, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return
    gc = ctx.broker.group_coordinator
    try:
        if request.group_id in gc.streams.groups:
            raise GroupIdNotFoundError(f"Group {request.group_id} is not a consumer group.")
        gc.consumer.heartbeat(
            version=ctx.api_version,
            group_id=request.group_id,
            member_id=request.member_id,
            member_epoch=request.member_epoch,
            instance_id=request.instance_id,
            rack_id=request.rack_id,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            subscribed_topic_names=(
                None
                if request.subscribed_topic_names is None
                else list(request.subscribed_topic_names)
            ),
            subscribed_topic_regex=(
                request.subscribed_topic_regex if ctx.api_version >= 1 else None
            ),
            server_assignor=request.server_assignor,
            owned=owned,
            client_id=ctx.client_id or "",
            client_host=ctx.client_host,
            respond=respond,
        )
    except KafkaError as e:
        ctx.respond(R(error_code=e.code, error_message=e.message, member_id=None, member_epoch=0))
