"""The cluster's metadata: brokers, topics, partition assignments, configs and ACLs.

This plays the controller's part: it owns the one true image of the cluster, and brokers
learn about changes by listening (as KRaft brokers apply metadata records). Everything
runs on one event loop, so changes apply to every broker synchronously.

`snapshot` and `restore` turn the image into plain data and back, and ``on_change`` hears of
every change, so that a log directory can keep it across restarts.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kafkagen.runtime.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicExceptionError,
    KafkaError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from kafkagen.runtime.topic_partition import TopicPartition

from ..config.definitions import ConfigError, topic_def
from ..config.store import ConfigStore
from ..security.acls import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermission,
    AclStore,
    PatternType,
    ResourceType,
)
from ..types import BrokerInfo, MetadataListener, PartitionInfo, TopicInfo
from .client_quotas import ClientQuotas
from .features import ELR_VERSION, FeatureUpdate, FinalizedFeatures
from .image import MetadataImage
from .reassignment import ReassignmentManager

__all__ = ["MAX_PARTITIONS_PER_REQUEST", "ClusterMetadata", "validate_topic_name"]

MIN_ISR = "min.insync.replicas"
UNCLEAN = "unclean.leader.election.enable"
#: Kafka's controller refuses a CreateTopics or CreatePartitions request that would make
#: more partitions than this in all, before making any (one request must not exhaust memory).
MAX_PARTITIONS_PER_REQUEST = 10_000
#: Producer ids are handed out in blocks, so that a saved image need change only per block.
PRODUCER_ID_BLOCK = 1000
_ANY_ACL = AclFilter(
    ResourceType.ANY, None, PatternType.ANY, None, None, AclOperation.ANY, AclPermission.ANY
)
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
_MAX_NAME = 249


def validate_topic_name(name: str) -> None:
    """Kafka's rules for topic names; raises INVALID_TOPIC_EXCEPTION naming the problem."""
    if not name:
        raise InvalidTopicExceptionError("a topic name cannot be empty")
    if name in (".", ".."):
        raise InvalidTopicExceptionError(f"a topic cannot be named {name!r}")
    if len(name) > _MAX_NAME:
        raise InvalidTopicExceptionError(
            f"topic name is {len(name)} characters long, the limit is {_MAX_NAME}"
        )
    if not _LEGAL.fullmatch(name):
        raise InvalidTopicExceptionError(
            f"Topic name is invalid: {name!r} contains one or more characters other than "
            "ASCII alphanumerics, '.', '_' and '-'"
        )


def _too_few_brokers(rf: int, brokers: Sequence[object]) -> str:
    # Kafka 4.4's words: kafka-topics prints them, and scripts match on them
    return (
        f"Unable to replicate the partition {rf} time(s): The target replication factor of "
        f"{rf} cannot be reached because only {len(brokers)} broker(s) are registered or some "
        "brokers have all their log directories cordoned."
    )


