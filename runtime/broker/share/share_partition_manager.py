"""Share fetches and acknowledgements on one broker (KIP-932): the share sessions of the
members fetching here, and the share partitions of the partitions this broker leads.

A member fetches from each partition's leader within a share session: epoch 0 opens it
(replacing any), each later request names the epoch the previous answer moved it to, and
-1 closes it (with acknowledgements only); so does the connection that opened it
closing, as on Kafka 4.4, and when a group has no session left here, its share partitions
leave this broker's memory (their state is the persister's, read again on next use). A
fetch acquires up to ``MaxRecords`` available records under a lock of
``group.share.record.lock.duration.ms``; when the lock runs out the records still
acquired are released. With nothing to acquire, it waits up to
``MaxWaitMs`` for new records.

A partition's share state is read from the persister the first time this broker serves
it for a group (a new one starts at the high watermark: ``share.auto.offset.reset``
latest, the default), and every change is written back, only the records that changed
with the start offset, so a new leader resumes it. As on Kafka, an acknowledgement whose
write fails is undone and answered with the error Kafka's leader answers (the share
coordinator out of reach: UNKNOWN_SERVER_ERROR; one that moved: COORDINATOR_NOT_AVAILABLE);
the changes of an acquisition, a lock running out or a session closing stay in memory and
go with the next write that succeeds.
"""

from __future__ import annotations

import logging
import struct
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from kafkagen.runtime.errors import (
    InvalidRecordStateError,
    InvalidRequestError,
    InvalidShareSessionEpochError,
    KafkaError,
    NotLeaderOrFollowerError,
    ShareSessionLimitReachedError,
    ShareSessionNotFoundError,
    UnknownTopicIdError,
)
from kafkagen.runtime.purgatory import DelayedOperation, DelayedOperationPurgatory
from kafkagen.runtime.records import iter_batches
from kafkagen.runtime.timer import Timer
from kafkagen.runtime.topic_partition import TopicPartition

from ..config.group_configs import group_setting, reset_duration_ms
from ..config.store import ConfigStore
from ..metadata.cluster_metadata import ClusterMetadata
from ..storage.partition import ABORT_MARKER, Partition, parse_control_key
from ..storage.replica_manager import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    FetchInfo,
    FetchParams,
    ReplicaManager,
)
from .persister import ShareStatePersister, leader_error
from .share_partition import AckType, SharePartition

if TYPE_CHECKING:
    from ..security.listeners import Session

__all__ = ["FINAL_EPOCH", "PartitionResult", "SharePartitionManager"]

_log = logging.getLogger("kafkagen.broker")

FINAL_EPOCH = -1
_INT32_MAX = 2**31 - 1
_BATCH_HEAD = struct.Struct(">qi")  # base offset, batch length
_LAST_DELTA = struct.Struct(">i")
_LAST_DELTA_AT = 23

#: (topic id, partition index): how share requests name a partition.
Key = tuple[uuid.UUID, int]
#: An acknowledgement batch: first offset, last offset, acknowledge types.
AckBatch = tuple[int, int, list[int]]


@dataclass(slots=True)
class PartitionResult:
    """One partition's answer to a share fetch or acknowledgement."""

    key: Key
    #: Whether the request acknowledged records of it.
    acknowledged: bool = False
    error: KafkaError | None = None
    ack_error: KafkaError | None = None
    records: bytes = b""
    #: (first offset, last offset, delivery count) of the records acquired.
    acquired: list[tuple[int, int, int]] = field(default_factory=list)
    #: (leader id, leader epoch), as this broker knows them.
    current_leader: tuple[int, int] = (-1, -1)

    @property
    def reportable(self) -> bool:
        """Whether an incremental answer lists it: it has records, acknowledgements or
        an error."""
        return bool(self.acquired or self.acknowledged or self.error or self.ack_error)


@dataclass(slots=True)
class _Session:
    epoch: int
    partitions: dict[Key, None]


def _next_epoch(epoch: int) -> int:
    return 1 if epoch == _INT32_MAX else epoch + 1


