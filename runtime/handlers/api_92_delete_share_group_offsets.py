"""DeleteShareGroupOffsets (key 92, KIP-932): an empty share group forgets its state of
some topics (`kafka-share-groups --delete-offsets`).

As on Kafka: DELETE on the group (else GROUP_AUTHORIZATION_FAILED for the request) and
READ on each topic (else TOPIC_AUTHORIZATION_FAILED for it); a topic that does not exist,
or of which the group has no state, is UNKNOWN_TOPIC_OR_PARTITION; a group that does not
exist or has members fails the whole request (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP).
Refused topics come first, then the others in request order.
"""

from __future__ import annotations

import uuid

from kafkagen.generated.delete_share_group_offsets import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import (
    GroupAuthorizationFailedError,
    KafkaError,
    TopicAuthorizationFailedError,
    UnsupportedVersionError,
)

API_KEY = 92
R = DeleteShareGroupOffsetsResponse


def handle(ctx: RequestContext, request: DeleteShareGroupOffsetsRequest) -> None:
    group_id = request.group_id
    if not ctx.broker.share_groups.enabled():  # share.version 0: as Kafka 4.4, with the message
        off = UnsupportedVersionError()
        ctx.respond(R(error_code=off.code, error_message=off.message))
        return
    if not ctx.allowed(AclOperation.DELETE, ResourceType.GROUP, group_id):
        error = GroupAuthorizationFailedError()
        ctx.respond(R(error_code=error.code, error_message=error.message))
        return
    out: list[tuple[str, uuid.UUID | None, KafkaError | None]] = []
    allowed = []
    for t in request.topics:
        if ctx.allowed(AclOperation.READ, ResourceType.TOPIC, t.topic_name):
            allowed.append(t.topic_name)
        else:
            out.append((t.topic_name, None, TopicAuthorizationFailedError()))
    try:
        out += ctx.broker.share_groups.delete_offsets(group_id, allowed)
    except KafkaError as e:
        ctx.respond(R(error_code=e.code, error_message=e.message))
        return
    ctx.respond(
        R(
            error_code=0,
            responses=[
                R.DeleteShareGroupOffsetsResponseTopic(
                    topic_name=name,
                    topic_id=topic_id or uuid.UUID(int=0),
                    error_code=0 if error is None else error.code,
                    error_message=None if error is None else error.message,
                )
                for name, topic_id, error in out
            ],
        )
    )
