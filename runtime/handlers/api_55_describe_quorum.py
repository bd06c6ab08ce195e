"""DescribeQuorum (key 55): the metadata quorum, as kafkagen's cluster has one.

A Kafka broker forwards this to the KRaft controller, which describes the Raft quorum of
the ``__cluster_metadata`` log. kafkagen has no Raft log: its controller is the cluster's
in-process metadata image. The answer describes that honestly (docs/control.md):

- the leader, and the one voter, is the cluster's controller, at leader epoch 1 (it is
  never re-elected);
- the observers are the other live brokers; every broker applies each change as it
  happens, so all are caught up;
- the offsets (high watermark and each replica's log end) count the metadata image's
  changes since the process started (topics, partitions, leaders and in-sync replicas,
  reassignments, producer id blocks; not configs or ACLs);
- v1's fetch and caught-up times are now for every replica listed; v2's directory ids are
  the zero uuid (there is no metadata log directory), and its nodes give the controller's
  listeners, which are its broker listeners.

As Kafka: a request that does not name exactly partition 0 of ``__cluster_metadata`` gets
UNKNOWN_TOPIC_OR_PARTITION on every partition it names; DESCRIBE on the cluster is needed.
"""

from __future__ import annotations

import uuid

from kafkagen.generated.describe_quorum import DescribeQuorumRequest, DescribeQuorumResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import (
    ClusterAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from kafkagen.runtime.message import KeyedList

API_KEY = 55
METADATA_TOPIC = "__cluster_metadata"
#: The controller is never re-elected: the epoch of the first election, for good.
LEADER_EPOCH = 1
R = DescribeQuorumResponse


def handle(ctx: RequestContext, request: DescribeQuorumRequest) -> None:
    if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        err = ClusterAuthorizationFailedError()
        ctx.respond(R(error_code=err.code, error_message=err.message))
        return
    named = [(t.topic_name, p.partition_index) for t in request.topics for p in t.partitions]
    if named != [(METADATA_TOPIC, 0)]:
        ctx.respond(_unknown_partitions(request))
        return
    md = ctx.broker.metadata
    now = ctx.broker.replica_manager.time_ms()
    offset = md.change_count

    def state(node: int) -> DescribeQuorumResponse.ReplicaState:
        return R.ReplicaState(
            replica_id=node,
            replica_directory_id=uuid.UUID(int=0),
            log_end_offset=offset,
            last_fetch_timestamp=now,
            last_caught_up_timestamp=now,
        )

    leader = md.controller_id
    partition = R.PartitionData(
        partition_index=0,
        error_code=0,
        leader_id=leader,
        leader_epoch=LEADER_EPOCH,
        high_watermark=offset,
        current_voters=[state(leader)],
        observers=[state(n) for n in md.alive_brokers() if n != leader],
    )
    controller = md.brokers.get(leader)
    endpoints = {} if controller is None else controller.endpoints
    ctx.respond(
        R(
            error_code=0,
            topics=[R.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])],
            nodes=KeyedList(
                [
                    R.Node(
                        node_id=leader,
                        listeners=KeyedList(
                            R.Listener(name=name, host=host, port=port)
                            for name, (host, port) in sorted(endpoints.items())
                        ),
                    )
                ]
            ),
        )
    )


def _unknown_partitions(request: DescribeQuorumRequest) -> DescribeQuorumResponse:
    err = UnknownTopicOrPartitionError()
    return R(
        error_code=0,
        topics=[
            R.TopicData(
                topic_name=t.topic_name,
                partitions=[
                    R.PartitionData(
                        partition_index=p.partition_index,
                        error_code=err.code,
                        error_message=err.message,
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )
