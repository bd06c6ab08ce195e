"""Where share partitions' state is kept between their leaders: kafkagen's persister.

Kafka writes this state to ``__share_group_state`` through its share coordinator. kafkagen
keeps it in the memory of the cluster: every broker of one process reaches the same
persister, so a partition's new leader resumes its share groups where the old one stopped,
but nothing survives the process.
"""

from __future__ import annotations

import uuid

from .share_partition import PartitionState

__all__ = ["ShareStatePersister"]

_Key = tuple[str, uuid.UUID, int]


class ShareStatePersister:
    """The durable state of each (group, topic id, partition)."""

    def __init__(self) -> None:
        self._states: dict[_Key, PartitionState] = {}

    def read(self, group_id: str, topic_id: uuid.UUID, partition: int) -> PartitionState | None:
        return self._states.get((group_id, topic_id, partition))

    def write(
        self, group_id: str, topic_id: uuid.UUID, partition: int, state: PartitionState
    ) -> None:
        self._states[(group_id, topic_id, partition)] = state

    def delete_group(self, group_id: str) -> None:
        for key in [k for k in self._states if k[0] == group_id]:
            del self._states[key]

    def groups(self) -> set[str]:
        return {k[0] for k in self._states}

    def partitions_of(self, group_id: str) -> dict[tuple[uuid.UUID, int], PartitionState]:
        return {(k[1], k[2]): s for k, s in self._states.items() if k[0] == group_id}
