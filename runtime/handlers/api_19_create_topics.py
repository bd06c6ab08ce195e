"""CreateTopics (key 19): topics with a partition count and replication factor, or an
explicit replica assignment, and config overrides; ``validate_only`` checks without creating.
"""

from __future__ import annotations

from kafkagen.generated.create_topics import CreateTopicsRequest, CreateTopicsResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.metadata.cluster_metadata import MAX_PARTITIONS_PER_REQUEST
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import InvalidRequestError, KafkaError, PolicyViolationError
from kafkagen.runtime.errors import TopicAuthorizationFailedError as TopicAuthFailed
from kafkagen.runtime.handlers._util import require
from kafkagen.runtime.message import KeyedList

API_KEY = 19
Result = CreateTopicsResponse.CreatableTopicResult


def handle(ctx: RequestContext, request: CreateTopicsRequest) -> None:
    v = ctx.api_version
    md = ctx.broker.metadata
    validate_only = v >= 1 and request.validate_only
    counts: dict[str, int] = {}
    for t in request.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    results: KeyedList[Result] = KeyedList()
    answered: set[str] = set()
    cluster_create = ctx.allowed(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
    too_many = _partitions_asked(ctx, request, counts, cluster_create) > MAX_PARTITIONS_PER_REQUEST
    for t in request.topics:
        if t.name in answered:
            continue  # one answer per name: the response is keyed by it, as in Kafka
        answered.add(t.name)
        result = Result(name=t.name, error_message=None)
        try:
            if counts[t.name] > 1:
                raise InvalidRequestError(f"topic {t.name!r} appears more than once")
            if not cluster_create:
                require(ctx, AclOperation.CREATE, ResourceType.TOPIC, t.name, TopicAuthFailed)
            if too_many:
                raise PolicyViolationError("Excessively large number of partitions per request.")
            configs = {c.name: c.value for c in t.configs}
            assignments = {a.partition_index: list(a.broker_ids) for a in t.assignments}
            info = md.create_topic(
                t.name,
                t.num_partitions,
                t.replication_factor,
                assignments or None,
                configs,
                validate_only=validate_only,
            )
        except KafkaError as e:
            result.error_code = e.code
            result.error_message = e.message
            results.append(result)
            continue
        result.topic_id = info.topic_id
        result.num_partitions = len(info.partitions)
        result.replication_factor = len(info.partitions[0].replicas)
        overrides = {k: v for k, v in configs.items() if v is not None}
        result.configs = [
            CreateTopicsResponse.CreatableTopicConfigs(
                name=e.name,
                value=e.value,
                read_only=e.read_only,
                config_source=e.source,
                is_sensitive=e.sensitive,
            )
            for e in md.configs.describe_topic(t.name, None, overrides)
        ]
        results.append(result)
    ctx.respond(CreateTopicsResponse(topics=results))


def _partitions_asked(
    ctx: RequestContext, request: CreateTopicsRequest, counts: dict[str, int], cluster_create: bool
) -> int:
    """The partitions the topics that reach creation ask for in all (duplicates and topics
    the caller may not create are answered before), counted as Kafka's controller does."""
    default = ctx.broker.metadata.configs.broker_int("num.partitions")
    total = 0
    for t in request.topics:
        if counts[t.name] > 1 or not (
            cluster_create or ctx.allowed(AclOperation.CREATE, ResourceType.TOPIC, t.name)
        ):
            continue
        if t.assignments:
            total += len(t.assignments)
        elif t.num_partitions == -1:
            total += default
        elif t.num_partitions > 0:
            total += t.num_partitions
    return total