class ClusterMetadata:
    """Brokers, topics and their partitions; the controller's image of the cluster."""

    def __init__(
        self,
        configs: ConfigStore,
        cluster_id: str | None = None,
        controller_id: int = 0,
    ) -> None:
        self.configs = configs
        self.acls = AclStore()
        self.client_quotas = ClientQuotas()
        #: Client metrics resources (KIP-714): name -> its configs (none empty).
        self.client_metrics: dict[str, dict[str, str]] = {}
        #: Group id -> the group configs set for it (GROUP config resources).
        self.group_configs: dict[str, dict[str, str]] = {}
        #: The feature levels ApiVersions advertises and UpdateFeatures changes.
        self.features = FinalizedFeatures(controller_id=controller_id)
        if self.elr_enabled():
            self.pin_cluster_min_isr()
        self.cluster_id = cluster_id or _cluster_id()
        self.controller_id = controller_id
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.topic_names: dict[uuid.UUID, str] = {}
        self.listeners: list[MetadataListener] = []
        #: Ongoing partition reassignments; it listens to finish them.
        self.reassignments = ReassignmentManager(self)
        self.listeners.append(self.reassignments)
        self._next_producer_id = 1000
        #: Ids below this may have been handed out (what a saved image records).
        self._producer_id_block_end = self._next_producer_id
        # Where the next topic's first replica goes, so leaders spread over brokers.
        self._next_start = 0
        #: Called after every change of topics, partitions, configs or producer-id blocks.
        self.on_change: Callable[[], None] | None = None
        #: How many changes the image has had since the process started: the offset of the
        #: metadata log kafkagen does not keep (DescribeQuorum reports it).
        self.change_count = 0
        #: Whether a broker's requests reach the controller (the control API's faults
        #: cut them off).
        self.reaches_controller: Callable[[int], bool] = lambda node_id: True
        #: Broker id -> the image it last had before it lost the controller: it answers
        #: from it, and changes are held back from it until it reaches the controller.
        self.stale_images: dict[int, MetadataImage] = {}

    # -- brokers ----------------------------------------------------------------------

    def image_of(self, node_id: int) -> ClusterMetadata | MetadataImage:
        """What broker ``node_id`` knows of the cluster: this image, or the one it kept
        when it lost the controller."""
        return self.stale_images.get(node_id, self)

    def keep_stale_image(self, node_id: int) -> None:
        """Broker ``node_id`` lost the controller: it keeps what it knows now."""
        if node_id not in self.stale_images:
            self.stale_images[node_id] = MetadataImage.copy_of(
                self.cluster_id, self.controller_id, self.brokers, self.topics
            )

    def add_broker(self, info: BrokerInfo) -> None:
        self.brokers[info.node_id] = info

    def alive_brokers(self) -> list[int]:
        return sorted(b.node_id for b in self.brokers.values() if b.alive)

    # -- topics -----------------------------------------------------------------------

    def ensure_internal_topic(
        self, name: str, partitions: int, replication_factor: int, *, segment_bytes: int
    ) -> bool:
        """Create a coordinator's compacted topic on first use, as Kafka does, with the
        replication factor capped by the live brokers; False if it cannot exist yet."""
        if self.topic(name) is not None:
            return True
        alive = len(self.alive_brokers())
        if alive == 0:
            return False
        try:
            self.create_topic(
                name,
                partitions,
                min(replication_factor, alive),
                configs={
                    "cleanup.policy": "compact",
                    _segment_config(segment_bytes): str(segment_bytes),
                },
                internal=True,
            )
        except KafkaError:
            logging.getLogger("kafkagen.broker").exception("cannot create %s", name)
            return False
        return True

    def topic(self, name: str) -> TopicInfo | None:
        return self.topics.get(name)

    def partition(self, topic: str, index: int) -> PartitionInfo | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= index < len(t.partitions):
            return None
        return t.partitions[index]

    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        assignments: dict[int, list[int]] | None = None,
        configs: dict[str, str | None] | None = None,
        *,
        validate_only: bool = False,
        internal: bool = False,
    ) -> TopicInfo:
        """Create a topic (or only check that it could be); raises the Kafka error."""
        validate_topic_name(name)
        if name in self.topics:
            raise TopicAlreadyExistsError(f"Topic {name!r} already exists.")
        if _collides(name, self.topics):
            raise InvalidTopicExceptionError(
                f"topic {name!r} collides with an existing topic ('.' and '_' are alike)"
            )
        try:
            ConfigStore.validate_topic_configs(configs or {})
        except ConfigError as e:
            from kafkagen.runtime.errors import InvalidConfigError

            raise InvalidConfigError(str(e)) from None
        brokers = self.alive_brokers()
        if assignments:
            if num_partitions != -1 or replication_factor != -1:
                raise InvalidRequestError(
                    "give either replica assignments or partition count and replication factor"
                )
            replicas = _check_assignments(assignments, self.brokers)
        else:
            if num_partitions == -1:
                num_partitions = self.configs.broker_int("num.partitions")
            if replication_factor == -1:
                replication_factor = self.configs.broker_int("default.replication.factor")
            if num_partitions <= 0:
                raise InvalidPartitionsError(f"number of partitions must be positive: {name}")
            if replication_factor <= 0:
                raise InvalidReplicationFactorError(f"replication factor must be positive: {name}")
            if replication_factor > len(brokers):
                raise InvalidReplicationFactorError(_too_few_brokers(replication_factor, brokers))
            replicas = self._assign(num_partitions, replication_factor, brokers)
        topic = TopicInfo(
            name,
            uuid.uuid4(),
            [PartitionInfo(name, i, r, r[0], 0, list(r)) for i, r in enumerate(replicas)],
            internal,
        )
        if validate_only:
            return topic
        self.topics[name] = topic
        self.topic_names[topic.topic_id] = name
        if configs:
            self.configs.set_topic_configs(name, {k: v for k, v in configs.items() if v})
        self._publish(topic.partitions)
        return topic

    def create_partitions(
        self,
        name: str,
        count: int,
        assignments: list[list[int]] | None = None,
        *,
        validate_only: bool = False,
    ) -> None:
        topic = self.topics.get(name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        current = len(topic.partitions)
        if count <= current:
            raise InvalidPartitionsError(
                f"The topic {name} currently has {current} partition(s); "
                f"{count} would not be an increase."
            )
        added = count - current
        rf = len(topic.partitions[0].replicas)
        if assignments is not None:
            if len(assignments) != added:
                raise InvalidReplicaAssignmentError(
                    f"{len(assignments)} assignments for {added} new partitions"
                )
            replicas = _check_assignments(
                {current + i: a for i, a in enumerate(assignments)}, self.brokers
            )
            if any(len(r) != rf for r in replicas):
                raise InvalidReplicaAssignmentError(
                    f"every partition of {name} needs {rf} replicas"
                )
        else:
            brokers = self.alive_brokers()
            if rf > len(brokers):
                raise InvalidReplicationFactorError(_too_few_brokers(rf, brokers))
            replicas = self._assign(added, rf, brokers)
        if validate_only:
            return
        new = [
            PartitionInfo(name, current + i, r, r[0], 0, list(r)) for i, r in enumerate(replicas)
        ]
        topic.partitions.extend(new)
        self._publish(new)

    def delete_topic(self, name: str) -> TopicInfo:
        topic = self.topics.pop(name, None)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        self.topic_names.pop(topic.topic_id, None)
        self.configs.drop_topic(name)
        self.changed()
        for listener in self.listeners:
            listener.on_topic_deleted(topic)
        return topic

    def update_partition(self, info: PartitionInfo) -> None:
        """Publish a change of leader, replicas or ISR."""
        info.partition_epoch += 1
        self._publish([info])

    def set_isr(self, topic: str, index: int, isr: list[int], leader: int | None = None) -> None:
        """A leader shrinks or expands its ISR (Kafka's AlterPartition). A ``leader`` that
        cannot reach the controller changes nothing, and a fenced broker does not join."""
        info = self.partition(topic, index)
        if info is None:
            return
        if leader is not None:
            if not self.reaches_controller(leader):
                return
            isr = [r for r in isr if r in info.isr or self.brokers[r].alive]
        if sorted(info.isr) == sorted(isr):
            return
        old_isr = info.isr
        info.isr = [r for r in info.replicas if r in isr]
        self._track_elr(info, old_isr)
        self.update_partition(info)

    def broker_down(self, node_id: int) -> None:
        """A broker stopped (or was paused): move its leaderships, drop it from ISRs.

        A new leader comes from the ISR and gets a new leader epoch. When the broker was the
        last in-sync replica the partition has no leader until an eligible one returns:
        with eligible leader replicas on, the ISR empties and the broker joins the ELR;
        without, it stays in the ISR. Unless the topic allows an unclean election
        (``unclean.leader.election.enable``): then the first alive replica leads.
        """
        broker = self.brokers.get(node_id)
        if broker is None or not broker.alive:
            return
        broker.alive = False
        alive = {b.node_id for b in self.brokers.values() if b.alive}
        elr = self.elr_enabled()
        changed = []
        for topic in self.topics.values():
            for p in topic.partitions:
                if node_id not in p.replicas:
                    continue
                others = [r for r in p.isr if r != node_id and r in alive]
                if p.leader == node_id:
                    p.leader = others[0] if others else -1
                    p.leader_epoch += 1
                if others or elr:
                    old_isr, p.isr = p.isr, others
                    self._track_elr(p, old_isr)
                if p.leader == -1:
                    self._elect_unclean(p, [r for r in p.replicas if r in alive])
                changed.append(p)
        for p in changed:
            p.partition_epoch += 1
        self._publish(changed)

    def broker_up(self, node_id: int) -> None:
        """A broker is back: it leads what it was the last in-sync (or eligible) replica
        of, or any leaderless partition of a topic that allows an unclean election. One
        that cannot reach the controller stays fenced."""
        broker = self.brokers.get(node_id)
        if broker is None or broker.alive or not self.reaches_controller(node_id):
            return
        broker.alive = True
        changed = []
        for topic in self.topics.values():
            for p in topic.partitions:
                if node_id not in p.replicas:
                    continue
                if p.leader == -1 and node_id in p.isr:
                    p.leader = node_id
                    p.leader_epoch += 1
                elif p.leader == -1 and not p.isr and node_id in p.elr:
                    self._elect_from_elr(p, node_id)
                elif p.leader == -1:
                    self._elect_unclean(p, [node_id])
                # Followers catch up first; the leader adds them to the ISR then.
                changed.append(p)
        for p in changed:
            p.partition_epoch += 1
        self._publish(changed)

    def move_leader(self, topic: str, index: int, node_id: int) -> None:
        """Make an in-sync replica the leader (a preferred-leader election, or a test)."""
        info = self.partition(topic, index)
        if info is None:
            raise UnknownTopicOrPartitionError(f"{topic}-{index} does not exist")
        if node_id not in info.isr or not self.brokers[node_id].alive:
            raise InvalidReplicaAssignmentError(f"broker {node_id} is not an alive in-sync replica")
        if info.leader != node_id:
            info.leader = node_id
            info.leader_epoch += 1
            self.update_partition(info)

    # -- producer ids -----------------------------------------------------------------

    def set_group_configs(self, group_id: str, configs: dict[str, str]) -> None:
        """Replace a group's configs; with none left it has none."""
        self._replace_configs(self.group_configs, group_id, configs)

    def set_client_metrics(self, name: str, configs: dict[str, str]) -> None:
        """Replace a client metrics resource's configs; with none left it is gone."""
        self._replace_configs(self.client_metrics, name, configs)

    def _replace_configs(
        self, resources: dict[str, dict[str, str]], name: str, configs: dict[str, str]
    ) -> None:
        if configs:
            resources[name] = dict(configs)
        else:
            resources.pop(name, None)
        self.changed()

    # -- eligible leader replicas (KIP-966) -------------------------------------------

    def elr_enabled(self) -> bool:
        return self.features.levels.get(ELR_VERSION, 0) >= 1

    def update_features(self, updates: Sequence[FeatureUpdate], validate_only: bool) -> None:
        """Change feature levels (UpdateFeatures); raises INVALID_UPDATE_VERSION, changing
        nothing, when Kafka would refuse. Turning eligible leader replicas off forgets every
        ELR (an empty ISR gets its eligible replicas back); turning them on sets the
        cluster-wide min.insync.replicas, as Kafka does."""
        was = self.elr_enabled()
        self.features.update(updates, validate_only, self.change_count + 1)
        if validate_only or not updates:
            return
        if was and not self.elr_enabled():
            changed = [
                p for t in self.topics.values() for p in t.partitions if p.elr or p.last_known_elr
            ]
            for p in changed:
                # A partition waiting for an eligible replica waits for it as an ISR member.
                if not p.isr:
                    p.isr = [r for r in p.replicas if r in p.elr]
                p.elr, p.last_known_elr = [], []
                p.partition_epoch += 1
            self._publish(changed)
        elif not was and self.elr_enabled():
            self.pin_cluster_min_isr()
        self.changed()

    def pin_cluster_min_isr(self) -> None:
        """With eligible leader replicas on, Kafka keeps min.insync.replicas as a
        cluster-wide dynamic config (the static value, unless one is set already)."""
        if MIN_ISR in self.configs.dynamic_default:
            return
        value, _ = self.configs.broker_raw(MIN_ISR)
        default = {**self.configs.dynamic_default, MIN_ISR: str(value if value is not None else 1)}
        self.configs.set_dynamic_broker(None, default)

    def _track_elr(self, p: PartitionInfo, old_isr: list[int]) -> None:
        """Keep the ELR as Kafka's controller does when the ISR changes: below
        min.insync.replicas the replicas that leave the ISR become eligible (and the ones
        that were stay so); the last known ELR keeps those no longer in ISR or ELR; at or
        above min.insync.replicas both are empty."""
        if not self.elr_enabled():
            return
        if len(p.isr) >= self.configs.topic_config(p.topic).min_insync_replicas:
            p.elr, p.last_known_elr = [], []
            return
        candidates = set(p.elr) | set(old_isr)
        elr = sorted(candidates - set(p.isr))
        known = sorted((candidates | set(p.last_known_elr)) - set(p.isr) - set(elr))
        p.elr, p.last_known_elr = elr, known

    def _elect_from_elr(self, p: PartitionInfo, node_id: int) -> None:
        """An eligible replica leads a partition whose ISR is empty (it holds every
        committed record, so this is a clean election) and is the new ISR."""
        old_isr = p.isr
        p.leader, p.isr = node_id, [node_id]
        p.leader_epoch += 1
        p.elr = [r for r in p.elr if r != node_id]
        self._track_elr(p, old_isr)

    def _elect_unclean(self, p: PartitionInfo, candidates: list[int]) -> None:
        """Kafka's last resort when the topic allows it: a replica outside the ISR and ELR
        leads, alone in the ISR, and what only the lost replicas had is lost."""
        if not candidates or not self.configs.topic_value(p.topic, UNCLEAN):
            return
        logging.getLogger("kafkagen.broker").warning(
            "%s-%d: unclean election of broker %d", p.topic, p.index, candidates[0]
        )
        p.leader, p.isr = candidates[0], [candidates[0]]
        p.leader_epoch += 1
        p.elr, p.last_known_elr = [], []

    def allocate_producer_id(self) -> int:
        pid = self._next_producer_id
        self._next_producer_id += 1
        if self._next_producer_id > self._producer_id_block_end:
            self._producer_id_block_end = pid + PRODUCER_ID_BLOCK
            self.changed()
        return pid

    # -- saving -------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The image as JSON-ready data: everything but the brokers' addresses and liveness."""
        return {
            "version": 1,
            "cluster_id": self.cluster_id,
            "brokers": sorted(self.brokers),
            "next_producer_id": self._producer_id_block_end,
            "next_start": self._next_start,
            "topics": [
                {
                    "name": t.name,
                    "topic_id": str(t.topic_id),
                    "internal": t.internal,
                    "partitions": [
                        {
                            "replicas": p.replicas,
                            "leader": p.leader,
                            "leader_epoch": p.leader_epoch,
                            "isr": p.isr,
                            "elr": p.elr,
                            "last_known_elr": p.last_known_elr,
                            "partition_epoch": p.partition_epoch,
                        }
                        for p in t.partitions
                    ],
                }
                for t in self.topics.values()
            ],
            "configs": {
                "default": self.configs.dynamic_default,
                "brokers": {str(b): c for b, c in self.configs.dynamic_broker.items()},
                "topics": self.configs.topics,
            },
            "acls": [
                [
                    b.resource_type,
                    b.resource_name,
                    b.pattern_type,
                    b.principal,
                    b.host,
                    b.operation,
                    b.permission_type,
                ]
                for b in self.acls.find(_ANY_ACL)
            ],
            "reassignments": [
                [tp.topic, tp.partition, step.original, step.target]
                for tp, step in self.reassignments.in_order()
            ],
            "features": {"levels": self.features.levels, "epoch": self.features.epoch},
            "client_metrics": self.client_metrics,
            "group_configs": self.group_configs,
        }

    def restore(self, snap: dict[str, Any]) -> None:
        """Load an image saved by `snapshot` (before any broker listens); raises
        ValueError naming what is wrong with it."""
        try:
            if snap.get("version") != 1:
                raise ValueError(f"unknown version {snap.get('version')!r}")
            self.cluster_id = str(snap["cluster_id"])
            self._next_producer_id = self._producer_id_block_end = int(snap["next_producer_id"])
            self._next_start = int(snap["next_start"])
            for t in snap["topics"]:
                name = str(t["name"])
                topic_id = uuid.UUID(t["topic_id"])
                parts = [
                    PartitionInfo(
                        name,
                        i,
                        [int(r) for r in p["replicas"]],
                        int(p["leader"]),
                        int(p["leader_epoch"]),
                        [int(r) for r in p["isr"]],
                        int(p["partition_epoch"]),
                        # Images saved before ELRs were kept have none.
                        [int(r) for r in p.get("elr", [])],
                        [int(r) for r in p.get("last_known_elr", [])],
                    )
                    for i, p in enumerate(t["partitions"])
                ]
                self.topics[name] = TopicInfo(name, topic_id, parts, bool(t["internal"]))
                self.topic_names[topic_id] = name
            configs = snap["configs"]
            self.configs.dynamic_default = {str(k): str(v) for k, v in configs["default"].items()}
            self.configs.dynamic_broker = {
                int(b): {str(k): str(v) for k, v in c.items()}
                for b, c in configs["brokers"].items()
            }
            self.configs.topics = {
                str(n): {str(k): str(v) for k, v in c.items()} for n, c in configs["topics"].items()
            }
            for a in snap["acls"]:
                self.acls.add(AclBinding(*a))
            # Images saved before reassignments were kept have none in progress.
            for topic, index, original, target in snap.get("reassignments", []):
                self.reassignments.restore(
                    TopicPartition(str(topic), int(index)),
                    [int(r) for r in original],
                    [int(r) for r in target],
                )
            self.client_metrics = {
                str(n): {str(k): str(v) for k, v in c.items()}
                for n, c in snap.get("client_metrics", {}).items()
            }
            self.group_configs = {
                str(g): {str(k): str(v) for k, v in c.items()}
                for g, c in snap.get("group_configs", {}).items()
            }
            # Images saved before feature levels were kept have the defaults.
            if "features" in snap:
                levels = snap["features"]["levels"]
                self.features.levels = {str(k): int(v) for k, v in levels.items()}
                self.features.epoch = int(snap["features"]["epoch"])
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"bad cluster metadata: {e!r}") from None

    def publish_all(self) -> None:
        """Tell every listener about every partition (brokers starting on restored metadata).

        A partition left without a leader (its last in-sync replica was down when the image
        was saved) gets its first in-sync replica back as leader, with a new epoch."""
        parts = [p for t in self.topics.values() for p in t.partitions]
        for p in parts:
            if p.leader < 0 and p.isr:
                p.leader = p.isr[0]
                p.leader_epoch += 1
            elif p.leader < 0 and p.elr:
                self._elect_from_elr(p, p.elr[0])
                p.partition_epoch += 1
        self._publish(parts)

    # -- internals --------------------------------------------------------------------

    def _assign(self, partitions: int, rf: int, brokers: list[int]) -> list[list[int]]:
        n = len(brokers)
        start = self._next_start
        self._next_start += 1
        return [[brokers[(start + p + i) % n] for i in range(rf)] for p in range(partitions)]

    def changed(self) -> None:
        """Tell ``on_change`` that the image changed (it saves it, with a log directory)."""
        self.change_count += 1
        if self.on_change is not None:
            self.on_change()

    def _publish(self, partitions: Sequence[PartitionInfo]) -> None:
        self.changed()
        for listener in self.listeners:
            listener.on_partitions_changed(partitions)


