"""ConsumerGroupDescribe (key 69, KIP-848): epochs, assignor and members of consumer-protocol
groups, each member with its current and target assignment.

Groups come in request order; an unknown group, or one of the classic protocol, answers
GROUP_ID_NOT_FOUND, as Kafka does. Members come sorted by member id; from v1 (KIP-1099) each
says it speaks the consumer protocol (MemberType 1: a group here has no classic members). v2
(unstable, seed 001) pages the members: at most max(min(broker limit,
ResponsePaginationLimit), 1) of them, from the cursor (group, member) on; NextCursor names
the first member left out (with an empty member id when the next page starts at a group's
beginning). A group listed twice, or a cursor whose group is not in the request, is
INVALID_REQUEST for every group.
"""

from __future__ import annotations

import uuid

from kafkagen.generated.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.group.assignors import Assignment
from kafkagen.runtime.broker.group.consumer_group_manager import ConsumerGroupManager
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import (
    GroupAuthorizationFailedError,
    InvalidGroupIdError,
    InvalidRequestError,
    KafkaError,
)
from kafkagen.runtime.handlers._util import (
    NOT_REQUESTED,
    pagination_limit,
    repeated,
)
from kafkagen.runtime.pagination import paged_version

API_KEY = 69
PAGED = paged_version(API_KEY)
R = ConsumerGroupDescribeResponse
Described = ConsumerGroupDescribeResponse.DescribedGroup
Member = ConsumerGroupDescribeResponse.Member
#: MemberType of a member that joined with the consumer protocol (0 would be classic).
CONSUMER_MEMBER = 1


def handle(ctx: RequestContext, request: ConsumerGroupDescribeRequest) -> None:
    ops = request.include_authorized_operations
    group_ids = list(request.group_ids)
    paged = ctx.api_version >= PAGED
    cursor = request.cursor if paged else None
    start = 0
    if paged:
        problem = repeated(group_ids, "the group")
        if problem is None and cursor is not None and cursor.group_id not in group_ids:
            problem = f"the cursor's group {cursor.group_id!r} is not among the requested groups"
        if problem is not None:
            error = InvalidRequestError(problem)
            ctx.respond(
                R(
                    groups=[
                        Described(error_code=error.code, error_message=error.message, group_id=g)
                        for g in group_ids
                    ]
                )
            )
            return
        if cursor is not None:
            start = group_ids.index(cursor.group_id)
    remaining = pagination_limit(ctx, request.response_pagination_limit) if paged else -1
    out: list[Described] = []
    next_cursor = None
    for i in range(start, len(group_ids)):
        d = _describe(ctx, group_ids[i], ops)
        if cursor is not None and i == start:
            d.members = [m for m in d.members if m.member_id >= cursor.member_id]
        if paged:
            if remaining <= 0:
                # "From the start of this group": the next page answers it whatever is left.
                next_cursor = R.GroupMemberCursor(group_id=d.group_id, member_id="")
                break
            if len(d.members) > remaining:
                next_cursor = R.GroupMemberCursor(
                    group_id=d.group_id, member_id=d.members[remaining].member_id
                )
                d.members = d.members[:remaining]
                out.append(d)
                break
            remaining -= len(d.members)
        out.append(d)
    response = R(groups=out)
    if paged:
        response.next_cursor = next_cursor
    ctx.respond(response)


def _describe(ctx: RequestContext, group_id: str, want_ops: bool) -> Described:
    manager = ctx.broker.group_coordinator.consumer
    ops = ctx.authorized_operations(ResourceType.GROUP, group_id) if want_ops else NOT_REQUESTED
    d = Described(error_code=0, group_id=group_id, authorized_operations=ops)
    if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        d.error_code = GroupAuthorizationFailedError.code
        return d
    if not group_id:  # as Kafka: refused before the coordinator is asked, with no message
        d.error_code = InvalidGroupIdError.code
        return d
    try:
        group = manager.describe(group_id)
    except KafkaError as e:
        d.error_code = e.code
        d.error_message = e.message
        return d
    d.group_state = group.state.value
    d.group_epoch = group.group_epoch
    d.assignment_epoch = group.assignment_epoch
    d.assignor_name = group.assignor_name
    d.members = [
        Member(
            member_id=m.member_id,
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            member_epoch=m.member_epoch,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=list(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex,
            assignment=_assignment(manager, m.assigned),
            target_assignment=_assignment(manager, group.target.get(m.member_id, {})),
            member_type=CONSUMER_MEMBER,
        )
        for m in sorted(group.members.values(), key=lambda m: m.member_id)
    ]
    return d


def _assignment(manager: ConsumerGroupManager, a: Assignment) -> R.Assignment:
    parts: list[tuple[str, uuid.UUID, list[int]]] = sorted(
        (manager.topic_name(t), t, sorted(ps)) for t, ps in a.items() if ps
    )
    return R.Assignment(
        topic_partitions=[
            R.TopicPartitions(topic_id=t, topic_name=name, partitions=ps) for name, t, ps in parts
        ]
    )
