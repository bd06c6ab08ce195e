"""Feature levels over real sockets: ApiVersions advertises Kafka 4.4.0's, UpdateFeatures
changes them with Kafka's rules and messages, and a release preset advertises its release's."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from broker_helpers import WireClient
from kafkagen.generated.api_versions import ApiVersionsRequest
from kafkagen.generated.describe_configs import DescribeConfigsRequest
from kafkagen.generated.describe_topic_partitions import DescribeTopicPartitionsRequest
from kafkagen.generated.incremental_alter_configs import IncrementalAlterConfigsRequest
from kafkagen.generated.list_config_resources import ListConfigResourcesRequest
from kafkagen.generated.update_features import UpdateFeaturesRequest
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.metadata.features import FeatureUpdate, release_levels

if TYPE_CHECKING:
    from kafkagen.reference import KafkaReference

pytestmark = pytest.mark.timeout(60)
Update = UpdateFeaturesRequest.FeatureUpdateKey
#: `kafka-features describe` on a new Kafka 4.4.0 cluster: (min, max, finalized).
KAFKA_44 = {
    "eligible.leader.replicas.version": (0, 1, 1),
    "group.version": (0, 1, 1),
    "kraft.version": (0, 1, 0),
    "metadata.version": (7, 33, 33),
    "share.version": (0, 2, 2),
    "streams.version": (0, 1, 1),
    "transaction.version": (0, 2, 2),
}
INVALID_UPDATE_VERSION = 95


def features(w: WireClient) -> tuple[dict[str, tuple[int, int, int]], int]:
    """Feature -> (supported min, max, finalized level or 0), and the epoch."""
    r = w.call(18, 4, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    finalized = {f.name: f.max_version_level for f in r.finalized_features}
    assert all(f.min_version_level == f.max_version_level for f in r.finalized_features)
    out = {
        f.name: (f.min_version, f.max_version, finalized.get(f.name, 0))
        for f in r.supported_features
    }
    return out, r.finalized_features_epoch


def test_a_new_cluster_advertises_kafka_4_4_levels_and_updates_change_them() -> None:
    with BackgroundCluster(1) as c:
        assert c.cluster is not None
        b = c.cluster.brokers[0].info
        with WireClient(f"{b.host}:{b.port}") as w:
            assert features(w)[0] == KAFKA_44


def test_a_preset_broker_advertises_its_release_and_none_before_3_3() -> None:
    configs = {"kafkagen.api.version.preset": "4.0"}
    with BackgroundCluster(1, configs=configs) as c:
        assert c.cluster is not None
        b = c.cluster.brokers[0].info
        with WireClient(f"{b.host}:{b.port}") as w:
            levels, _ = features(w)
            assert levels["metadata.version"] == (7, 25, 25)
            assert levels["transaction.version"] == (0, 2, 2)
            assert levels["share.version"] == (0, 0, 0)


def test_update_features_follows_kafkas_rules() -> None:
    with BackgroundCluster(1) as c:
        assert c.cluster is not None
        b = c.cluster.brokers[0].info
        with WireClient(f"{b.host}:{b.port}") as w:
            _, epoch = features(w)
            r = w.call(
                57,
                1,
                UpdateFeaturesRequest(
                    feature_updates=[
                        Update(feature="group.version", max_version_level=5, upgrade_type=1)
                    ]
                ),
            )
            assert r.error_code == INVALID_UPDATE_VERSION
            assert r.error_message == (
                "The update failed for all features since the following feature had an error: "
                "Invalid update version 5 for feature group.version. Local controller 0 only "
                "supports versions 0-1"
            )
            assert r.results == []  # rows only when every update succeeds (v0-1)
            r = w.call(
                57,
                2,
                UpdateFeaturesRequest(
                    feature_updates=[
                        Update(feature="share.version", max_version_level=1, upgrade_type=1)
                    ]
                ),
            )
            assert r.error_code == INVALID_UPDATE_VERSION
            assert r.error_message.endswith(
                "Can't downgrade the version of this feature without setting the upgrade type "
                "to either safe or unsafe downgrade."
            )
            r = w.call(
                57,
                2,
                UpdateFeaturesRequest(
                    feature_updates=[
                        Update(feature="nonexistent.version", max_version_level=1, upgrade_type=1)
                    ]
                ),
            )
            assert r.error_message.endswith("Local controller 0 does not support this feature.")
            r = w.call(
                57,
                2,
                UpdateFeaturesRequest(
                    feature_updates=[
                        Update(feature="metadata.version", max_version_level=7, upgrade_type=2)
                    ]
                ),
            )
            assert r.error_message.endswith(
                "Unsupported metadata.version downgrade from 33 to 7. Refusing to perform the "
                "requested downgrade because it might delete metadata information."
            )
            # A refused request changes nothing, a dry run neither.
            r = w.call(
                57,
                1,
                UpdateFeaturesRequest(
                    validate_only=True,
                    feature_updates=[
                        Update(feature="share.version", max_version_level=0, upgrade_type=2)
                    ],
                ),
            )
            assert r.error_code == 0
            assert [(x.feature, x.error_code, x.error_message) for x in r.results] == [
                ("share.version", 0, "NONE")
            ]
            assert features(w) == (KAFKA_44, epoch)
            # Two updates together, all or nothing: the second is refused, the first kept out.
            r = w.call(
                57,
                2,
                UpdateFeaturesRequest(
                    feature_updates=[
                        Update(feature="share.version", max_version_level=0, upgrade_type=2),
                        Update(feature="group.version", max_version_level=2, upgrade_type=1),
                    ]
                ),
            )
            assert r.error_code == INVALID_UPDATE_VERSION
            assert features(w)[0]["share.version"] == (0, 2, 2)
            # Disabling leaves the feature out of the finalized list; the epoch moves on.
            r = w.call(
                57,
                0,
                UpdateFeaturesRequest(
                    feature_updates=[
                        Update(feature="share.version", max_version_level=0, allow_downgrade=True)
                    ]
                ),
            )
            assert r.error_code == 0
            levels, new_epoch = features(w)
            assert levels["share.version"] == (0, 2, 0) and new_epoch > epoch
            r = w.call(
                57,
                1,
                UpdateFeaturesRequest(
                    feature_updates=[
                        Update(feature="share.version", max_version_level=2, upgrade_type=1)
                    ]
                ),
            )
            assert r.error_code == 0 and features(w)[0] == KAFKA_44


def test_a_feature_level_cannot_outlive_what_it_needs() -> None:
    """eligible.leader.replicas.version 1 needs metadata.version 4.0-IV1 (23): a 3.9
    cluster must raise metadata.version first or in the same request."""
    with BackgroundCluster(1) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        md.features.levels = dict(release_levels("3.9") or {})
        b = c.cluster.brokers[0].info
        with WireClient(f"{b.host}:{b.port}") as w:
            elr = Update(feature="eligible.leader.replicas.version", max_version_level=1)
            r = w.call(57, 1, UpdateFeaturesRequest(feature_updates=[elr]))
            assert r.error_code == INVALID_UPDATE_VERSION
            assert "requires metadata.version 23" in r.error_message
            mv = Update(feature="metadata.version", max_version_level=23)
            r = w.call(57, 1, UpdateFeaturesRequest(feature_updates=[mv, elr]))
            assert r.error_code == 0
            assert md.features.levels["eligible.leader.replicas.version"] == 1


def test_release_presets_finalize_what_their_release_did() -> None:
    assert release_levels("2.8") is None
    assert release_levels("3.9") == {
        "metadata.version": 21, "kraft.version": 0, "transaction.version": 0,
        "group.version": 0, "eligible.leader.replicas.version": 0, "share.version": 0,
        "streams.version": 0,
    }  # fmt: skip
    four = release_levels("4.0")
    assert four is not None and four["metadata.version"] == 25
    assert four["transaction.version"] == 2 and four["group.version"] == 1
    assert four["eligible.leader.replicas.version"] == 0


# -- kafka-features against kafkagen and Kafka 4.4.0 ------------------------------------------

#: `kafka-features` runs, each changing the cluster only as far as a later one undoes it.
FEATURE_COMMANDS = [
    ["describe"],
    ["upgrade", "--feature", "group.version=5", "--dry-run"],
    ["upgrade", "--feature", "share.version=1", "--dry-run"],
    ["upgrade", "--feature", "nonexistent.version=1", "--dry-run"],
    ["downgrade", "--feature", "metadata.version=7", "--dry-run"],
    ["downgrade", "--feature", "eligible.leader.replicas.version=0", "--dry-run"],
    ["disable", "--feature", "streams.version", "--dry-run"],
    ["upgrade", "--metadata", "4.0", "--dry-run"],
    ["downgrade", "--feature", "group.version=0"],
    ["describe"],
    ["upgrade", "--feature", "group.version=1"],
    ["describe"],
]
_VARYING = [
    (re.compile(r"Epoch: \d+"), "Epoch: N"),
    (re.compile(r"controller \d+"), "controller N"),
    (re.compile(r"TopicId: \S+"), "TopicId: ID"),
]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_kafka_features_prints_on_kafkagen_what_it_prints_on_kafka(
    kafka_reference: KafkaReference,
) -> None:
    with BackgroundCluster(3) as c:
        ours = [kafka_tool(c.bootstrap, "FeatureCommand", args) for args in FEATURE_COMMANDS]
    theirs = [
        kafka_tool(kafka_reference.bootstrap, "FeatureCommand", args) for args in FEATURE_COMMANDS
    ]
    for args, mine, kafka in zip(FEATURE_COMMANDS, ours, theirs, strict=True):
        assert mine == kafka, " ".join(args)
    assert "FinalizedVersionLevel: 4.4-IV2" in ours[0]


# -- eligible leader replicas (KIP-966) -------------------------------------------------------


def partition_state(w: WireClient, topic: str) -> tuple[int, list[int], list[int], list[int]]:
    """(leader, ISR, ELR, last known ELR) of ``topic``'s partition 0 (DescribeTopicPartitions)."""
    r = w.call(
        75,
        0,
        DescribeTopicPartitionsRequest(
            topics=[DescribeTopicPartitionsRequest.TopicRequest(name=topic)]
        ),
    )
    p = r.topics[0].partitions[0]
    return p.leader_id, p.isr_nodes, p.eligible_leader_replicas, p.last_known_elr


