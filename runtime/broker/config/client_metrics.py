"""Client metrics resources (KIP-714): the configs of a subscription, and Kafka's checks.

A client metrics resource is a named set of three configs: ``metrics`` (metric name
prefixes to collect; empty: none, ``*``: all), ``interval.ms`` (how often a matching
client pushes, 100 ms to an hour) and ``match`` (``selector=regex`` pairs a client must all
match: its instance id, client id, software name and version, source address and port).
A resource exists while it has a config set; deleting its last one removes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kafkagen.runtime.errors import InvalidConfigError, InvalidRequestError

from .definitions import ConfigDef, ConfigType

__all__ = [
    "CLIENT_METRICS_CONFIGS",
    "DEFAULT_INTERVAL_MS",
    "MATCH_SELECTORS",
    "Subscription",
    "client_metrics_def",
    "validate_client_metrics",
]

METRICS = "metrics"
INTERVAL_MS = "interval.ms"
MATCH = "match"
#: What a ``match`` pair may select on.
MATCH_SELECTORS = (
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
)
_MIN_INTERVAL_MS, _MAX_INTERVAL_MS = 100, 3_600_000
#: A client no subscription matches asks again after this long (Kafka's interval default).
DEFAULT_INTERVAL_MS = 300_000

CLIENT_METRICS_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        ConfigDef(METRICS, ConfigType.LIST, "", "Prefixes of the metric names to collect."),
        ConfigDef(
            INTERVAL_MS, ConfigType.INT, str(DEFAULT_INTERVAL_MS), "How often clients push, in ms."
        ),
        ConfigDef(MATCH, ConfigType.LIST, "", "selector=regex pairs a client must match."),
    )
}


def client_metrics_def(name: str) -> ConfigDef:
    """The definition of a client metrics config; Kafka's error for a name it has not."""
    d = CLIENT_METRICS_CONFIGS.get(name)
    if d is None:
        raise InvalidRequestError(f"Unknown client metrics configuration: {name}")
    return d


def validate_client_metrics(configs: Mapping[str, str | None]) -> None:
    """Raise the error Kafka answers for a bad client metrics config (none: it is fine)."""
    for name, value in configs.items():
        if name not in CLIENT_METRICS_CONFIGS:
            raise InvalidRequestError(f"Unknown client metrics configuration: {name}")
        if value is None:
            continue
        if name == INTERVAL_MS:
            try:
                interval = int(value.strip())
            except ValueError:
                raise InvalidConfigError(
                    f"Invalid value {value} for configuration {name}: Not a number of type INT"
                ) from None
            if not _MIN_INTERVAL_MS <= interval <= _MAX_INTERVAL_MS:
                raise InvalidRequestError(
                    f"Invalid value {interval} for {name}, interval must be between "
                    f"{_MIN_INTERVAL_MS} and {_MAX_INTERVAL_MS} (1 hour)"
                )
        elif name == MATCH:
            parse_match(value)


def parse_match(value: str) -> dict[str, re.Pattern[str]]:
    """``selector=regex,...`` -> selector -> compiled pattern; Kafka's error when illegal."""
    out: dict[str, re.Pattern[str]] = {}
    for pair in (p.strip() for p in value.split(",")):
        if not pair:
            continue
        selector, eq, pattern = pair.partition("=")
        if not eq or selector.strip() not in MATCH_SELECTORS or not pattern.strip():
            raise InvalidRequestError(f"Illegal client matching pattern: {pair}")
        try:
            out[selector.strip()] = re.compile(pattern.strip())
        except re.error:
            raise InvalidRequestError(f"Illegal regex pattern: {pattern.strip()}") from None
    return out


@dataclass(frozen=True, slots=True)
class Subscription:
    """One client metrics resource as clients see it: what to push, how often, and who."""

    metrics: tuple[str, ...]
    interval_ms: int
    match: Mapping[str, re.Pattern[str]]

    @classmethod
    def of(cls, configs: Mapping[str, str]) -> Subscription:
        """The subscription of a stored (so already validated) resource's configs."""
        metrics = (m.strip() for m in configs.get(METRICS, "").split(","))
        return cls(
            tuple(m for m in metrics if m),
            int(configs.get(INTERVAL_MS, DEFAULT_INTERVAL_MS)),
            parse_match(configs.get(MATCH, "")),
        )

    def matches(self, client: Mapping[str, str | None]) -> bool:
        """Whether every pattern matches the whole of the client's value for its selector
        (a client without that value does not match); no pattern matches every client."""
        for selector, pattern in self.match.items():
            value = client.get(selector)
            if value is None or pattern.fullmatch(value) is None:
                return False
        return True
