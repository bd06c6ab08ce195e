"""AlterPartitionReassignments (key 45): start, replace or cancel partition reassignments.

Each partition succeeds or fails on its own (UNKNOWN_TOPIC_OR_PARTITION,
INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS, and from v1
INVALID_REPLICATION_FACTOR when the request does not allow the replication factor to
change, KIP-860, which the answer echoes); the controller's reassignment manager does the
work. The answer comes once the new replica sets are in the metadata; the copying goes on
in the background, as in Kafka.
"""

from __future__ import annotations

from kafkagen.generated.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import ClusterAuthorizationFailedError as ClusterAuthFailed
from kafkagen.runtime.errors import KafkaError
from kafkagen.runtime.handlers._util import require

API_KEY = 45
R = AlterPartitionReassignmentsResponse


def handle(ctx: RequestContext, request: AlterPartitionReassignmentsRequest) -> None:
    manager = ctx.broker.metadata.reassignments
    responses = []
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            out = R.ReassignablePartitionResponse(
                partition_index=p.partition_index, error_code=0, error_message=None
            )
            try:
                require(
                    ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME, ClusterAuthFailed
                )
                manager.alter(
                    t.name,
                    p.partition_index,
                    p.replicas,
                    allow_replication_factor_change=request.allow_replication_factor_change,
                )
            except KafkaError as e:
                out.error_code = e.code
                out.error_message = e.message
            partitions.append(out)
        responses.append(R.ReassignableTopicResponse(name=t.name, partitions=partitions))
    ctx.respond(
        R(
            error_code=0,
            error_message=None,
            responses=responses,
            # Echoed, so the client knows the broker honoured it (an older one ignores it).
            allow_replication_factor_change=request.allow_replication_factor_change,
        )
    )
