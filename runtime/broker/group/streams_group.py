"""Streams groups (KIP-1071): the group, its members, its topology, and how a topology is
configured against the cluster's topics.

A topology is a list of subtopologies, each with its source topics, the repartition topics
it writes and reads, its state changelog topics and its copartition groups. It is
*configured* once the cluster's topics let the coordinator count each subtopology's tasks:
the source topics must exist, repartition topics get their partition count from the
subtopologies that write them (unless the topology fixes it), copartitioned topics must
agree, and changelog topics have one partition per task. Internal topics that do not exist
yet are listed for creation; until they exist the group is not ready and answers with a
status instead of tasks.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kafkagen.runtime.purgatory import DelayedOperation
from kafkagen.runtime.topic_partition import TopicPartition

from ..sorted_keys import SortedKeysDict
from .group_model import OffsetEntry
from .sticky_task_assignor import TaskOffsets, Tasks, TaskSet

__all__ = [
    "ConfiguredTopology",
    "InternalTopic",
    "MemberState",
    "Status",
    "StreamsGroup",
    "StreamsGroupState",
    "StreamsMember",
    "Subtopology",
    "Topology",
    "configure",
    "java_hash_order",
]


class Status(enum.IntEnum):
    """StreamsGroupHeartbeat's status codes."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5


class StreamsGroupState(enum.Enum):
    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


class MemberState(enum.Enum):
    STABLE = "stable"
    UNREVOKED_TASKS = "unrevoked_tasks"
    UNRELEASED_TASKS = "unreleased_tasks"


@dataclass(frozen=True, slots=True)
class InternalTopic:
    """A repartition or changelog topic: its partitions (0: to be computed), replication
    factor (<= 0: the broker's default) and configs."""

    name: str
    partitions: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...]
    state_changelog_topics: tuple[InternalTopic, ...]
    repartition_source_topics: tuple[InternalTopic, ...]
    #: Each group: names of topics that must have the same partition count (None: the
    #: request pointed at no topic; such a topology is refused before it is configured).
    copartition_groups: tuple[tuple[str | None, ...], ...]


@dataclass(frozen=True, slots=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]


@dataclass(slots=True)
class ConfiguredTopology:
    """The outcome of `configure`: task counts when ready, else the status that says why."""

    task_counts: dict[str, int] | None
    status: tuple[Status, str] | None
    #: Internal topics that do not exist yet: name -> (partitions, the topic as declared).
    to_create: dict[str, tuple[int, InternalTopic]] = field(default_factory=dict)
    #: Partition count of every topic a task reads (source and repartition topics).
    source_partitions: dict[str, int] = field(default_factory=dict)


def configure(topology: Topology, partitions_of: Mapping[str, int]) -> ConfiguredTopology:
    """Count the tasks of ``topology`` given the existing topics' partition counts."""
    subs = topology.subtopologies
    missing = sorted({t for s in subs for t in s.source_topics if t not in partitions_of})
    if missing:
        detail = f"Source topics {', '.join(missing)} are missing."
        return ConfiguredTopology(None, (Status.MISSING_SOURCE_TOPICS, detail))
    counts: dict[str, int] = {t: partitions_of[t] for s in subs for t in s.source_topics}
    declared = {r.name: r for s in subs for r in s.repartition_source_topics}
    for name, r in declared.items():
        if r.partitions > 0:
            counts[name] = r.partitions
    # Repartition topics without a fixed count take the largest input of their writers.
    for _ in range(len(declared) + 1):
        progressed = False
        for name in declared:
            if name in counts:
                continue
            writers = [s for s in subs if name in s.repartition_sink_topics]
            inputs = [
                counts.get(t)
                for s in writers
                for t in (*s.source_topics, *(r.name for r in s.repartition_source_topics))
            ]
            if writers and all(n is not None for n in inputs):
                counts[name] = max(n for n in inputs if n is not None)
                progressed = True
        if not progressed:
            break
    unresolved = sorted(n for n in declared if n not in counts)
    if unresolved:
        detail = (
            "The partition count of repartition topics "
            f"{', '.join(unresolved)} cannot be computed from the topology."
        )
        return ConfiguredTopology(None, (Status.INCORRECTLY_PARTITIONED_TOPICS, detail))
    for s in subs:
        for group in s.copartition_groups:
            sizes = {t: counts[t] for t in group if t in counts}
            if len(set(sizes.values())) > 1:
                listed = ", ".join(f"{t}={n}" for t, n in sorted(sizes.items()))
                detail = f"Following topics do not have the same number of partitions: [{listed}]"
                return ConfiguredTopology(None, (Status.INCORRECTLY_PARTITIONED_TOPICS, detail))
    task_counts = {
        s.subtopology_id: max(
            counts[t] for t in (*s.source_topics, *(r.name for r in s.repartition_source_topics))
        )
        for s in subs
        if s.source_topics or s.repartition_source_topics
    }
    # Repartition topics first, then changelogs, each in the topology's order.
    wanted: dict[str, tuple[int, InternalTopic]] = {}
    for s in subs:
        for r in s.repartition_source_topics:
            wanted[r.name] = (counts[r.name], r)
    for s in subs:
        for c in s.state_changelog_topics:
            wanted[c.name] = (task_counts[s.subtopology_id], c)
    to_create = {}
    wrong = []
    for name, (n, topic) in wanted.items():
        existing = partitions_of.get(name)
        if existing is None:
            to_create[name] = (n, topic)
        elif existing != n:
            wrong.append(f"{name} has {existing} partitions, {n} expected")
    if wrong:
        detail = "Internal topics are incorrectly partitioned: " + "; ".join(wrong)
        return ConfiguredTopology(None, (Status.INCORRECTLY_PARTITIONED_TOPICS, detail))
    source_partitions = {
        t: counts[t]
        for s in subs
        for t in (*s.source_topics, *(r.name for r in s.repartition_source_topics))
    }
    if to_create:
        detail = f"Internal topics are missing: {_summarize(_in_kafkas_order(to_create, subs))}"
        return ConfiguredTopology(
            None, (Status.MISSING_INTERNAL_TOPICS, detail), to_create, source_partitions
        )
    return ConfiguredTopology(task_counts, None, {}, source_partitions)


