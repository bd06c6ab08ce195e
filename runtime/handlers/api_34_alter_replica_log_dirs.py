"""AlterReplicaLogDirs (key 34): move replicas between a broker's log directories.

A kafkagen broker has one log directory (see DescribeLogDirs), so there is never a replica
to move: as Kafka answers, a partition asked into that directory gets NONE when this
broker holds a replica of it and REPLICA_NOT_AVAILABLE when not, and any other path
LOG_DIR_NOT_FOUND. Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED for
every partition).
"""

from __future__ import annotations

from kafkagen.generated.alter_replica_log_dirs import (
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import (
    ClusterAuthorizationFailedError,
    InvalidTopicExceptionError,
    LogDirNotFoundError,
    ReplicaNotAvailableError,
)
from kafkagen.runtime.handlers._util import log_dir
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 34
#: Kafka cannot name a directory longer than this, so a replica whose future directory
#: would be longer cannot move (its topic name is too long).
MAX_DIR_NAME = 255
TopicResult = AlterReplicaLogDirsResponse.AlterReplicaLogDirTopicResult
PartitionResult = AlterReplicaLogDirsResponse.AlterReplicaLogDirPartitionResult


def handle(ctx: RequestContext, request: AlterReplicaLogDirsRequest) -> None:
    allowed = ctx.allowed(AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)
    here = log_dir(ctx)
    hosted = ctx.broker.replica_manager.partitions
    results: dict[str, list[PartitionResult]] = {}
    for d in request.dirs:
        for t in d.topics:
            for index in t.partitions:
                if not allowed:
                    code = ClusterAuthorizationFailedError.code
                elif len(_future_dir_name(t.name, index)) > MAX_DIR_NAME:
                    code = InvalidTopicExceptionError.code
                elif d.path != here:
                    code = LogDirNotFoundError.code
                elif TopicPartition(t.name, index) not in hosted:
                    code = ReplicaNotAvailableError.code
                else:
                    code = 0
                results.setdefault(t.name, []).append(
                    PartitionResult(partition_index=index, error_code=code)
                )
    ctx.respond(
        AlterReplicaLogDirsResponse(
            results=[TopicResult(topic_name=n, partitions=p) for n, p in results.items()]
        )
    )


def _future_dir_name(topic: str, index: int) -> str:
    """The directory Kafka would move the replica into: ``topic-index.<32 hex>-future``."""
    return f"{topic}-{index}.{'0' * 32}-future"
