"""LeaveGroup (key 13): members leave (v3+: several at once, static ones by instance id)."""

from __future__ import annotations

from kafkagen.generated.leave_group import LeaveGroupRequest, LeaveGroupResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import ErrorCode

API_KEY = 13


def handle(ctx: RequestContext, request: LeaveGroupRequest) -> None:
    gc = ctx.broker.group_coordinator
    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        ctx.respond(LeaveGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, members=[]))
        return
    if ctx.api_version < 3:
        top, [error] = gc.leave_group(request.group_id, [(request.member_id, None)])
        ctx.respond(LeaveGroupResponse(error_code=top or error))
        return
    leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    top, errors = gc.leave_group(request.group_id, leaving)
    ctx.respond(
        LeaveGroupResponse(
            error_code=top,
            members=[
                LeaveGroupResponse.MemberResponse(member_id=m, group_instance_id=i, error_code=e)
                for (m, i), e in zip(leaving, errors, strict=True)
            ],
        )
    )
