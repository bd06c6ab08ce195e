"""CreatePartitions (key 37): grow topics to a new partition count."""

from __future__ import annotations

from kafkagen.generated.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import InvalidRequestError, KafkaError
from kafkagen.runtime.errors import TopicAuthorizationFailedError as TopicAuthFailed
from kafkagen.runtime.handlers._util import require

API_KEY = 37
Result = CreatePartitionsResponse.CreatePartitionsTopicResult


def handle(ctx: RequestContext, request: CreatePartitionsRequest) -> None:
    md = ctx.broker.metadata
    names = [t.name for t in request.topics]
    results = []
    for t in request.topics:
        result = Result(name=t.name)
        try:
            if names.count(t.name) > 1:
                raise InvalidRequestError(f"topic {t.name!r} appears more than once")
            require(ctx, AclOperation.ALTER, ResourceType.TOPIC, t.name, TopicAuthFailed)
            assignments = (
                None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
            )
            md.create_partitions(t.name, t.count, assignments, validate_only=request.validate_only)
        except KafkaError as e:
            result.error_code = e.code
            result.error_message = e.message
        results.append(result)
    ctx.respond(CreatePartitionsResponse(results=results))