def test_replicas_leaving_a_short_isr_become_eligible_and_one_leads_again() -> None:
    with BackgroundCluster(4) as c:
        assert c.cluster is not None
        cl = c.cluster
        md = cl.metadata
        c.call(
            lambda: md.create_topic(
                "elr", assignments={0: [0, 1, 2]}, configs={"min.insync.replicas": "2"}
            )
        )
        b = cl.brokers[3].info
        with WireClient(f"{b.host}:{b.port}") as w:
            assert partition_state(w, "elr") == (0, [0, 1, 2], [], [])
            c.run(cl.pause_broker(2))
            assert partition_state(w, "elr") == (0, [0, 1], [], [])  # still min.insync.replicas
            c.run(cl.pause_broker(1))
            assert partition_state(w, "elr") == (0, [0], [1], [])
            c.run(cl.pause_broker(0))
            assert partition_state(w, "elr") == (-1, [], [0, 1], [])
            # An eligible replica is as good as an in-sync one: it leads when it returns.
            c.run(cl.resume_broker(1))
            assert partition_state(w, "elr") == (1, [1], [0], [])
        assert md.partition("elr", 0).leader_epoch == 2  # lost, then the eligible one


def test_without_eligible_leader_replicas_the_last_isr_member_stays() -> None:
    with BackgroundCluster(3) as c:
        assert c.cluster is not None
        cl = c.cluster
        md = cl.metadata
        off = [FeatureUpdate("eligible.leader.replicas.version", 0, 2)]
        c.call(lambda: md.update_features(off, validate_only=False))
        c.call(lambda: md.create_topic("plain", assignments={0: [0, 1]}))
        c.run(cl.pause_broker(1))
        c.run(cl.pause_broker(0))
        p = md.partition("plain", 0)
        assert (p.leader, p.isr, p.elr) == (-1, [0], [])


