"""AlterConfigs (key 33): replace a resource's whole set of dynamic configs."""

from __future__ import annotations

from kafkagen.generated.alter_configs import AlterConfigsRequest, AlterConfigsResponse
from kafkagen.runtime.broker.api import RequestContext, register
from kafkagen.runtime.broker.config import ConfigError, ConfigResourceType
from kafkagen.runtime.errors import (
    InvalidConfigError,
    InvalidRequestError,
    KafkaError,
    UnknownTopicOrPartitionError,
)
from kafkagen.runtime.handlers.api_32_describe_configs import broker_id

API_KEY = 33
Result = AlterConfigsResponse.AlterConfigsResourceResponse


@register(API_KEY, 0, 2)
def handle(ctx: RequestContext, request: AlterConfigsRequest) -> None:
    store = ctx.broker.configs
    results = []
    for res in request.resources:
        result = Result(
            error_code=0,
            error_message=None,
            resource_type=res.resource_type,
            resource_name=res.resource_name,
        )
        try:
            names = [c.name for c in res.configs]
            if len(set(names)) != len(names):
                raise InvalidRequestError("a config is named twice")
            configs: dict[str, str] = {}
            for c in res.configs:
                if c.value is None:
                    raise InvalidConfigError(f"config {c.name} needs a value")
                configs[c.name] = c.value
            if res.resource_type == ConfigResourceType.TOPIC:
                if ctx.broker.metadata.topic(res.resource_name) is None:
                    raise UnknownTopicOrPartitionError(
                        f"topic {res.resource_name!r} does not exist"
                    )
                store.validate_topic_configs(configs)
                if not request.validate_only:
                    store.set_topic_configs(res.resource_name, configs)
            elif res.resource_type == ConfigResourceType.BROKER:
                node = broker_id(ctx, res.resource_name)
                store.validate_dynamic_broker(configs)
                if not request.validate_only:
                    store.set_dynamic_broker(None if node < 0 else node, configs)
            else:
                raise InvalidRequestError(
                    f"config resource type {res.resource_type} cannot be altered"
                )
        except ConfigError as e:
            result.error_code = InvalidConfigError.code
            result.error_message = str(e)
        except KafkaError as e:
            result.error_code = e.code
            result.error_message = e.message
        results.append(result)
    ctx.respond(AlterConfigsResponse(responses=results))
