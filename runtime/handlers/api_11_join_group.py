"""JoinGroup (key 11): join a classic group; the answer comes when the rebalance completes.

v4+ members without an id first get MEMBER_ID_REQUIRED with one (KIP-394); static members
(group.instance.id, v5+) keep their assignment across restarts.
"""

from __future__ import annotations

from kafkagen.generated.join_group import JoinGroupRequest, JoinGroupResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.group.group_model import JoinResult
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import ErrorCode

API_KEY = 11


def handle(ctx: RequestContext, request: JoinGroupRequest) -> None:
    v = ctx.api_version
    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        ctx.respond(
            JoinGroupResponse(
                error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                generation_id=-1,
                protocol_name=None if v >= 7 else "",
                leader="",
                member_id=request.member_id,
                members=[],
            )
        )
        return

    def done(r: JoinResult) -> None:
        ctx.respond(
            JoinGroupResponse(
                error_code=r.error,
                generation_id=r.generation_id,
                protocol_type=r.protocol_type,
                protocol_name=r.protocol_name if v >= 7 else (r.protocol_name or ""),
                leader=r.leader,
                skip_assignment=r.skip_assignment and v >= 9,
                member_id=r.member_id,
                members=[
                    JoinGroupResponse.JoinGroupResponseMember(
                        member_id=m, group_instance_id=i, metadata=meta
                    )
                    for m, i, meta in r.members
                ],
            )
        )

    ctx.broker.group_coordinator.join_group(
        request.group_id,
        request.member_id,
        request.group_instance_id if v >= 5 else None,
        v >= 4,
        ctx.client_id or "",
        ctx.client_host,
        request.rebalance_timeout_ms if v >= 1 else request.session_timeout_ms,
        request.session_timeout_ms,
        request.protocol_type,
        [(p.name, bytes(p.metadata)) for p in request.protocols],
        done,
        supports_skip_assignment=v >= 9,
    )
