"""DescribeShareGroupOffsets (key 90, KIP-932): each share partition's start offset, the
leader epoch that wrote it and, from v1, the lag (records from the start to the high
watermark not yet done). Topics null asks for every partition the group has state for.

As on Kafka, a group or topic without state answers start offset -1, no error; a topic
the sender may not describe answers TOPIC_AUTHORIZATION_FAILED for its partitions, and is
left out of a whole-group answer.
"""

from __future__ import annotations

import uuid

from kafkagen.generated.describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.share.share_partition import PartitionState
from kafkagen.runtime.errors import (
    GroupAuthorizationFailedError,
    KafkaError,
    UnsupportedVersionError,
)
from kafkagen.runtime.errors import TopicAuthorizationFailedError as TopicDenied
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 90
R = DescribeShareGroupOffsetsResponse
_NO_TOPIC = uuid.UUID(int=0)


def handle(ctx: RequestContext, request: DescribeShareGroupOffsetsRequest) -> None:
    if not ctx.broker.share_groups.enabled():  # share.version 0: as Kafka 4.4, no message
        off = [
            R.DescribeShareGroupOffsetsResponseGroup(
                group_id=g.group_id, topics=[], error_code=UnsupportedVersionError.code
            )
            for g in request.groups
        ]
        ctx.respond(R(groups=off))
        return
    ctx.respond(R(groups=[_group(ctx, g) for g in request.groups]))


def _group(
    ctx: RequestContext, g: DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
) -> R.DescribeShareGroupOffsetsResponseGroup:
    out = R.DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, topics=[])
    if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id):
        out.error_code = GroupAuthorizationFailedError.code
        return out
    if g.topics is not None and not g.topics:
        return out
    wanted = None if g.topics is None else [(t.topic_name, list(t.partitions)) for t in g.topics]
    denied = []
    if wanted is not None:
        readable = {n: ctx.allowed(AclOperation.DESCRIBE, ResourceType.TOPIC, n) for n, _ in wanted}
        denied = [(n, parts) for n, parts in wanted if not readable[n]]
        wanted = [(n, parts) for n, parts in wanted if readable[n]]
    try:
        found = ctx.broker.share_groups.offsets(g.group_id, wanted)
    except KafkaError as e:
        out.error_code, out.error_message = e.code, e.message
        return out
    for name, topic_id, states in found:
        if topic_id is not None and not ctx.allowed(
            AclOperation.DESCRIBE, ResourceType.TOPIC, name
        ):
            continue
        out.topics.append(
            R.DescribeShareGroupOffsetsResponseTopic(
                topic_name=name,
                topic_id=topic_id or _NO_TOPIC,
                partitions=[_partition(ctx, name, p, state) for p, state in states],
            )
        )
    for name, parts in denied:
        error = TopicDenied()
        out.topics.append(
            R.DescribeShareGroupOffsetsResponseTopic(
                topic_name=name,
                topic_id=_NO_TOPIC,
                partitions=[
                    R.DescribeShareGroupOffsetsResponsePartition(
                        partition_index=p,
                        start_offset=-1,
                        error_code=error.code,
                        error_message=error.message,
                    )
                    for p in parts
                ],
            )
        )
    return out


def _partition(
    ctx: RequestContext, name: str, index: int, state: PartitionState | None
) -> R.DescribeShareGroupOffsetsResponsePartition:
    if state is None or state.start_offset < 0:
        return R.DescribeShareGroupOffsetsResponsePartition(
            partition_index=index, start_offset=-1, leader_epoch=0, lag=-1
        )
    return R.DescribeShareGroupOffsetsResponsePartition(
        partition_index=index,
        start_offset=state.start_offset,
        leader_epoch=state.leader_epoch,
        lag=_lag(ctx, name, index, state),
    )


def _lag(ctx: RequestContext, name: str, index: int, state: PartitionState) -> int:
    """Records from the start to the leader's high watermark not yet done; -1 when the
    leader is not reachable."""
    info = ctx.broker.metadata.partition(name, index)
    rm = None if info is None else ctx.broker.peers.replica_manager_of(info.leader)
    partition = None if rm is None else rm.partitions.get(TopicPartition(name, index))
    if partition is None:
        return -1
    done = state.delivery_complete_count()
    return max(partition.high_watermark - state.start_offset - done, 0)
