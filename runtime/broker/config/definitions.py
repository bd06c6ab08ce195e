"""The configs a broker knows: each key's type, default, checks, dynamic scope and synonyms.

Kafka's configs, topic and broker, come from one table, ``catalogue.json`` beside this
module, derived from Kafka 4.4.0's own definitions by ``python -m kafkagen.configs_from_jars``
(the ``doc`` column is kafkagen's). Values are parsed and checked as Kafka's ``ConfigDef``
does, with Kafka's error texts. kafkagen's own configs (``kafkagen.*``, the authorizer's)
and the few defaults kafkagen keeps different on purpose are listed here.
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..release_presets import PRESET_CONFIG, preset_ranges

__all__ = [
    "BROKER_CONFIGS",
    "ConfigDef",
    "ConfigError",
    "ConfigSource",
    "ConfigType",
    "ConfigResourceType",
    "Synonym",
    "TOPIC_CONFIGS",
    "API_VERSION_MAX",
    "broker_def",
    "parse_throttled_replicas",
    "parse_version_caps",
    "topic_def",
]

#: The broker config that caps the API versions a broker serves.
API_VERSION_MAX = "kafkagen.api.version.max"
INT64_MAX = 2**63 - 1
#: The ``*.replication.throttled.replicas`` value that names every replica.
ALL_REPLICAS = "*"
_LIMITS = {"INT": 2**31, "SHORT": 2**15, "LONG": 2**63}
_INTEGER = re.compile(r"[+-]?\d+")
_REPLICA = re.compile(r"(\d+:\d+)?")
_SPLIT = re.compile(r"\s*,\s*")


class ConfigType(enum.IntEnum):
    """The type code DescribeConfigs v3+ reports."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    DYNAMIC_CLIENT_METRICS_CONFIG = 7
    DYNAMIC_GROUP_CONFIG = 8


class ConfigResourceType(enum.IntEnum):
    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigError(ValueError):
    """A config name or value that cannot be used; the text says which and why (Kafka's
    words where Kafka has them)."""


def invalid(value: object, name: str, reason: str) -> ConfigError:
    return ConfigError(f"Invalid value {value} for configuration {name}: {reason}")


Validator = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Synonym:
    """A broker config that can supply a value, and the unit it is given in."""

    name: str
    #: "same", or "hours"/"minutes" for a config in those units standing in for milliseconds.
    unit: str = "same"

    def to_ms(self, value: str | None) -> str | None:
        if value is None or self.unit == "same":
            return value
        return str(int(value.strip()) * (3_600_000 if self.unit == "hours" else 60_000))


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: str | None
    doc: str
    #: A topic config: the broker configs supplying its value, in Kafka's order. A broker
    #: config: the chain Kafka reports it in (``log.retention.ms``, ``...minutes``, ``...hours``).
    synonyms: tuple[Synonym, ...] = ()
    #: Broker configs: "read-only", "per-broker", "cluster-wide" or "dynamic-only" (set only
    #: through AlterConfigs: the replication quotas).
    mode: str = "read-only"
    importance: str = "MEDIUM"
    #: Kafka's validator, as the table records it (kind and fields).
    check: Mapping[str, Any] | None = None
    #: Kafka keeps internal configs out of DescribeConfigs.
    internal: bool = False
    #: Whether the value changes what kafkagen does; else it is stored and reported only.
    behaves: bool = True
    #: kafkagen's further check of the raw value; raises ValueError saying what is wrong.
    validator: Validator | None = field(default=None, compare=False)

    @property
    def read_only(self) -> bool:
        return self.mode == "read-only"

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD

    def parse(self, value: str | None) -> object:
        """The typed value as Kafka's ConfigDef parses it; raises ConfigError in Kafka's words."""
        if value is None:
            return None
        parsed = _parse_type(self.name, value, self.type)
        if self.check is not None:
            _validate(self.name, parsed, self.check)
        if self.validator is not None:
            try:
                self.validator(value)
            except ValueError as e:
                raise invalid(value, self.name, str(e)) from None
        return parsed


def _parse_type(name: str, value: str, t: ConfigType) -> object:
    trimmed = value.strip()
    if t is ConfigType.BOOLEAN:
        if trimmed.lower() not in ("true", "false"):
            raise invalid(value, name, "Expected value to be either true or false")
        return trimmed.lower() == "true"
    if t.name in _LIMITS:
        limit = _LIMITS[t.name]
        if not _INTEGER.fullmatch(trimmed) or not -limit <= int(trimmed) < limit:
            raise invalid(value, name, f"Not a number of type {t.name}")
        return int(trimmed)
    if t is ConfigType.DOUBLE:
        try:
            number = float(trimmed)
        except ValueError:
            number = None
        if number is None or trimmed.lower().lstrip("+-") in ("inf", "infinity", "nan"):
            raise invalid(value, name, "Not a number of type DOUBLE")
        return number
    if t is ConfigType.LIST:
        return [] if not trimmed else _SPLIT.split(trimmed)
    if t is ConfigType.PASSWORD:
        return value
    return trimmed


