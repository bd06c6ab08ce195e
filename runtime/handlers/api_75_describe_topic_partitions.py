"""DescribeTopicPartitions (key 75, KIP-966): topics and their partitions, paged.

Topics (all of them when the request lists none) come by name, partitions by index, from
the cursor on; at most max(min(max.request.partition.size.limit, ResponsePartitionLimit), 1)
partitions fit, and NextCursor names the first one left out (the next topic's partition 0
when the page ended exactly at a topic's end). A requested topic that does not exist is
answered with UNKNOWN_TOPIC_OR_PARTITION and counts for nothing; when listing everything
there is no such topic. A cursor naming a topic outside the request, or a negative
partition, fails the request: every requested topic answers INVALID_REQUEST, as in Kafka.
"""

from __future__ import annotations

import uuid

from kafkagen.generated.describe_topic_partitions import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.types import TopicInfo
from kafkagen.runtime.errors import (
    InvalidRequestError,
    LeaderNotAvailableError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)

API_KEY = 75
R = DescribeTopicPartitionsResponse
Topic = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponseTopic
Partition = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponsePartition
_ZERO = uuid.UUID(int=0)


def partition_limit(ctx: RequestContext, requested: int) -> int:
    """max(min(broker limit, requested), 1)."""
    cap = ctx.broker.configs.broker_int("max.request.partition.size.limit", ctx.broker.node_id)
    return max(min(cap, requested), 1)


def handle(ctx: RequestContext, request: DescribeTopicPartitionsRequest) -> None:
    md = ctx.broker.image
    cursor = request.cursor
    start_name = "" if cursor is None else cursor.topic_name
    fetch_all = not request.topics
    if fetch_all:
        names = sorted(n for n in md.topics if n >= start_name)
    else:
        names = sorted({t.name for t in request.topics if t.name >= start_name})
        if cursor is not None and cursor.topic_name not in names:
            _refuse(ctx, request)
            return
    if cursor is not None and cursor.partition_index < 0:
        _refuse(ctx, request)
        return
    remaining = partition_limit(ctx, request.response_partition_limit)
    alive = {b.node_id for b in md.brokers.values() if b.alive}
    topics: list[Topic] = []
    next_cursor = None
    for name in names:
        if remaining <= 0:
            next_cursor = R.Cursor(topic_name=name, partition_index=0)
            break
        ops = ctx.authorized_operations(ResourceType.TOPIC, name)
        info = md.topic(name)
        # Refused without revealing whether it exists; either way left out of a full listing.
        error = (
            TopicAuthorizationFailedError
            if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.TOPIC, name)
            else UnknownTopicOrPartitionError if info is None else None
        )
        if error is not None:
            if not fetch_all:
                topics.append(
                    Topic(
                        error_code=error.code,
                        name=name,
                        topic_id=_ZERO,
                        partitions=[],
                        topic_authorized_operations=ops,
                    )
                )
            continue
        assert info is not None
        first = cursor.partition_index if cursor is not None and name == start_name else 0
        last = min(len(info.partitions), first + remaining)
        topics.append(_topic(info, first, last, alive, ops))
        remaining -= max(last - first, 0)
        if last < len(info.partitions):
            next_cursor = R.Cursor(topic_name=name, partition_index=last)
            break
    ctx.respond(R(topics=topics, next_cursor=next_cursor))


def _topic(info: TopicInfo, first: int, last: int, alive: set[int], ops: int) -> Topic:
    return Topic(
        error_code=0,
        name=info.name,
        topic_id=info.topic_id,
        is_internal=info.internal,
        partitions=[
            Partition(
                error_code=0 if p.leader >= 0 else LeaderNotAvailableError.code,
                partition_index=p.index,
                leader_id=p.leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=list(p.isr),
                eligible_leader_replicas=list(p.elr),
                last_known_elr=list(p.last_known_elr),
                offline_replicas=[r for r in p.replicas if r not in alive],
            )
            for p in info.partitions[first:last]
        ],
        topic_authorized_operations=ops,
    )


def _refuse(ctx: RequestContext, request: DescribeTopicPartitionsRequest) -> None:
    """Kafka's error answer to a bad request: each requested topic carries the error."""
    ctx.respond(
        R(
            topics=[
                Topic(
                    error_code=InvalidRequestError.code,
                    name=t.name,
                    topic_id=_ZERO,
                    partitions=[],
                )
                for t in request.topics
            ]
        )
    )
