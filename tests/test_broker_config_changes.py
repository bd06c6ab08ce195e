"""AlterConfigs and IncrementalAlterConfigs over a real socket, checked with DescribeConfigs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from broker_helpers import WireClient
from kafkagen.generated.alter_configs import AlterConfigsRequest
from kafkagen.generated.create_topics import CreateTopicsRequest
from kafkagen.generated.describe_configs import DescribeConfigsRequest
from kafkagen.generated.incremental_alter_configs import IncrementalAlterConfigsRequest
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.errors import (
    InvalidConfigError,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
)

pytestmark = pytest.mark.timeout(60)

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
IncConfig = IncrementalAlterConfigsRequest.AlterableConfig
IncResource = IncrementalAlterConfigsRequest.AlterConfigsResource


@pytest.fixture(scope="module")
def client() -> Iterator[WireClient]:
    with BackgroundCluster(brokers=2) as c, WireClient(c.bootstrap) as wc:
        created = wc.call(19, 5, CreateTopicsRequest(topics=[_topic("t")]))
        assert created.topics[0].error_code == 0
        yield wc


def _topic(name: str) -> CreateTopicsRequest.CreatableTopic:
    return CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)


def _dynamic(wc: WireClient, resource_type: int, name: str) -> dict[str, str | None]:
    """The configs set on the resource itself (not inherited)."""
    res = DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=None
    )
    (result,) = wc.call(32, 4, DescribeConfigsRequest(resources=[res])).results
    assert result.error_code == 0, result.error_message
    own = {1, 2} if resource_type == TOPIC else {2, 3}  # dynamic topic / broker / default
    return {c.name: c.value for c in result.configs if c.config_source in own}


def _alter(
    wc: WireClient, resource_type: int, name: str, pairs: dict[str, str | None], only: bool = False
) -> tuple[int, str | None]:
    configs = [AlterConfigsRequest.AlterableConfig(name=k, value=v) for k, v in pairs.items()]
    res = AlterConfigsRequest.AlterConfigsResource(
        resource_type=resource_type, resource_name=name, configs=configs
    )
    (r,) = wc.call(33, 2, AlterConfigsRequest(resources=[res], validate_only=only)).responses
    return r.error_code, r.error_message


def _incremental(
    wc: WireClient, resource_type: int, name: str, *ops: tuple[str, int, str | None]
) -> tuple[int, str | None]:
    configs = [IncConfig(name=n, config_operation=op, value=v) for n, op, v in ops]
    res = IncResource(resource_type=resource_type, resource_name=name, configs=configs)
    (r,) = wc.call(44, 1, IncrementalAlterConfigsRequest(resources=[res])).responses
    return r.error_code, r.error_message


def test_alter_replaces_the_whole_set(client: WireClient) -> None:
    assert _alter(client, TOPIC, "t", {"retention.ms": "1000", "segment.bytes": "2000000"}) == (
        0,
        None,
    )
    assert _dynamic(client, TOPIC, "t") == {"retention.ms": "1000", "segment.bytes": "2000000"}
    assert _alter(client, TOPIC, "t", {"retention.ms": "5000"})[0] == 0
    assert _dynamic(client, TOPIC, "t") == {"retention.ms": "5000"}


def test_validate_only_changes_nothing(client: WireClient) -> None:
    _alter(client, TOPIC, "t", {"retention.ms": "7000"})
    assert _alter(client, TOPIC, "t", {"retention.ms": "1"}, only=True)[0] == 0
    assert _dynamic(client, TOPIC, "t") == {"retention.ms": "7000"}


@pytest.mark.parametrize(
    ("resource_type", "name", "pairs", "code"),
    [
        (TOPIC, "missing", {"retention.ms": "1"}, UnknownTopicOrPartitionError.code),
        (TOPIC, "t", {"no.such.config": "1"}, InvalidConfigError.code),
        (TOPIC, "t", {"retention.ms": "soon"}, InvalidConfigError.code),
        (TOPIC, "t", {"retention.ms": None}, InvalidConfigError.code),
        (BROKER, "x", {"log.retention.ms": "1"}, InvalidRequestError.code),
        (BROKER, "77", {"log.retention.ms": "1"}, InvalidRequestError.code),
        (3, "t", {"retention.ms": "1"}, InvalidRequestError.code),
    ],
)
def test_alter_rejects_a_resource_and_keeps_its_configs(
    client: WireClient, resource_type: int, name: str, pairs: dict[str, str | None], code: int
) -> None:
    _alter(client, TOPIC, "t", {"retention.ms": "9000"})
    got, message = _alter(client, resource_type, name, pairs)
    assert got == code and message
    assert _dynamic(client, TOPIC, "t") == {"retention.ms": "9000"}


def test_incremental_set_delete_append_subtract(client: WireClient) -> None:
    _alter(client, TOPIC, "t", {"retention.ms": "1000"})
    ok = _incremental(
        client,
        TOPIC,
        "t",
        ("segment.bytes", SET, "3000000"),
        ("retention.ms", DELETE, None),
        ("cleanup.policy", APPEND, "compact"),
    )
    assert ok == (0, None)
    # APPEND starts from the value in force: the default "delete".
    assert _dynamic(client, TOPIC, "t") == {
        "segment.bytes": "3000000",
        "cleanup.policy": "delete,compact",
    }
    assert _incremental(client, TOPIC, "t", ("cleanup.policy", SUBTRACT, "delete"))[0] == 0
    assert _dynamic(client, TOPIC, "t")["cleanup.policy"] == "compact"


def test_incremental_broker_default_and_one_broker(client: WireClient) -> None:
    assert _incremental(client, BROKER, "", ("log.retention.ms", SET, "123456"))[0] == 0
    assert _incremental(client, BROKER, "1", ("log.retention.ms", SET, "654321"))[0] == 0
    assert _dynamic(client, BROKER, "1")["log.retention.ms"] == "654321"
    assert _dynamic(client, BROKER, "0")["log.retention.ms"] == "123456"
    assert _incremental(client, BROKER, "1", ("log.retention.ms", DELETE, None))[0] == 0
    assert _dynamic(client, BROKER, "1")["log.retention.ms"] == "123456"


@pytest.mark.parametrize(
    ("ops", "code"),
    [
        ((("retention.ms", SET, "1"), ("retention.ms", SET, "2")), InvalidRequestError.code),
        ((("retention.ms", APPEND, "1"),), InvalidRequestError.code),
        ((("retention.ms", 9, "1"),), InvalidRequestError.code),
        ((("retention.ms", SET, None),), InvalidConfigError.code),
        ((("no.such.config", SET, "1"),), InvalidConfigError.code),
    ],
)
def test_incremental_rejects_and_changes_nothing(
    client: WireClient, ops: tuple[tuple[str, int, str | None], ...], code: int
) -> None:
    _alter(client, TOPIC, "t", {"retention.ms": "4242"})
    got, message = _incremental(client, TOPIC, "t", ("segment.bytes", SET, "2000000"), *ops)
    assert got == code and message
    assert _dynamic(client, TOPIC, "t") == {"retention.ms": "4242"}
