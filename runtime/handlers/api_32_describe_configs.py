"""DescribeConfigs (key 32): topic and broker configs with their sources and synonyms.

A broker resource is named by its id ("" means the cluster-wide defaults); every broker of
the process answers for any of them, since they share one config store. v5 (unstable,
seed 001) pages whole resources, by type then name: as many as fit in the pagination limit
counted in configs (at least one); NextCursor names the resource the next page starts at.
A cursor naming a resource not asked for answers INVALID_REQUEST for every resource.
"""

from __future__ import annotations

import logging

from kafkagen.generated.describe_configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafkagen.runtime.broker.api import RequestContext, register
from kafkagen.runtime.broker.config import ConfigEntry, ConfigResourceType, ConfigSource, ConfigType
from kafkagen.runtime.broker.config_changes import broker_resource
from kafkagen.runtime.errors import (
    InvalidRequestError,
    KafkaError,
    UnknownTopicOrPartitionError,
)
from kafkagen.runtime.handlers._util import pagination_limit

API_KEY = 32
Result = DescribeConfigsResponse.DescribeConfigsResult
Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


@register(API_KEY, 0, 4, max_unstable_version=5)
def handle(ctx: RequestContext, request: DescribeConfigsRequest) -> None:
    v = ctx.api_version
    synonyms = v >= 1 and request.include_synonyms
    docs = v >= 3 and request.include_documentation
    results = []
    for res in request.resources:
        result = Result(
            error_code=0,
            error_message=None,
            resource_type=res.resource_type,
            resource_name=res.resource_name,
            configs=[],
        )
        try:
            entries = describe(ctx, res.resource_type, res.resource_name, res.configuration_keys)
        except KafkaError as e:
            result.error_code = e.code
            result.error_message = e.message
            results.append(result)
            continue
        result.configs = [_entry(e, v, synonyms, docs) for e in entries]
        results.append(result)
    response = DescribeConfigsResponse(results=results)
    if v >= 5:
        _paginate(ctx, request, response)
    ctx.respond(response)


def _paginate(
    ctx: RequestContext, request: DescribeConfigsRequest, response: DescribeConfigsResponse
) -> None:
    budget = pagination_limit(ctx, request.response_pagination_limit)
    c = request.cursor
    results = sorted(response.results, key=lambda r: (r.resource_type, r.resource_name))
    if c is not None:
        start = (c.resource_type, c.resource_name)
        if start not in {(r.resource_type, r.resource_name) for r in results}:
            error = InvalidRequestError(
                f"the cursor's resource (type {c.resource_type}, {c.resource_name!r}) "
                "was not asked for"
            )
            for r in response.results:
                r.error_code, r.error_message, r.configs = error.code, error.message, []
            return
        results = [r for r in results if (r.resource_type, r.resource_name) >= start]
    page: list[Result] = []
    for r in results:
        if page and len(r.configs) > budget:
            response.next_cursor = DescribeConfigsResponse.ResourceCursor(
                resource_name=r.resource_name, resource_type=r.resource_type
            )
            break
        budget -= len(r.configs)
        page.append(r)
    response.results = page


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
    raise InvalidRequestError(f"config resource type {resource_type} is not supported")


def _loggers(keys: list[str] | None) -> list[ConfigEntry]:
    names = ["kafkagen.broker"] if keys is None else keys
    out = []
    for name in names:
        level = logging.getLevelName(logging.getLogger(name).getEffectiveLevel())
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
