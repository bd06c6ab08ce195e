"""APIs older Kafka releases advertised that kafkagen now serves, over real sockets and
answered as Kafka answers them: client quotas (DescribeClientQuotas 48, AlterClientQuotas
49), the delegation token APIs (38-41), ListConfigResources (74: client metrics in v0,
every config resource type in v1), DescribeQuorum (55) and AlterReplicaLogDirs (34)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from broker_helpers import WireClient, req
from kafkagen.generated import message_type
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.errors import ErrorCode

DESCRIBE, ALTER = 48, 49
Alter: Any = message_type(ALTER, "request")
Describe: Any = message_type(DESCRIBE, "request")
EXACT, DEFAULT, ANY = 0, 1, 2


@pytest.fixture(scope="module")
def cluster() -> Iterator[BackgroundCluster]:
    with BackgroundCluster() as c:
        yield c


def entry(entity: dict[str, str | None], **ops: float | None) -> Any:
    return Alter.EntryData(
        entity=[Alter.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
        ops=[
            Alter.OpData(key=k, value=0.0 if v is None else v, remove=v is None)
            for k, v in ops.items()
        ],
    )


def alter(
    w: WireClient, *entries: Any, validate_only: bool = False
) -> list[tuple[int, str | None]]:
    r = w.call(ALTER, 1, Alter(entries=list(entries), validate_only=validate_only))
    return [(e.error_code, e.error_message) for e in r.entries]


def describe(w: WireClient, *components: tuple[str, int, str | None], strict: bool = False) -> Any:
    return w.call(
        DESCRIBE,
        1,
        Describe(
            components=[
                Describe.ComponentData(entity_type=t, match_type=m, match=n)
                for t, m, n in components
            ],
            strict=strict,
        ),
    )


def found(r: Any) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    assert r.error_code == 0, r.error_message
    return {
        tuple((e.entity_type, e.entity_name) for e in x.entity): {v.key: v.value for v in x.values}
        for x in r.entries
    }


def test_quotas_are_stored_filtered_and_removed(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as w:
        assert (
            alter(
                w,
                entry({"user": "alice"}, producer_byte_rate=1024.0),
                entry({"user": "alice", "client-id": "app"}, request_percentage=12.5),
                entry({"user": None}, consumer_byte_rate=2048.0),
                entry({"ip": "127.0.0.1"}, connection_creation_rate=10.0),
            )
            == [(0, None)] * 4
        )
        alice = (("user", "alice"),)
        both = (("client-id", "app"), ("user", "alice"))
        assert found(describe(w, ("user", EXACT, "alice"))) == {
            alice: {"producer_byte_rate": 1024.0},
            both: {"request_percentage": 12.5},
        }
        assert found(describe(w, ("user", EXACT, "alice"), strict=True)) == {
            alice: {"producer_byte_rate": 1024.0}
        }
        assert found(describe(w, ("user", DEFAULT, None))) == {
            (("user", None),): {"consumer_byte_rate": 2048.0}
        }
        assert set(found(describe(w, ("user", ANY, None), ("client-id", ANY, None)))) == {both}
        assert set(found(describe(w, ("ip", ANY, None)))) == {(("ip", "127.0.0.1"),)}
        assert len(found(describe(w))) == 4 and found(describe(w, strict=True)) == {}
        # validate_only writes nothing; removing the last value removes the entity.
        assert alter(w, entry({"user": "bob"}, producer_byte_rate=1.0), validate_only=True) == [
            (0, None)
        ]
        assert found(describe(w, ("user", EXACT, "bob"))) == {}
        assert alter(w, entry({"user": "alice"}, producer_byte_rate=None)) == [(0, None)]
        assert alice not in found(describe(w, ("user", EXACT, "alice")))


def test_bad_alterations_get_kafkas_errors_and_write_nothing(cluster: BackgroundCluster) -> None:
    invalid = ErrorCode.INVALID_REQUEST
    with WireClient(cluster.bootstrap) as w:
        got = alter(
            w,
            entry({"user": "carol"}, producer_byte_rate=1.5),
            entry({"client-id": "x"}, connection_creation_rate=3.0),
            entry({"group": "g"}, producer_byte_rate=1.0),
            entry({"ip": "127.0.0.1", "user": "u"}, connection_creation_rate=1.0),
            entry({"ip": "not an address"}, connection_creation_rate=1.0),
            entry({}, producer_byte_rate=1.0),
            entry({"user": ""}, producer_byte_rate=1.0),
        )
        assert got == [
            (invalid, "Configuration producer_byte_rate must be a Long value"),
            (invalid, "Invalid configuration key connection_creation_rate"),
            (invalid, "Unhandled client quota entity type: group"),
            (invalid, "Invalid empty client quota entity"),
            (invalid, "not an address is not a valid IP or resolvable host."),
            (invalid, "Invalid empty client quota entity"),
            (invalid, "Empty user not supported"),
        ]
        twice = entry({"user": "dave"}, producer_byte_rate=1.0)
        assert [c for c, _ in alter(w, twice, twice)] == [invalid, invalid]
        assert found(describe(w, ("user", EXACT, "carol"))) == {}
        assert found(describe(w, ("user", EXACT, "dave"))) == {}


def test_bad_filters_are_refused_with_kafkas_messages(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as w:
        cases: list[tuple[list[tuple[str, int, str | None]], int, str]] = [
            ([("user", EXACT, None)], ErrorCode.INVALID_REQUEST, "MATCH_TYPE_EXACT"),
            ([("user", DEFAULT, "x")], ErrorCode.INVALID_REQUEST, "MATCH_TYPE_DEFAULT"),
            ([("user", 7, None)], ErrorCode.INVALID_REQUEST, "Unknown match type 7"),
            ([("user", ANY, None), ("user", ANY, None)], ErrorCode.INVALID_REQUEST, "once"),
            ([("ip", ANY, None), ("user", ANY, None)], ErrorCode.INVALID_REQUEST, "IP filter"),
            ([("group", ANY, None)], ErrorCode.UNSUPPORTED_VERSION, "entity type group"),
        ]
        for components, code, text in cases:
            r = describe(w, *components)
            assert r.error_code == code and text in r.error_message and r.entries is None


# -- delegation tokens -------------------------------------------------------------------

TOKEN_APIS = {
    38: req(38, renewers=[]),
    39: req(39, hmac=b"x", renew_period_ms=1000),
    40: req(40, hmac=b"x", expiry_time_period_ms=1000),
    41: req(41, owners=None),
}


def test_token_requests_on_a_plaintext_listener_are_not_allowed(
    cluster: BackgroundCluster,
) -> None:
    with WireClient(cluster.bootstrap) as w:
        for key, request in TOKEN_APIS.items():
            r = w.call(key, 2, request)
            assert r.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, key


def test_token_requests_over_sasl_find_token_auth_disabled() -> None:
    configs = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0"}
    with BackgroundCluster(configs=configs, users={"alice": "pw"}) as c:
        with WireClient(c.bootstrap) as w:
            assert w.call(17, 1, req(17, mechanism="PLAIN")).error_code == 0
            assert w.call(36, 2, req(36, auth_bytes=b"\0alice\0pw")).error_code == 0
            for key, request in TOKEN_APIS.items():
                r = w.call(key, 2, request)
                assert r.error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, key
            created = w.call(38, 3, TOKEN_APIS[38])
            assert (created.principal_type, created.principal_name) == ("User", "alice")
            assert created.token_requester_principal_name == "alice"
            other = req(38, owner_principal_type="User", owner_principal_name="bob", renewers=[])
            r = w.call(38, 3, other)
            # No authorizer: every operation is allowed, so only token support is missing.
            assert r.error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
            assert r.principal_name == "bob"


# -- client metrics resources -------------------------------------------------------------

CLIENT_METRICS = 16


def test_no_client_metrics_resource_exists_to_list(cluster: BackgroundCluster) -> None:
    IncAlter: Any = message_type(44, "request")
    with WireClient(cluster.bootstrap) as w:
        r = w.call(
            44,
            1,
            IncAlter(
                resources=[
                    IncAlter.AlterConfigsResource(
                        resource_type=CLIENT_METRICS,
                        resource_name="metrics",
                        configs=[
                            IncAlter.AlterableConfig(
                                name="interval.ms", config_operation=0, value="1"
                            )
                        ],
                    )
                ]
            ),
        )
        assert r.responses[0].error_code != 0  # such a resource cannot be made here
        listed = w.call(74, 0, req(74))
        assert (listed.error_code, listed.config_resources) == (0, [])


TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32


def listed(w: WireClient, *types: int) -> tuple[int, list[tuple[int, str]]]:
    r = w.call(74, 1, req(74, resource_types=list(types)))
    return r.error_code, [(c.resource_type, c.resource_name) for c in r.config_resources]


def test_v1_lists_brokers_loggers_and_topics_as_they_come_and_go() -> None:
    Create: Any = message_type(19, "request")
    Delete: Any = message_type(20, "request")
    with BackgroundCluster(brokers=2) as c, WireClient(c.bootstrap) as w:
        assert listed(w, TOPIC) == (0, [])
        created = w.call(
            19,
            7,
            Create(
                topics=[
                    Create.CreatableTopic(name=n, num_partitions=1, replication_factor=1)
                    for n in ("orders", "audit")
                ],
                timeout_ms=5000,
            ),
        )
        assert [t.error_code for t in created.topics] == [0, 0]
        assert listed(w, TOPIC) == (0, [(TOPIC, "audit"), (TOPIC, "orders")])
        # Nothing named: every type v1 knows, in Kafka's order; groups have no configs here.
        assert listed(w) == (
            0,
            [(BROKER_LOGGER, "0"), (BROKER_LOGGER, "1"), (BROKER, "0"), (BROKER, "1")]
            + [(TOPIC, "audit"), (TOPIC, "orders")],
        )
        assert listed(w, GROUP, CLIENT_METRICS) == (0, [])
        deleted = w.call(20, 6, Delete(topics=[Delete.DeleteTopicState(name="orders")]))
        assert deleted.responses[0].error_code == 0
        assert listed(w, BROKER, TOPIC) == (0, [(BROKER, "0"), (BROKER, "1"), (TOPIC, "audit")])


def test_v1_refuses_the_whole_request_when_one_type_is_not_listed(
    cluster: BackgroundCluster,
) -> None:
    with WireClient(cluster.bootstrap) as w:
        # 3 is a group in the ACL numbering, not a config resource type: the whole list fails.
        assert listed(w, TOPIC, 3) == (ErrorCode.UNSUPPORTED_VERSION, [])
        assert listed(w, TOPIC, BROKER) == (0, [(BROKER, "0")])


# -- the metadata quorum ------------------------------------------------------------------


def quorum(w: WireClient, *partitions: tuple[str, int], version: int = 2) -> Any:
    Q: Any = message_type(55, "request")
    topics = [
        Q.TopicData(topic_name=t, partitions=[Q.PartitionData(partition_index=p)])
        for t, p in partitions
    ]
    return w.call(55, version, Q(topics=topics))


def test_the_quorum_is_the_controller_with_the_brokers_observing_its_changes() -> None:
    Create: Any = message_type(19, "request")
    with BackgroundCluster(brokers=3) as c, WireClient(c.bootstrap) as w:
        before = quorum(w, ("__cluster_metadata", 0))
        w.call(
            19,
            7,
            Create(
                topics=[Create.CreatableTopic(name="t", num_partitions=1, replication_factor=3)],
                timeout_ms=5000,
            ),
        )
        after = quorum(w, ("__cluster_metadata", 0))
        assert (after.error_code, after.topics[0].topic_name) == (0, "__cluster_metadata")
        p = after.topics[0].partitions[0]
        assert (p.error_code, p.leader_id, p.leader_epoch) == (0, 0, 1)
        assert [v.replica_id for v in p.current_voters] == [0]
        assert [o.replica_id for o in p.observers] == [1, 2]
        first = before.topics[0].partitions[0].high_watermark
        assert p.high_watermark > first  # the topic was a change of the image
        assert {r.log_end_offset for r in p.current_voters + p.observers} == {p.high_watermark}
        assert all(r.last_fetch_timestamp > 0 for r in p.current_voters + p.observers)
        [node] = after.nodes
        first_port = int(c.bootstrap.split(",")[0].rsplit(":", 1)[1])
        assert node.node_id == 0 and [lst.port for lst in node.listeners] == [first_port]


def test_a_quorum_request_for_another_partition_is_unknown_on_each_one(
    cluster: BackgroundCluster,
) -> None:
    with WireClient(cluster.bootstrap) as w:
        r = quorum(w, ("__cluster_metadata", 1), ("orders", 0), version=0)
        assert r.error_code == 0
        assert [(t.topic_name, t.partitions[0].error_code) for t in r.topics] == [
            ("__cluster_metadata", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            ("orders", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ]


# -- replica log directories --------------------------------------------------------------


def test_alter_replica_log_dirs_knows_the_one_directory(cluster: BackgroundCluster) -> None:
    AlterDirs: Any = message_type(34, "request")
    with WireClient(cluster.bootstrap) as w:
        Create: Any = message_type(19, "request")
        topic = Create.CreatableTopic(name="dirs", num_partitions=1, replication_factor=1)
        assert w.call(19, 4, Create(topics=[topic], timeout_ms=5000)).topics[0].error_code == 0
        described = w.call(35, 4, req(35, topics=None))
        here = described.results[0].log_dir

        def move(path: str, partitions: list[int]) -> list[int]:
            r = w.call(
                34,
                2,
                AlterDirs(
                    dirs=[
                        AlterDirs.AlterReplicaLogDir(
                            path=path,
                            topics=[
                                AlterDirs.AlterReplicaLogDirTopic(
                                    name="dirs", partitions=partitions
                                )
                            ],
                        )
                    ]
                ),
            )
            return [p.error_code for t in r.results for p in t.partitions]

        assert move(here, [0, 7]) == [0, ErrorCode.REPLICA_NOT_AVAILABLE]
        assert move("/elsewhere", [0]) == [ErrorCode.LOG_DIR_NOT_FOUND]
