"""DescribeProducers (key 61): the idempotent producers each partition replica knows.

Any replica answers, the leader or a follower (whose producer state follows the batches
and markers it replicates); a broker without a replica answers NOT_LEADER_OR_FOLLOWER,
with no error message, as in Kafka.

Producers come newest first (highest id first). v1 (unstable, seed 001) pages them: at most
the pagination limit of producers over all partitions, and NextCursor names the partition
and producer the next page starts at (a producer that has gone since: the next older one).
A partition named twice, or a cursor naming a partition not asked for or with a negative
index, answers INVALID_REQUEST for every partition.
"""

from __future__ import annotations

from kafkagen.generated.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.metadata.cluster_metadata import validate_topic_name
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import InvalidRequestError, KafkaError, NotLeaderOrFollowerError
from kafkagen.runtime.errors import TopicAuthorizationFailedError as TopicAuthFailed
from kafkagen.runtime.handlers._util import pagination_limit, repeated, require
from kafkagen.runtime.pagination import paged_version
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 61
PAGED = paged_version(API_KEY)
PartitionResponse = DescribeProducersResponse.PartitionResponse
ProducerState = DescribeProducersResponse.ProducerState


def handle(ctx: RequestContext, request: DescribeProducersRequest) -> None:
    rm = ctx.broker.replica_manager
    paged = ctx.api_version >= PAGED
    budget = pagination_limit(ctx, request.response_pagination_limit) if paged else -1
    cursor = request.cursor if paged else None
    problem = None
    if paged:
        problem = repeated(
            ((t.name, i) for t in request.topics for i in t.partition_indexes), "the partition"
        )
    if (
        problem is None
        and cursor is not None
        and (
            cursor.partition_index < 0
            or not any(
                t.name == cursor.topic_name and cursor.partition_index in t.partition_indexes
                for t in request.topics
            )
        )
    ):
        problem = f"the cursor {cursor.topic_name}-{cursor.partition_index} was not asked for"
    if problem is not None:
        # A repeat, or a cursor outside the request: every partition says so.
        error = InvalidRequestError(problem)
        ctx.respond(
            DescribeProducersResponse(
                topics=[
                    DescribeProducersResponse.TopicResponse(
                        name=t.name,
                        partitions=[
                            PartitionResponse(
                                partition_index=i,
                                error_code=error.code,
                                error_message=error.message,
                                active_producers=[],
                            )
                            for i in t.partition_indexes
                        ],
                    )
                    for t in request.topics
                ]
            )
        )
        return
    seeking = cursor is not None
    next_cursor = None
    topics = []
    for t in request.topics:
        partitions = []
        for index in t.partition_indexes:
            if next_cursor is not None:
                break
            floor = None
            if seeking:
                assert cursor is not None
                if (t.name, index) != (cursor.topic_name, cursor.partition_index):
                    continue  # before the cursor: served by an earlier page
                seeking = False
                floor = cursor.producer_id
            out = PartitionResponse(partition_index=index, error_code=0, active_producers=[])
            try:
                # As Kafka: the name's validity first, then READ, then the replica.
                validate_topic_name(t.name)
                require(ctx, AclOperation.READ, ResourceType.TOPIC, t.name, TopicAuthFailed)
                # Any replica answers: a follower's producer state follows the batches
                # (and markers) it replicates.
                partition = rm.replica_partition(TopicPartition(t.name, index))
            except KafkaError as e:
                out.error_code = e.code
                if not isinstance(e, NotLeaderOrFollowerError):
                    # Kafka explains the topic's errors, not a missing replica.
                    out.error_message = e.message
                partitions.append(out)
                continue
            # Newest producer first (the highest id), the order the pagination seed uses.
            for pid, entry in sorted(partition.producers.producers.items(), reverse=True):
                if floor is not None and pid > floor:
                    continue
                if budget == 0:
                    next_cursor = DescribeProducersResponse.ProducerStateCursor(
                        topic_name=t.name, partition_index=index, producer_id=pid
                    )
                    break
                budget -= 1
                out.active_producers.append(
                    ProducerState(
                        producer_id=pid,
                        producer_epoch=entry.epoch,
                        last_sequence=entry.last_seq,
                        last_timestamp=entry.last_timestamp,
                        coordinator_epoch=entry.coordinator_epoch,
                        current_txn_start_offset=entry.current_txn_first_offset,
                    )
                )
            if next_cursor is not None and not out.active_producers:
                break  # the next page starts with this partition
            partitions.append(out)
        if partitions or not paged:
            topics.append(
                DescribeProducersResponse.TopicResponse(name=t.name, partitions=partitions)
            )
    ctx.respond(DescribeProducersResponse(topics=topics, next_cursor=next_cursor))
