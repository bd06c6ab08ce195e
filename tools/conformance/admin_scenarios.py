"""Topics, configs, the cluster, partitions and ACLs."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

from kafkagen.generated.alter_client_quotas import AlterClientQuotasRequest
from kafkagen.generated.alter_configs import AlterConfigsRequest
from kafkagen.generated.alter_partition_reassignments import AlterPartitionReassignmentsRequest
from kafkagen.generated.alter_replica_log_dirs import AlterReplicaLogDirsRequest
from kafkagen.generated.api_versions import ApiVersionsRequest
from kafkagen.generated.create_acls import CreateAclsRequest
from kafkagen.generated.create_partitions import CreatePartitionsRequest
from kafkagen.generated.create_topics import CreateTopicsRequest
from kafkagen.generated.delete_topics import DeleteTopicsRequest
from kafkagen.generated.describe_acls import DescribeAclsRequest
from kafkagen.generated.describe_cluster import DescribeClusterRequest
from kafkagen.generated.describe_configs import DescribeConfigsRequest
from kafkagen.generated.describe_log_dirs import DescribeLogDirsRequest
from kafkagen.generated.describe_quorum import DescribeQuorumRequest
from kafkagen.generated.describe_topic_partitions import DescribeTopicPartitionsRequest
from kafkagen.generated.elect_leaders import ElectLeadersRequest
from kafkagen.generated.incremental_alter_configs import IncrementalAlterConfigsRequest
from kafkagen.generated.list_config_resources import ListConfigResourcesRequest
from kafkagen.generated.list_partition_reassignments import ListPartitionReassignmentsRequest
from kafkagen.generated.metadata import MetadataRequest
from kafkagen.generated.update_features import UpdateFeaturesRequest

from .core import Session, SetupError, scenario

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP_CONFIGS = 2, 4, 8, 16, 32  # config resources

# ---------------------------------------------------------------------- Metadata


def _metadata(*topics: str) -> MetadataRequest:
    M = MetadataRequest
    return M(
        topics=[M.MetadataRequestTopic(name=t) for t in topics], allow_auto_topic_creation=False
    )


@scenario("Metadata", "one-topic", "a topic of three partitions")
async def metadata_topic(s: Session) -> None:
    t = await s.create_topic(partitions=3)
    await s.call(_metadata(t))


@scenario("Metadata", "replicated-topic", "a topic with three replicas", brokers=3)
async def metadata_rf3(s: Session) -> None:
    t = await s.create_topic(partitions=2, replication=3)
    await s.call(_metadata(t))


@scenario("Metadata", "unknown-topic", "a topic that does not exist, auto-creation off")
async def metadata_unknown(s: Session) -> None:
    await s.call(_metadata(s.name("missing")))


@scenario("Metadata", "invalid-topic-name", "a name topics may not have")
async def metadata_invalid(s: Session) -> None:
    await s.call(_metadata(s.name("bad/name")))


@scenario("Metadata", "no-topics", "an empty topic list: brokers and controller only")
async def metadata_none(s: Session) -> None:
    await s.call(MetadataRequest(topics=[], allow_auto_topic_creation=False))


@scenario("Metadata", "all-topics", "every topic (null list), trimmed to this scenario's")
async def metadata_all(s: Session) -> None:
    t = await s.create_topic()

    def keep(data: Any) -> Any:
        data["topics"] = [x for x in data["topics"] if x["name"] == t]
        return data

    await s.call(MetadataRequest(topics=None, allow_auto_topic_creation=False), keep=keep)


@scenario("Metadata", "unknown-topic-id", "a topic named by an id nobody has (v10+)")
async def metadata_unknown_id(s: Session) -> None:
    M = MetadataRequest
    req = M(topics=[M.MetadataRequestTopic(topic_id=uuid.UUID(int=99), name=None)])
    await s.call(req)


@scenario("Metadata", "topic-id-before-v12", "a topic id at v11, where ids may not be used")
async def metadata_id_too_early(s: Session) -> None:
    t = await s.create_topic()
    M = MetadataRequest
    req = M(topics=[M.MetadataRequestTopic(topic_id=uuid.UUID(int=99), name=t)])
    await s.call(req, 11)


@scenario("Metadata", "ids-beside-names", "one topic by name, one by an unknown id (v12+)")
async def metadata_ids_beside_names(s: Session) -> None:
    t = await s.create_topic()
    M = MetadataRequest
    by_id = M.MetadataRequestTopic(topic_id=uuid.UUID(int=98), name=None)
    await s.call(M(topics=[M.MetadataRequestTopic(name=t), by_id]))


# ---------------------------------------------------------------------- CreateTopics


def _create(
    name: str,
    partitions: int = 1,
    replication: int = 1,
    configs: dict[str, str] | None = None,
    *,
    validate_only: bool = False,
    assignments: list[list[int]] | None = None,
) -> CreateTopicsRequest:
    C = CreateTopicsRequest
    return C(
        topics=[
            C.CreatableTopic(
                name=name,
                num_partitions=-1 if assignments else partitions,
                replication_factor=-1 if assignments else replication,
                assignments=[
                    C.CreatableReplicaAssignment(partition_index=i, broker_ids=ids)
                    for i, ids in enumerate(assignments or [])
                ],
                configs=[
                    C.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()
                ],
            )
        ],
        timeout_ms=30000,
        validate_only=validate_only,
    )


def _without_configs(data: Any) -> Any:
    # CreateTopics v5+ lists every config of the new topic; DescribeConfigs compares them.
    for t in data.get("topics", []):
        t.pop("configs", None)
    return data


@scenario("CreateTopics", "ordinary", "three partitions, one replica")
async def create_ordinary(s: Session) -> None:
    await s.call(_create(s.name("t"), 3), keep=_without_configs)
    await s.wait_for_leaders(s.name("t"), 3)


@scenario("CreateTopics", "default-partitions", "-1 partitions and replicas: the broker's defaults")
async def create_defaults(s: Session) -> None:
    await s.call(_create(s.name("t"), -1, -1), keep=_without_configs)


@scenario("CreateTopics", "already-exists", "a topic that exists")
async def create_exists(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_create(t), keep=_without_configs)


@scenario("CreateTopics", "invalid-name", "characters topics may not have")
async def create_invalid_name(s: Session) -> None:
    await s.call(_create(s.name("bad name")), keep=_without_configs)


@scenario("CreateTopics", "name-too-long", "a 250-character name")
async def create_long_name(s: Session) -> None:
    await s.call(_create(s.name("x" * 240)), keep=_without_configs)


@scenario("CreateTopics", "dot-name", "'.' is not a topic name")
async def create_dot(s: Session) -> None:
    await s.call(_create("."), keep=_without_configs)


@scenario("CreateTopics", "zero-partitions", "0 partitions")
async def create_zero_partitions(s: Session) -> None:
    await s.call(_create(s.name("t"), 0), keep=_without_configs)


@scenario("CreateTopics", "replication-too-large", "more replicas than brokers")
async def create_rf_too_large(s: Session) -> None:
    await s.call(_create(s.name("t"), 1, 7), keep=_without_configs)


@scenario("CreateTopics", "invalid-config-value", "cleanup.policy=sometimes")
async def create_bad_config(s: Session) -> None:
    await s.call(
        _create(s.name("t"), configs={"cleanup.policy": "sometimes"}), keep=_without_configs
    )


@scenario("CreateTopics", "unknown-config", "a config no topic has")
async def create_unknown_config(s: Session) -> None:
    await s.call(_create(s.name("t"), configs={"no.such.config": "1"}), keep=_without_configs)


@scenario("CreateTopics", "too-many-partitions", "10,001 partitions in one request")
async def create_too_many(s: Session) -> None:
    await s.call(_create(s.name("t"), 10_001), keep=_without_configs)
    await s.call(_metadata(s.name("t")))


@scenario("CreateTopics", "validate-only", "validate_only: nothing is created")
async def create_validate_only(s: Session) -> None:
    await s.call(_create(s.name("t"), 2, validate_only=True), keep=_without_configs)
    await s.call(_metadata(s.name("t")))


@scenario("CreateTopics", "manual-assignment", "replicas placed by the request", brokers=2)
async def create_assigned(s: Session) -> None:
    nodes = s._node_order
    await s.call(_create(s.name("t"), assignments=[[nodes[0]], [nodes[1]]]), keep=_without_configs)


@scenario("CreateTopics", "assignment-unknown-broker", "a replica on broker 999")
async def create_assigned_unknown(s: Session) -> None:
    await s.call(_create(s.name("t"), assignments=[[999]]), keep=_without_configs)


@scenario("CreateTopics", "duplicate-in-request", "the same name twice in one request")
async def create_duplicate(s: Session) -> None:
    req = _create(s.name("t"))
    req.topics.append(_create(s.name("t")).topics[0])
    await s.call(req, keep=_without_configs)


# ---------------------------------------------------------------------- DeleteTopics


def _delete(*names: str) -> DeleteTopicsRequest:
    D = DeleteTopicsRequest
    return D(
        topics=[D.DeleteTopicState(name=n) for n in names],
        topic_names=list(names),
        timeout_ms=30000,
    )


@scenario("DeleteTopics", "ordinary", "delete a topic; Metadata no longer knows it")
async def delete_ordinary(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_delete(t))
    for _ in range(100):  # deletion reaches every broker's metadata in its own time
        md = await s.metadata([t])
        if md.topics[0].error_code != 0:
            break
        await asyncio.sleep(0.05)
    await s.call(_metadata(t))


@scenario("DeleteTopics", "unknown-topic", "a topic that does not exist")
async def delete_unknown(s: Session) -> None:
    await s.call(_delete(s.name("missing")))


@scenario("DeleteTopics", "named-twice", "a topic named twice beside one named once")
async def delete_named_twice(s: Session) -> None:
    t, u = await s.create_topic("t"), await s.create_topic("u")
    await s.call(_delete(t, t, u))
    await s.call(_metadata(t))  # not deleted


@scenario("DeleteTopics", "neither-name-nor-id", "an entry with no name and the zero id (v6)")
async def delete_nothing_named(s: Session) -> None:
    D = DeleteTopicsRequest
    await s.call(D(topics=[D.DeleteTopicState(name=None)], timeout_ms=30000))


@scenario("DeleteTopics", "unknown-topic-id", "a topic id nobody has (v6)")
async def delete_unknown_id(s: Session) -> None:
    D = DeleteTopicsRequest
    await s.call(
        D(topics=[D.DeleteTopicState(name=None, topic_id=uuid.UUID(int=77))], timeout_ms=30000)
    )


# ---------------------------------------------------------------------- CreatePartitions


def _partitions(name: str, count: int, validate_only: bool = False) -> CreatePartitionsRequest:
    C = CreatePartitionsRequest
    return C(
        topics=[C.CreatePartitionsTopic(name=name, count=count, assignments=None)],
        timeout_ms=30000,
        validate_only=validate_only,
    )


@scenario("CreatePartitions", "ordinary", "one partition to three")
async def partitions_ordinary(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_partitions(t, 3))
    await s.wait_for_leaders(t, 3)
    await s.call(_metadata(t))


@scenario("CreatePartitions", "decrease", "three partitions to two")
async def partitions_decrease(s: Session) -> None:
    t = await s.create_topic(partitions=3)
    await s.call(_partitions(t, 2))


@scenario("CreatePartitions", "same-count", "one partition to one")
async def partitions_same(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_partitions(t, 1))


@scenario("CreatePartitions", "unknown-topic", "a topic that does not exist")
async def partitions_unknown(s: Session) -> None:
    await s.call(_partitions(s.name("missing"), 2))


@scenario("CreatePartitions", "too-many-partitions", "one partition to 2**31 - 1")
async def partitions_too_many(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_partitions(t, 2**31 - 1))


@scenario("CreatePartitions", "validate-only", "validate_only: the count stays")
async def partitions_validate(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_partitions(t, 4, validate_only=True))
    await s.call(_metadata(t))


# ---------------------------------------------------------------------- configs


def _describe_configs(rtype: int, name: str, *keys: str) -> DescribeConfigsRequest:
    D = DescribeConfigsRequest
    return D(
        resources=[
            D.DescribeConfigsResource(
                resource_type=rtype, resource_name=name, configuration_keys=list(keys)
            )
        ]
    )


@scenario("DescribeConfigs", "topic-keys", "two configs of a topic, one of them set on creation")
async def describe_topic_configs(s: Session) -> None:
    t = await s.create_topic(configs={"retention.ms": "123456"})
    await s.call(_describe_configs(TOPIC, t, "retention.ms", "cleanup.policy"))


@scenario("DescribeConfigs", "unknown-topic", "a topic that does not exist")
async def describe_configs_unknown(s: Session) -> None:
    await s.call(_describe_configs(TOPIC, s.name("missing"), "retention.ms"))


@scenario("DescribeConfigs", "broker-key", "one broker config left at its default")
async def describe_broker_config(s: Session) -> None:
    node = s._node_order[0]
    await s.call(_describe_configs(BROKER, str(node), "message.max.bytes"), node=node)


@scenario("DescribeConfigs", "unknown-broker", "broker 999")
async def describe_configs_unknown_broker(s: Session) -> None:
    await s.call(_describe_configs(BROKER, "999", "message.max.bytes"))


@scenario("DescribeConfigs", "invalid-resource-type", "resource type 9")
async def describe_configs_bad_type(s: Session) -> None:
    await s.call(_describe_configs(9, "x", "retention.ms"))


def _alter(name: str, configs: dict[str, str], validate_only: bool = False) -> AlterConfigsRequest:
    A = AlterConfigsRequest
    return A(
        resources=[
            A.AlterConfigsResource(
                resource_type=TOPIC,
                resource_name=name,
                configs=[A.AlterableConfig(name=k, value=v) for k, v in configs.items()],
            )
        ],
        validate_only=validate_only,
    )


@scenario("AlterConfigs", "ordinary", "set retention.ms, then describe it")
async def alter_configs(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_alter(t, {"retention.ms": "60000"}))
    await _config_settled(s, t, "retention.ms", True)
    await s.call(_describe_configs(TOPIC, t, "retention.ms"))


@scenario("AlterConfigs", "invalid-value", "retention.ms=soon")
async def alter_configs_bad(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_alter(t, {"retention.ms": "soon"}))


@scenario("AlterConfigs", "unknown-topic", "a topic that does not exist")
async def alter_configs_unknown(s: Session) -> None:
    await s.call(_alter(s.name("missing"), {"retention.ms": "60000"}))


def _incremental(name: str, op: int, key: str, value: str | None) -> IncrementalAlterConfigsRequest:
    Req = IncrementalAlterConfigsRequest
    return Req(
        resources=[
            Req.AlterConfigsResource(
                resource_type=TOPIC,
                resource_name=name,
                configs=[Req.AlterableConfig(name=key, config_operation=op, value=value)],
            )
        ]
    )


async def _config_settled(s: Session, topic: str, key: str, overridden: bool) -> None:
    """Wait (set-up) until the topic's ``key`` is (or is no longer) set on the topic: an
    accepted change reaches every broker in its own time."""
    for _ in range(100):
        r = await s.setup(_describe_configs(TOPIC, topic, key))
        configs = r.results[0].configs
        if configs and (configs[0].config_source == 1) == overridden:
            return
        await asyncio.sleep(0.05)


@scenario("IncrementalAlterConfigs", "set-and-delete", "SET then DELETE retention.ms")
async def incremental_set_delete(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_incremental(t, 0, "retention.ms", "70000"))
    await _config_settled(s, t, "retention.ms", True)
    await s.call(_describe_configs(TOPIC, t, "retention.ms"))
    await s.call(_incremental(t, 1, "retention.ms", None))
    await _config_settled(s, t, "retention.ms", False)
    await s.call(_describe_configs(TOPIC, t, "retention.ms"))


@scenario("IncrementalAlterConfigs", "append", "APPEND to cleanup.policy")
async def incremental_append(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_incremental(t, 2, "cleanup.policy", "compact"))
    await _config_settled(s, t, "cleanup.policy", True)
    await s.call(_describe_configs(TOPIC, t, "cleanup.policy"))


@scenario("IncrementalAlterConfigs", "unknown-config", "SET a config no topic has")
async def incremental_unknown(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_incremental(t, 0, "no.such.config", "1"))


@scenario("IncrementalAlterConfigs", "invalid-value", "SET max.message.bytes=-5")
async def incremental_invalid(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_incremental(t, 0, "max.message.bytes", "-5"))


@scenario("IncrementalAlterConfigs", "unknown-topic", "a topic that does not exist")
async def incremental_unknown_topic(s: Session) -> None:
    await s.call(_incremental(s.name("missing"), 0, "retention.ms", "1000"))


def _list_config_resources(*types: int) -> ListConfigResourcesRequest:
    return ListConfigResourcesRequest(resource_types=list(types))


def _own_config_resources(s: Session) -> Callable[[Any], Any]:
    """Keeps this scenario's own resources; brokers and broker loggers (named by node ids,
    which are a placement choice) become one entry per type saying how many."""

    def keep(data: Any) -> Any:
        listed = data["configResources"]
        per_node: dict[int, int] = {}
        own = []
        for r in listed:
            if r["resourceType"] in (BROKER, BROKER_LOGGER):
                per_node[r["resourceType"]] = per_node.get(r["resourceType"], 0) + 1
            elif r["resourceName"].startswith(s.prefix):
                own.append(r)
        own += [{"resourceName": f"<{n} nodes>", "resourceType": t} for t, n in per_node.items()]
        data["configResources"] = own
        return data

    return keep


@scenario("ListConfigResources", "topics", "the topic type: this scenario's two topics")
async def list_config_resources_topics(s: Session) -> None:
    await s.create_topic("a")
    await s.create_topic("b")
    await s.call(_list_config_resources(TOPIC), keep=_own_config_resources(s))


@scenario("ListConfigResources", "brokers", "the broker and broker logger types: one per node")
async def list_config_resources_brokers(s: Session) -> None:
    await s.call(_list_config_resources(BROKER, BROKER_LOGGER), keep=_own_config_resources(s))


@scenario("ListConfigResources", "every-type", "no type named: every type v1 knows")
async def list_config_resources_all(s: Session) -> None:
    await s.create_topic()
    await s.call(_list_config_resources(), keep=_own_config_resources(s))


@scenario("ListConfigResources", "groups-and-client-metrics", "types with nothing configured")
async def list_config_resources_unconfigured(s: Session) -> None:
    await s.call(
        _list_config_resources(CLIENT_METRICS, GROUP_CONFIGS), keep=_own_config_resources(s)
    )


@scenario("ListConfigResources", "unknown-type", "type 3, which no version lists: refused whole")
async def list_config_resources_unknown(s: Session) -> None:
    await s.call(_list_config_resources(TOPIC, 3))


@scenario("DescribeQuorum", "metadata-partition", "partition 0 of __cluster_metadata")
async def describe_quorum(s: Session) -> None:
    Q = DescribeQuorumRequest
    await s.call(
        Q(
            topics=[
                Q.TopicData(
                    topic_name="__cluster_metadata", partitions=[Q.PartitionData(partition_index=0)]
                )
            ]
        )
    )


@scenario("DescribeQuorum", "other-partition", "a partition the quorum does not have")
async def describe_quorum_other(s: Session) -> None:
    Q = DescribeQuorumRequest
    await s.call(
        Q(
            topics=[
                Q.TopicData(topic_name=s.name(), partitions=[Q.PartitionData(partition_index=0)])
            ]
        )
    )


# ---------------------------------------------------------------------- cluster and partitions


@scenario("ApiVersions", "ordinary", "v3 with a client name: error code and ranges")
async def api_versions(s: Session) -> None:
    await s.call(
        ApiVersionsRequest(client_software_name="kafkagen", client_software_version="1"), 3
    )


@scenario("ApiVersions", "invalid-client-name", "v3 with a client name Kafka's pattern refuses")
async def api_versions_bad_name(s: Session) -> None:
    req = ApiVersionsRequest(client_software_name="bad name!", client_software_version="1")
    await s.call(req, 3)


@scenario("DescribeCluster", "ordinary", "brokers and controller")
async def describe_cluster(s: Session) -> None:
    await s.call(DescribeClusterRequest())


@scenario("DescribeCluster", "controller-endpoints", "asking a broker for controllers (v1+)")
async def describe_cluster_controllers(s: Session) -> None:
    await s.call(DescribeClusterRequest(endpoint_type=2))


@scenario("DescribeCluster", "unknown-endpoint-type", "endpoint type 9 (v1+)")
async def describe_cluster_unknown_type(s: Session) -> None:
    await s.call(DescribeClusterRequest(endpoint_type=9))


@scenario("UpdateFeatures", "unsupported-level", "group.version 5 at v1: refused, no rows")
async def update_features_refused(s: Session) -> None:
    U = UpdateFeaturesRequest
    upd = U.FeatureUpdateKey(feature="group.version", max_version_level=5, upgrade_type=1)
    await s.call(U(feature_updates=[upd], timeout_ms=30000), 1)


@scenario("UpdateFeatures", "validate-only", "group.version 1, validate only, at v1: a row")
async def update_features_validate(s: Session) -> None:
    U = UpdateFeaturesRequest
    upd = U.FeatureUpdateKey(feature="group.version", max_version_level=1, upgrade_type=1)
    await s.call(U(feature_updates=[upd], validate_only=True, timeout_ms=30000), 1)


@scenario("AlterClientQuotas", "default-and-named-client", "one entity: a client and the default")
async def alter_quotas_default_beside_named(s: Session) -> None:
    A = AlterClientQuotasRequest
    entity = [
        A.EntityData(entity_type="client-id", entity_name=None),
        A.EntityData(entity_type="client-id", entity_name=s.name("c")),
    ]
    op = A.OpData(key="producer_byte_rate", value=1024.0, remove=False)
    await s.call(A(entries=[A.EntryData(entity=entity, ops=[op])], validate_only=True))


@scenario("AlterReplicaLogDirs", "topic-name-too-long", "a 249-character topic name")
async def alter_log_dirs_long_name(s: Session) -> None:
    A = AlterReplicaLogDirsRequest
    topic = A.AlterReplicaLogDirTopic(name=s.name("x" * 230)[:249], partitions=[0])
    await s.call(A(dirs=[A.AlterReplicaLogDir(path="/no/such/dir", topics=[topic])]))


@scenario("DescribeTopicPartitions", "one-topic", "a topic of two partitions")
async def describe_topic_partitions(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    D = DescribeTopicPartitionsRequest
    await s.call(D(topics=[D.TopicRequest(name=t)], response_partition_limit=2000))


@scenario("DescribeTopicPartitions", "unknown-topic", "a topic that does not exist")
async def describe_topic_partitions_unknown(s: Session) -> None:
    D = DescribeTopicPartitionsRequest
    await s.call(D(topics=[D.TopicRequest(name=s.name("missing"))], response_partition_limit=2000))


@scenario("DescribeLogDirs", "one-topic", "the log of a topic with three records")
async def describe_log_dirs(s: Session) -> None:
    from .messages import batch

    t = await s.create_topic()
    await s.produced(t, batch(3))
    D = DescribeLogDirsRequest
    await s.call(
        D(topics=[D.DescribableLogDirTopic(topic=t, partitions=[0])]), node=await s.leader(t)
    )


def _elect(
    topic: str | None, election: int = 0, partitions: tuple[int, ...] = (0,)
) -> ElectLeadersRequest:
    """An election for ``partitions`` of ``topic``; every partition when ``topic`` is None."""
    E = ElectLeadersRequest
    return E(
        election_type=election,
        topic_partitions=(
            None if topic is None else [E.TopicPartitions(topic=topic, partitions=list(partitions))]
        ),
        timeout_ms=30000,
    )


async def _preferred_elsewhere(s: Session, topic: str) -> None:
    """Set-up: reverse the replicas of ``topic``-0, so that its leader stays and its
    preferred replica is another broker."""
    md = await s.metadata([topic])
    replicas = list(reversed(md.topics[0].partitions[0].replica_nodes))
    r = await s.setup(_reassign(topic, replicas))
    if r.error_code != 0 or r.responses[0].partitions[0].error_code != 0:
        raise SetupError(f"reordering the replicas of {topic}-0: {r}")
    await _until_every_node(s, topic, lambda p: p.replica_nodes == replicas)


async def _until_every_node(s: Session, topic: str, seen: Callable[[Any], bool]) -> None:
    """Set-up: wait until every node's metadata of ``topic``-0 passes ``seen`` (brokers
    apply the controller's changes a moment after it answers)."""
    deadline = asyncio.get_running_loop().time() + 20.0
    for node in sorted(s.target.nodes):
        while not seen(
            next(
                p
                for p in (await s.metadata([topic], node)).topics[0].partitions
                if p.partition_index == 0
            )
        ):
            if asyncio.get_running_loop().time() > deadline:
                raise SetupError(f"node {node} does not see the change of {topic}-0")
            await asyncio.sleep(0.05)


