"""DeleteRecords (key 21): move partitions' log start offsets up (-1: to the high watermark)."""

from __future__ import annotations

from kafkagen.generated.delete_records import DeleteRecordsRequest, DeleteRecordsResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import KafkaError
from kafkagen.runtime.errors import TopicAuthorizationFailedError as TopicAuthFailed
from kafkagen.runtime.handlers._util import require
from kafkagen.runtime.message import KeyedList
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 21
TopicResult = DeleteRecordsResponse.DeleteRecordsTopicResult
PartitionResult = DeleteRecordsResponse.DeleteRecordsPartitionResult


def handle(ctx: RequestContext, request: DeleteRecordsRequest) -> None:
    rm = ctx.broker.replica_manager
    topics: KeyedList[TopicResult] = KeyedList()
    for t in request.topics:
        partitions: KeyedList[PartitionResult] = KeyedList()
        for p in t.partitions:
            out = PartitionResult(partition_index=p.partition_index, low_watermark=-1)
            try:
                require(ctx, AclOperation.DELETE, ResourceType.TOPIC, t.name, TopicAuthFailed)
                out.low_watermark = rm.delete_records(
                    TopicPartition(t.name, p.partition_index), p.offset
                )
            except KafkaError as e:
                out.error_code = e.code
            partitions.append(out)
        topics.append(TopicResult(name=t.name, partitions=partitions))
    ctx.respond(DeleteRecordsResponse(topics=topics))
