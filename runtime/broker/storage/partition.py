"""One broker's replica of a partition: its log, its role, and (as leader) the ISR.

The leader appends, tracks how far each follower has fetched, and moves the high watermark
to the smallest log end offset in the ISR; consumers read only below it. A follower only
appends what it copied from the leader. Roles come from the cluster metadata
(`apply_metadata`), as a KRaft broker learns them from the metadata log.

Transactions: producers' batches may be transactional; a transaction ends with a control
batch (a COMMIT or ABORT marker) that the transaction coordinator has the leader write.
The last stable offset (LSO) is where read_committed consumers stop.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kafkagen.runtime.errors import (
    FencedLeaderEpochError,
    InvalidProducerEpochError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    UnknownLeaderEpochError,
)
from kafkagen.runtime.records import (
    Record,
    RecordBatch,
    TimestampType,
    assign_offsets,
    build_batch,
    set_log_append_time,
    set_max_timestamp,
    validate_batch_for_append,
)
from kafkagen.runtime.topic_partition import TopicPartition

from ..config.store import TopicConfig
from ..types import PartitionInfo
from ._log import Log, LogBatch
from ._producer_state import AbortedTxn, ProducerStateManager

__all__ = ["AppendResult", "FollowerState", "Partition", "control_key", "parse_control_key"]

Buffer = bytes | bytearray | memoryview

#: Control record types (the key of a control batch's record).
ABORT_MARKER = 0
COMMIT_MARKER = 1
_CONTROL_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


def control_key(commit: bool) -> bytes:
    """Key of an end-transaction marker record: version 0, then the type."""
    return _CONTROL_KEY.pack(0, COMMIT_MARKER if commit else ABORT_MARKER)


def parse_control_key(key: bytes | None) -> int:
    """The control type of a control record's key (-1 if unreadable)."""
    if key is None or len(key) < _CONTROL_KEY.size:
        return -1
    return int(_CONTROL_KEY.unpack_from(key)[1])


@dataclass(slots=True)
class AppendResult:
    first_offset: int
    last_offset: int
    #: The broker's append time on LogAppendTime topics, else -1.
    log_append_time: int
    log_start_offset: int
    duplicate: bool = False


@dataclass(slots=True)
class FollowerState:
    log_end_offset: int = -1
    #: Broker clock (ms) when the follower last had everything the leader had.
    last_caught_up_ms: float = 0.0
    #: The leader's log end and clock at the follower's previous fetch: a follower that
    #: reaches what the leader had then was caught up then (Kafka's rule, so a steady
    #: stream of appends does not make a keeping-up follower look behind).
    last_fetch_leader_end: int = -1
    last_fetch_ms: float = 0.0


def _one() -> int:
    return 1


