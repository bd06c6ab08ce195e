"""DescribeGroups (key 15): state, protocol and members of groups.

Member metadata and assignments are shown only for a Stable group, as Kafka does; an
unknown group is described as Dead with no members.
"""

from __future__ import annotations

from kafkagen.generated.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from kafkagen.runtime.broker.api import RequestContext, register
from kafkagen.runtime.broker.group_coordinator import GroupState
from kafkagen.runtime.errors import KafkaError
from kafkagen.runtime.handlers._util import GROUP_OPERATIONS, NOT_REQUESTED, authorized_operations

API_KEY = 15
Described = DescribeGroupsResponse.DescribedGroup
Member = DescribeGroupsResponse.DescribedGroupMember


@register(API_KEY, 0, 5)
def handle(ctx: RequestContext, request: DescribeGroupsRequest) -> None:
    gc = ctx.broker.group_coordinator
    ops = (
        authorized_operations(GROUP_OPERATIONS)
        if ctx.api_version >= 3 and request.include_authorized_operations
        else NOT_REQUESTED
    )
    out = []
    for group_id in request.groups:
        d = Described(
            error_code=0,
            group_id=group_id,
            group_state=GroupState.DEAD.value,
            protocol_type="",
            protocol_data="",
            members=[],
            authorized_operations=ops,
        )
        try:
            group = gc.describe_group(group_id)
        except KafkaError as e:
            d.error_code = e.code
            out.append(d)
            continue
        if group is not None:
            stable = group.state is GroupState.STABLE
            d.group_state = group.state.value
            d.protocol_type = group.protocol_type or ""
            d.protocol_data = (group.protocol_name or "") if stable else ""
            d.members = [
                Member(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    member_metadata=m.metadata_for(group.protocol_name) if stable else b"",
                    member_assignment=m.assignment if stable else b"",
                )
                for m in group.members.values()
            ]
        out.append(d)
    ctx.respond(DescribeGroupsResponse(groups=out))
