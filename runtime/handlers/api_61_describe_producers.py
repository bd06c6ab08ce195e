"""DescribeProducers (key 61): the idempotent producers each partition leader knows."""

from __future__ import annotations

from kafkagen.generated.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
)
from kafkagen.runtime.broker.api import RequestContext, register
from kafkagen.runtime.broker.metadata import TopicPartition
from kafkagen.runtime.errors import KafkaError

API_KEY = 61
PartitionResponse = DescribeProducersResponse.PartitionResponse
ProducerState = DescribeProducersResponse.ProducerState


@register(API_KEY, 0, 0)
def handle(ctx: RequestContext, request: DescribeProducersRequest) -> None:
    rm = ctx.broker.replica_manager
    topics = []
    for t in request.topics:
        partitions = []
        for index in t.partition_indexes:
            out = PartitionResponse(partition_index=index, error_code=0, active_producers=[])
            try:
                partition = rm.leader_partition(TopicPartition(t.name, index))
            except KafkaError as e:
                out.error_code = e.code
                out.error_message = e.message
                partitions.append(out)
                continue
            # Newest producer first (the highest id), the order the pagination seed uses.
            for pid, entry in sorted(partition.producers.producers.items(), reverse=True):
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
            partitions.append(out)
        topics.append(DescribeProducersResponse.TopicResponse(name=t.name, partitions=partitions))
    ctx.respond(DescribeProducersResponse(topics=topics))