class Partition:
    """This broker's replica of one partition."""

    # A broker holds one per replica: slots keep each a few hundred bytes smaller.
    __slots__ = (
        "tp",
        "topic_id",
        "broker_id",
        "log",
        "_producers",
        "leader_id",
        "leader_epoch",
        "partition_epoch",
        "replicas",
        "isr",
        "high_watermark",
        "followers",
        "min_isr",
    )

    def __init__(self, tp: TopicPartition, topic_id: uuid.UUID, broker_id: int) -> None:
        self.tp = tp
        self.topic_id = topic_id
        self.broker_id = broker_id
        self.log = Log()
        self._producers: ProducerStateManager | None = None
        self.leader_id = -1
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: list[int] = []
        self.isr: list[int] = []
        self.high_watermark = 0
        self.followers: dict[int, FollowerState] = {}
        #: The topic's min.insync.replicas (the replica manager sets it; it may change).
        self.min_isr: Callable[[], int] = _one

    @property
    def producers(self) -> ProducerStateManager:
        """The partition's producers, made on first use: most replicas of a broker with
        many partitions never see a producer id, and the empty state is five containers.
        Reads that find none (the LSO, aborted ranges, expiry) make none."""
        found = self._producers
        if found is None:
            found = self._producers = ProducerStateManager()
        return found

    def expire_producers(self, clock_ms: float, expiration_ms: int) -> None:
        """Forget producers idle longer than ``expiration_ms`` (none made for it)."""
        if self._producers is not None:
            self._producers.expire(clock_ms, expiration_ms)

    # -- roles ------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    def apply_metadata(self, info: PartitionInfo, now_ms: float) -> bool:
        """Take the leader, replicas and ISR from the metadata; True if the role changed."""
        was_leader = self.is_leader
        new_epoch = info.leader_epoch != self.leader_epoch
        self.leader_id = info.leader
        self.leader_epoch = info.leader_epoch
        self.partition_epoch = info.partition_epoch
        self.replicas = list(info.replicas)
        self.isr = list(info.isr)
        if self.is_leader:
            if new_epoch or not was_leader:
                # A new leader learns its followers' positions from their next fetches.
                self.followers = {
                    r: FollowerState(last_caught_up_ms=now_ms)
                    for r in self.replicas
                    if r != self.broker_id
                }
            else:
                # A reassignment adds and removes replicas without a new leader epoch.
                for r in self.replicas:
                    if r != self.broker_id and r not in self.followers:
                        self.followers[r] = FollowerState(last_caught_up_ms=now_ms)
                for r in [r for r in self.followers if r not in self.replicas]:
                    del self.followers[r]
            self.maybe_increment_hw()
        else:
            self.followers = {}
        return was_leader != self.is_leader

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """A client's view of the leader epoch (-1: not given) against ours."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpochError(
                f"{self.tp}: epoch {current_leader_epoch} is older than {self.leader_epoch}"
            )
        raise UnknownLeaderEpochError(
            f"{self.tp}: epoch {current_leader_epoch} is newer than {self.leader_epoch}"
        )

    def require_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker {self.broker_id} is not the leader of {self.tp} (leader {self.leader_id})"
            )

    # -- writing ----------------------------------------------------------------------

    def append_as_leader(
        self,
        records: Buffer,
        config: TopicConfig,
        *,
        required_acks: int,
        from_client: bool,
        produce_version: int | None,
        now_ms: int,
        clock_ms: float,
    ) -> AppendResult:
        """Validate and write one produced batch; raises the Kafka error on refusal.

        ``now_ms`` is wall-clock time for timestamps, ``clock_ms`` the broker's monotonic
        clock for producer expiry.
        """
        self.require_leader()
        if required_acks == -1 and len(self.isr) < config.min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self.tp} has {len(self.isr)} in-sync replica(s), "
                f"min.insync.replicas is {config.min_insync_replicas}"
            )
        ts_type = (
            TimestampType.LOG_APPEND_TIME if config.log_append_time else TimestampType.CREATE_TIME
        )
        info = validate_batch_for_append(
            records,
            produce_version=produce_version,
            from_client=from_client,
            max_message_size=config.max_message_bytes,
            compacted=config.compacted,
            topic_partition=str(self.tp),
            timestamp_type=ts_type,
            now_ms=now_ms,
            timestamp_before_max_ms=config.timestamp_before_max_ms,
            timestamp_after_max_ms=config.timestamp_after_max_ms,
        )
        batch = info.batch
        if batch.has_producer_id and not from_client:
            # The broker's own writes (transactional offset commits) carry no sequence:
            # only the epoch is checked.
            self.producers.check_epoch(batch.producer_id, batch.producer_epoch)
        elif batch.has_producer_id:
            dup = self.producers.check(batch)
            if dup is not None:
                return AppendResult(
                    dup.first_offset, dup.last_offset, -1, self.log.log_start_offset, True
                )
        base = self.log.log_end_offset
        data = _rebuild(batch) if not info.consecutive_offsets else batch.buffer
        data = assign_offsets(data, base, partition_leader_epoch=self.leader_epoch)
        append_time = -1
        if config.log_append_time:
            append_time = now_ms
            data = set_log_append_time(data, now_ms)
        elif info.max_timestamp != batch.max_timestamp:
            # The header must carry the real max timestamp: time lookups trust it.
            data = set_max_timestamp(data, TimestampType.CREATE_TIME, info.max_timestamp)
        last = base + batch.last_offset_delta
        self.log.append(
            LogBatch(
                base,
                last,
                data,
                info.max_timestamp,
                base + max(info.max_timestamp_offset_delta, 0),
                self.leader_epoch,
            )
        )
        if batch.has_producer_id:
            self.producers.update(batch, base, last, info.max_timestamp, clock_ms)
        return AppendResult(base, last, append_time, self.log.log_start_offset)

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        *,
        now_ms: int,
        clock_ms: float,
    ) -> AppendResult:
        """Write a COMMIT or ABORT marker ending ``producer_id``'s transaction here."""
        self.require_leader()
        entry = self.producers.producers.get(producer_id)
        if entry is not None and producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"{self.tp}: marker epoch {producer_epoch} is older than producer "
                f"{producer_id}'s epoch {entry.epoch}"
            )
        base = self.log.log_end_offset
        data = build_batch(
            [Record(-1, now_ms, control_key(commit), _MARKER_VALUE.pack(0, coordinator_epoch))],
            base_offset=base,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            transactional=True,
            is_control=True,
            partition_leader_epoch=self.leader_epoch,
        )
        self.log.append(LogBatch(base, base, data, now_ms, base, self.leader_epoch))
        self.producers.complete_txn(
            producer_id, producer_epoch, commit, base, coordinator_epoch, clock_ms
        )
        return AppendResult(base, base, -1, self.log.log_start_offset)

    def append_as_follower(self, batches: Sequence[LogBatch], clock_ms: float = 0.0) -> None:
        """Write batches fetched from the leader, sharing their bytes (`Log.append_shared`).

        Producer state follows the log, as on the leader, so that a follower that becomes
        leader still recognises a retried batch as a duplicate, and knows the open and
        aborted transactions.
        """
        self.log.append_shared(batches)
        for b in batches:
            self.track_producer_state(RecordBatch(memoryview(b.data)), clock_ms)

    def track_producer_state(self, b: RecordBatch, clock_ms: float) -> None:
        """Follow a batch already in the log: its producer's sequences, and the
        transactions it opens or (a marker) closes. Also rebuilds the state on start."""
        if not b.has_producer_id:
            return
        if b.is_control:
            for r in b:
                kind = parse_control_key(r.key)
                if kind in (ABORT_MARKER, COMMIT_MARKER):
                    value = r.value or b""
                    coordinator_epoch = (
                        _MARKER_VALUE.unpack_from(value)[1]
                        if len(value) >= _MARKER_VALUE.size
                        else -1
                    )
                    self.producers.complete_txn(
                        b.producer_id,
                        b.producer_epoch,
                        kind == COMMIT_MARKER,
                        b.base_offset,
                        coordinator_epoch,
                        clock_ms,
                    )
        else:
            self.producers.update(b, b.base_offset, b.last_offset, b.max_timestamp, clock_ms)

    # -- high watermark ---------------------------------------------------------------

    def maybe_increment_hw(self) -> bool:
        """Move the high watermark to the smallest log end in the ISR; True if it moved.
        As in Kafka 4.x, it stays while the ISR is below min.insync.replicas (at most the
        replication factor)."""
        if not self.is_leader or len(self.isr) < min(self.min_isr(), len(self.replicas)):
            return False
        hw = self.log.written_end_offset
        for r in self.isr:
            if r == self.broker_id:
                continue
            state = self.followers.get(r)
            end = state.log_end_offset if state is not None else -1
            if end < hw:
                hw = end
        if hw > self.high_watermark:
            self.high_watermark = hw
            return True
        return False

    def update_follower(self, replica_id: int, fetch_offset: int, clock_ms: float) -> bool:
        """A follower fetched from ``fetch_offset``: it has everything below. True if HW moved."""
        state = self.followers.get(replica_id)
        if state is None:
            return False
        state.log_end_offset = fetch_offset
        leader_end = self.log.log_end_offset
        if fetch_offset >= leader_end:
            state.last_caught_up_ms = clock_ms
        elif fetch_offset >= state.last_fetch_leader_end:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.last_fetch_leader_end = leader_end
        state.last_fetch_ms = clock_ms
        return self.maybe_increment_hw()

    def can_join_isr(self, replica_id: int) -> bool:
        """A follower outside the ISR that has caught up to the high watermark."""
        if replica_id in self.isr or replica_id not in self.replicas:
            return False
        state = self.followers.get(replica_id)
        return state is not None and state.log_end_offset >= self.high_watermark

    def lagging_followers(self, clock_ms: float, max_lag_ms: int) -> list[int]:
        """ISR members that have not caught up within ``max_lag_ms``."""
        out = []
        for r in self.isr:
            state = self.followers.get(r)
            if r != self.broker_id and state is not None:
                if clock_ms - state.last_caught_up_ms > max_lag_ms:
                    out.append(r)
        return out

    def check_replicated(self, required_offset: int, min_isr: int) -> tuple[bool, Exception | None]:
        """For acks=all: (done, error) once the high watermark reached ``required_offset``."""
        if not self.is_leader:
            return True, NotLeaderOrFollowerError(f"broker {self.broker_id} lost leadership")
        if self.high_watermark >= required_offset:
            if len(self.isr) < min_isr:
                return True, NotEnoughReplicasAfterAppendError(
                    f"{self.tp}: written, but the ISR shrank below {min_isr}"
                )
            return True, None
        return False, None

    # -- reading ----------------------------------------------------------------------

    @property
    def last_stable_offset(self) -> int:
        """Where read_committed reads stop: the earliest unstable transaction, or the HW."""
        hw = self.high_watermark
        producers = self._producers
        first = None if producers is None else producers.first_unstable_offset(hw)
        return hw if first is None else min(first, hw)

    def upper_bound(self, for_replica: bool, read_committed: bool = False) -> int:
        """Where reads stop: followers read to the log end, read_committed consumers to
        the LSO, everyone else to the HW."""
        if for_replica:
            return self.log.log_end_offset
        return self.last_stable_offset if read_committed else self.high_watermark

    def aborted_transactions(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions a read_committed fetch of offsets [start, end) must skip."""
        producers = self._producers
        if producers is None:
            return []
        producers.trim_aborted(self.log.log_start_offset)
        return producers.aborted_between(start, end)

    def check_fetch_offset(self, offset: int) -> None:
        if offset < self.log.log_start_offset or offset > self.log.log_end_offset:
            raise OffsetOutOfRangeError(
                f"{self.tp}: offset {offset} is outside "
                f"[{self.log.log_start_offset}, {self.log.log_end_offset}]"
            )


def _rebuild(batch: RecordBatch) -> bytes:
    """A batch whose record offset deltas were not 0, 1, 2, ...: renumber its records."""
    records = [Record(-1, r.timestamp, r.key, r.value, r.headers) for r in batch]
    return build_batch(
        records,
        compression=batch.compression,
        timestamp_type=batch.timestamp_type,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        transactional=batch.is_transactional,
    )
