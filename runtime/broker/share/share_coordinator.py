"""The share coordinator (Kafka's ``share-coordinator`` module): share partitions' state in
``__share_group_state``, in Kafka's record formats.

A share partition (group, topic id, partition) is coordinated by the leader of the
``__share_group_state`` partition its key ``group:topicId:partition`` hashes onto. Each
write is one record: a ShareUpdate with the batches that changed (merged over the state:
a batch replaces what it covers, and batches before the start offset go), or, every
``share.coordinator.snapshot.update.records.per.snapshot`` updates and on initialisation,
a ShareSnapshot with the whole state; a deletion is a tombstone. A broker that takes over
a partition of the topic replays it: snapshots replace, updates merge, tombstones delete,
so the state survives a leader move and, with ``--log-dir``, a restart.

The state changes in memory when written and the record follows with acks=all, so a
read right after a write sees it; a record the log then refuses is logged and lost.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kafkagen.generated.share_snapshot_key import ShareSnapshotKey
from kafkagen.generated.share_snapshot_value import ShareSnapshotValue
from kafkagen.generated.share_update_key import ShareUpdateKey
from kafkagen.generated.share_update_value import ShareUpdateValue
from kafkagen.runtime.errors import (
    FencedLeaderEpochError,
    FencedStateEpochError,
    InvalidRequestError,
    KafkaError,
    UnknownTopicOrPartitionError,
)
from kafkagen.runtime.jsonform import uuid_to_json
from kafkagen.runtime.records import Record, iter_batches

from ..config.store import ConfigStore
from ..coordinator import record_format
from ..coordinator.coordinator_log import CoordinatorLog
from ..metadata.cluster_metadata import ClusterMetadata
from ..storage.partition import Partition
from ..storage.replica_manager import ReplicaManager
from ..types import hash_partition

__all__ = ["SHARE_STATE_TOPIC", "ShareCoordinator", "ShareState", "StateBatch", "coordinator_key"]

_log = logging.getLogger("kafkagen.broker")

SHARE_STATE_TOPIC = "__share_group_state"
#: (group id, topic id, partition): a share partition.
Key = tuple[str, uuid.UUID, int]
#: (first offset, last offset, delivery state, delivery count).
StateBatch = tuple[int, int, int, int]
_KEYS: dict[int, type] = {0: ShareSnapshotKey, 1: ShareUpdateKey}


@dataclass(slots=True)
class ShareState:
    """One share partition's state as the coordinator keeps it."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int = -1
    batches: list[StateBatch] = field(default_factory=list)
    snapshot_epoch: int = 0
    create_ms: int = 0
    write_ms: int = 0


def coordinator_key(key: Key) -> str:
    """What the topic partition is chosen by: ``group:topicId:partition``, as Kafka."""
    return f"{key[0]}:{uuid_to_json(key[1])}:{key[2]}"


def merge(old: list[StateBatch], new: list[StateBatch], start: int) -> list[StateBatch]:
    """``old`` with ``new`` laid over it (a new batch replaces the offsets it covers),
    nothing before ``start``."""
    out: list[StateBatch] = []
    for first, last, state, count in old:
        pieces = [(first, last)]
        for nf, nl, _, _ in new:
            pieces = [
                part
                for f, lo in pieces
                for part in ((f, min(lo, nf - 1)), (max(f, nl + 1), lo))
                if part[0] <= part[1]
            ]
        out += [(f, lo, state, count) for f, lo in pieces]
    out += new
    return sorted((max(f, start), lo, s, c) for f, lo, s, c in out if lo >= start)


