"""SyncGroup (key 14): members get their assignment once the leader has sent everyone's."""

from __future__ import annotations

from kafkagen.generated.sync_group import SyncGroupRequest, SyncGroupResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.group.group_model import SyncResult
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import ErrorCode

API_KEY = 14


def handle(ctx: RequestContext, request: SyncGroupRequest) -> None:
    v = ctx.api_version
    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        ctx.respond(
            SyncGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, assignment=b"")
        )
        return

    def done(r: SyncResult) -> None:
        ctx.respond(
            SyncGroupResponse(
                error_code=r.error,
                protocol_type=r.protocol_type,
                protocol_name=r.protocol_name,
                assignment=r.assignment,
            )
        )

    if v >= 5 and (request.protocol_type is None or request.protocol_name is None):
        # v5+ must name the protocol it syncs (as Kafka checks before the group).
        done(SyncResult(error=ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        return
    ctx.broker.group_coordinator.sync_group(
        request.group_id,
        request.generation_id,
        request.member_id,
        request.group_instance_id if v >= 3 else None,
        request.protocol_type if v >= 5 else None,
        request.protocol_name if v >= 5 else None,
        {a.member_id: bytes(a.assignment) for a in request.assignments},
        done,
    )
