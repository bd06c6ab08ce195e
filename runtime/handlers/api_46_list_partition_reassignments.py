"""ListPartitionReassignments (key 46): the reassignments in progress.

Partitions come by topic name then index, with their current replicas and the replicas
being added and removed; a requested partition that is not being reassigned (or does not
exist) is left out, as Kafka does. v1 (unstable, seed 001) pages the partitions:
at most max(min(broker limit, ResponsePaginationLimit), 1) of them, from the cursor on;
a partition named twice, or a cursor outside an explicit request list or with a negative
index, is INVALID_REQUEST.
"""

from __future__ import annotations

from kafkagen.generated.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import ClusterAuthorizationFailedError, InvalidRequestError
from kafkagen.runtime.handlers._util import Pager, pagination_limit, repeated
from kafkagen.runtime.pagination import paged_version
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 46
PAGED = paged_version(API_KEY)
R = ListPartitionReassignmentsResponse


def handle(ctx: RequestContext, request: ListPartitionReassignmentsRequest) -> None:
    if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        denied = ClusterAuthorizationFailedError()
        ctx.respond(R(error_code=denied.code, error_message=denied.message, topics=[]))
        return
    ongoing = ctx.broker.metadata.reassignments.in_order()
    wanted: set[TopicPartition] | None = None
    if request.topics is not None:
        wanted = {TopicPartition(t.name, i) for t in request.topics for i in t.partition_indexes}
        ongoing = [(tp, step) for tp, step in ongoing if tp in wanted]
    pager = None
    if ctx.api_version >= PAGED:
        c = request.cursor
        error = None
        if request.topics is not None:
            error = repeated(
                ((t.name, i) for t in request.topics for i in t.partition_indexes),
                "the partition",
            )
        if error is None and c is not None:
            cursor = TopicPartition(c.topic_name, c.partition_index)
            if c.partition_index < 0:
                error = f"the cursor's partition index {c.partition_index} is negative"
            elif wanted is not None and cursor not in wanted:
                error = f"the cursor {cursor} is not among the requested partitions"
        if error is not None:
            e = InvalidRequestError(error)
            ctx.respond(R(error_code=e.code, error_message=e.message, topics=[]))
            return
        pager = Pager(
            pagination_limit(ctx, request.response_pagination_limit),
            None if c is None else (c.topic_name, c.partition_index),
            sorted_keys=True,
        )
    topics: list[ListPartitionReassignmentsResponse.OngoingTopicReassignment] = []
    for tp, step in ongoing:
        if pager is not None and not pager.take((tp.topic, tp.partition)):
            if pager.full:
                break
            continue
        if not topics or topics[-1].name != tp.topic:
            topics.append(R.OngoingTopicReassignment(name=tp.topic, partitions=[]))
        topics[-1].partitions.append(
            R.OngoingPartitionReassignment(
                partition_index=tp.partition,
                replicas=step.replicas,
                adding_replicas=step.adding,
                removing_replicas=step.removing,
            )
        )
    response = R(error_code=0, error_message=None, topics=topics)
    if pager is not None and pager.next is not None:
        name, index = pager.next
        assert isinstance(name, str) and isinstance(index, int)
        response.next_cursor = R.Cursor(topic_name=name, partition_index=index)
    ctx.respond(response)