class ShareCoordinator:
    """The share partitions whose ``__share_group_state`` partitions this broker leads."""

    def __init__(
        self,
        node_id: int,
        configs: ConfigStore,
        metadata: ClusterMetadata,
        replica_manager: ReplicaManager,
    ) -> None:
        self.log = CoordinatorLog(
            SHARE_STATE_TOPIC,
            node_id,
            configs,
            metadata,
            replica_manager,
            partitions_config="share.coordinator.state.topic.num.partitions",
            replication_config="share.coordinator.state.topic.replication.factor",
            segment_config="share.coordinator.state.topic.segment.bytes",
            write_timeout_ms=lambda: configs.broker_int("share.coordinator.write.timeout.ms"),
            on_load=self._load,
            on_unload=self._unload,
        )
        self.states: dict[Key, ShareState] = {}
        #: Update records written since each partition's last snapshot.
        self._updates: dict[Key, int] = {}
        #: Inside `writing_together`: state-topic partition -> (a key routed there, the
        #: records waiting for the block's end).
        self._together: dict[int, tuple[Key, list[Record]]] | None = None

    def partition_of(self, key: Key) -> int:
        return hash_partition(coordinator_key(key), self.log.num_partitions)

    def check_owner(self, key: Key) -> None:
        """Raise NOT_COORDINATOR (or COORDINATOR_NOT_AVAILABLE) unless this broker owns it."""
        self.log.check_owner(coordinator_key(key))

    # -- the share-group state APIs (Kafka's checks, in its order) ----------------------

    def _check(self, key: Key, initialized: bool = False) -> ShareState | None:
        """The state, after Kafka's checks: this broker coordinates the key, the
        partition is not negative, the state exists when ``initialized`` (INVALID_REQUEST
        otherwise), the topic and partition exist (UNKNOWN_TOPIC_OR_PARTITION)."""
        self.check_owner(key)
        if key[2] < 0:
            raise InvalidRequestError("The partition id must not be negative.")
        state = self.states.get(key)
        if initialized and state is None:
            raise InvalidRequestError(f"The share partition {coordinator_key(key)} has no state.")
        name = self.log.metadata.topic_names.get(key[1])
        if name is None or self.log.metadata.partition(name, key[2]) is None:
            raise UnknownTopicOrPartitionError()
        return state

    def initialize_state(self, key: Key, state_epoch: int, start_offset: int) -> None:
        """InitializeShareGroupState: a new snapshot, unless it is older (FENCED_STATE_EPOCH)."""
        old = self._check(key)
        if state_epoch != -1 and old is not None and old.state_epoch > state_epoch:
            raise FencedStateEpochError()
        self.snapshot(key, ShareState(state_epoch, 0, start_offset, 0))

    def read_state(self, key: Key, leader_epoch: int) -> ShareState:
        """ReadShareGroupState: the state, its leader epoch moved to the reader's."""
        state = self._check(key, initialized=True)
        assert state is not None
        if state.leader_epoch > leader_epoch:
            raise FencedLeaderEpochError()
        if leader_epoch != -1 and leader_epoch != state.leader_epoch:
            self.update(key, leader_epoch, -1, state.delivery_complete_count, [])
        return state

    def write_state(
        self,
        key: Key,
        leader_epoch: int,
        state_epoch: int,
        start_offset: int,
        delivery_complete_count: int,
        batches: list[StateBatch],
    ) -> None:
        """WriteShareGroupState, fenced by older leader or state epochs."""
        state = self._check(key, initialized=True)
        assert state is not None
        if leader_epoch != -1 and state.leader_epoch > leader_epoch:
            raise FencedLeaderEpochError()
        if state_epoch != -1 and state.state_epoch > state_epoch:
            raise FencedStateEpochError()
        self.update(key, leader_epoch, start_offset, delivery_complete_count, batches)

    def summary(self, key: Key) -> ShareState | None:
        """ReadShareGroupStateSummary: the state, None if there is none (no error)."""
        return self._check(key)

    def delete_state(self, key: Key) -> None:
        """DeleteShareGroupState: a tombstone if there is state (no error otherwise)."""
        if self._check(key) is not None:
            self.delete(key)

    # -- state changes ------------------------------------------------------------------

    def read(self, key: Key) -> ShareState | None:
        self.check_owner(key)
        return self.states.get(key)

    def keys_of(self, group_id: str) -> list[Key]:
        return [k for k in self.states if k[0] == group_id]

    def snapshot(self, key: Key, state: ShareState) -> None:
        """Replace the state whole (a ShareSnapshot record)."""
        self.check_owner(key)
        now = self.log.now_ms()
        old = self.states.get(key)
        state.snapshot_epoch = 0 if old is None else old.snapshot_epoch + 1
        state.create_ms = now if old is None else old.create_ms
        state.write_ms = now
        self.states[key] = state
        self._updates[key] = 0
        self._append(key, self._snapshot_record(key, state))

    def update(
        self,
        key: Key,
        leader_epoch: int,
        start_offset: int,
        delivery_complete_count: int,
        batches: list[StateBatch],
    ) -> None:
        """Lay ``batches`` over the state and move its start (a ShareUpdate record, or a
        snapshot once enough updates were written since the last)."""
        self.check_owner(key)
        state = self.states.get(key)
        if state is None:
            self.snapshot(
                key, ShareState(0, leader_epoch, start_offset, delivery_complete_count, batches)
            )
            return
        start = state.start_offset if start_offset < 0 else start_offset
        state.batches = merge(state.batches, batches, start)
        state.start_offset = start
        state.leader_epoch = leader_epoch
        state.delivery_complete_count = delivery_complete_count
        state.write_ms = self.log.now_ms()
        per_snapshot = self.log.cfg("share.coordinator.snapshot.update.records.per.snapshot")
        if self._updates.get(key, 0) >= per_snapshot:
            self.snapshot(key, state)
            return
        self._updates[key] = self._updates.get(key, 0) + 1
        value = ShareUpdateValue(
            snapshot_epoch=state.snapshot_epoch,
            leader_epoch=leader_epoch,
            start_offset=start_offset,
            delivery_complete_count=delivery_complete_count,
            state_batches=[_batch(ShareUpdateValue.StateBatch, b) for b in batches],
        )
        self._append(key, Record(key=_key_bytes(ShareUpdateKey, key), value=_value(value)))

    def on_topic_deleted(self, topic_id: uuid.UUID) -> None:
        """The state of every group in a deleted topic goes (tombstones), as Kafka's share
        coordinator cleans up once the metadata drops a topic."""
        with self.writing_together():
            for key in [k for k in self.states if k[1] == topic_id]:
                try:
                    self.delete(key)
                except KafkaError as e:  # its partition is moving: the next owner replays it
                    _log.debug("share state of %s not deleted: %s", key, e)

    def delete(self, key: Key) -> None:
        """Forget the state (a tombstone)."""
        self.check_owner(key)
        self.states.pop(key, None)
        self._updates.pop(key, None)
        self._append(key, Record(key=_key_bytes(ShareSnapshotKey, key), value=None))

    @contextlib.contextmanager
    def writing_together(self) -> Iterator[None]:
        """The records written inside the block go out when it ends, one batch per
        state-topic partition, as Kafka's coordinator writes what one request or event
        produced: a request or a deleted topic touching a thousand share partitions makes
        at most one batch per partition of ``__share_group_state``, not a thousand."""
        if self._together is not None:
            yield  # an outer block writes them
            return
        self._together = {}
        try:
            yield
        finally:
            together, self._together = self._together, None
            for key, records in together.values():
                self._write(key, records)

    def _append(self, key: Key, record: Record) -> None:
        if self._together is not None:
            index = self.log.partition_of(coordinator_key(key))
            self._together.setdefault(index, (key, []))[1].append(record)
            return
        self._write(key, [record])

    def _write(self, key: Key, records: list[Record]) -> None:
        def done(error: int) -> None:
            if error:
                _log.warning("share state of %s not written: error %d", key, error)

        self.log.append(coordinator_key(key), records, done)

    @staticmethod
    def _snapshot_record(key: Key, state: ShareState) -> Record:
        value = ShareSnapshotValue(
            snapshot_epoch=state.snapshot_epoch,
            state_epoch=state.state_epoch,
            leader_epoch=state.leader_epoch,
            start_offset=state.start_offset,
            delivery_complete_count=state.delivery_complete_count,
            create_timestamp=state.create_ms,
            write_timestamp=state.write_ms,
            state_batches=[_batch(ShareSnapshotValue.StateBatch, b) for b in state.batches],
        )
        return Record(key=_key_bytes(ShareSnapshotKey, key), value=_value(value))

    # -- loading ----------------------------------------------------------------------

    def _load(self, partition: Partition) -> None:
        """Replay a partition of the topic this broker now leads."""
        index = partition.tp.partition
        self._unload(index)
        for b in partition.log.batches:
            for batch in iter_batches(b.data, verify_crc=False):
                if batch.is_control:
                    continue
                for r in batch:
                    if r.key is not None:
                        self._replay(partition, bytes(r.key), r.value)

    def _replay(self, partition: Partition, raw_key: bytes, raw_value: object) -> None:
        try:
            k = record_format.decode_key(raw_key, _KEYS)
            if k is None:
                return
            assert isinstance(k, ShareSnapshotKey | ShareUpdateKey)
            key: Key = (k.group_id, k.topic_id, k.partition)
            if raw_value is None:
                self.states.pop(key, None)
                return
            data = bytes(raw_value)  # type: ignore[call-overload]
            if isinstance(k, ShareSnapshotKey):
                v = record_format.decode_value(ShareSnapshotValue, data)
                self.states[key] = ShareState(
                    v.state_epoch,
                    v.leader_epoch,
                    v.start_offset,
                    v.delivery_complete_count,
                    [_tuple(s) for s in v.state_batches],
                    v.snapshot_epoch,
                    v.create_timestamp,
                    v.write_timestamp,
                )
                self._updates[key] = 0
                return
            u = record_format.decode_value(ShareUpdateValue, data)
            state = self.states.get(key)
            if state is None:
                return  # an update without its snapshot: Kafka skips it too
            start = state.start_offset if u.start_offset < 0 else u.start_offset
            state.batches = merge(state.batches, [_tuple(s) for s in u.state_batches], start)
            state.start_offset = start
            state.leader_epoch = u.leader_epoch
            state.delivery_complete_count = u.delivery_complete_count
            self._updates[key] = self._updates.get(key, 0) + 1
        except ValueError as e:
            _log.error("%s: share state record skipped: %s", partition.tp, e)

    def _unload(self, index: int) -> None:
        for key in [k for k in self.states if self.partition_of(k) == index]:
            del self.states[key]
            self._updates.pop(key, None)


def _key_bytes(cls: Callable[..., object], key: Key) -> bytes:
    return record_format.key_bytes(cls(group_id=key[0], topic_id=key[1], partition=key[2]))  # type: ignore[arg-type]


def _value(value: ShareSnapshotValue | ShareUpdateValue) -> bytes:
    return record_format.value_bytes(value, 0)


def _batch(cls: Any, b: StateBatch) -> Any:
    return cls(first_offset=b[0], last_offset=b[1], delivery_state=b[2], delivery_count=b[3])


def _tuple(s: ShareSnapshotValue.StateBatch | ShareUpdateValue.StateBatch) -> StateBatch:
    return (s.first_offset, s.last_offset, s.delivery_state, s.delivery_count)
