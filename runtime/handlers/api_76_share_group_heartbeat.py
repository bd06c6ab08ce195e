"""ShareGroupHeartbeat (key 76, KIP-932): join, stay in and leave a share group; the answer
carries the member's partitions when they changed. The share-group manager of the
coordinator does the work and answers once the group's records are written; a group id a
classic or consumer-protocol group holds answers GROUP_ID_NOT_FOUND, as Kafka does.
"""

from __future__ import annotations

from kafkagen.generated.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.share.share_group import HeartbeatResult
from kafkagen.runtime.errors import ErrorCode, GroupIdNotFoundError, KafkaError

API_KEY = 76
R = ShareGroupHeartbeatResponse


def handle(ctx: RequestContext, request: ShareGroupHeartbeatRequest) -> None:
    group_id = request.group_id
    if not ctx.broker.share_groups.enabled():  # share.version 0: as Kafka 4.4, no message
        ctx.respond(R(error_code=ErrorCode.UNSUPPORTED_VERSION, member_id=None))
        return
    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, group_id):
        ctx.respond(R(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, member_id=None))
        return
    if not request.member_id:
        # Checked before the coordinator, as Kafka does: the answer has no message.
        ctx.respond(R(error_code=ErrorCode.INVALID_REQUEST, member_id=None))
        return

    def respond(result: HeartbeatResult | None, error: int) -> None:
        if result is None:
            ctx.respond(R(error_code=error, member_id=None))
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
                member_id=result.member_id,
                member_epoch=result.member_epoch,
                heartbeat_interval_ms=result.heartbeat_interval_ms,
                assignment=assignment,
            )
        )

    gc = ctx.broker.group_coordinator
    try:
        if group_id in gc.groups or group_id in gc.consumer.groups:
            raise GroupIdNotFoundError(f"Group {group_id} is not a share group.")
        subscribed = request.subscribed_topic_names
        ctx.broker.share_groups.heartbeat(
            group_id=group_id,
            member_id=request.member_id,
            member_epoch=request.member_epoch,
            rack_id=request.rack_id,
            subscribed=None if subscribed is None else list(subscribed),
            client_id=ctx.client_id or "",
            client_host=ctx.client_host,
            respond=respond,
        )
    except KafkaError as e:
        ctx.respond(R(error_code=e.code, error_message=e.message, member_id=None))
