"""ShareGroupDescribe (key 77, KIP-932): epochs, assignor and members of share groups, each
member with its partitions. Groups come in request order; an unknown group, or one of
another type, answers GROUP_ID_NOT_FOUND, as Kafka does.
"""

from __future__ import annotations

from kafkagen.generated.share_group_describe import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.share.share_group import ASSIGNOR
from kafkagen.runtime.errors import (
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    KafkaError,
    UnsupportedVersionError,
)
from kafkagen.runtime.handlers._util import NOT_REQUESTED

API_KEY = 77
R = ShareGroupDescribeResponse
Described = ShareGroupDescribeResponse.DescribedGroup


def handle(ctx: RequestContext, request: ShareGroupDescribeRequest) -> None:
    if not ctx.broker.share_groups.enabled():  # share.version 0: as Kafka 4.4, no message
        off = [
            Described(error_code=UnsupportedVersionError.code, group_id=g)
            for g in request.group_ids
        ]
        ctx.respond(R(groups=off))
        return
    md = ctx.broker.metadata
    out = []
    for group_id in request.group_ids:
        d = Described(error_code=0, group_id=group_id)
        if request.include_authorized_operations:
            d.authorized_operations = ctx.authorized_operations(ResourceType.GROUP, group_id)
        else:
            d.authorized_operations = NOT_REQUESTED
        try:
            if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
                raise GroupAuthorizationFailedError()
            group = ctx.broker.share_groups.group(group_id)
            if group is None:
                raise GroupIdNotFoundError(f"Group {group_id} not found.")
        except KafkaError as e:
            d.error_code, d.error_message = e.code, e.message
            out.append(d)
            continue
        d.group_state = group.state
        d.group_epoch = group.group_epoch
        d.assignment_epoch = group.assignment_epoch
        d.assignor_name = ASSIGNOR
        d.members = [
            R.Member(
                member_id=m.member_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=sorted(m.subscribed),
                assignment=R.Assignment(
                    topic_partitions=[
                        R.TopicPartitions(
                            topic_id=topic_id,
                            topic_name=md.topic_names.get(topic_id, ""),
                            partitions=sorted(parts),
                        )
                        for topic_id, parts in sorted(
                            m.assignment.items(), key=lambda kv: str(kv[0])
                        )
                    ]
                ),
            )
            for _, m in sorted(group.members.items())
        ]
        out.append(d)
    ctx.respond(R(groups=out))
