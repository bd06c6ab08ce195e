"""ElectLeaders (key 43): preferred (the first replica) or unclean leader elections.

A preferred election moves leadership to the first assigned replica when it is alive and
in sync. An unclean one gives a leaderless partition any alive replica, accepting the loss
of what only the missing in-sync replicas had.

Asked for every partition (``topic_partitions`` null), the answer leaves out the partitions
whose election was not needed, keeping each topic's entry, as Kafka does: tools then print
only the elections that happened. Named partitions each get their row, ELECTION_NOT_NEEDED
included.
"""

from __future__ import annotations

from kafkagen.generated.elect_leaders import ElectLeadersRequest, ElectLeadersResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.broker.types import PartitionInfo
from kafkagen.runtime.errors import ClusterAuthorizationFailedError as ClusterAuthFailed
from kafkagen.runtime.errors import (
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    InvalidRequestError,
    KafkaError,
    PreferredLeaderNotAvailableError,
    UnknownTopicOrPartitionError,
)
from kafkagen.runtime.handlers._util import require

API_KEY = 43
PREFERRED = 0
UNCLEAN = 1
Result = ElectLeadersResponse.ReplicaElectionResult
PartitionResult = ElectLeadersResponse.PartitionResult


def handle(ctx: RequestContext, request: ElectLeadersRequest) -> None:
    md = ctx.broker.metadata
    election = request.election_type if ctx.api_version >= 1 else PREFERRED
    # As Kafka: ALTER on the cluster, then (unless no partition is named, which Kafka 4.4
    # answers at once) the election type, for the whole request before any partition.
    try:
        require(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME, ClusterAuthFailed)
        if request.topic_partitions is not None and not request.topic_partitions:
            ctx.respond(ElectLeadersResponse(error_code=0, replica_election_results=[]))
            return
        if election not in (PREFERRED, UNCLEAN):
            raise InvalidRequestError(f"unknown election type {election}")
    except KafkaError as e:
        ctx.respond(_refused(request, e))
        return
    if request.topic_partitions is None:
        wanted = [(t.name, [p.index for p in t.partitions]) for t in md.topics.values()]
    else:
        wanted = [(t.topic, list(t.partitions)) for t in request.topic_partitions]
    results = []
    for topic, indexes in wanted:
        partitions = []
        for index in indexes:
            out = PartitionResult(partition_id=index, error_code=0, error_message=None)
            try:
                info = md.partition(topic, index)
                if info is None:
                    raise UnknownTopicOrPartitionError(f"No such partition as {topic}-{index}")
                _elect(ctx, info, election)
            except KafkaError as e:
                if isinstance(e, ElectionNotNeededError) and request.topic_partitions is None:
                    continue  # an election of everything lists only what it changed
                out.error_code = e.code
                out.error_message = e.message
            partitions.append(out)
        results.append(Result(topic=topic, partition_result=partitions))
    ctx.respond(ElectLeadersResponse(error_code=0, replica_election_results=results))


def _refused(request: ElectLeadersRequest, error: KafkaError) -> ElectLeadersResponse:
    """The whole request refused: the error at the top and on every named partition."""
    return ElectLeadersResponse(
        error_code=error.code,
        replica_election_results=[
            Result(
                topic=t.topic,
                partition_result=[
                    PartitionResult(
                        partition_id=i, error_code=error.code, error_message=error.message
                    )
                    for i in t.partitions
                ],
            )
            for t in request.topic_partitions or []
        ],
    )


def _elect(ctx: RequestContext, info: PartitionInfo, election: int) -> None:
    md = ctx.broker.metadata
    alive = set(md.alive_brokers())
    if election == PREFERRED:
        preferred = info.replicas[0]
        if info.leader == preferred:
            raise ElectionNotNeededError("the preferred replica already leads")
        if preferred not in info.isr or preferred not in alive:
            raise PreferredLeaderNotAvailableError(
                f"broker {preferred} is not an alive in-sync replica"
            )
        md.move_leader(info.topic, info.index, preferred)
    elif election == UNCLEAN:
        if info.leader >= 0:
            raise ElectionNotNeededError("the partition has a leader")
        candidates = [r for r in info.replicas if r in alive]
        if not candidates:
            raise EligibleLeadersNotAvailableError("no replica of the partition is alive")
        info.leader = candidates[0]
        info.leader_epoch += 1
        info.isr = [candidates[0]]
        md.update_partition(info)