def test_turning_eligible_leader_replicas_off_gives_an_empty_isr_its_eligible_replicas() -> None:
    with BackgroundCluster(2) as c:
        assert c.cluster is not None
        cl = c.cluster
        md = cl.metadata
        c.call(lambda: md.create_topic("waits", assignments={0: [0, 1]}))
        c.run(cl.pause_broker(1))
        c.run(cl.pause_broker(0))
        p = md.partition("waits", 0)
        assert (p.leader, p.isr, p.elr) == (-1, [], [0])
        off = [FeatureUpdate("eligible.leader.replicas.version", 0, 2)]
        c.call(lambda: md.update_features(off, validate_only=False))
        assert (p.leader, p.isr, p.elr) == (-1, [0], [])
        c.run(cl.resume_broker(0))
        assert (p.leader, p.isr) == (0, [0])


def test_eligible_leader_replicas_pin_the_cluster_min_insync_replicas() -> None:
    """As on Kafka 4.4, where `kafka-topics --describe` shows min.insync.replicas=1 for a
    topic without configs: the cluster-wide dynamic default."""
    with BackgroundCluster(1) as c:
        assert c.cluster is not None
        value, source = c.cluster.metadata.configs.topic_raw("any", "min.insync.replicas")
        assert (value, source.name) == ("1", "DYNAMIC_DEFAULT_BROKER_CONFIG")


