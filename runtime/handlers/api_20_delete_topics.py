"""DeleteTopics (key 20): by name, or (v6+) by name or topic id."""

from __future__ import annotations

import uuid
from collections import Counter

from kafkagen.generated.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import (
    InvalidRequestError,
    InvalidTopicExceptionError,
    KafkaError,
    TopicDeletionDisabledError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from kafkagen.runtime.errors import TopicAuthorizationFailedError as TopicAuthFailed
from kafkagen.runtime.handlers._util import require
from kafkagen.runtime.message import KeyedList

API_KEY = 20
Result = DeleteTopicsResponse.DeletableTopicResult
_ZERO = uuid.UUID(int=0)


def handle(ctx: RequestContext, request: DeleteTopicsRequest) -> None:
    md = ctx.broker.metadata
    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, _ZERO) for name in request.topic_names]
    enabled = ctx.broker.configs.broker_bool("delete.topic.enable")
    results: KeyedList[Result] = KeyedList()
    # As Kafka: a name (or an id) given twice is refused once, and neither is deleted.
    names = Counter(name for name, topic_id in wanted if name is not None and topic_id == _ZERO)
    ids = Counter(topic_id for name, topic_id in wanted if name is None and topic_id != _ZERO)
    twice = {n for n, count in names.items() if count > 1}
    twice_ids = {i for i, count in ids.items() if count > 1}
    for repeated in twice:
        results.append(_duplicate(repeated, _ZERO, "Duplicate topic name."))
    for topic_id in twice_ids:
        results.append(_duplicate(None, topic_id, "Duplicate topic id."))
    for name, topic_id in wanted:
        if name in twice or (name is None and topic_id in twice_ids):
            continue
        result = Result(name=name, topic_id=topic_id)
        try:
            if name is None:
                if topic_id == _ZERO:
                    raise InvalidRequestError("Neither topic name nor id were specified.")
                found = md.topic_names.get(topic_id)
                if found is None:
                    raise UnknownTopicIdError(f"no topic has id {topic_id}")
                name = result.name = found
            elif topic_id != _ZERO:
                raise InvalidRequestError("give a topic's name or its id, not both")
            require(ctx, AclOperation.DELETE, ResourceType.TOPIC, name, TopicAuthFailed)
            info = md.topic(name)
            if info is None:
                raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
            result.topic_id = info.topic_id
            if not enabled:
                raise TopicDeletionDisabledError("delete.topic.enable is false")
            if info.internal:
                raise InvalidTopicExceptionError(f"internal topic {name} cannot be deleted")
            md.delete_topic(name)
        except KafkaError as e:
            result.error_code = e.code
            result.error_message = e.message
        results.append(result)
    ctx.respond(DeleteTopicsResponse(responses=results))


def _duplicate(name: str | None, topic_id: uuid.UUID, message: str) -> Result:
    return Result(
        name=name,
        topic_id=topic_id,
        error_code=InvalidRequestError.code,
        error_message=message,
    )
