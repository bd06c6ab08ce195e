"""DeleteTopics (key 20): by name, or (v6+) by name or topic id."""

from __future__ import annotations

import uuid

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
    for name, topic_id in wanted:
        result = Result(name=name, topic_id=topic_id)
        try:
            if name is None:
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