def kafka_tool(bootstrap: str, tool: str, args: list[str]) -> str:
    """What one of Kafka 4.4.0's tools prints (and its exit status), ids normalised."""
    from kafkagen.maven import classpath

    java = shutil.which("java")
    if java is None:
        pytest.skip("no java on PATH")
    jars = os.pathsep.join(map(str, classpath(["org.apache.kafka:kafka-tools:4.4.0"])))
    p = subprocess.run(
        [java, "-cp", jars, f"org.apache.kafka.tools.{tool}", "--bootstrap-server", bootstrap]
        + args,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = "\n".join(
        line for line in (p.stdout + p.stderr).splitlines() if not line.startswith("SLF4J")
    )
    for pattern, replacement in _VARYING:
        out = pattern.sub(replacement, out)
    return f"exit {p.returncode}\n{out}"


def _topics_after_losing_node_2(bootstrap: str, lose: Callable[[], None]) -> list[str]:
    """Three topics on nodes 0, 1, 2 (min.insync.replicas 3, 2 and the cluster's), node 2
    lost, and what ``kafka-topics --describe`` prints of them then."""
    for name, configs in (
        ("elr3", ["--config", "min.insync.replicas=3"]),
        ("elr2", ["--config", "min.insync.replicas=2"]),
        ("elr-default", []),
    ):
        create = ["--create", "--topic", name, "--replica-assignment", "0:1:2"]
        out = kafka_tool(bootstrap, "TopicCommand", create + configs)
        assert out.startswith("exit 0"), out
    lose()
    deadline = time.monotonic() + 60
    while True:
        described = [
            kafka_tool(bootstrap, "TopicCommand", ["--describe", "--topic", name])
            for name in ("elr3", "elr2", "elr-default")
        ]
        if all("Isr: 0,1\t" in d for d in described) or time.monotonic() > deadline:
            return described
        time.sleep(1)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_kafka_topics_shows_the_elr_kafka_shows_after_a_replica_stops() -> None:
    from kafkagen.reference import KafkaReference

    with BackgroundCluster(3) as c:
        assert c.cluster is not None
        cl = c.cluster
        ours = _topics_after_losing_node_2(c.bootstrap, lambda: c.run(cl.pause_broker(2)))
    with KafkaReference(nodes=3) as kafka:
        first = kafka.bootstrap.split(",")[0]

        def stop_node_2() -> None:
            os.killpg(kafka.pids()[2], signal.SIGTERM)

        theirs = _topics_after_losing_node_2(first, stop_node_2)
    assert ours == theirs
    assert "Isr: 0,1\tElr: 2\tLastKnownElr: " in ours[0]
    assert "Isr: 0,1\tElr: \tLastKnownElr: " in ours[1]
    # No topic config: the cluster-wide min.insync.replicas that ELR pins, as on Kafka.
    assert "Configs: min.insync.replicas=1\n" in ours[2]


# -- client metrics resources (KIP-714) -------------------------------------------------------

CLIENT_METRICS = 16


def alter_client_metrics(w: WireClient, name: str, **changes: tuple[int, str | None]):
    """IncrementalAlterConfigs on one client metrics resource: the result."""
    Req = IncrementalAlterConfigsRequest
    configs = [
        Req.AlterableConfig(name=key.replace("_", "."), config_operation=op, value=value)
        for key, (op, value) in changes.items()
    ]
    resource = Req.AlterConfigsResource(
        resource_type=CLIENT_METRICS, resource_name=name, configs=configs
    )
    return w.call(44, 1, Req(resources=[resource])).responses[0]


def test_client_metrics_resources_are_altered_described_listed_and_deleted() -> None:
    with BackgroundCluster(1) as c:
        assert c.cluster is not None
        b = c.cluster.brokers[0].info
        with WireClient(f"{b.host}:{b.port}") as w:
            r = alter_client_metrics(
                w, "sub", metrics=(0, "org.apache.kafka.producer."), interval_ms=(0, "1000")
            )
            assert (r.error_code, r.error_message) == (0, None)
            r = alter_client_metrics(w, "sub", match=(0, "client_id=a.*,client_software_name=x"))
            assert r.error_code == 0
            listed = w.call(74, 1, ListConfigResourcesRequest(resource_types=[CLIENT_METRICS]))
            assert [x.resource_name for x in listed.config_resources] == ["sub"]
            listed = w.call(74, 0, ListConfigResourcesRequest())
            assert [x.resource_name for x in listed.config_resources] == ["sub"]
            described = w.call(
                32,
                4,
                DescribeConfigsRequest(
                    resources=[
                        DescribeConfigsRequest.DescribeConfigsResource(
                            resource_type=CLIENT_METRICS, resource_name="sub"
                        )
                    ]
                ),
            ).results[0]
            assert {(e.name, e.value, e.config_source) for e in described.configs} == {
                ("interval.ms", "1000", 7),
                ("match", "client_id=a.*,client_software_name=x", 7),
                ("metrics", "org.apache.kafka.producer.", 7),
            }
            # Kafka's checks and words.
            r = alter_client_metrics(w, "bad", interval_ms=(0, "10"))
            assert r.error_message == (
                "Invalid value 10 for interval.ms, interval must be between 100 and 3600000 "
                "(1 hour)"
            )
            r = alter_client_metrics(w, "bad", match=(0, "foo=bar"))
            assert r.error_message == "Illegal client matching pattern: foo=bar"
            # Deleting every config deletes the resource.
            r = alter_client_metrics(
                w, "sub", metrics=(1, None), interval_ms=(1, None), match=(1, None)
            )
            assert r.error_code == 0
            listed = w.call(74, 1, ListConfigResourcesRequest(resource_types=[CLIENT_METRICS]))
            assert listed.config_resources == []
            assert c.cluster.metadata.client_metrics == {}


CLIENT_METRICS_COMMANDS = [
    ["--alter", "--name", "cm1", "--metrics", "org.apache.kafka.producer.", "--interval", "1000"]
    + ["--match", "client_id=abc"],
    ["--describe"],
    ["--list"],
    ["--alter", "--name", "cm2", "--interval", "10"],
    ["--alter", "--name", "cm2", "--match", "foo=bar"],
    ["--alter", "--name", "cm3", "--interval", "2000"],
    ["--describe", "--name", "cm3"],
    ["--alter", "--name", "cm3", "--metrics", "*"],
    ["--describe", "--name", "cm3"],
    ["--delete", "--name", "cm1"],
    ["--list"],
    ["--describe", "--name", "cm1"],
    ["--delete", "--name", "cm3"],
    ["--list"],
]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_kafka_client_metrics_prints_on_kafkagen_what_it_prints_on_kafka(
    kafka_reference: KafkaReference,
) -> None:
    tool = "ClientMetricsCommand"
    with BackgroundCluster(3) as c:
        ours = [kafka_tool(c.bootstrap, tool, args) for args in CLIENT_METRICS_COMMANDS]
    theirs = [kafka_tool(kafka_reference.bootstrap, tool, a) for a in CLIENT_METRICS_COMMANDS]
    for args, mine, kafka in zip(CLIENT_METRICS_COMMANDS, ours, theirs, strict=True):
        assert mine == kafka, " ".join(args)
    assert "interval.ms=1000" in ours[1]
