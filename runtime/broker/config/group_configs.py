"""Group configs (KIP-848, KIP-932, KIP-1071): settings of one group, set with
IncrementalAlterConfigs on a GROUP resource (``kafka-configs --entity-type groups``), each
falling back to a broker config (its synonym) or a fixed default, as Kafka 4.4's group
configs do.

A value is checked as Kafka checks it: its type, a lowest value some configs have, and the
range the broker allows (``group.<kind>.min.*`` to ``group.<kind>.max.*``); Kafka's words
are kept because its tools print them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kafkagen.runtime.errors import InvalidConfigError

from .definitions import ConfigDef, ConfigSource, ConfigType
from .store import ConfigStore

__all__ = [
    "GROUP_CONFIGS",
    "GroupConfigDef",
    "group_def",
    "group_setting",
    "group_value",
    "reset_duration_ms",
    "validate_group_configs",
]


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    name: str
    type: ConfigType
    #: The broker config it falls back to (None: ``default``).
    synonym: str | None
    default: str
    doc: str
    #: The lowest value the config itself takes.
    at_least: int | None = None
    #: The broker configs bounding it (lowest, highest).
    bounds: tuple[str, str] | None = None
    #: The broker config that is its only upper bound.
    at_most: str | None = None


def _ranged(kind: str, name: str, at_least: int | None = None, doc: str = "") -> GroupConfigDef:
    """``<kind>.<name>``, falling back to ``group.<kind>.<name>`` and bounded by
    ``group.<kind>.min.<name>`` and ``group.<kind>.max.<name>``."""
    synonym = f"group.{kind}.{name}"
    return GroupConfigDef(
        f"{kind}.{name}",
        ConfigType.INT,
        synonym,
        "",
        doc,
        at_least,
        (f"group.{kind}.min.{name}", f"group.{kind}.max.{name}"),
    )


#: Kafka 4.4's group configs.
GROUP_CONFIGS: dict[str, GroupConfigDef] = {
    d.name: d
    for d in (
        _ranged("consumer", "assignment.interval.ms", doc="How often assignments are computed."),
        _ranged("consumer", "heartbeat.interval.ms", doc="How often members heartbeat."),
        _ranged("consumer", "session.timeout.ms", doc="How long a silent member stays."),
        GroupConfigDef(
            "errors.deadletterqueue.copy.record.enable",
            ConfigType.BOOLEAN,
            None,
            "false",
            "Whether records sent to the dead-letter queue keep their contents.",
        ),
        GroupConfigDef(
            "errors.deadletterqueue.topic.name",
            ConfigType.STRING,
            None,
            "",
            "The topic that takes records the group could not process.",
        ),
        _ranged("share", "assignment.interval.ms", doc="How often assignments are computed."),
        GroupConfigDef(
            "share.auto.offset.reset",
            ConfigType.STRING,
            None,
            "latest",
            "Where a share partition starts: earliest, latest or by_duration:<ISO duration>.",
        ),
        GroupConfigDef(
            "share.delivery.count.limit",
            ConfigType.INT,
            "group.share.delivery.count.limit",
            "",
            "Deliveries of a record before it is archived.",
            2,
            ("group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"),
        ),
        _ranged("share", "heartbeat.interval.ms", doc="How often members heartbeat."),
        GroupConfigDef(
            "share.isolation.level",
            ConfigType.STRING,
            None,
            "read_uncommitted",
            "Whether share consumers see records of transactions not yet committed.",
        ),
        GroupConfigDef(
            "share.partition.max.record.locks",
            ConfigType.INT,
            "group.share.partition.max.record.locks",
            "",
            "Records of one partition in flight at once.",
            100,
            (
                "group.share.min.partition.max.record.locks",
                "group.share.max.partition.max.record.locks",
            ),
        ),
        GroupConfigDef(
            "share.record.lock.duration.ms",
            ConfigType.INT,
            "group.share.record.lock.duration.ms",
            "",
            "How long a member holds the records it acquired.",
            1000,
            ("group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"),
        ),
        GroupConfigDef(
            "share.renew.acknowledge.enable",
            ConfigType.BOOLEAN,
            None,
            "true",
            "Whether members may renew their locks (the RENEW acknowledgement).",
        ),
        _ranged("share", "session.timeout.ms", doc="How long a silent member stays."),
        _ranged("streams", "assignment.interval.ms", doc="How often assignments are computed."),
        GroupConfigDef(
            "streams.assignor.name",
            ConfigType.STRING,
            "group.streams.assignors",
            "",
            "The task assignor.",
        ),
        _ranged("streams", "heartbeat.interval.ms", doc="How often members heartbeat."),
        GroupConfigDef(
            "streams.initial.rebalance.delay.ms",
            ConfigType.INT,
            "group.streams.initial.rebalance.delay.ms",
            "",
            "How long a new group waits before its first assignment.",
            0,
        ),
        GroupConfigDef(
            "streams.num.standby.replicas",
            ConfigType.INT,
            "group.streams.num.standby.replicas",
            "",
            "Standby replicas of each stateful task.",
            0,
            at_most="group.streams.max.standby.replicas",
        ),
        GroupConfigDef(
            "streams.rack.aware.assignment.tags",
            ConfigType.LIST,
            "group.streams.rack.aware.assignment.tags",
            "",
            "Client tags the assignor spreads standby tasks over.",
        ),
        _ranged("streams", "session.timeout.ms", doc="How long a silent member stays."),
    )
}

_DURATION = re.compile(r"by_duration:P(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+(?:\.\d+)?S)?)?", re.I)
_ISOLATION = ("read_committed", "read_uncommitted")


def _invalid(value: str, name: str, reason: str) -> InvalidConfigError:
    return InvalidConfigError(f"Invalid value {value} for configuration {name}: {reason}")


def validate_group_configs(
    configs: Mapping[str, str | None], store: ConfigStore, node_id: int = -1
) -> None:
    """Raise Kafka's INVALID_CONFIG for a bad group config (the broker's bounds from
    ``store``)."""
    for name, value in configs.items():
        d = GROUP_CONFIGS.get(name)
        if d is None:
            raise InvalidConfigError(f"Unknown group config name: {name}")
        if value is None:
            continue
        if d.type is ConfigType.BOOLEAN and value.strip().lower() not in ("true", "false"):
            raise _invalid(value, name, "Expected value to be either true or false")
        if name == "share.auto.offset.reset" and not (
            value.lower() in ("earliest", "latest") or _DURATION.fullmatch(value)
        ):
            raise _invalid(
                value,
                name,
                f"Invalid value `{value}` for configuration {name}. The value must be either "
                "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
            )
        if name == "share.isolation.level" and value.lower() not in _ISOLATION:
            raise _invalid(value, name, f"String must be one of: {', '.join(_ISOLATION)}")
        if d.type is not ConfigType.INT:
            continue
        try:
            number = int(value.strip())
        except ValueError:
            raise _invalid(value, name, "Not a number of type INT") from None
        if d.at_least is not None and number < d.at_least:
            raise _invalid(value, name, f"Value must be at least {d.at_least}")
        if d.bounds is not None:
            low, high = (store.broker_int(b, node_id) for b in d.bounds)
            if not low <= number <= high:
                raise InvalidConfigError(f"{name} must be in the range {low} to {high} inclusive.")
        if d.at_most is not None:
            high = store.broker_int(d.at_most, node_id)
            if number > high:
                raise InvalidConfigError(f"{name} must be less than or equal to {high}")


def group_def(name: str) -> ConfigDef:
    """A group config as the config changes see it; Kafka's error for a name it has not."""
    d = GROUP_CONFIGS.get(name)
    if d is None:
        raise InvalidConfigError(f"Unknown group config name: {name}")
    return ConfigDef(d.name, d.type, d.default, d.doc)


