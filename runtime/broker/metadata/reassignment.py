"""Partition reassignments, as the controller runs them (KIP-455).

A reassignment gives a partition target replicas. While it runs, the partition's replicas
are the targets followed by the original replicas that are not targets; the new replicas
(``adding``) copy the log through the normal replica fetcher and join the ISR when they
catch up. Once every target replica is in the ISR the reassignment completes: the replica
set becomes the target, the removed replicas (``removing``) drop out of it and out of the
ISR, and if the leader was one of them an in-sync target replica takes over with a new
leader epoch. Cancelling puts the original replicas back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kafkagen.runtime.errors import (
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)
from kafkagen.runtime.topic_partition import TopicPartition

from ..types import BrokerInfo, MetadataListener, PartitionInfo, TopicInfo

__all__ = ["ControllerImage", "OngoingReassignment", "ReassignmentManager"]


class ControllerImage(Protocol):
    """What reassignments read and change of the cluster's metadata (`ClusterMetadata`)."""

    @property
    def brokers(self) -> Mapping[int, BrokerInfo]: ...

    def partition(self, topic: str, index: int) -> PartitionInfo | None: ...

    def alive_brokers(self) -> list[int]: ...

    def update_partition(self, info: PartitionInfo) -> None: ...

    def changed(self) -> None: ...


@dataclass(slots=True)
class OngoingReassignment:
    #: The replicas before the reassignment began (what a cancel restores).
    original: list[int]
    target: list[int]

    @property
    def replicas(self) -> list[int]:
        return [*self.target, *(r for r in self.original if r not in self.target)]

    @property
    def adding(self) -> list[int]:
        return [r for r in self.target if r not in self.original]

    @property
    def removing(self) -> list[int]:
        return [r for r in self.original if r not in self.target]


class ReassignmentManager(MetadataListener):
    """The cluster's ongoing reassignments; completes them as their targets join the ISR."""

    def __init__(self, metadata: ControllerImage) -> None:
        self.metadata = metadata
        self.ongoing: dict[TopicPartition, OngoingReassignment] = {}
        self._scheduled = False

    # -- requests ---------------------------------------------------------------------

    def alter(
        self,
        topic: str,
        index: int,
        target: Sequence[int] | None,
        allow_replication_factor_change: bool = True,
    ) -> None:
        """Start, replace (``target``) or cancel (None) one partition's reassignment.

        Raises UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT,
        NO_REASSIGNMENT_IN_PROGRESS or, when the replication factor may not change
        (KIP-860) and ``target`` changes it, INVALID_REPLICATION_FACTOR, naming the partition.
        """
        md = self.metadata
        info = md.partition(topic, index)
        if info is None:
            raise UnknownTopicOrPartitionError(f"{topic}-{index} does not exist")
        tp = info.tp
        ongoing = self.ongoing.get(tp)
        if target is None:
            if ongoing is None:
                raise NoReassignmentInProgressError(f"{tp} has no reassignment to cancel")
            del self.ongoing[tp]
            self._apply(info, list(ongoing.original))
            self.metadata.changed()
            return
        replicas = list(target)
        if not replicas:
            raise InvalidReplicaAssignmentError(f"{tp}: the target replica list is empty")
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                f"{tp}: the target replicas {replicas} repeat a broker"
            )
        unknown = [r for r in replicas if r not in md.brokers]
        if unknown:
            raise InvalidReplicaAssignmentError(
                f"{tp}: the target replicas name unknown broker(s) {unknown}"
            )
        original = ongoing.original if ongoing is not None else list(info.replicas)
        if not allow_replication_factor_change and len(replicas) != len(original):
            raise InvalidReplicationFactorError(
                f"{tp}: the target replicas {replicas} would change the replication factor "
                f"from {len(original)} to {len(replicas)}, which the request does not allow"
            )
        step = OngoingReassignment(list(original), replicas)
        if not step.adding and not step.removing:
            # Same brokers (perhaps reordered): nothing to copy, done at once.
            self.ongoing.pop(tp, None)
            self._apply(info, replicas)
            self.metadata.changed()
            return
        self.ongoing[tp] = step
        self._apply(info, step.replicas)
        self._maybe_complete(info)
        self.metadata.changed()  # saved even when the replica set stayed the same

    def restore(self, tp: TopicPartition, original: list[int], target: list[int]) -> None:
        """An ongoing reassignment from a saved image (it goes on where it was)."""
        self.ongoing[tp] = OngoingReassignment(original, target)

    def in_order(self) -> list[tuple[TopicPartition, OngoingReassignment]]:
        """Every ongoing reassignment, by topic name then partition."""
        return sorted(self.ongoing.items())

    # -- metadata events --------------------------------------------------------------

    def on_partitions_changed(self, partitions: Sequence[PartitionInfo]) -> None:
        if not self.ongoing or self._scheduled:
            return
        if not any(
            p.tp in self.ongoing and self._targets_in_sync(p, self.ongoing[p.tp])
            for p in partitions
        ):
            return
        # Not from inside the publish that told us: finish after it, on the loop.
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.complete_ready()
            return
        self._scheduled = True
        loop.call_soon(self.complete_ready)

    def on_topic_deleted(self, topic: TopicInfo) -> None:
        for tp in [tp for tp in self.ongoing if tp.topic == topic.name]:
            del self.ongoing[tp]

    def complete_ready(self) -> None:
        """Finish every reassignment whose target replicas are all in the ISR."""
        self._scheduled = False
        for tp in list(self.ongoing):
            info = self.metadata.partition(tp.topic, tp.partition)
            if info is None:
                self.ongoing.pop(tp, None)
                continue
            self._maybe_complete(info)

    # -- internals --------------------------------------------------------------------

    @staticmethod
    def _targets_in_sync(info: PartitionInfo, step: OngoingReassignment) -> bool:
        return all(r in info.isr for r in step.target)

    def _maybe_complete(self, info: PartitionInfo) -> None:
        step = self.ongoing.get(info.tp)
        if step is None or not self._targets_in_sync(info, step):
            return
        del self.ongoing[info.tp]
        self._apply(info, list(step.target))

    def _apply(self, info: PartitionInfo, replicas: list[int]) -> None:
        """Set the replica set, keep the ISR within it, and elect a leader if it left."""
        if replicas == info.replicas:
            return
        removed = any(r not in replicas for r in info.replicas)
        alive = set(self.metadata.alive_brokers())
        isr = [r for r in replicas if r in info.isr]
        if info.leader not in replicas:
            candidates = [r for r in replicas if r in isr and r in alive]
            info.leader = candidates[0] if candidates else -1
            removed = True
        if not isr:
            # Nobody in sync is left: keep the old ISR's survivors out, wait for the leader.
            isr = [info.leader] if info.leader >= 0 else []
        info.replicas = replicas
        info.isr = isr
        if removed:
            # Kafka bumps the leader epoch when replicas leave, fencing the removed ones.
            info.leader_epoch += 1
        self.metadata.update_partition(info)