class _LockTimeout(DelayedOperation):
    """The acquisition lock of some records: they are released when it runs out."""

    __slots__ = ("_manager", "_key", "_partition", "_lock")

    def __init__(
        self,
        manager: SharePartitionManager,
        key: tuple[str, Key],
        partition: SharePartition,
        lock: int,
        delay_ms: int,
    ) -> None:
        super().__init__(delay_ms)
        self._manager = manager
        self._key = key
        #: Lock tokens are the partition's own: a partition read again has new ones.
        self._partition = partition
        self._lock = lock

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        if self.is_expired:
            self._manager._lock_expired(self._key, self._partition, self._lock)


def _batches(records: bytes | memoryview) -> list[tuple[int, int, bytes | memoryview]]:
    """(first offset, last offset, bytes) of each record batch read from a log."""
    out = []
    at = 0
    while at + _BATCH_HEAD.size <= len(records):
        base, length = _BATCH_HEAD.unpack_from(records, at)
        end = at + 12 + length
        last = base + _LAST_DELTA.unpack_from(records, at + _LAST_DELTA_AT)[0]
        out.append((base, last, records[at:end]))
        at = end
    return out


def _aborted_bases(records: bytes | memoryview, aborted: list[tuple[int, int]]) -> set[int]:
    """Base offsets of the batches in ``records`` holding data of the ``aborted``
    transactions (producer id, first offset), which read_committed never delivers."""
    pending = sorted(aborted, key=lambda a: a[1])
    aborting: set[int] = set()
    out: set[int] = set()
    for batch in iter_batches(records, verify_crc=False, allow_truncated=True):
        while pending and pending[0][1] <= batch.last_offset:
            aborting.add(pending.pop(0)[0])
        if batch.is_control:
            markers = batch.records()
            if markers and parse_control_key(markers[0].key) == ABORT_MARKER:
                aborting.discard(batch.producer_id)
        elif batch.is_transactional and batch.producer_id in aborting:
            out.add(batch.base_offset)
    return out