def _check_assignments(
    assignments: dict[int, list[int]], brokers: dict[int, BrokerInfo]
) -> list[list[int]]:
    indexes = sorted(assignments)
    first = indexes[0]
    if indexes != list(range(first, first + len(indexes))):
        raise InvalidReplicaAssignmentError("partition indexes must be consecutive")
    out = []
    sizes = set()
    for i in indexes:
        replicas = list(assignments[i])
        if not replicas:
            raise InvalidReplicaAssignmentError(f"partition {i} has no replicas")
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(f"partition {i} names a broker twice")
        unknown = [b for b in replicas if b not in brokers]
        if unknown:
            raise InvalidReplicaAssignmentError(f"partition {i}: unknown broker(s) {unknown}")
        sizes.add(len(replicas))
        out.append(replicas)
    if len(sizes) > 1:
        raise InvalidReplicaAssignmentError("all partitions need the same number of replicas")
    return out


def _collides(name: str, existing: Iterable[str]) -> bool:
    folded = name.replace(".", "_")
    return any(t != name and t.replace(".", "_") == folded for t in existing)


def _cluster_id() -> str:
    # Kafka's cluster ids are 16 random bytes in URL-safe base64 without padding.
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


def _segment_config(segment_bytes: int) -> str:
    """The topic config that carries a coordinator topic's segment size: segment.bytes, or
    Kafka's internal.segment.bytes for a size below segment.bytes' floor (which
    offsets.topic.segment.bytes and transaction.state.log.segment.bytes allow)."""
    check = topic_def("segment.bytes").check or {}
    floor = int(check.get("min") or 0)
    return "internal.segment.bytes" if segment_bytes < floor else "segment.bytes"
