"""WriteTxnMarkers (key 27): COMMIT or ABORT markers appended to partitions this broker leads.

Transaction coordinators send it to the leaders of a transaction's partitions; the admin
client sends it to abort a hanging transaction (``kafka-transactions abort``). Both land on
the broker's one marker path, the one its own coordinator uses, so a marker on
``__consumer_offsets`` settles the transaction's offset commits here too. Each marker is
answered once its partitions' appends are replicated, like an acks=all produce; a
partition the cluster does not know answers UNKNOWN_TOPIC_OR_PARTITION, one led elsewhere
NOT_LEADER_OR_FOLLOWER, an epoch older than the producer's INVALID_PRODUCER_EPOCH and a
coordinator epoch older than the last marker's TRANSACTION_COORDINATOR_FENCED. The sender
needs ClusterAction on the cluster, as in Kafka; without it every partition answers
CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from kafkagen.generated.write_txn_markers import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.broker.storage.replica_manager import ProduceResult
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 27
R = WriteTxnMarkersResponse
#: How long the appends may wait for replicas: Kafka's request.timeout.ms.
_TIMEOUT_CONFIG = "request.timeout.ms"


def handle(ctx: RequestContext, request: WriteTxnMarkersRequest) -> None:
    broker = ctx.broker
    denied = not ctx.allowed(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
    timeout_ms = broker.configs.broker_int(_TIMEOUT_CONFIG, broker.node_id)
    # One error code per (marker, partition), in request order; a partition being written
    # holds NOT_LEADER_OR_FOLLOWER until its append answers.
    codes: list[dict[TopicPartition, int]] = []
    pending = 0

    def answer() -> None:
        ctx.respond(
            R(
                markers=[
                    R.WritableTxnMarkerResult(
                        producer_id=marker.producer_id,
                        topics=[
                            R.WritableTxnMarkerTopicResult(
                                name=t.name,
                                partitions=[
                                    R.WritableTxnMarkerPartitionResult(
                                        partition_index=i,
                                        error_code=marker_codes[TopicPartition(t.name, i)],
                                    )
                                    for i in t.partition_indexes
                                ],
                            )
                            for t in marker.topics
                        ],
                    )
                    for marker, marker_codes in zip(request.markers, codes, strict=True)
                ]
            )
        )

    writes = []
    for marker in request.markers:
        marker_codes: dict[TopicPartition, int] = {}
        codes.append(marker_codes)
        wanted = {}
        for t in marker.topics:
            for i in t.partition_indexes:
                tp = TopicPartition(t.name, i)
                if denied:
                    marker_codes[tp] = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                elif broker.metadata.partition(t.name, i) is None:
                    marker_codes[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    marker_codes[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                    wanted[tp] = (
                        marker.producer_id,
                        marker.producer_epoch,
                        marker.transaction_result,
                        marker.coordinator_epoch,
                    )
        if wanted:
            writes.append((marker_codes, wanted))
    pending = len(writes)
    if not pending:
        answer()
        return

    def written(
        marker_codes: dict[TopicPartition, int], results: Mapping[TopicPartition, ProduceResult]
    ) -> None:
        nonlocal pending
        for tp, r in results.items():
            marker_codes[tp] = r.error_code
        pending -= 1
        if not pending:
            answer()

    for marker_codes, wanted in writes:
        # Each marker is its own append: two markers may name one partition.
        if not broker.peers.write_txn_markers(
            broker.node_id,
            wanted,
            timeout_ms,
            functools.partial(written, marker_codes),
            sender=broker.node_id,
        ):
            written(marker_codes, {})  # this broker stopped serving: the codes say so
