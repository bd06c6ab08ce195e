"""Changing dynamic configs: the logic behind AlterConfigs and IncrementalAlterConfigs.

Both APIs name resources (a topic, a broker or "" for the cluster-wide default, a client
metrics subscription, a group), check
each resource on its own, and either validate only or store the new set whole. They differ
in how the new set is made: AlterConfigs replaces it, IncrementalAlterConfigs edits the
current one with SET / DELETE / APPEND / SUBTRACT. A failure is per resource, so this
module raises and the handlers turn the error into that resource's result.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kafkagen.runtime.errors import InvalidRequestError, UnknownTopicOrPartitionError

from ..config.client_metrics import (
    CLIENT_METRICS_CONFIGS,
    client_metrics_def,
    validate_client_metrics,
)
from ..config.definitions import (
    ConfigDef,
    ConfigError,
    ConfigResourceType,
    ConfigType,
    broker_def,
    topic_def,
)
from ..config.group_configs import group_def, group_value, validate_group_configs
from ..config.store import ConfigStore
from .cluster_metadata import ClusterMetadata

__all__ = ["ConfigOp", "broker_resource", "incremental_alter", "replace_configs"]


class ConfigOp(enum.IntEnum):
    """IncrementalAlterConfigs' operation codes."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


def broker_resource(metadata: ClusterMetadata, name: str) -> int:
    """The broker a resource name means; "" is the cluster-wide default (-1)."""
    if name == "":
        return -1
    try:
        node = int(name)
    except ValueError:
        raise InvalidRequestError(f"broker resource name {name!r} is not a broker id") from None
    if node not in metadata.brokers:
        raise InvalidRequestError(f"there is no broker {node}")
    return node


@dataclass
class _Target:
    """One resource's dynamic configs: what is set now, their definitions, how to store."""

    current: dict[str, str]
    define: Callable[[str], ConfigDef]
    effective: Callable[[str], str | None]
    store: Callable[[dict[str, str]], None]
    validate: Callable[[Mapping[str, str | None]], None]


def _target(
    store: ConfigStore, metadata: ClusterMetadata, resource_type: int, name: str
) -> _Target:
    if resource_type == ConfigResourceType.TOPIC:
        if metadata.topic(name) is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        return _Target(
            current=dict(store.topics.get(name, {})),
            define=topic_def,
            effective=lambda config: store.topic_raw(name, config)[0],
            store=lambda configs: store.set_topic_configs(name, configs),
            validate=store.validate_topic_configs,
        )
    if resource_type == ConfigResourceType.BROKER:
        node = broker_resource(metadata, name)
        current = store.dynamic_default if node < 0 else store.dynamic_broker.get(node, {})
        return _Target(
            current=dict(current),
            define=broker_def,
            effective=lambda config: store.broker_raw(config, node)[0],
            store=lambda configs: store.set_dynamic_broker(None if node < 0 else node, configs),
            validate=lambda configs: store.validate_dynamic_broker(configs, node),
        )
    if resource_type == ConfigResourceType.CLIENT_METRICS:
        current = dict(metadata.client_metrics.get(name, {}))
        return _Target(
            current=current,
            define=client_metrics_def,
            effective=lambda config: current.get(config, CLIENT_METRICS_CONFIGS[config].default),
            store=lambda configs: metadata.set_client_metrics(name, configs),
            validate=validate_client_metrics,
        )
    if resource_type == ConfigResourceType.GROUP:
        own = dict(metadata.group_configs.get(name, {}))
        return _Target(
            current=own,
            define=group_def,
            effective=lambda config: group_value(store, own, config)[0],
            store=lambda configs: metadata.set_group_configs(name, configs),
            validate=lambda configs: validate_group_configs(configs, store),
        )
    raise InvalidRequestError(f"config resource type {resource_type} cannot be altered")


def _check_unique(names: Iterable[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InvalidRequestError(f"config {name} is named twice")
        seen.add(name)


def replace_configs(
    store: ConfigStore,
    metadata: ClusterMetadata,
    resource_type: int,
    name: str,
    configs: Iterable[tuple[str, str | None]],
    validate_only: bool,
) -> None:
    """AlterConfigs: the resource's dynamic configs become exactly ``configs``."""
    pairs = list(configs)
    _check_unique(n for n, _ in pairs)
    target = _target(store, metadata, resource_type, name)
    new: dict[str, str] = {}
    for config, value in pairs:
        if value is None:
            raise ConfigError(f"config {config} needs a value")
        new[config] = value
    target.validate(new)
    if not validate_only:
        target.store(new)


def incremental_alter(
    store: ConfigStore,
    metadata: ClusterMetadata,
    resource_type: int,
    name: str,
    changes: Iterable[tuple[str, int, str | None]],
    validate_only: bool,
) -> None:
    """IncrementalAlterConfigs: apply ``(config, operation, value)`` changes in order."""
    ops = list(changes)
    _check_unique(n for n, _, _ in ops)
    target = _target(store, metadata, resource_type, name)
    new = target.current
    for config, op, value in ops:
        d = target.define(config)
        _apply(new, d, op, value, target.effective(config))
    target.validate(new)
    if not validate_only:
        target.store(new)


def _apply(
    current: dict[str, str], d: ConfigDef, op: int, value: str | None, effective: str | None
) -> None:
    if op == ConfigOp.SET:
        if value is None:
            raise ConfigError(f"SET of {d.name} needs a value")
        current[d.name] = value
    elif op == ConfigOp.DELETE:
        current.pop(d.name, None)
    elif op in (ConfigOp.APPEND, ConfigOp.SUBTRACT):
        if d.type is not ConfigType.LIST:
            raise InvalidRequestError(f"{d.name} is not a list: APPEND and SUBTRACT need one")
        # A list not set at this level starts from the value in force (static or default).
        base = current.get(d.name, effective) or ""
        items = [i for i in base.split(",") if i]
        for item in (value or "").split(","):
            item = item.strip()
            if not item:
                continue
            if op == ConfigOp.APPEND and item not in items:
                items.append(item)
            elif op == ConfigOp.SUBTRACT and item in items:
                items.remove(item)
        current[d.name] = ",".join(items)
    else:
        raise InvalidRequestError(f"unknown config operation {op}")