def _preferred_leads(p: Any) -> bool:
    return bool(p.leader_id == p.replica_nodes[0])


def _mine(s: Session) -> Callable[[Any], Any]:
    """Keep this scenario's topics of an election over the whole cluster."""

    def keep(data: Any) -> Any:
        data["replicaElectionResults"] = [
            r for r in data["replicaElectionResults"] if r["topic"].startswith(s.prefix)
        ]
        return data

    return keep


@scenario("ElectLeaders", "preferred-not-needed", "the preferred replica already leads")
async def elect_not_needed(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_elect(t))


@scenario(
    "ElectLeaders",
    "preferred-some-needed",
    "two named partitions, one led by its preferred replica and one not",
    brokers=2,
)
async def elect_some_needed(s: Session) -> None:
    t = await s.create_topic(partitions=2, replication=2)
    await _preferred_elsewhere(s, t)
    await s.call(_elect(t, partitions=(0, 1)))
    await _until_every_node(s, t, _preferred_leads)
    await s.call(_metadata(t))


@scenario(
    "ElectLeaders",
    "all-partitions",
    "every partition (null): those already led by their preferred replica are left out",
    brokers=2,
)
async def elect_all(s: Session) -> None:
    t = await s.create_topic(partitions=2, replication=2)
    await s.call(_elect(None), keep=_mine(s))
    await _preferred_elsewhere(s, t)
    await s.call(_elect(None), keep=_mine(s))
    await _until_every_node(s, t, _preferred_leads)
    await s.call(_metadata(t))


