"""The layered values of brokers and topics, and what DescribeConfigs answers from them.

A topic config resolves, first hit wins, from the topic's own override, the dynamic value
for one broker, the dynamic cluster default, the static broker value (``--config``) and
the built-in default; topic configs find their broker-level values through the broker
synonyms in Kafka's order (``retention.ms`` <- ``log.retention.ms``, ``log.retention.minutes``,
``log.retention.hours``), as in Kafka. DescribeConfigs reports sources and synonyms by
Kafka's rule: the names of the chain found in each layer, per-broker first and built-in
defaults last, dropping those before the chain's first name. Values are kept as the
strings clients send and see; the typed view of a topic is cached in a `TopicConfig`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .definitions import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    ConfigDef,
    ConfigError,
    ConfigSource,
    ConfigType,
    broker_def,
    topic_def,
)

Synonyms = list[tuple[str, str | None, ConfigSource]]

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
    #: flush.messages: records appended between fsyncs of a log directory's files.
    flush_messages: int


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
            if name not in BROKER_CONFIGS:
                raise ConfigError(f"unknown broker config {name!r}")
            broker_def(name).parse(value)
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
        return broker_def(name).default, ConfigSource.DEFAULT_CONFIG

    def broker(self, name: str, broker_id: int = -1) -> object:
        return broker_def(name).parse(self.broker_raw(name, broker_id)[0])

    def _synonyms(self, name: str, chain: Iterable[str], broker_id: int) -> Synonyms:
        """Kafka's synonyms of a broker-level value: each layer's hits in chain order,
        from the first one named ``name``."""
        names = list(chain) or [name]
        # Kafka's static defaults; the dynamic-only configs (the quotas) have none to report.
        defaults: dict[str, str] = {}
        for n in names:
            d = broker_def(n)
            if d.default is not None and d.mode != "dynamic-only":
                defaults[n] = d.default
        layers = [*self._broker_layers(broker_id), (defaults, ConfigSource.DEFAULT_CONFIG)]
        found: Synonyms = [
            (n, layer[n], source) for layer, source in layers for n in names if n in layer
        ]
        while found and found[0][0] != name:
            found.pop(0)
        return found

    def broker_int(self, name: str, broker_id: int = -1) -> int:
        v = self.broker(name, broker_id)
        assert isinstance(v, int)
        return v

    def broker_bool(self, name: str, broker_id: int = -1) -> bool:
        return bool(self.broker(name, broker_id))

    # -- topic values -----------------------------------------------------------------

    def topic_raw(self, topic: str, name: str) -> tuple[str | None, ConfigSource]:
        """A topic config's value and where it comes from: the topic's own, else the first
        broker synonym set at any level (in chain order, as Kafka merges them), else the
        topic default."""
        own = self.topics.get(topic, {})
        if name in own:
            return own[name], ConfigSource.DYNAMIC_TOPIC_CONFIG
        for synonym in TOPIC_CONFIGS[name].synonyms:
            for layer, source in self._broker_layers(-1):
                if synonym.name in layer:
                    return synonym.to_ms(layer[synonym.name]), source
        return TOPIC_CONFIGS[name].default, ConfigSource.DEFAULT_CONFIG

    def topic_value(self, topic: str, name: str) -> object:
        return TOPIC_CONFIGS[name].parse(self.topic_raw(topic, name)[0])

    def segment_bytes(self, topic: str) -> int:
        """Where a topic's segments roll: Kafka's internal.segment.bytes (which may go below
        segment.bytes' 1 MiB floor, for tests) when set, else segment.bytes."""
        for name in ("internal.segment.bytes", "segment.bytes"):
            value = self.topic_value(topic, name)
            if value is not None:
                assert isinstance(value, int)
                return value
        raise AssertionError("segment.bytes has a default")

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
            segment_bytes=self.segment_bytes(topic),
            segment_ms=num("segment.ms"),
            flush_messages=num("flush.messages"),
        )
        self._topic_cache[topic] = cfg
        return cfg

    @staticmethod
    def validate_topic_configs(configs: Mapping[str, str | None]) -> None:
        """Raise ConfigError for an unknown name or a bad value."""
        for name, value in configs.items():
            d = topic_def(name)
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
        self.validate_dynamic_broker(configs, -1 if broker_id is None else broker_id)
        if broker_id is None:
            self.dynamic_default = dict(configs)
        else:
            self.dynamic_broker[broker_id] = dict(configs)
        self._topic_cache.clear()
        self._changed()

    @staticmethod
    def validate_dynamic_broker(configs: Mapping[str, str | None], broker_id: int) -> None:
        """Raise ConfigError as Kafka refuses the set: read-only names, per-broker names at
        the cluster default (``broker_id`` -1), bad values. Unknown names are kept, as in
        Kafka."""
        fixed = [n for n in configs if broker_def(n).read_only]
        if fixed:
            raise ConfigError(f"Cannot update these configs dynamically: [{', '.join(fixed)}]")
        if broker_id < 0:
            own = [n for n in configs if broker_def(n).mode == "per-broker"]
            if own:
                raise ConfigError(
                    "Cannot update these configs at default cluster level, broker id must be "
                    f"specified: [{', '.join(own)}]"
                )
        for name, value in configs.items():
            if value is None:
                raise ConfigError(f"config {name} needs a value")
            broker_def(name).parse(value)

    # -- describing -------------------------------------------------------------------

    def describe_topic(
        self,
        topic: str,
        keys: Iterable[str] | None,
        overrides: Mapping[str, str] | None = None,
    ) -> list[ConfigEntry]:
        """The topic's configs; ``overrides`` stands in for its own (validate-only creates)."""
        if keys is None:
            names = [n for n, d in sorted(TOPIC_CONFIGS.items()) if not d.internal]
        else:
            names = [k for k in keys if k in TOPIC_CONFIGS]
        own = self.topics.get(topic, {}) if overrides is None else overrides
        out = []
        for name in names:
            d = TOPIC_CONFIGS[name]
            chain = [s.name for s in d.synonyms]
            synonyms = self._synonyms(chain[0], chain, -1) if chain else []
            if name in own:
                value: str | None = own[name]
                synonyms.insert(0, (name, value, ConfigSource.DYNAMIC_TOPIC_CONFIG))
            else:
                value = self.topic_raw(topic, name)[0]
            out.append(_entry(d, value, synonyms, read_only=False))
        return out

    def describe_broker(self, broker_id: int, keys: Iterable[str] | None) -> list[ConfigEntry]:
        """A broker's configs (``broker_id`` -1: the cluster default, which lists only the
        configs set there). Kafka leaves out its internal configs and the dynamic-only ones
        not set."""
        if keys is None:
            names = [
                n
                for n, d in sorted(BROKER_CONFIGS.items())
                if not d.internal and (d.mode != "dynamic-only" or self._set_anywhere(n, broker_id))
            ]
        else:
            names = [k for k in keys if k in BROKER_CONFIGS]
        out = []
        for name in names:
            d = BROKER_CONFIGS[name]
            synonyms = self._synonyms(name, [s.name for s in d.synonyms], broker_id)
            if name in ("broker.id", "node.id") and broker_id >= 0:
                synonyms.insert(0, (name, str(broker_id), ConfigSource.STATIC_BROKER_CONFIG))
            if broker_id < 0:
                synonyms = [
                    s for s in synonyms if s[2] is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
                ]
                if not synonyms and keys is None:
                    continue
            value = self.broker_raw(name, broker_id)[0]
            out.append(_entry(d, value, synonyms, read_only=d.read_only))
        return out

    def _set_anywhere(self, name: str, broker_id: int) -> bool:
        return any(name in layer for layer, _ in self._broker_layers(broker_id))


def _entry(d: ConfigDef, value: str | None, synonyms: Synonyms, read_only: bool) -> ConfigEntry:
    """One DescribeConfigs line; the source is the first synonym's, as Kafka reports it."""
    if d.sensitive:
        value = None
        synonyms = [(n, None, src) for n, _, src in synonyms]
    source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
    return ConfigEntry(
        d.name, value, source, read_only, d.sensitive, d.type, d.doc, tuple(synonyms)
    )


def parse_assignments(pairs: Iterable[str]) -> dict[str, str]:
    """``key=value`` strings (the command line's --config) as a dict; bad ones raise."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"expected key=value, got {pair!r}")
        out[key.strip()] = value.strip()
    return out