@dataclass(eq=False, slots=True)
class StreamsMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    process_id: str
    rebalance_timeout_ms: int
    topology_epoch: int
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] = field(default_factory=dict)
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    #: Tasks the member owns (as the coordinator handed them out).
    assigned: Tasks = field(default_factory=Tasks)
    #: Tasks the member must give up before it gets new ones.
    pending_revocation: Tasks = field(default_factory=Tasks)
    #: The endpoint-information epoch the member last reported.
    endpoint_epoch: int = -1
    #: The changelog offsets of its tasks' state and their end offsets, as it last
    #: reported them (subtopology -> partition -> offset); kept in memory only, as Kafka.
    task_offsets: TaskOffsets = field(default_factory=dict)
    task_end_offsets: TaskOffsets = field(default_factory=dict)
    session: DelayedOperation | None = None
    revocation: DelayedOperation | None = None


@dataclass(eq=False, slots=True)
class StreamsGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    topology: Topology | None = None
    configured: ConfiguredTopology | None = None
    #: Partition counts the configured topology was computed from.
    metadata: dict[str, int] = field(default_factory=dict)
    members: dict[str, StreamsMember] = field(default_factory=dict)
    target: dict[str, Tasks] = field(default_factory=dict)
    #: Bumped whenever who owns which task changes (KIP-1071's endpoint information).
    endpoint_epoch: int = 0
    #: The first assignment waits until then (group.streams.initial.rebalance.delay.ms;
    #: 0 once it was made).
    assign_after_ms: int = 0
    #: When the assignor last computed the target: the next waits until
    #: ``group.streams.assignment.interval.ms`` after it (0: never computed).
    assignment_timestamp_ms: int = 0
    #: Computes the target once the interval is over (None: no target waiting).
    assignment_timer: DelayedOperation | None = None
    #: The group's configs the last target was computed with (`num.standby.replicas`):
    #: a heartbeat that finds them changed moves the group epoch, as in Kafka 4.4.
    assignment_configs: dict[str, str] = field(default_factory=dict)
    shutdown_requested: bool = False
    offsets: SortedKeysDict[TopicPartition, OffsetEntry] = field(default_factory=SortedKeysDict)
    dead: bool = False
    #: The state records last written: member id ("" for the group's) -> key -> value.
    persisted: dict[str, dict[bytes, bytes]] = field(default_factory=dict)

    @property
    def state(self) -> StreamsGroupState:
        if not self.members:
            return StreamsGroupState.EMPTY
        if self.configured is None or self.configured.task_counts is None:
            return StreamsGroupState.NOT_READY
        if self.assignment_epoch < self.group_epoch:
            return StreamsGroupState.ASSIGNING
        if any(
            m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE
            for m in self.members.values()
        ):
            return StreamsGroupState.RECONCILING
        return StreamsGroupState.STABLE

    def active_owners(self) -> dict[tuple[str, int], str]:
        """Who holds each active task now, counting tasks still being revoked."""
        out: dict[tuple[str, int], str] = {}
        for m in self.members.values():
            for kind in (m.assigned.active, m.pending_revocation.active):
                for sub, ps in kind.items():
                    for p in ps:
                        out[sub, p] = m.member_id
        return out


def task_partitions(
    topology: Topology, source_partitions: Mapping[str, int], tasks: TaskSet
) -> dict[str, set[int]]:
    """The topic partitions the given tasks read: topic -> partitions."""
    by_id = {s.subtopology_id: s for s in topology.subtopologies}
    out: dict[str, set[int]] = {}
    for sub, ps in tasks.items():
        s = by_id.get(sub)
        if s is None:
            continue
        for t in (*s.source_topics, *(r.name for r in s.repartition_source_topics)):
            n = source_partitions.get(t, 0)
            out.setdefault(t, set()).update(p for p in ps if p < n)
    return out


def java_hash_order(names: list[str]) -> list[str]:
    """``names`` in the order a Java ``HashMap`` they were put into in this order iterates
    them: by bucket of their String hash (spread as HashMap does, over the table its size
    grew to), then in insertion order within a bucket."""
    capacity = 16
    while len(names) > capacity * 3 // 4:
        capacity *= 2

    def bucket(name: str) -> int:
        h = 0
        data = name.encode("utf-16-be")
        for i in range(0, len(data), 2):
            h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return [n for _, _, n in sorted((bucket(n), i, n) for i, n in enumerate(names))]


def _in_kafkas_order(missing: Mapping[str, object], subs: Sequence[Subtopology]) -> list[str]:
    """The missing internal topics in the order Kafka 4.4 names them: put into a hash map
    subtopology by subtopology (by id), each one's repartition topics and then its
    changelogs, each group in its own hash map's order."""
    put: list[str] = []
    for s in sorted(subs, key=lambda s: s.subtopology_id):
        put += java_hash_order([r.name for r in s.repartition_source_topics])
        put += java_hash_order([c.name for c in s.state_changelog_topics])
    put = list(dict.fromkeys(put))
    return [n for n in java_hash_order(put) if n in missing]


def _summarize(topics: list[str]) -> str:
    """Kafka's way of naming topics in a status: the first three, then how many more."""
    more = f" and {len(topics) - 3} additional topics" if len(topics) > 3 else ""
    return ", ".join(topics[:3]) + more
