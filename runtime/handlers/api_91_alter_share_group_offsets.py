"""AlterShareGroupOffsets (key 91, KIP-932): start an empty share group's partitions again
at the offsets given, nothing in flight (`kafka-share-groups --reset-offsets`).

As on Kafka: READ on the group (else GROUP_AUTHORIZATION_FAILED for the request) and on
each topic (else TOPIC_AUTHORIZATION_FAILED for its partitions); a topic that does not
exist, or a partition past its end, is UNKNOWN_TOPIC_OR_PARTITION; a group that does not
exists with members fails the whole request (NON_EMPTY_GROUP), as does the id of a classic
or consumer group (GROUP_ID_NOT_FOUND); a group that does not exist is created, empty.
"""

from __future__ import annotations

import uuid

from kafkagen.generated.alter_share_group_offsets import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import (
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    KafkaError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from kafkagen.runtime.message import KeyedList

API_KEY = 91
R = AlterShareGroupOffsetsResponse


def handle(ctx: RequestContext, request: AlterShareGroupOffsetsRequest) -> None:
    group_id = request.group_id
    if not ctx.broker.share_groups.enabled():  # share.version 0: as Kafka 4.4, with the message
        off = UnsupportedVersionError()
        ctx.respond(R(error_code=off.code, error_message=off.message))
        return
    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, group_id):
        denied = GroupAuthorizationFailedError()
        ctx.respond(R(error_code=denied.code, error_message=denied.message))
        return
    md = ctx.broker.metadata
    refused: dict[str, KafkaError] = {}
    for t in request.topics:
        if not ctx.allowed(AclOperation.READ, ResourceType.TOPIC, t.topic_name):
            refused[t.topic_name] = TopicAuthorizationFailedError()
        elif md.topic(t.topic_name) is None:
            refused[t.topic_name] = UnknownTopicOrPartitionError()
    wanted = [
        (t.topic_name, [(p.partition_index, p.start_offset) for p in t.partitions])
        for t in request.topics
        if t.topic_name not in refused
    ]
    gc = ctx.broker.group_coordinator
    try:
        if group_id in gc.groups or group_id in gc.consumer.groups:
            raise GroupIdNotFoundError(f"Group {group_id} is not a share group.")
        errors = ctx.broker.share_groups.alter_offsets(group_id, wanted)
    except KafkaError as e:
        ctx.respond(R(error_code=e.code, error_message=e.message))
        return
    responses: KeyedList[R.AlterShareGroupOffsetsResponseTopic] = KeyedList()
    for t in request.topics:
        info = md.topic(t.topic_name)
        partitions = []
        for p in t.partitions:
            error = refused.get(t.topic_name) or errors.get((t.topic_name, p.partition_index))
            partitions.append(
                R.AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index,
                    error_code=0 if error is None else error.code,
                    error_message=None if error is None else error.message,
                )
            )
        responses.append(
            R.AlterShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name,
                topic_id=uuid.UUID(int=0) if info is None else info.topic_id,
                partitions=partitions,
            )
        )
    ctx.respond(R(error_code=0, responses=responses))
