"""The layered values of brokers and topics, and what DescribeConfigs answers from them.

A topic config resolves, first hit wins, from the topic's own override, the dynamic value
for one broker, the dynamic cluster default, the static broker value (``--config``) and
the built-in default; topic configs find their broker-level values through the broker
synonym (``retention.ms`` <- ``log.retention.ms``), as in Kafka. Values are kept as the
strings clients send and see; the typed view of a topic is cached in a `TopicConfig`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .definitions import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    ConfigError,
    ConfigSource,
    ConfigType,
)

__all__ = ["ConfigEntry", "ConfigStore", "TopicConfig", "parse_assignments"]


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One line of a DescribeConfigs answer."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    type: ConfigType
    doc: str
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...]

    @property
    def is_default(self) -> bool:
        return self.source is ConfigSource.DEFAULT_CONFIG


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """The typed values of one topic's configs that the data path reads."""

    compacted: bool
    log_append_time: bool
    max_message_bytes: int
    min_insync_replicas: int
    timestamp_before_max_ms: int
    timestamp_after_max_ms: int
    retention_ms: int
    retention_bytes: int
    #: cleanup.policy has delete (retention applies) and compact (the cleaner runs).
    deletes: bool
    segment_bytes: int
    segment_ms: int


class ConfigStore:
    """Every config value of a cluster: static, dynamic per broker and default, per topic."""

    def __init__(self, static: Mapping[str, str] | None = None) -> None:
        self.static: dict[str, str] = {}
        self.dynamic_default: dict[str, str] = {}
        self.dynamic_broker: dict[int, dict[str, str]] = {}
        self.topics: dict[str, dict[str, str]] = {}
        self._topic_cache: dict[str, TopicConfig] = {}
        #: Called after every change of dynamic or topic configs (a log directory saves them).
        self.on_change: Callable[[], None] | None = None
        for name, value in (static or {}).items():
            d = BROKER_CONFIGS.get(name)
            if d is None:
                raise ConfigError(f"unknown broker config {name!r}")
            d.parse(value)
            self.static[name] = value

    # -- broker values ----------------------------------------------------------------

    def _broker_layers(self, broker_id: int) -> list[tuple[Mapping[str, str], ConfigSource]]:
        return [
            (self.dynamic_broker.get(broker_id, {}), ConfigSource.DYNAMIC_BROKER_CONFIG),
            (self.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (self.static, ConfigSource.STATIC_BROKER_CONFIG),
        ]

    def broker_raw(self, name: str, broker_id: int = -1) -> tuple[str | None, ConfigSource]:
        if name in ("broker.id", "node.id") and broker_id >= 0:
            return str(broker_id), ConfigSource.STATIC_BROKER_CONFIG
        for layer, source in self._broker_layers(broker_id):
            if name in layer:
                return layer[name], source
        return BROKER_CONFIGS[name].default, ConfigSource.DEFAULT_CONFIG

    def broker(self, name: str, broker_id: int = -1) -> object:
        return BROKER_CONFIGS[name].parse(self.broker_raw(name, broker_id)[0])

    def broker_int(self, name: str, broker_id: int = -1) -> int:
        v = self.broker(name, broker_id)
        assert isinstance(v, int)
        return v

    def broker_bool(self, name: str, broker_id: int = -1) -> bool:
        return bool(self.broker(name, broker_id))

    # -- topic values -----------------------------------------------------------------

    def topic_raw(self, topic: str, name: str) -> tuple[str | None, ConfigSource]:
        own = self.topics.get(topic, {})
        if name in own:
            return own[name], ConfigSource.DYNAMIC_TOPIC_CONFIG
        synonym = TOPIC_CONFIGS[name].broker_synonym
        if synonym is None:
            return TOPIC_CONFIGS[name].default, ConfigSource.DEFAULT_CONFIG
        value, source = self.broker_raw(synonym)
        if source is ConfigSource.DEFAULT_CONFIG:
            return TOPIC_CONFIGS[name].default, source
        return value, source

    def topic_value(self, topic: str, name: str) -> object:
        return TOPIC_CONFIGS[name].parse(self.topic_raw(topic, name)[0])

    def topic_config(self, topic: str) -> TopicConfig:
        cached = self._topic_cache.get(topic)
        if cached is not None:
            return cached

        def num(name: str) -> int:
            v = self.topic_value(topic, name)
            assert isinstance(v, int)
            return v

        policy = self.topic_value(topic, "cleanup.policy")
        assert isinstance(policy, list)
        cfg = TopicConfig(
            compacted="compact" in policy,
            log_append_time=self.topic_value(topic, "message.timestamp.type") == "LogAppendTime",
            max_message_bytes=num("max.message.bytes"),
            min_insync_replicas=num("min.insync.replicas"),
            timestamp_before_max_ms=num("message.timestamp.before.max.ms"),
            timestamp_after_max_ms=num("message.timestamp.after.max.ms"),
            retention_ms=num("retention.ms"),
            retention_bytes=num("retention.bytes"),
            deletes="delete" in policy,
            segment_bytes=num("segment.bytes"),
            segment_ms=num("segment.ms"),
        )
        self._topic_cache[topic] = cfg
        return cfg

    @staticmethod
    def validate_topic_configs(configs: Mapping[str, str | None]) -> None:
        """Raise ConfigError for an unknown name or a bad value."""
        for name, value in configs.items():
            d = TOPIC_CONFIGS.get(name)
            if d is None:
                raise ConfigError(f"unknown topic config {name!r}")
            if value is None:
                raise ConfigError(f"config {name} needs a value")
            d.parse(value)

    def set_topic_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        self.validate_topic_configs(configs)
        self.topics[topic] = dict(configs)
        self._topic_cache.pop(topic, None)
        self._changed()

    def drop_topic(self, topic: str) -> None:
        self.topics.pop(topic, None)
        self._topic_cache.pop(topic, None)
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def set_dynamic_broker(self, broker_id: int | None, configs: Mapping[str, str]) -> None:
        """Replace the dynamic configs of one broker (None: the cluster-wide default)."""
        self.validate_dynamic_broker(configs)
        if broker_id is None:
            self.dynamic_default = dict(configs)
        else:
            self.dynamic_broker[broker_id] = dict(configs)
        self._topic_cache.clear()
        self._changed()

    @staticmethod
    def validate_dynamic_broker(configs: Mapping[str, str | None]) -> None:
        for name, value in configs.items():
            d = BROKER_CONFIGS.get(name)
            if d is None:
                raise ConfigError(f"unknown broker config {name!r}")
            if d.read_only:
                raise ConfigError(f"broker config {name} cannot be changed while running")
            if value is None:
                raise ConfigError(f"config {name} needs a value")
            d.parse(value)

    # -- describing -------------------------------------------------------------------

    def describe_topic(
        self,
        topic: str,
        keys: Iterable[str] | None,
        overrides: Mapping[str, str] | None = None,
    ) -> list[ConfigEntry]:
        """The topic's configs; ``overrides`` stands in for its own (validate-only creates)."""
        names = list(TOPIC_CONFIGS) if keys is None else [k for k in keys if k in TOPIC_CONFIGS]
        own = self.topics.get(topic, {}) if overrides is None else overrides
        out = []
        for name in names:
            d = TOPIC_CONFIGS[name]
            if name in own:
                value: str | None = own[name]
                source = ConfigSource.DYNAMIC_TOPIC_CONFIG
            else:
                value, source = self.topic_raw(topic, name)
            synonyms: list[tuple[str, str | None, ConfigSource]] = []
            if name in own:
                synonyms.append((name, own[name], ConfigSource.DYNAMIC_TOPIC_CONFIG))
            if d.broker_synonym is not None:
                for layer, layer_source in self._broker_layers(-1):
                    if d.broker_synonym in layer:
                        synonyms.append((d.broker_synonym, layer[d.broker_synonym], layer_source))
                synonyms.append((d.broker_synonym, d.default, ConfigSource.DEFAULT_CONFIG))
            out.append(
                ConfigEntry(name, value, source, False, d.sensitive, d.type, d.doc, tuple(synonyms))
            )
        return out

    def describe_broker(self, broker_id: int, keys: Iterable[str] | None) -> list[ConfigEntry]:
        names = sorted(BROKER_CONFIGS) if keys is None else [k for k in keys if k in BROKER_CONFIGS]
        out = []
        for name in names:
            d = BROKER_CONFIGS[name]
            value, source = self.broker_raw(name, broker_id)
            synonyms: list[tuple[str, str | None, ConfigSource]] = []
            for layer, layer_source in self._broker_layers(broker_id):
                if name in layer:
                    synonyms.append((name, layer[name], layer_source))
            if not d.dynamic_only:
                synonyms.append((name, d.default, ConfigSource.DEFAULT_CONFIG))
            out.append(
                ConfigEntry(
                    name,
                    None if d.sensitive else value,
                    source,
                    d.read_only,
                    d.sensitive,
                    d.type,
                    d.doc,
                    tuple(synonyms),
                )
            )
        return out


def parse_assignments(pairs: Iterable[str]) -> dict[str, str]:
    """``key=value`` strings (the command line's --config) as a dict; bad ones raise."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"expected key=value, got {pair!r}")
        out[key.strip()] = value.strip()
    return out
