"""IncrementalAlterConfigs (key 44): set, delete, append to or subtract from configs."""

from __future__ import annotations

import enum

from kafkagen.generated.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from kafkagen.runtime.broker.api import RequestContext, register
from kafkagen.runtime.broker.config import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    ConfigDef,
    ConfigError,
    ConfigResourceType,
    ConfigType,
)
from kafkagen.runtime.errors import (
    InvalidConfigError,
    InvalidRequestError,
    KafkaError,
    UnknownTopicOrPartitionError,
)
from kafkagen.runtime.handlers.api_32_describe_configs import broker_id

API_KEY = 44
Result = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse


class Op(enum.IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@register(API_KEY, 0, 1)
def handle(ctx: RequestContext, request: IncrementalAlterConfigsRequest) -> None:
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
            if res.resource_type == ConfigResourceType.TOPIC:
                if ctx.broker.metadata.topic(res.resource_name) is None:
                    raise UnknownTopicOrPartitionError(
                        f"topic {res.resource_name!r} does not exist"
                    )
                current = dict(store.topics.get(res.resource_name, {}))
                defs = TOPIC_CONFIGS
                node = None
            elif res.resource_type == ConfigResourceType.BROKER:
                n = broker_id(ctx, res.resource_name)
                node = None if n < 0 else n
                current = dict(
                    store.dynamic_default if node is None else store.dynamic_broker.get(node, {})
                )
                defs = BROKER_CONFIGS
            else:
                raise InvalidRequestError(
                    f"config resource type {res.resource_type} cannot be altered"
                )
            for c in res.configs:
                d = defs.get(c.name)
                if d is None:
                    raise ConfigError(f"unknown config {c.name!r}")
                _apply(
                    current,
                    d,
                    c.config_operation,
                    c.value,
                    store_value=_effective(ctx, res.resource_type, res.resource_name, c.name),
                )
            if res.resource_type == ConfigResourceType.TOPIC:
                store.validate_topic_configs(current)
                if not request.validate_only:
                    store.set_topic_configs(res.resource_name, current)
            else:
                store.validate_dynamic_broker(current)
                if not request.validate_only:
                    store.set_dynamic_broker(node, current)
        except ConfigError as e:
            result.error_code = InvalidConfigError.code
            result.error_message = str(e)
        except KafkaError as e:
            result.error_code = e.code
            result.error_message = e.message
        results.append(result)
    ctx.respond(IncrementalAlterConfigsResponse(responses=results))


def _effective(ctx: RequestContext, resource_type: int, name: str, config: str) -> str | None:
    store = ctx.broker.configs
    if resource_type == ConfigResourceType.TOPIC:
        return store.topic_raw(name, config)[0]
    return store.broker_raw(config, broker_id(ctx, name))[0]


def _apply(
    current: dict[str, str], d: ConfigDef, op: int, value: str | None, store_value: str | None
) -> None:
    if op == Op.SET:
        if value is None:
            raise ConfigError(f"SET of {d.name} needs a value")
        current[d.name] = value
    elif op == Op.DELETE:
        current.pop(d.name, None)
    elif op in (Op.APPEND, Op.SUBTRACT):
        if d.type is not ConfigType.LIST:
            raise InvalidRequestError(f"{d.name} is not a list: APPEND and SUBTRACT need one")
        base = current.get(d.name, store_value) or ""
        items = [i for i in base.split(",") if i]
        for item in (value or "").split(","):
            item = item.strip()
            if not item:
                continue
            if op == Op.APPEND and item not in items:
                items.append(item)
            elif op == Op.SUBTRACT and item in items:
                items.remove(item)
        current[d.name] = ",".join(items)
    else:
        raise InvalidRequestError(f"unknown config operation {op}")
