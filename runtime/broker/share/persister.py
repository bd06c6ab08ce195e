"""Where share partitions' state is kept between their leaders: kafkagen's persister.

Kafka writes this state to ``__share_group_state`` through its share coordinator. kafkagen
keeps it in the memory of the cluster: every broker of one process reaches the same
persister, so a partition's new leader resumes its share groups where the old one stopped,
but nothing survives the process.

Besides the leaders' own writes, the group coordinator resets a partition's state
(AlterShareGroupOffsets) or deletes it (DeleteShareGroupOffsets, DeleteGroups): the
leaders hear of it through `on_reset` and drop what they hold of it, reading the new state
on their next use.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

from .share_partition import PartitionState

__all__ = ["ShareStatePersister"]

_Key = tuple[str, uuid.UUID, int]


class ShareStatePersister:
    """The durable state of each (group, topic id, partition)."""

    def __init__(self) -> None:
        self._states: dict[_Key, PartitionState] = {}
        #: Called with (group id, topic id, partition) when the coordinator replaces or
        #: deletes a partition's state.
        self.on_reset: list[Callable[[str, uuid.UUID, int], None]] = []

    def read(self, group_id: str, topic_id: uuid.UUID, partition: int) -> PartitionState | None:
        return self._states.get((group_id, topic_id, partition))

    def write(
        self, group_id: str, topic_id: uuid.UUID, partition: int, state: PartitionState
    ) -> None:
        self._states[(group_id, topic_id, partition)] = state

    def initialize(
        self, group_id: str, topic_id: uuid.UUID, partition: int, start_offset: int
    ) -> None:
        """The partition starts again at ``start_offset``, nothing in flight."""
        self._states[(group_id, topic_id, partition)] = PartitionState(
            start_offset, start_offset, {}
        )
        self._reset((group_id, topic_id, partition))

    def delete(self, group_id: str, topic_ids: Iterable[uuid.UUID] | None = None) -> None:
        """Forget the group's state of those topics (of every topic when None)."""
        wanted = None if topic_ids is None else set(topic_ids)
        for key in [
            k for k in self._states if k[0] == group_id and (wanted is None or k[1] in wanted)
        ]:
            del self._states[key]
            self._reset(key)

    def _reset(self, key: _Key) -> None:
        for listener in self.on_reset:
            listener(*key)

    def groups(self) -> set[str]:
        return {k[0] for k in self._states}

    def partitions_of(self, group_id: str) -> dict[tuple[uuid.UUID, int], PartitionState]:
        return {(k[1], k[2]): s for k, s in self._states.items() if k[0] == group_id}
