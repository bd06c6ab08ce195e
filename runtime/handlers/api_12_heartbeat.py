"""Heartbeat (key 12): keeps a member's session alive and tells it when to rejoin."""

from __future__ import annotations

from kafkagen.generated.heartbeat import HeartbeatRequest, HeartbeatResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import ErrorCode

API_KEY = 12


def handle(ctx: RequestContext, request: HeartbeatRequest) -> None:
    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        ctx.respond(HeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED))
        return
    error = ctx.broker.group_coordinator.heartbeat(
        request.group_id,
        request.generation_id,
        request.member_id,
        request.group_instance_id if ctx.api_version >= 3 else None,
    )
    ctx.respond(HeartbeatResponse(error_code=error))
