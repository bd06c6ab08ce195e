"""The broker's plain types, the leaf every other broker module may import.

Names of partitions and brokers as the metadata image holds them, the internal topics,
and the function that maps a group or transactional id to its coordinator's partition.
Nothing here imports another broker module.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kafkagen.runtime.message import native
from kafkagen.runtime.topic_partition import TopicPartition

__all__ = [
    "OFFSETS_TOPIC",
    "TXN_STATE_TOPIC",
    "BrokerInfo",
    "MetadataListener",
    "PartitionInfo",
    "TopicInfo",
    "java_hash",
    "hash_partition",
]

#: The group coordinator's log: committed offsets and group state.
OFFSETS_TOPIC = "__consumer_offsets"
#: The transaction coordinator's log: the state of every transactional id.
TXN_STATE_TOPIC = "__transaction_state"


@dataclass(slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    #: False while a broker is stopped or paused (replication tests will flip it).
    alive: bool = True
    #: Listener name -> (host, port) of each listener; ``host``/``port`` are the first's.
    endpoints: dict[str, tuple[str, int]] = field(default_factory=dict)


@dataclass(slots=True)
class PartitionInfo:
    topic: str
    index: int
    replicas: list[int]
    leader: int
    leader_epoch: int = 0
    isr: list[int] = field(default_factory=list)
    #: Bumped on every change of replicas, ISR or leader (Kafka's partition epoch).
    partition_epoch: int = 0
    #: Eligible leader replicas (KIP-966): left the ISR while it was below
    #: min.insync.replicas, so they hold every committed record and may lead.
    elr: list[int] = field(default_factory=list)
    #: The last ELR members known, once they are no longer eligible.
    last_known_elr: list[int] = field(default_factory=list)

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.index)


@dataclass(slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionInfo]
    internal: bool = False


class MetadataListener:
    """What a broker implements to follow metadata changes."""

    def on_partitions_changed(self, partitions: Sequence[PartitionInfo]) -> None:
        """These partitions are new or changed (leader, replicas, ISR)."""

    def on_topic_deleted(self, topic: TopicInfo) -> None:
        """The topic and all its partitions are gone."""


def _java_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, wrapping at 32 bits)."""
    h = 0
    raw = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(raw), 2):
        h = (31 * h + ((raw[i] << 8) | raw[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


#: Java's String.hashCode of a str: compiled (about 70x faster: coordinators hash every id a
#: request or a listing names, and a cache of them grew with every new id), else in Python.
java_hash: Callable[[str], int] = _java_hash if native is None else native.java_hash


def hash_partition(key: str, partitions: int) -> int:
    """The internal-topic partition of a group, transactional or share-state key, as Kafka
    computes it."""
    h = java_hash(key)
    return (0 if h == -(2**31) else abs(h)) % partitions
