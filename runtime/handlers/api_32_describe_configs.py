"""DescribeConfigs (key 32): topic and broker configs with their sources and synonyms.

A broker resource is named by its id ("" means the cluster-wide defaults); every broker of
the process answers for any of them, since they share one config store. v5 (unstable,
seed 001) pages whole resources, by type then name: as many as fit in the pagination limit
counted in configs (at least one); NextCursor names the resource the next page starts at.
Only the page's resources, and the next one, are described.
A resource listed twice, or a cursor naming a resource not asked for, answers
INVALID_REQUEST for every resource.
"""

from __future__ import annotations

import bisect
import logging

from kafkagen.generated.describe_configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.config.client_metrics import CLIENT_METRICS_CONFIGS
from kafkagen.runtime.broker.config.definitions import ConfigResourceType, ConfigSource, ConfigType
from kafkagen.runtime.broker.config.group_configs import GROUP_CONFIGS, default_value, group_value
from kafkagen.runtime.broker.config.store import ConfigEntry
from kafkagen.runtime.broker.metadata.config_changes import broker_resource
from kafkagen.runtime.broker.security.acls import AclOperation
from kafkagen.runtime.errors import (
    ErrorCode,
    InvalidRequestError,
    KafkaError,
    UnknownTopicOrPartitionError,
)
from kafkagen.runtime.handlers._util import pagination_limit, repeated, require_config_access
from kafkagen.runtime.pagination import paged_version

API_KEY = 32
_AUTHORIZATION_FAILURES = (
    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
)
PAGED = paged_version(API_KEY)
Result = DescribeConfigsResponse.DescribeConfigsResult
Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


def handle(ctx: RequestContext, request: DescribeConfigsRequest) -> None:
    if ctx.api_version >= PAGED:
        _page(ctx, request)
        return
    results = [_result(ctx, request, r) for r in request.resources]
    # As Kafka answers: the resources the sender may describe first, then the refused ones.
    results.sort(key=lambda r: r.error_code in _AUTHORIZATION_FAILURES)
    ctx.respond(DescribeConfigsResponse(results=results))


def _result(
    ctx: RequestContext,
    request: DescribeConfigsRequest,
    res: DescribeConfigsRequest.DescribeConfigsResource,
) -> Result:
    v = ctx.api_version
    result = Result(
        error_code=0,
        error_message="",  # as Kafka answers a resource it could describe
        resource_type=res.resource_type,
        resource_name=res.resource_name,
        configs=[],
    )
    try:
        require_config_access(
            ctx, res.resource_type, res.resource_name, AclOperation.DESCRIBE_CONFIGS
        )
        entries = describe(ctx, res.resource_type, res.resource_name, res.configuration_keys)
    except KafkaError as e:
        result.error_code = e.code
        result.error_message = e.message
        return result
    synonyms = v >= 1 and request.include_synonyms
    docs = v >= 3 and request.include_documentation
    result.configs = [_entry(e, v, synonyms, docs) for e in entries]
    return result


def _page(ctx: RequestContext, request: DescribeConfigsRequest) -> None:
    """v5: the requested resources by type then name from the cursor's on; only those the
    page holds (and the one after, to know it does not fit) are described."""
    budget = pagination_limit(ctx, request.response_pagination_limit)
    c = request.cursor
    ordered = sorted(request.resources, key=lambda r: (r.resource_type, r.resource_name))
    keys = [(r.resource_type, r.resource_name) for r in ordered]
    start = 0
    problem = repeated(keys, "the resource (type, name)")
    if problem is None and c is not None:
        start = bisect.bisect_left(keys, (c.resource_type, c.resource_name))
        if start == len(keys) or keys[start] != (c.resource_type, c.resource_name):
            problem = (
                f"the cursor's resource (type {c.resource_type}, {c.resource_name!r}) "
                "was not asked for"
            )
    if problem is not None:
        error = InvalidRequestError(problem)
        results = [
            Result(
                error_code=error.code,
                error_message=error.message,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
                configs=[],
            )
            for r in request.resources
        ]
        ctx.respond(DescribeConfigsResponse(results=results))
        return
    response = DescribeConfigsResponse()
    page: list[Result] = []
    for res in ordered[start:]:
        r = _result(ctx, request, res)
        if page and len(r.configs) > budget:
            response.next_cursor = DescribeConfigsResponse.ResourceCursor(
                resource_name=r.resource_name, resource_type=r.resource_type
            )
            break
        budget -= len(r.configs)
        page.append(r)
    response.results = page
    ctx.respond(response)


