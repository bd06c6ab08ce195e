"""Kafka 4.4's config catalogue: values parsed and refused in Kafka's words, DescribeConfigs'
sources and synonyms by Kafka's rule, and every config Kafka accepts accepted, over the wire.

The expected texts and synonym lists are what Kafka 4.4.0 answered the same requests
(measured with `kafkagen.reference`; the slow tests here re-measure them side by side).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_helpers import WireClient
from kafkagen.configs_from_jars import page
from kafkagen.generated.alter_configs import AlterConfigsRequest
from kafkagen.generated.create_topics import CreateTopicsRequest
from kafkagen.generated.describe_configs import DescribeConfigsRequest
from kafkagen.generated.incremental_alter_configs import IncrementalAlterConfigsRequest as Inc
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.config.definitions import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    ConfigError,
    ConfigSource,
)
from kafkagen.runtime.broker.config.store import ConfigStore

pytestmark = pytest.mark.timeout(60)

TOPIC, BROKER = 2, 4
SET, DELETE = 0, 1
DYN_TOPIC, DYN_BROKER, DYN_DEFAULT, STATIC, DEFAULT = 1, 2, 3, 4, 5
INVALID_CONFIG, INVALID_REQUEST = 40, 42


THROTTLED = (
    "leader.replication.throttled.replicas must be the literal '*' or a list of replicas in "
    "the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
)


@pytest.mark.parametrize(
    ("name", "value", "shown", "reason"),
    [
        ("retention.ms", "abc", "abc", "Not a number of type LONG"),
        ("retention.ms", "-5", "-5", "Value must be at least -1"),
        ("cleanup.policy", "compac", "compac", "String must be one of: compact, delete"),
        ("compression.gzip.level", "0", "0", "Value must be between 1 and 9 or equal to -1"),
        ("min.cleanable.dirty.ratio", "2", "2.0", "Value must be no more than 1"),
        ("preallocate", "yes", "yes", "Expected value to be either true or false"),
        ("segment.bytes", "300", "300", "Value must be at least 1048576"),
        ("leader.replication.throttled.replicas", "x", "[x]", THROTTLED),
    ],
)
def test_bad_topic_values_are_refused_in_kafkas_words(
    name: str, value: str, shown: str, reason: str
) -> None:
    with pytest.raises(ConfigError) as e:
        TOPIC_CONFIGS[name].parse(value)
    assert str(e.value) == f"Invalid value {shown} for configuration {name}: {reason}"


def test_values_parse_as_kafka_parses_them() -> None:
    assert TOPIC_CONFIGS["retention.ms"].parse(" 7 ") == 7
    assert TOPIC_CONFIGS["cleanup.policy"].parse("compact , delete") == ["compact", "delete"]
    assert TOPIC_CONFIGS["cleanup.policy"].parse("") == []
    assert TOPIC_CONFIGS["preallocate"].parse("TRUE") is True
    assert TOPIC_CONFIGS["follower.replication.throttled.replicas"].parse("*") == ["*"]
    assert TOPIC_CONFIGS["leader.replication.throttled.replicas"].parse("0:1,1:2") == ["0:1", "1:2"]
    assert BROKER_CONFIGS["log.cleaner.min.cleanable.ratio"].parse("0.25") == 0.25
    with pytest.raises(ConfigError, match="^Configuration 'cleanup.policy' values must not be"):
        TOPIC_CONFIGS["cleanup.policy"].parse("compact,compact")
    with pytest.raises(ConfigError, match="Not a number of type INT"):
        TOPIC_CONFIGS["max.message.bytes"].parse("99999999999")


def test_the_catalogue_is_kafkas_with_kafkagens_own_beside_it() -> None:
    described = [n for n, d in TOPIC_CONFIGS.items() if not d.internal]
    assert len(described) == 37
    assert TOPIC_CONFIGS["retention.ms"].synonyms[2].name == "log.retention.hours"
    assert BROKER_CONFIGS["log.retention.ms"].default is None
    assert BROKER_CONFIGS["log.retention.hours"].default == "168"
    assert BROKER_CONFIGS["log.cleaner.threads"].mode == "cluster-wide"
    assert BROKER_CONFIGS["listeners"].mode == "per-broker"
    assert BROKER_CONFIGS["log.dirs"].read_only
    assert BROKER_CONFIGS["leader.replication.throttled.rate"].mode == "dynamic-only"
    assert BROKER_CONFIGS["ssl.key.password"].sensitive
    assert all(d.doc for d in (*TOPIC_CONFIGS.values(), *BROKER_CONFIGS.values()))
    assert BROKER_CONFIGS["kafkagen.api.version.max"].read_only


def test_the_configs_page_is_made_from_the_table() -> None:
    """docs/configs.md: python -m kafkagen.configs_from_jars --page docs/configs.md"""
    assert (Path(__file__).parents[1] / "docs" / "configs.md").read_text("utf-8") == page()


def _synonyms(entry: object) -> list[tuple[str, str | None, int]]:
    return [(n, v, int(s)) for n, v, s in entry.synonyms]  # type: ignore[attr-defined]


def test_topic_synonyms_follow_kafkas_rule() -> None:
    store = ConfigStore({"log.retention.hours": "100"})
    (e,) = store.describe_topic("t", ["retention.ms"])
    # The chain starts at log.retention.ms, which is set nowhere: Kafka reports no synonym.
    assert (e.value, e.source, _synonyms(e)) == ("360000000", ConfigSource.DEFAULT_CONFIG, [])
    store.set_dynamic_broker(None, {"log.retention.ms": "5000"})
    (e,) = store.describe_topic("t", ["retention.ms"])
    assert (e.value, e.source) == ("5000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert _synonyms(e) == [
        ("log.retention.ms", "5000", DYN_DEFAULT),
        ("log.retention.hours", "100", STATIC),
        ("log.retention.hours", "168", DEFAULT),
    ]
    store.set_topic_configs("t", {"retention.ms": "9"})
    (e,) = store.describe_topic("t", ["retention.ms"])
    assert (e.value, _synonyms(e)[0]) == ("9", ("retention.ms", "9", DYN_TOPIC))
    m, j = store.describe_topic("t", ["min.insync.replicas", "segment.jitter.ms"])
    assert _synonyms(m) == [("min.insync.replicas", "1", DEFAULT)]
    assert (j.value, j.source, _synonyms(j)) == ("0", ConfigSource.DEFAULT_CONFIG, [])


def test_units_convert_in_chain_order() -> None:
    # The first name of the chain that is set wins, whatever comes after it.
    store = ConfigStore({"log.retention.hours": "1", "log.retention.minutes": "2"})
    assert store.topic_raw("t", "retention.ms") == ("120000", ConfigSource.STATIC_BROKER_CONFIG)
    assert store.topic_config("t").retention_ms == 120000


def test_broker_synonyms_and_the_cluster_default_resource() -> None:
    store = ConfigStore({"log.retention.hours": "100"})
    store.set_dynamic_broker(None, {"log.retention.ms": "5000"})
    by_name = {e.name: e for e in store.describe_broker(0, None)}
    hours, minutes, ms = (by_name[f"log.retention.{u}"] for u in ("hours", "minutes", "ms"))
    assert (hours.value, hours.read_only, _synonyms(hours)) == (
        "100",
        True,
        [("log.retention.hours", "100", STATIC), ("log.retention.hours", "168", DEFAULT)],
    )
    assert (minutes.value, minutes.source, _synonyms(minutes)) == (None, DEFAULT, [])
    assert (ms.value, ms.source, ms.read_only) == ("5000", DYN_DEFAULT, False)
    assert "leader.replication.throttled.rate" not in by_name  # dynamic-only and not set
    assert not any(BROKER_CONFIGS[n].internal for n in by_name)
    # The cluster default resource lists only what is set there.
    assert [(e.name, _synonyms(e)) for e in store.describe_broker(-1, None)] == [
        ("log.retention.ms", [("log.retention.ms", "5000", DYN_DEFAULT)])
    ]
    assert by_name["ssl.key.password"].value is None


def test_broker_changes_are_refused_as_kafka_refuses_them() -> None:
    store = ConfigStore()
    with pytest.raises(
        ConfigError, match=r"^Cannot update these configs dynamically: \[log.dirs\]$"
    ):
        store.set_dynamic_broker(0, {"log.dirs": "/x"})
    with pytest.raises(
        ConfigError,
        match=r"^Cannot update these configs at default cluster level, broker id must be "
        r"specified: \[listeners\]$",
    ):
        store.set_dynamic_broker(None, {"listeners": "PLAINTEXT://127.0.0.1:1"})
    store.set_dynamic_broker(None, {"some.plugin.setting": "x", "log.cleaner.threads": "2"})
    assert store.broker_raw("some.plugin.setting") == (
        "x",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )


# -- over the wire -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client() -> Iterator[WireClient]:
    with BackgroundCluster(brokers=2) as c, WireClient(c.bootstrap) as wc:
        topic = CreateTopicsRequest.CreatableTopic(name="t", num_partitions=1, replication_factor=1)
        assert wc.call(19, 5, CreateTopicsRequest(topics=[topic])).topics[0].error_code == 0
        yield wc


def _describe(wc: WireClient, rtype: int, name: str) -> list[Any]:
    res = DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=rtype, resource_name=name, configuration_keys=None
    )
    (r,) = wc.call(32, 4, DescribeConfigsRequest(resources=[res], include_synonyms=True)).results
    assert r.error_code == 0, r.error_message
    return list(r.configs)


def _inc(
    wc: WireClient, rtype: int, name: str, *ops: tuple[str, int, str | None]
) -> tuple[int, str | None]:
    configs = [Inc.AlterableConfig(name=n, config_operation=op, value=v) for n, op, v in ops]
    res = Inc.AlterConfigsResource(resource_type=rtype, resource_name=name, configs=configs)
    (r,) = wc.call(44, 1, Inc(resources=[res])).responses
    return r.error_code, r.error_message


def test_describe_all_lists_kafkas_37_topic_configs(client: WireClient) -> None:
    configs = _describe(client, TOPIC, "t")
    assert len(configs) == 37
    assert {c.name for c in configs} >= {
        "segment.jitter.ms",
        "min.compaction.lag.ms",
        "preallocate",
    }


def test_configs_kafka_accepts_are_accepted_and_deletable(client: WireClient) -> None:
    assert _inc(
        client,
        TOPIC,
        "t",
        ("segment.jitter.ms", SET, "10"),
        ("min.compaction.lag.ms", SET, "10"),
        ("leader.replication.throttled.replicas", SET, "0:0"),
    ) == (0, None)
    assert _inc(client, BROKER, "", ("log.cleaner.threads", SET, "2")) == (0, None)
    rate = "leader.replication.throttled.rate"
    assert _inc(client, BROKER, "1", (rate, SET, "1000")) == (0, None)
    assert {c.name: c.value for c in _describe(client, BROKER, "1")}[rate] == "1000"
    assert _inc(client, BROKER, "1", (rate, DELETE, None)) == (0, None)
    assert rate not in {c.name for c in _describe(client, BROKER, "1")}
    own = {c.name: c.value for c in _describe(client, TOPIC, "t") if c.config_source == DYN_TOPIC}
    assert own == {
        "segment.jitter.ms": "10",
        "min.compaction.lag.ms": "10",
        "leader.replication.throttled.replicas": "0:0",
    }


def test_refusals_carry_kafkas_codes_and_texts(client: WireClient) -> None:
    assert _inc(client, TOPIC, "t", ("retention.ms", SET, "abc")) == (
        INVALID_CONFIG,
        "Invalid value abc for configuration retention.ms: Not a number of type LONG",
    )
    assert _inc(client, TOPIC, "t", ("log.retention.ms", SET, "5")) == (
        INVALID_CONFIG,
        "Unknown topic config name: log.retention.ms",
    )
    res = AlterConfigsRequest.AlterConfigsResource(
        resource_type=TOPIC,
        resource_name="t",
        configs=[AlterConfigsRequest.AlterableConfig(name="no.such.config", value="1")],
    )
    (r,) = client.call(33, 2, AlterConfigsRequest(resources=[res], validate_only=True)).responses
    assert (r.error_code, r.error_message) == (
        INVALID_CONFIG,
        "Unknown topic config name: no.such.config",
    )
    assert _inc(client, BROKER, "0", ("num.io.threads", SET, "0")) == (
        INVALID_REQUEST,
        "Invalid value 0 for configuration num.io.threads: Value must be at least 1",
    )
    assert _inc(client, BROKER, "0", ("log.dirs", SET, "/x")) == (
        INVALID_REQUEST,
        "Cannot update these configs dynamically: [log.dirs]",
    )


def test_describing_a_logger_makes_none(client: WireClient) -> None:
    """A broker logger named in DescribeConfigs is answered with the level it would log at,
    and no logger is made for the name: requests can name any number of them, and Python
    keeps every logger once made."""
    name = "kafkagen.broker.nobody.made.this"
    res = DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=8, resource_name="0", configuration_keys=[name]
    )
    (r,) = client.call(32, 4, DescribeConfigsRequest(resources=[res])).results
    assert r.error_code == 0
    (entry,) = r.configs
    level = logging.getLogger("kafkagen.broker").getEffectiveLevel()
    assert (entry.name, entry.value) == (name, logging.getLevelName(level))
    assert name not in logging.Logger.manager.loggerDict
