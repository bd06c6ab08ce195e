"""OffsetForLeaderEpoch (key 23): where a leader epoch ended in the leader's log.

Consumers use it after a leader change to check that what they read was not truncated
away (KIP-320); the answer is the largest epoch at or below the one asked about, and the
offset where it ended (the log end for the current epoch).
"""

from __future__ import annotations

from kafkagen.generated.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import KafkaError
from kafkagen.runtime.errors import TopicAuthorizationFailedError as TopicAuthFailed
from kafkagen.runtime.handlers._util import require
from kafkagen.runtime.message import KeyedList
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 23
TopicResult = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
EpochEndOffset = OffsetForLeaderEpochResponse.EpochEndOffset


def handle(ctx: RequestContext, request: OffsetForLeaderEpochRequest) -> None:
    rm = ctx.broker.replica_manager
    v = ctx.api_version
    topics: KeyedList[TopicResult] = KeyedList()
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            out = EpochEndOffset(partition=p.partition, end_offset=-1)
            try:
                require(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.topic, TopicAuthFailed)
                epoch, end = rm.end_offset_for_epoch(
                    TopicPartition(t.topic, p.partition),
                    p.leader_epoch,
                    p.current_leader_epoch if v >= 2 else -1,
                )
                out.end_offset = end
                if v >= 1:
                    out.leader_epoch = epoch
            except KafkaError as e:
                out.error_code = e.code
            partitions.append(out)
        topics.append(TopicResult(topic=t.topic, partitions=partitions))
    ctx.respond(OffsetForLeaderEpochResponse(topics=topics))