@scenario("ElectLeaders", "unknown-election-type", "election type 5 for a named partition")
async def elect_unknown_type(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_elect(t, 5))


@scenario("ElectLeaders", "no-partitions", "an empty partition list, election type 7")
async def elect_nothing(s: Session) -> None:
    await s.call(ElectLeadersRequest(election_type=7, topic_partitions=[], timeout_ms=30000))


@scenario("ElectLeaders", "unknown-topic", "a topic that does not exist")
async def elect_unknown(s: Session) -> None:
    await s.call(_elect(s.name("missing")))


@scenario("ElectLeaders", "unclean-not-needed", "an unclean election where a leader exists")
async def elect_unclean(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_elect(t, 1))


def _reassign(
    topic: str, replicas: list[int] | None, allow_replication_factor_change: bool = True
) -> AlterPartitionReassignmentsRequest:
    A = AlterPartitionReassignmentsRequest
    return A(
        timeout_ms=30000,
        allow_replication_factor_change=allow_replication_factor_change,
        topics=[
            A.ReassignableTopic(
                name=topic,
                partitions=[A.ReassignablePartition(partition_index=0, replicas=replicas)],
            )
        ],
    )


@scenario("AlterPartitionReassignments", "unknown-topic", "a topic that does not exist")
async def reassign_unknown(s: Session) -> None:
    await s.call(_reassign(s.name("missing"), [0]))