def describe(
    ctx: RequestContext, resource_type: int, name: str, keys: list[str] | None
) -> list[ConfigEntry]:
    store = ctx.broker.configs
    if resource_type == ConfigResourceType.TOPIC:
        if ctx.broker.metadata.topic(name) is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        return store.describe_topic(name, keys)
    if resource_type == ConfigResourceType.BROKER:
        return store.describe_broker(broker_resource(ctx.broker.metadata, name), keys)
    if resource_type == ConfigResourceType.BROKER_LOGGER:
        broker_resource(ctx.broker.metadata, name)
        return _loggers(keys)
    if resource_type == ConfigResourceType.CLIENT_METRICS:
        return _client_metrics(ctx.broker.metadata.client_metrics.get(name, {}), keys)
    if resource_type == ConfigResourceType.GROUP:
        return _group(ctx, ctx.broker.metadata.group_configs.get(name, {}), keys)
    raise InvalidRequestError(f"config resource type {resource_type} is not supported")


def _client_metrics(configs: dict[str, str], keys: list[str] | None) -> list[ConfigEntry]:
    """A client metrics resource's three configs, those not set at their defaults (none for
    a resource that does not exist, as Kafka answers)."""
    if not configs:
        return []
    return [
        ConfigEntry(
            name=d.name,
            value=configs.get(d.name, d.default),
            source=(
                ConfigSource.DYNAMIC_CLIENT_METRICS_CONFIG
                if d.name in configs
                else ConfigSource.DEFAULT_CONFIG
            ),
            read_only=False,
            sensitive=False,
            type=d.type,
            doc=d.doc,
            synonyms=(),
        )
        for d in sorted(CLIENT_METRICS_CONFIGS.values(), key=lambda d: d.name)
        if not keys or d.name in keys
    ]


def _group(
    ctx: RequestContext, configs: dict[str, str], keys: list[str] | None
) -> list[ConfigEntry]:
    """Every group config (of any group id, as Kafka answers), set or not; a synonym names
    the broker config a value not set falls back to."""
    out = []
    for d in sorted(GROUP_CONFIGS.values(), key=lambda d: d.name):
        if keys and d.name not in keys:
            continue
        value, source = group_value(ctx.broker.configs, configs, d.name, ctx.broker.node_id)
        fallback = default_value(ctx.broker.configs, d, ctx.broker.node_id)
        synonyms = [(d.synonym or d.name, fallback, ConfigSource.DEFAULT_CONFIG)]
        if source is ConfigSource.DYNAMIC_GROUP_CONFIG:
            synonyms.insert(0, (d.name, value, source))
        out.append(ConfigEntry(d.name, value, source, False, False, d.type, d.doc, tuple(synonyms)))
    return out


def _loggers(keys: list[str] | None) -> list[ConfigEntry]:
    names = ["kafkagen.broker"] if keys is None else keys
    out = []
    for name in names:
        level = logging.getLevelName(_effective_level(name))
        out.append(
            ConfigEntry(
                name,
                str(level),
                ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
                False,
                False,
                ConfigType.STRING,
                "Log level of this logger.",
                (),
            )
        )
    return out


def _entry(e: ConfigEntry, v: int, synonyms: bool, docs: bool) -> Entry:
    out = Entry(
        name=e.name,
        value=e.value,
        read_only=e.read_only,
        is_sensitive=e.sensitive,
        config_source=e.source,
        documentation=e.doc if docs else None,
    )
    if v == 0:
        out.is_default = e.is_default
    if v >= 3:
        out.config_type = e.type
    if synonyms:
        out.synonyms = [Synonym(name=n, value=val, source=src) for n, val, src in e.synonyms]
    return out


def _effective_level(name: str) -> int:
    """The level a logger of this name logs at, without making one: a logger, once made,
    stays for the life of the process, and requests can name any number of them."""
    loggers = logging.Logger.manager.loggerDict
    while name:
        logger = loggers.get(name)
        if isinstance(logger, logging.Logger):
            return logger.getEffectiveLevel()
        name = name.rpartition(".")[0]
    return logging.getLogger().getEffectiveLevel()
