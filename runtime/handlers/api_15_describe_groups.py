"""DescribeGroups (key 15): state, protocol and members of groups.

Member metadata and assignments are shown only for a Stable group, as Kafka does; an
unknown group is described as Dead with no members, and from v6 (KIP-1043) also answers
GROUP_ID_NOT_FOUND with a message. So is a group of another protocol (consumer, share,
streams), whose message says it is not a classic group. v7 (unstable, seed 001) pages the
members, sorted by id within each group (groups in request order); NextCursor names where
the next page starts. A cursor at a member that has left resumes at the next member; a
group listed twice, or a cursor whose group was not asked for, answers INVALID_REQUEST for
every group.
"""

from __future__ import annotations

from kafkagen.generated.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.group.group_model import GroupState
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import (
    ErrorCode,
    GroupAuthorizationFailedError,
    InvalidRequestError,
    KafkaError,
)
from kafkagen.runtime.handlers._util import (
    NOT_REQUESTED,
    Pager,
    pagination_limit,
    repeated,
)
from kafkagen.runtime.pagination import paged_version

API_KEY = 15
PAGED = paged_version(API_KEY)
#: A NextCursor member id meaning "this group from its first member": the page before did
#: not show the group, so the next one does even if its members have all left meanwhile.
_GROUP_START = ""
Described = DescribeGroupsResponse.DescribedGroup
_NOT_CLASSIC = "is not a classic group."
Member = DescribeGroupsResponse.DescribedGroupMember


def handle(ctx: RequestContext, request: DescribeGroupsRequest) -> None:
    gc = ctx.broker.group_coordinator
    want_ops = ctx.api_version >= 3 and request.include_authorized_operations

    def ops(group_id: str) -> int:
        return (
            ctx.authorized_operations(ResourceType.GROUP, group_id) if want_ops else NOT_REQUESTED
        )

    pager = None
    if ctx.api_version >= PAGED:
        c = request.cursor
        problem = repeated(request.groups, "the group")
        if problem is None and c is not None and c.group_id not in request.groups:
            problem = f"the cursor's group {c.group_id!r} was not asked for"
        if problem is not None:
            error = InvalidRequestError(problem)
            ctx.respond(
                DescribeGroupsResponse(
                    groups=[
                        Described(error_code=error.code, group_id=g, authorized_operations=ops(g))
                        for g in request.groups
                    ]
                )
            )
            return
        pager = Pager(
            pagination_limit(ctx, request.response_pagination_limit),
            None if c is None else (c.group_id, c.member_id),
            sorted_keys=False,
            request_prefix=1,
            entry_start=(_GROUP_START,),
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
            authorized_operations=ops(group_id),
        )
        if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            d.error_code = GroupAuthorizationFailedError.code
            out.append(d)
            continue
        try:
            group = gc.describe_group(group_id)
        except KafkaError as e:
            d.error_code = e.code
            out.append(d)
            continue
        if group is None and ctx.api_version >= 6:
            d.error_code = ErrorCode.GROUP_ID_NOT_FOUND
            # A share, consumer-protocol or streams group's id is known, as Kafka says,
            # but not as a classic group's.
            known = (
                group_id in gc.consumer.groups
                or group_id in gc.streams.groups
                or ctx.broker.share_groups.groups.get(group_id) is not None
            )
            d.error_message = f"Group {group_id} {_NOT_CLASSIC if known else 'not found.'}"
        elif group is not None:
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
        if pager is not None:
            if not d.members:
                if pager.reaches((group_id,)):
                    out.append(d)
                continue
            d.members = [
                m
                for m in sorted(d.members, key=lambda m: m.member_id)
                if pager.take((group_id, m.member_id))
            ]
            if not d.members:
                continue
        out.append(d)
    response = DescribeGroupsResponse(groups=out)
    if pager is not None and pager.next is not None:
        next_group, next_member = pager.next
        assert isinstance(next_group, str) and isinstance(next_member, str)
        if not out or out[-1].group_id != next_group:
            next_member = _GROUP_START  # the next page starts with this group
        response.next_cursor = DescribeGroupsResponse.GroupMemberCursor(
            group_id=next_group, member_id=next_member
        )
    ctx.respond(response)