class SharePartitionManager:
    """The share sessions and share partitions of one broker."""

    def __init__(
        self,
        node_id: int,
        configs: ConfigStore,
        metadata: ClusterMetadata,
        replica_manager: ReplicaManager,
        persister: ShareStatePersister,
        timer_factory: Callable[[], Timer],
    ) -> None:
        self.node_id = node_id
        self.configs = configs
        self.metadata = metadata
        self.replica_manager = replica_manager
        self.persister = persister
        self._sessions: dict[tuple[str, str], _Session] = {}
        #: The connection that opened each session.
        self._owners: dict[tuple[str, str], Session] = {}
        self._partitions: dict[tuple[str, Key], SharePartition] = {}
        self._locks: DelayedOperationPurgatory[_LockTimeout] = DelayedOperationPurgatory(
            "ShareLock", timer_factory()
        )
        replica_manager.role_listeners.append(self._on_role_change)
        persister.on_reset.append(self._on_reset)

    def _cfg(self, name: str) -> int:
        return self.configs.broker_int(name, self.node_id)

    def _group_cfg(self, group_id: str, name: str) -> str:
        """A group config of ``group_id`` (its own, else the broker's)."""
        return group_setting(
            self.configs, self.metadata.group_configs, group_id, name, self.node_id
        )

    def lock_duration_ms(self, group_id: str) -> int:
        return int(self._group_cfg(group_id, "share.record.lock.duration.ms"))

    def _renewals_allowed(self, group_id: str) -> bool:
        return self._group_cfg(group_id, "share.renew.acknowledge.enable").lower() == "true"

    def isolation_level(self, group_id: str) -> int:
        committed = self._group_cfg(group_id, "share.isolation.level").lower()
        return READ_COMMITTED if committed == "read_committed" else READ_UNCOMMITTED

    # -- sessions -----------------------------------------------------------------------

    def _fetch_session(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        wanted: list[Key],
        forgotten: list[Key],
        has_acks: bool,
        connection: Session | None,
    ) -> _Session:
        key = (group_id, member_id)
        session = self._sessions.get(key)
        if epoch == FINAL_EPOCH:
            if wanted:
                raise InvalidRequestError("a share fetch that closes its session fetches nothing")
            if session is None:
                raise ShareSessionNotFoundError(f"no share session for member {member_id}")
            return session
        if epoch == 0:
            if has_acks:
                raise InvalidRequestError("a share fetch that opens a session acknowledges nothing")
            if session is None and len(self._sessions) >= self._cfg(
                "group.share.max.share.sessions"
            ):
                raise ShareSessionLimitReachedError(
                    "this broker has no room for another share session"
                )
            session = self._sessions[key] = _Session(1, dict.fromkeys(wanted))
            self._own(key, connection)
            return session
        session = self._checked(key, member_id, epoch)
        session.partitions.update(dict.fromkeys(wanted))
        for k in forgotten:
            session.partitions.pop(k, None)
        return session

    def _checked(self, key: tuple[str, str], member_id: str, epoch: int) -> _Session:
        """The session, moved to its next epoch; ``epoch`` must be its current one."""
        session = self._sessions.get(key)
        if session is None:
            raise ShareSessionNotFoundError(f"no share session for member {member_id}")
        if session.epoch != epoch:
            raise InvalidShareSessionEpochError(
                f"the share session is at epoch {session.epoch}, not {epoch}"
            )
        session.epoch = _next_epoch(epoch)
        return session

    def _own(self, key: tuple[str, str], connection: Session | None) -> None:
        """``connection`` opened the session ``key``: the session ends when it closes (a
        session opened again on another connection is that one's)."""
        if connection is None:
            self._owners.pop(key, None)
            return
        self._owners[key] = connection
        connection.on_close(("share", self.node_id), partial(self._disconnected, connection))

    def _disconnected(self, connection: Session) -> None:
        """A connection closed: the sessions it opened end, and the share partitions of a
        group left with no session here leave memory (Kafka's member-leave and
        group-empty listeners)."""
        opened = [key for key, owner in self._owners.items() if owner is connection]
        for key in opened:
            self._close(*key)
        groups = {group for group, _ in opened}
        groups.difference_update(group for group, _ in self._sessions)
        for group_id, k in [g for g in self._partitions if g[0] in groups]:
            if self._partitions[(group_id, k)].settled:
                del self._partitions[(group_id, k)]

    def _close(self, group_id: str, member_id: str) -> None:
        """The member's session ends: what it holds here is released."""
        self._sessions.pop((group_id, member_id), None)
        self._owners.pop((group_id, member_id), None)
        for (group, key), sp in list(self._partitions.items()):
            if group == group_id and sp.release_member(member_id):
                self._persist(group, key, sp)

    # -- requests -----------------------------------------------------------------------

    def share_fetch(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        wanted: list[Key],
        forgotten: list[Key],
        acks: dict[Key, list[AckBatch]],
        max_wait_ms: int,
        max_bytes: int,
        max_records: int,
        renew_only: bool,
        respond: Callable[[list[PartitionResult]], None],
        connection: Session | None = None,
    ) -> None:
        """Acquire records of the session's partitions, then apply the acknowledgements;
        ``respond`` gets the partitions to answer. Raises the session's errors (the
        request's error). A session this request opens ends when ``connection`` closes."""
        session = self._fetch_session(
            group_id, member_id, epoch, wanted, forgotten, bool(acks), connection
        )
        results = {
            k: PartitionResult(k, acknowledged=True, current_leader=self._current_leader(k))
            for k in acks
        }
        keys = [] if epoch == FINAL_EPOCH or renew_only else list(session.partitions)
        for k in keys:
            results.setdefault(k, PartitionResult(k))
        # As on Kafka, the fetch does not see this request's own acknowledgements: records
        # it releases are acquired again by a later fetch.
        waiting = self._acquire_all(group_id, member_id, keys, results, max_bytes, max_records)
        for k, batches in acks.items():
            results[k].ack_error = self._acknowledge(group_id, member_id, k, batches)
        if epoch == FINAL_EPOCH:
            self._close(group_id, member_id)
        full = epoch == 0

        def answer() -> None:
            respond([r for r in results.values() if full or r.reportable])

        if not waiting or max_wait_ms <= 0 or any(r.acquired or r.error for r in results.values()):
            answer()
            return

        def woken(_: object) -> None:
            if (group_id, member_id) in self._sessions:
                self._acquire_all(group_id, member_id, keys, results, max_bytes, max_records)
            answer()

        params = FetchParams(
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_bytes=max_bytes,
            isolation_level=self.isolation_level(group_id),
        )
        self.replica_manager.fetch_messages(params, waiting, woken)

    def share_acknowledge(
        self, group_id: str, member_id: str, epoch: int, acks: dict[Key, list[AckBatch]]
    ) -> list[PartitionResult]:
        """Apply the acknowledgements; raises the session's errors (the request's error)."""
        key = (group_id, member_id)
        if epoch == 0:
            raise InvalidShareSessionEpochError("a share acknowledgement cannot open a session")
        if epoch == FINAL_EPOCH:
            if key not in self._sessions:
                raise ShareSessionNotFoundError(f"no share session for member {member_id}")
        else:
            self._checked(key, member_id, epoch)
        results = [
            PartitionResult(
                k,
                error=self._acknowledge(group_id, member_id, k, batches),
                current_leader=self._current_leader(k),
            )
            for k, batches in acks.items()
        ]
        if epoch == FINAL_EPOCH:
            self._close(group_id, member_id)
        return results

    # -- share partitions ---------------------------------------------------------------

    def _leader(self, k: Key) -> tuple[TopicPartition, Partition]:
        name = self.metadata.topic_names.get(k[0])
        if name is None:
            raise UnknownTopicIdError(f"no topic has id {k[0]}")
        return TopicPartition(name, k[1]), self.replica_manager.leader_partition(
            TopicPartition(name, k[1])
        )

    def _current_leader(self, k: Key) -> tuple[int, int]:
        name = self.metadata.topic_names.get(k[0])
        known = None if name is None else self.metadata.partition(name, k[1])
        return (-1, -1) if known is None else (known.leader, known.leader_epoch)

    def _share_partition(self, group_id: str, k: Key, partition: Partition) -> SharePartition:
        sp = self._partitions.get((group_id, k))
        if sp is not None:
            return sp
        limit = int(self._group_cfg(group_id, "share.delivery.count.limit"))
        locks = int(self._group_cfg(group_id, "share.partition.max.record.locks"))
        # Raises the persister's error (the coordinator out of reach), the partition's.
        state = self.persister.read(group_id, *k, self._current_leader(k)[1])
        if state is not None and state.start_offset >= 0:
            sp = SharePartition.restore(state, limit, locks)
        else:
            sp = SharePartition(self._reset_offset(group_id, partition), limit, locks)
            if state is None:
                # Not initialised by the group coordinator (a member fetching a partition
                # it was not assigned): the leader gives it a state of its own.
                try:
                    self.persister.create(group_id, *k, sp.start_offset)
                except KafkaError as e:
                    raise leader_error(e) from None
            else:
                sp.state_epoch = state.state_epoch
                error = self._persist(group_id, k, sp)
                if error is not None:
                    raise error
        self._partitions[(group_id, k)] = sp
        return sp

    def _reset_offset(self, group_id: str, partition: Partition) -> int:
        """Where a partition new to the group starts (``share.auto.offset.reset``): the
        log's start, its high watermark, or the first record since a while ago."""
        reset = self._group_cfg(group_id, "share.auto.offset.reset")
        log = partition.log
        if reset.lower() == "earliest":
            return log.log_start_offset
        back = reset_duration_ms(reset)
        if back is None:
            return partition.high_watermark
        found = log.offset_for_timestamp(
            self.replica_manager.time_ms() - back, partition.high_watermark
        )
        return partition.high_watermark if found is None else found[0]

    def _persist(self, group_id: str, k: Key, sp: SharePartition) -> KafkaError | None:
        """Write the records that changed and the start offset; the error if the write
        failed (the changes are then written with the next write)."""
        state = sp.snapshot()
        state.leader_epoch = self._current_leader(k)[1]
        try:
            self.persister.write(group_id, k[0], k[1], state, sp.changes())
        except KafkaError as e:
            _log.debug("share state of %s %s not written: %s", group_id, k, e)
            if (
                isinstance(e, NotLeaderOrFollowerError)
                and self._partitions.get((group_id, k)) is sp
            ):
                del self._partitions[(group_id, k)]  # fenced: read the state again
            return e
        sp.written()
        return None

    def _acquire_all(
        self,
        group_id: str,
        member_id: str,
        keys: Iterable[Key],
        results: dict[Key, PartitionResult],
        max_bytes: int,
        max_records: int,
    ) -> list[tuple[TopicPartition, FetchInfo]]:
        """Acquire records of each partition into ``results``, at most ``max_records`` in
        all; returns where to wait for new records of those that had none to give."""
        waiting = []
        budget = max_records
        for k in keys:
            result = results[k]
            try:
                tp, partition = self._leader(k)
            except KafkaError as e:
                result.error = e
                result.current_leader = self._current_leader(k)
                continue
            result.current_leader = (partition.leader_id, partition.leader_epoch)
            try:
                sp = self._share_partition(group_id, k, partition)
            except KafkaError as e:
                result.error = e
                continue
            if partition.log.log_start_offset > sp.start_offset:
                sp.move_start(partition.log.log_start_offset)
                self._persist(group_id, k, sp)
            isolation = self.isolation_level(group_id)
            end = partition.upper_bound(False, isolation == READ_COMMITTED)
            start = sp.first_fetchable(end)
            if start is None or budget <= 0:
                if sp.in_flight() < sp.max_in_flight:
                    waiting.append((tp, FetchInfo(sp.next_offset, max_bytes)))
                continue
            params = FetchParams(max_bytes=max_bytes, isolation_level=isolation)
            read = self.replica_manager.read_from_local_log(
                params, [(tp, FetchInfo(start, max_bytes))]
            )[0][1]
            if read.error is not None:
                result.error = read.error
                continue
            batches = _batches(read.records)
            aborted = _aborted_bases(read.records, read.aborted_transactions or [])
            ranges, used, lock = sp.acquire(
                member_id,
                [(b[0], b[1]) for b in batches],
                end,
                budget,
                frozenset(i for i, b in enumerate(batches) if b[0] in aborted),
            )
            if not ranges:
                if aborted:
                    self._persist(group_id, k, sp)
                continue
            budget -= sum(last - first + 1 for first, last, _ in ranges)
            result.acquired = ranges
            result.records = b"".join(batches[i][2] for i in sorted(used))
            self._lock(group_id, k, sp, lock)
            self._persist(group_id, k, sp)
        return waiting

    def _acknowledge(
        self, group_id: str, member_id: str, k: Key, batches: list[AckBatch]
    ) -> KafkaError | None:
        try:
            _, partition = self._leader(k)
            if not self._renewals_allowed(group_id) and any(
                AckType.RENEW in types for _, _, types in batches
            ):
                raise InvalidRecordStateError(
                    f"group {group_id} does not renew locks (share.renew.acknowledge.enable)"
                )
            sp = self._share_partition(group_id, k, partition)
            saved = sp.save()
            renewal = sp.new_lock()
            renewed = False
            refused: KafkaError | None = None
            try:
                for first, last, types in batches:
                    renewed = sp.acknowledge(member_id, first, last, types, renewal) or renewed
            except KafkaError as e:
                refused = e  # the batches before it stay applied
            failed = self._persist(group_id, k, sp)
            if failed is not None:
                # As Kafka's leader: the records go back to their state before it.
                sp.roll_back(saved)
                return failed
            if renewed:
                self._lock(group_id, k, sp, renewal)
            return refused
        except KafkaError as e:
            return e

    def _lock(self, group_id: str, k: Key, sp: SharePartition, lock: int) -> None:
        op = _LockTimeout(self, (group_id, k), sp, lock, self.lock_duration_ms(group_id))
        self._locks.try_complete_else_watch(op, [(group_id, k)])

    def _lock_expired(self, key: tuple[str, Key], sp: SharePartition, lock: int) -> None:
        if self._partitions.get(key) is sp and sp.expire(lock):
            self._persist(key[0], key[1], sp)

    def _on_reset(self, group_id: str, topic_id: uuid.UUID, partition: int) -> None:
        # The coordinator replaced or deleted the state: the next use reads it again.
        self._partitions.pop((group_id, (topic_id, partition)), None)

    def _on_role_change(self, partition: Partition, leader: bool) -> None:
        # Another broker may change the state while this one does not lead: read it
        # again from the persister when leading again. By topic id: a deleted topic's
        # name is gone from the metadata by the time its partitions are dropped.
        key = (partition.topic_id, partition.tp.partition)
        for group_id, k in list(self._partitions):
            if k == key:
                del self._partitions[(group_id, k)]

    def shutdown(self) -> None:
        self._locks.shutdown()
        self._locks.timer.close()
