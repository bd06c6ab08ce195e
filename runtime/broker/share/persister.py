"""How share partitions' leaders and the group coordinator reach share partitions' state:
kafkagen's persister, a client of the share coordinators (Kafka's DefaultStatePersister).

Each call goes to the broker coordinating the share partition (`ShareCoordinator`), whose
state is kept in ``__share_group_state``; a partition's new leader reads there what the old
one wrote. The persister speaks the leaders' terms (`PartitionState`: a start, an end and
each in-flight record's state and delivery count) and the coordinator Kafka's (batches of
records in the same state).

Besides the leaders' own writes, the group coordinator resets a partition's state
(AlterShareGroupOffsets) or deletes it (DeleteShareGroupOffsets, DeleteGroups): the
leaders hear of it through `on_reset` and drop what they hold of it, reading the new state
on their next use.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

from kafkagen.runtime.errors import KafkaError

from .share_coordinator import Key, ShareCoordinator, ShareState, StateBatch
from .share_partition import PartitionState

__all__ = ["ShareStatePersister"]


class ShareStatePersister:
    """The durable state of each (group, topic id, partition), through the coordinators:
    ``coordinator_for`` names the share coordinator of a key (None: none is serving),
    ``coordinators`` lists every serving one."""

    def __init__(
        self,
        coordinator_for: Callable[[Key], ShareCoordinator | None],
        coordinators: Callable[[], Iterable[ShareCoordinator]],
    ) -> None:
        self._coordinator_for = coordinator_for
        self._coordinators = coordinators
        #: Called with (group id, topic id, partition) when the coordinator replaces or
        #: deletes a partition's state.
        self.on_reset: list[Callable[[str, uuid.UUID, int], None]] = []

    def _call(self, key: Key, fn: Callable[[ShareCoordinator], object]) -> object:
        coordinator = self._coordinator_for(key)
        if coordinator is None:
            return None
        try:
            return fn(coordinator)
        except KafkaError:
            return None  # the coordinator is moving: as if there were no state yet

    def read(self, group_id: str, topic_id: uuid.UUID, partition: int) -> PartitionState | None:
        key = (group_id, topic_id, partition)
        state = self._call(key, lambda c: c.read(key))
        return None if state is None else _partition_state(state)  # type: ignore[arg-type]

    def write(
        self, group_id: str, topic_id: uuid.UUID, partition: int, state: PartitionState
    ) -> None:
        key = (group_id, topic_id, partition)
        batches = _batches(state.records)
        done = state.delivery_complete_count()
        self._call(
            key, lambda c: c.update(key, state.leader_epoch, state.start_offset, done, batches)
        )

    def initialize(
        self, group_id: str, topic_id: uuid.UUID, partition: int, start_offset: int
    ) -> None:
        """The partition starts again at ``start_offset``, nothing in flight."""
        key = (group_id, topic_id, partition)
        old = self._call(key, lambda c: c.read(key))
        epoch = 0 if old is None else old.state_epoch + 1  # type: ignore[attr-defined]
        self._call(key, lambda c: c.snapshot(key, ShareState(epoch, 0, start_offset)))
        self._reset(key)

    def delete(self, group_id: str, topic_ids: Iterable[uuid.UUID] | None = None) -> None:
        """Forget the group's state of those topics (of every topic when None)."""
        wanted = None if topic_ids is None else set(topic_ids)
        for key in self._keys(group_id):
            if wanted is None or key[1] in wanted:
                self._call(key, lambda c, k=key: c.delete(k))  # type: ignore[misc]
                self._reset(key)

    def _reset(self, key: Key) -> None:
        for listener in self.on_reset:
            listener(*key)

    def _keys(self, group_id: str) -> list[Key]:
        return [k for c in self._coordinators() for k in c.keys_of(group_id)]

    def partitions_of(self, group_id: str) -> dict[tuple[uuid.UUID, int], PartitionState]:
        out = {}
        for key in self._keys(group_id):
            state = self.read(*key)
            if state is not None:
                out[key[1], key[2]] = state
        return out


def _batches(records: dict[int, tuple[int, int]]) -> list[StateBatch]:
    """In-flight records as batches of consecutive offsets in the same state and count."""
    out: list[StateBatch] = []
    for offset in sorted(records):
        state, count = records[offset]
        if out and out[-1][1] == offset - 1 and out[-1][2:] == (state, count):
            out[-1] = (out[-1][0], offset, state, count)
        else:
            out.append((offset, offset, state, count))
    return out


def _partition_state(state: ShareState) -> PartitionState:
    records = {
        offset: (s, count)
        for first, last, s, count in state.batches
        for offset in range(first, last + 1)
    }
    end = max(records, default=state.start_offset - 1) + 1
    return PartitionState(
        state.start_offset, max(end, state.start_offset), records, state.leader_epoch
    )