def group_value(
    store: ConfigStore, configs: Mapping[str, str], name: str, node_id: int = -1
) -> tuple[str, ConfigSource]:
    """The value in force of group config ``name`` for a group whose own configs are
    ``configs``, and where it comes from."""
    if name in configs:
        return configs[name], ConfigSource.DYNAMIC_GROUP_CONFIG
    return default_value(store, GROUP_CONFIGS[name], node_id), ConfigSource.DEFAULT_CONFIG


def default_value(store: ConfigStore, d: GroupConfigDef, node_id: int = -1) -> str:
    """What a group that does not set ``d`` has: its broker synonym's value, or its own."""
    if d.synonym is None:
        return d.default
    return store.broker_raw(d.synonym, node_id)[0] or ""


def group_setting(
    store: ConfigStore,
    group_configs: Mapping[str, Mapping[str, str]],
    group_id: str,
    name: str,
    node_id: int = -1,
) -> str:
    """The value in force of group config ``name`` for ``group_id``, whose configs (if
    any) ``group_configs`` holds."""
    return group_value(store, group_configs.get(group_id, {}), name, node_id)[0]


_ISO_PARTS = re.compile(
    r"P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?", re.I
)


def reset_duration_ms(value: str) -> int | None:
    """How far back ``share.auto.offset.reset=by_duration:<ISO duration>`` starts, in ms;
    None for ``earliest`` and ``latest``."""
    if not value.lower().startswith("by_duration:"):
        return None
    m = _ISO_PARTS.fullmatch(value.split(":", 1)[1])
    assert m is not None, "validated when set"
    days, hours, minutes = (int(m.group(k) or 0) for k in "dhm")
    seconds = float(m.group("s") or 0)
    return int((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000)