@scenario("AlterPartitionReassignments", "cancel-none", "cancel where nothing is moving")
async def reassign_cancel_none(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_reassign(t, None))


@scenario("AlterPartitionReassignments", "unknown-broker", "move a replica to broker 999")
async def reassign_unknown_broker(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_reassign(t, [999]))


@scenario(
    "AlterPartitionReassignments",
    "keep-replication-factor",
    "v1: from one replica to two where the factor may not change",
    brokers=2,
)
async def reassign_keep_factor(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_reassign(t, sorted(s.target.nodes)[:2], allow_replication_factor_change=False))


@scenario("ListPartitionReassignments", "none", "a topic with nothing moving")
async def list_reassignments(s: Session) -> None:
    t = await s.create_topic()
    L = ListPartitionReassignmentsRequest
    await s.call(
        L(
            timeout_ms=30000,
            topics=[L.ListPartitionReassignmentsTopics(name=t, partition_indexes=[0])],
        )
    )


# ---------------------------------------------------------------------- ACLs


@scenario("CreateAcls", "topic-read", "allow User:alice to read a topic")
async def create_acls(s: Session) -> None:
    C = CreateAclsRequest
    await s.call(
        C(
            creations=[
                C.AclCreation(
                    resource_type=2,
                    resource_name=s.name("t"),
                    resource_pattern_type=3,
                    principal="User:alice",
                    host="*",
                    operation=3,
                    permission_type=3,
                )
            ]
        )
    )


@scenario("DescribeAcls", "any-topic", "every ACL on topics")
async def describe_acls(s: Session) -> None:
    await s.call(
        DescribeAclsRequest(
            resource_type_filter=2,
            resource_name_filter=s.name("t"),
            pattern_type_filter=1,
            principal_filter=None,
            host_filter=None,
            operation=1,
            permission_type=1,
        )
    )