def _java(value: object) -> str:
    """How Java prints a parsed value (the text inside Kafka's messages)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if value == 0 or 1e-3 <= abs(value) < 1e7:
            return repr(value) if "e" not in repr(value) else f"{value:f}"
        mantissa, exponent = f"{value:e}".split("e")
        digits = (
            repr(float(mantissa))
            if float(mantissa) != math.floor(float(mantissa))
            else (f"{float(mantissa):.1f}")
        )
        return f"{digits}E{int(exponent)}"
    if isinstance(value, list):
        return "[" + ", ".join(value) + "]"
    return str(value)


def _validate(name: str, value: Any, check: Mapping[str, Any]) -> None:
    kind = check["kind"]
    shown = _java(value)
    if kind == "Range":
        low, high = check.get("min"), check.get("max")
        if low is not None and value < float(low):
            raise invalid(shown, name, f"Value must be at least {low}")
        if high is not None and value > float(high):
            raise invalid(shown, name, f"Value must be no more than {high}")
    elif kind == "LambdaValidator":
        # "[1,...,9] or -1": a range, or one further value.
        m = re.fullmatch(r"\[(-?\d+),\.\.\.,(-?\d+)\] or (-?\d+)", check["text"])
        assert m is not None, check
        low, high, other = map(int, m.groups())
        if not (low <= value <= high or value == other):
            raise invalid(
                shown, name, f"Value must be between {low} and {high} or equal to {other}"
            )
    elif kind in ("ValidString", "CaseInsensitiveValidString"):
        allowed = check["validStrings"]
        if kind == "ValidString" and value not in allowed:
            raise invalid(shown, name, "String must be one of: " + ", ".join(allowed))
        if kind != "ValidString" and value.upper() not in [a.upper() for a in allowed]:
            raise invalid(
                shown, name, "String must be one of (case insensitive): " + ", ".join(allowed)
            )
    elif kind == "ValidList":
        allowed = check["validString"]["validStrings"]
        if not value and check["isEmptyAllowed"] != "true":
            valid = f"[{', '.join(allowed)}]" if allowed else "any non-empty value"
            raise ConfigError(
                f"Configuration '{name}' must not be empty. Valid values include: {valid}"
            )
        if len(set(value)) != len(value):
            raise ConfigError(f"Configuration '{name}' values must not be duplicated.")
        for item in value:
            if allowed and item not in allowed:
                raise invalid(item, name, "String must be one of: " + ", ".join(allowed))
    elif kind == "NonEmptyString":
        if not value:
            raise invalid(shown, name, "String must be non-empty")
    elif kind == "ThrottledReplicaListValidator":
        if value != ["*"] and not all(_REPLICA.fullmatch(v.strip()) for v in value):
            raise invalid(
                shown,
                name,
                f"{name} must be the literal '*' or a list of replicas in the following "
                "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
            )
    # NonNullValidator holds for any string; the controller quorum's address checks concern
    # read-only configs kafkagen does not use.


def parse_version_caps(value: str) -> dict[int, int]:
    """API key -> highest version to serve, from ``kafkagen.api.version.max``.

    Entries are ``Name:version`` (Kafka's API name, any case) or ``key:version``; raises
    ValueError naming the entry that is wrong.
    """
    from kafkagen.generated import APIS

    by_name = {req.removesuffix("Request").lower(): key for key, (_, req, _) in APIS.items()}
    caps: dict[int, int] = {}
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        api, sep, version = entry.partition(":")
        api, version = api.strip(), version.strip()
        if not sep or not api or not version:
            raise ValueError(f"entry {entry!r} is not API:version (e.g. OffsetFetch:7)")
        key = int(api) if api.isdigit() else by_name.get(api.lower())
        if key is None or key not in APIS:
            raise ValueError(f"entry {entry!r}: {api!r} is not a known API name or key")
        try:
            top = int(version)
        except ValueError:
            raise ValueError(f"entry {entry!r}: version {version!r} is not a number") from None
        if top < 0:
            raise ValueError(f"entry {entry!r}: version must be 0 or more")
        if key in caps:
            raise ValueError(f"entry {entry!r}: API {api} is capped twice")
        caps[key] = top
    return caps


def parse_throttled_replicas(value: str) -> frozenset[tuple[int, int]] | None:
    """The ``partition:broker`` pairs of a ``*.replication.throttled.replicas`` value (one
    the table's validator accepted), or None for ``*``: every replica."""
    items = [i for i in _SPLIT.split(value.strip()) if i]
    if items == [ALL_REPLICAS]:
        return None
    return frozenset((int(p), int(b)) for p, b in (item.split(":") for item in items))


def _check_log_dirs(value: str) -> None:
    dirs = [d for d in value.split(",") if d.strip()]
    if len(dirs) != 1:
        raise ValueError("give exactly one directory")


def _check_version_caps(value: str) -> None:
    parse_version_caps(value)


def _check_preset(value: str) -> None:
    if value:
        preset_ranges(value)


T = ConfigType


def _load(section: str, entries: Mapping[str, Mapping[str, Any]]) -> dict[str, ConfigDef]:
    out = {}
    for name, e in entries.items():
        synonyms = tuple(
            Synonym(*s.split("|")) if section == "topic" else Synonym(s) for s in e["synonyms"]
        )
        out[name] = ConfigDef(
            name,
            ConfigType[e["type"]],
            e["default"],
            e["doc"],
            synonyms=synonyms,
            mode=e.get("mode", "per-topic"),
            importance=e["importance"],
            check=e.get("validator"),
            internal=e.get("internal", False),
            behaves=e["behaves"],
        )
    return out


_TABLE = json.loads(Path(__file__).with_name("catalogue.json").read_text("utf-8"))

#: Every topic config of Kafka 4.4, by name.
TOPIC_CONFIGS: dict[str, ConfigDef] = _load("topic", _TABLE["topic"])

#: kafkagen's own broker configs, beside Kafka's: the API version caps, the release preset,
#: client telemetry, the authorizer's settings and the pagination bound. All read-only but
#: the bound.
KAFKAGEN_CONFIGS = (
    ConfigDef(
        API_VERSION_MAX,
        T.LIST,
        "",
        "Highest version served per API, as Name:version or key:version pairs "
        "(FindCoordinator:3,OffsetFetch:7), to play an older broker. A capped version is "
        "neither advertised nor accepted; a cap below the lowest version hides the API.",
        validator=_check_version_caps,
    ),
    ConfigDef(
        PRESET_CONFIG,
        T.STRING,
        "",
        "Play the broker of a Kafka release (any minor release, 2.4 to 4.4): advertise and "
        "accept at most its versions of each API, and none of an API it did not have. "
        "kafkagen.api.version.max caps further.",
        validator=_check_preset,
    ),
    ConfigDef(
        "kafkagen.client.telemetry.enable",
        T.BOOLEAN,
        "false",
        "Client telemetry (KIP-714): advertise GetTelemetrySubscriptions and PushTelemetry "
        "and keep what clients push (kafkagen's receiver, read through the control API), as "
        "Kafka does with a telemetry reporter configured.",
    ),
    ConfigDef(
        "super.users",
        T.STRING,
        "",
        "Principals allowed everything, separated by semicolons (User:alice;User:bob).",
    ),
    ConfigDef(
        "allow.everyone.if.no.acl.found",
        T.BOOLEAN,
        "false",
        "Allow a request on a resource no ACL applies to.",
    ),
    ConfigDef(
        "max.request.pagination.size.limit",
        T.INT,
        "2000",
        "Upper bound of ResponsePaginationLimit for paginated admin responses.",
        mode="cluster-wide",
        check={"kind": "Range", "min": "1"},
    ),
)

#: Kafka's broker configs whose default kafkagen keeps different: the value, and why.
KAFKAGEN_DEFAULTS: dict[str, tuple[str, str]] = {
    "auto.create.topics.enable": ("false", "a test cluster should not grow topics from a typo"),
    "max.connections": ("1000", "connections are bounded on a shared test machine"),
    "listeners": (
        "",
        "empty means one PLAINTEXT listener on the cluster's port, broker i on port + i",
    ),
    "listener.security.protocol.map": (
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "the same pairs as Kafka's, in a fixed order",
    ),
    "sasl.enabled.mechanisms": (
        "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "GSSAPI (Kerberos) is not offered",
    ),
    "ssl.keystore.type": ("PEM", "only PEM key stores are read"),
    "ssl.truststore.type": ("PEM", "only PEM trust stores are read"),
}

#: kafkagen's further checks of Kafka's configs (what it can serve).
_KAFKAGEN_CHECKS: dict[str, Validator] = {"log.dirs": _check_log_dirs}


def _broker_configs() -> dict[str, ConfigDef]:
    out = _load("broker", _TABLE["broker"])
    for name, (default, _) in KAFKAGEN_DEFAULTS.items():
        out[name] = replace(out[name], default=default)
    # Empty listeners (one PLAINTEXT listener here) fail Kafka's check.
    out["listeners"] = replace(out["listeners"], check=None)
    for name, check in _KAFKAGEN_CHECKS.items():
        out[name] = replace(out[name], validator=check)
    out.update((d.name, d) for d in KAFKAGEN_CONFIGS)
    return out


#: Every broker config of Kafka 4.4 and kafkagen's own, by name.
BROKER_CONFIGS: dict[str, ConfigDef] = _broker_configs()


def topic_def(name: str) -> ConfigDef:
    d = TOPIC_CONFIGS.get(name)
    if d is None:
        raise ConfigError(f"Unknown topic config name: {name}")
    return d


def broker_def(name: str) -> ConfigDef:
    """A broker config's definition; Kafka keeps names it does not know as plain strings."""
    return BROKER_CONFIGS.get(name) or ConfigDef(
        name, T.STRING, None, "", mode="cluster-wide", behaves=False
    )
