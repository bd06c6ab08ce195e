"""CreatePartitions (key 37): grow topics to a new partition count."""

from __future__ import annotations

from kafkagen.generated.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.metadata.cluster_metadata import MAX_PARTITIONS_PER_REQUEST
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import InvalidRequestError, KafkaError, PolicyViolationError
from kafkagen.runtime.errors import TopicAuthorizationFailedError as TopicAuthFailed
from kafkagen.runtime.handlers._util import require

API_KEY = 37
Result = CreatePartitionsResponse.CreatePartitionsTopicResult


def handle(ctx: RequestContext, request: CreatePartitionsRequest) -> None:
    md = ctx.broker.metadata
    names = [t.name for t in request.topics]
    # Kafka's controller refuses every topic when they would add too many in all.
    added = 0
    for t in request.topics:
        topic = md.topics.get(t.name)
        if (
            topic is not None
            and names.count(t.name) == 1
            and ctx.allowed(AclOperation.ALTER, ResourceType.TOPIC, t.name)
        ):
            added += max(0, t.count - len(topic.partitions))
    results = []
    for t in request.topics:
        result = Result(name=t.name)
        try:
            if names.count(t.name) > 1:
                raise InvalidRequestError(f"topic {t.name!r} appears more than once")
            require(ctx, AclOperation.ALTER, ResourceType.TOPIC, t.name, TopicAuthFailed)
            if added > MAX_PARTITIONS_PER_REQUEST:
                raise PolicyViolationError(
                    "Excessively large number of additional partitions per request."
                )
            assignments = (
                None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
            )
            md.create_partitions(t.name, t.count, assignments, validate_only=request.validate_only)
        except KafkaError as e:
            result.error_code = e.code
            result.error_message = e.message
        results.append(result)
    ctx.respond(CreatePartitionsResponse(results=results))
