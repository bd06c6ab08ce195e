"""The config catalogue against Kafka 4.4.0 itself: the committed table is what Kafka's jars
say, kafkagen's parser gives Kafka's verdict on every probe value, and DescribeConfigs /
AlterConfigs / IncrementalAlterConfigs answer as a running Kafka does, side by side."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from broker_helpers import WireClient
from kafkagen.configs_from_jars import TABLE, committed_columns, facts, probes, render, table
from kafkagen.generated.alter_configs import AlterConfigsRequest as Alter
from kafkagen.generated.create_topics import CreateTopicsRequest
from kafkagen.generated.describe_configs import DescribeConfigsRequest
from kafkagen.generated.incremental_alter_configs import IncrementalAlterConfigsRequest as Inc
from kafkagen.reference import DEFAULT_CONFIGS, KafkaReference
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.config.definitions import (
    BROKER_CONFIGS,
    KAFKAGEN_CONFIGS,
    KAFKAGEN_DEFAULTS,
    TOPIC_CONFIGS,
    ConfigError,
    ConfigType,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TOPIC, BROKER = 2, 4
SET, DELETE = 0, 1
#: Static configs both sides start with (beside the reference's own).
STATIC = {"log.retention.hours": "100", "log.cleaner.threads": "1"}

#: Where kafkagen's answer differs from Kafka's on purpose, and why.
KNOWN = {
    # Once log.retention.ms is set dynamically, Kafka reports log.retention.hours' value as
    # its default (168) while its synonyms still show the static 100; kafkagen shows 100.
    ("broker after", "log.retention.hours"): "Kafka reports the default as the value",
}
#: What the reference's start-up sets per node (addresses, directories, roles, replication
#: of the internal topics on one node).
DESCRIBED = ("topic", "broker", "topic after", "broker after", "default after")
REFERENCE_START = {
    "process.roles",
    "controller.quorum.voters",
    "listeners",
    "advertised.listeners",
    "controller.listener.names",
    "inter.broker.listener.name",
    "listener.security.protocol.map",
    "log.dirs",
    "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr",
}


@pytest.fixture(scope="module")
def derived() -> dict[str, Any]:
    return facts()


def test_committed_table_is_what_kafkas_jars_say(derived: dict[str, Any]) -> None:
    assert TABLE.read_text("utf-8") == render(table(derived, committed_columns()))


def test_every_probe_value_gets_kafkas_verdict(derived: dict[str, Any]) -> None:
    """Types, ranges, choices, lists and their texts, for each config and value tried.
    Kafka loads the class a CLASS config names, and checks the controller quorum's
    addresses: kafkagen does neither (it runs no plug-ins and has no controller quorum),
    so those configs are stored as given. kafkagen reads an empty ``listeners`` as one
    PLAINTEXT listener, and takes one directory in ``log.dirs``."""
    compared = 0
    differ = []
    for name, answers in probes(derived).items():
        d = TOPIC_CONFIGS.get(name) or BROKER_CONFIGS[name]
        if d.type is ConfigType.CLASS or name.startswith("controller.quorum."):
            continue
        if name in ("listeners", "log.dirs"):
            continue
        for value, kafka in answers:
            try:
                d.parse(value)
                ours = "ok"
            except ConfigError as e:
                ours = str(e)
            compared += 1
            if ours != kafka:
                differ.append((name, value, kafka, ours))
    assert differ == []
    assert compared > 5000


# -- side by side with a running Kafka ----------------------------------------------------


def _describe(wc: WireClient, rtype: int, name: str, keys: list[str] | None = None) -> Any:
    res = DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=rtype, resource_name=name, configuration_keys=keys
    )
    (r,) = wc.call(32, 4, DescribeConfigsRequest(resources=[res], include_synonyms=True)).results
    return {
        c.name: (
            c.value,
            c.read_only,
            c.config_source,
            c.is_sensitive,
            c.config_type,
            [(s.name, s.value, s.source) for s in c.synonyms],
        )
        for c in r.configs
    }


def _inc(wc: WireClient, rtype: int, name: str, *ops: Any, only: bool = False) -> Any:
    configs = [Inc.AlterableConfig(name=n, config_operation=op, value=v) for n, op, v in ops]
    res = Inc.AlterConfigsResource(resource_type=rtype, resource_name=name, configs=configs)
    (r,) = wc.call(44, 1, Inc(resources=[res], validate_only=only)).responses
    return (r.error_code, r.error_message)


def _alter(wc: WireClient, name: str, key: str, value: str) -> Any:
    configs = [Alter.AlterableConfig(name=key, value=value)]
    res = Alter.AlterConfigsResource(resource_type=TOPIC, resource_name=name, configs=configs)
    (r,) = wc.call(33, 2, Alter(resources=[res], validate_only=True)).responses
    return (r.error_code, r.error_message)


TOPIC_TRIES = [
    ("retention.ms", "abc"),
    ("retention.ms", "-5"),
    ("cleanup.policy", "compac"),
    ("no.such.config", "1"),
    ("log.retention.ms", "5"),
    ("segment.jitter.ms", "10"),
    ("min.compaction.lag.ms", "10"),
    ("leader.replication.throttled.replicas", "x"),
    ("compression.gzip.level", "0"),
    ("min.cleanable.dirty.ratio", "2"),
]
BROKER_TRIES = [
    ("log.cleaner.threads", "2"),
    ("log.dirs", "/x"),
    ("leader.replication.throttled.rate", "abc"),
    ("leader.replication.throttled.rate", "1000"),
    ("follower.replication.throttled.rate", "5"),
    ("replica.alter.log.dirs.io.max.bytes.per.second", "-1"),
    ("no.such.config", "1"),
    ("log.retention.ms", "abc"),
    ("num.io.threads", "0"),
    ("log.retention.minutes", "7"),
]
BROKER_KEYS = [
    "log.retention.ms",
    "log.retention.minutes",
    "log.retention.hours",
    "leader.replication.throttled.rate",
    "log.cleaner.threads",
]


def scenario(bootstrap: str) -> dict[str, Any]:
    """The same requests for either side; what came back."""
    out: dict[str, Any] = {}
    with WireClient(bootstrap) as wc:
        topic = CreateTopicsRequest.CreatableTopic(name="c", num_partitions=1, replication_factor=1)
        created = wc.call(19, 5, CreateTopicsRequest(topics=[topic], timeout_ms=10000))
        assert created.topics[0].error_code == 0
        out["topic"] = _describe(wc, TOPIC, "c")
        out["broker"] = _describe(wc, BROKER, "0")
        for key, value in TOPIC_TRIES:
            out[f"alter {key}={value}"] = _alter(wc, "c", key, value)
            out[f"incremental {key}={value}"] = _inc(wc, TOPIC, "c", (key, SET, value), only=True)
        for key, value in BROKER_TRIES:
            for resource in ("0", ""):
                out[f"broker {resource!r} {key}={value}"] = _inc(
                    wc, BROKER, resource, (key, SET, value), only=True
                )
        out["set default"] = _inc(
            wc,
            BROKER,
            "",
            ("log.retention.ms", SET, "5000"),
            ("leader.replication.throttled.rate", SET, "1000"),
        )
        out["set topic"] = _inc(
            wc,
            TOPIC,
            "c",
            ("segment.jitter.ms", SET, "10"),
            ("leader.replication.throttled.replicas", SET, "0:0"),
        )
        time.sleep(1)  # Kafka applies dynamic configs when the metadata record reaches it
        out["topic after"] = _describe(wc, TOPIC, "c")
        out["broker after"] = _describe(wc, BROKER, "0", BROKER_KEYS)
        out["default after"] = _describe(wc, BROKER, "")
        out["delete"] = _inc(wc, BROKER, "", ("leader.replication.throttled.rate", DELETE, None))
    return out


@pytest.fixture(scope="module")
def sides() -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    with KafkaReference(1, configs=STATIC) as kafka:
        theirs = scenario(kafka.bootstrap)
    with BackgroundCluster(configs={**DEFAULT_CONFIGS, **STATIC}) as c:
        ours = scenario(c.bootstrap)
    yield ours, theirs


def test_topic_configs_describe_as_kafka(sides: Any) -> None:
    ours, theirs = sides
    for key in ("topic", "topic after"):
        assert sorted(ours[key]) == sorted(theirs[key])
        differ = {
            n: (ours[key][n], theirs[key][n])
            for n in theirs[key]
            if ours[key][n] != theirs[key][n] and ("topic", n) not in KNOWN
        }
        assert differ == {}


def test_alter_answers_as_kafka(sides: Any) -> None:
    ours, theirs = sides
    keys = [k for k in theirs if k not in DESCRIBED]
    assert {k: ours[k] for k in keys} == {k: theirs[k] for k in keys}


def test_broker_configs_describe_as_kafka(sides: Any) -> None:
    """The same names, flags and types; values, sources and synonyms too but for what each
    side's start-up sets (addresses, directories, roles) and kafkagen's own defaults."""
    ours, theirs = sides
    own = {d.name for d in KAFKAGEN_CONFIGS}
    assert sorted(set(ours["broker"]) - own) == sorted(theirs["broker"])
    flags = {
        n: (v[1], v[3], v[4]) for n, v in theirs["broker"].items()
    }  # read-only, sensitive, type
    assert {n: (v[1], v[3], v[4]) for n, v in ours["broker"].items() if n in flags} == flags
    skip = set(KAFKAGEN_DEFAULTS) | REFERENCE_START | {n for _, n in KNOWN}
    differ = {
        n: (ours["broker"][n], v)
        for n, v in theirs["broker"].items()
        if n not in skip and ours["broker"][n] != v
    }
    assert differ == {}
    after = {n: v for n, v in theirs["broker after"].items() if ("broker after", n) not in KNOWN}
    assert {n: ours["broker after"][n] for n in after} == after
    default = {n: v for n, v in theirs["default after"].items() if ("broker", n) not in KNOWN}
    assert ours["default after"] == default
