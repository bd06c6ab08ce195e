"""Log compaction: what Kafka's log cleaner does to a ``cleanup.policy=compact`` partition.

A pass over one replica's log, the rules being Kafka's:

- **What may be cleaned.** The dirty part starts where the last pass ended (the log's
  ``first_dirty_offset``) and stops at the first uncleanable offset: the smallest of the
  active segment's base, the last stable offset, and the base of the first dirty segment
  holding a record younger than ``min.compaction.lag.ms``. A pass runs when the dirty
  bytes are more than ``min.cleanable.dirty.ratio`` of the log, or when a dirty segment's
  first batch is older than ``max.compaction.lag.ms``.
- **Which record wins.** A map from key to its latest offset is built over the dirty
  part (aborted transactional batches and control batches add nothing). Then every
  segment from the log start up to the map's end is rewritten, in groups whose sizes add
  up to at most ``segment.bytes``, each group becoming one segment: a record stays if it
  is the latest for its key, or lies past the map.
- **Batches.** A batch whose records all stay is kept byte for byte. Otherwise it is
  rebuilt with its base offset, last offset, producer id, epoch, base sequence, leader
  epoch and codec, so offsets keep their gaps. A batch left empty goes, unless it holds
  its producer's last sequence (an active idempotent or transactional producer), or it
  ends right before the first uncleanable offset: then its header stays, with no records.
- **Tombstones in two passes.** A pass that keeps a tombstone stamps its batch with a
  delete horizon (now + ``delete.retention.ms``, in the base timestamp, with the
  attribute bit saying so); a pass after the horizon drops it.
- **Transactions.** Batches of aborted transactions are dropped. An ABORT marker stays
  while the pass still saw some of its transaction's batches; a COMMIT marker while the
  pass saw any batch of its transaction. After that a marker is stamped with a delete
  horizon like a tombstone, and goes once it has passed.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Iterator
from dataclasses import dataclass

from kafkagen.runtime.records import Record, RecordBatch, TimestampType, build_batch

from ._log import Log, LogBatch, Segment
from ._producer_state import AbortedTxn
from .partition import ABORT_MARKER, COMMIT_MARKER, Partition, parse_control_key

__all__ = ["CleanerConfig", "CleaningPlan", "clean", "plan_cleaning"]

_log = logging.getLogger("kafkagen.broker.log_cleaner")


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """A compacted topic's configs that steer its cleaning."""

    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = 2**63 - 1
    min_cleanable_dirty_ratio: float = 0.5
    segment_bytes: int = 1_073_741_824


@dataclass(frozen=True, slots=True)
class CleaningPlan:
    """What a pass would clean: offsets [first_dirty, first_uncleanable) and the bytes."""

    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    cleanable_bytes: int
    #: A dirty segment waited longer than max.compaction.lag.ms.
    overdue: bool

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0

    def due(self, cfg: CleanerConfig) -> bool:
        if self.clean_bytes + self.cleanable_bytes == 0:
            return False
        return (self.overdue and self.cleanable_bytes > 0) or (
            self.dirty_ratio > cfg.min_cleanable_dirty_ratio
        )


def _segment_index(segments: list[Segment], offset: int) -> int:
    """Index of the segment holding ``offset`` (the last one with base <= offset)."""
    i = 0
    for k, seg in enumerate(segments):
        if seg.base_offset > offset:
            break
        i = k
    return i


def _overlapping(segments: list[Segment], start: int, end: int) -> range:
    """Indexes of the segments holding offsets in [start, end)."""
    if start >= end:
        return range(0)
    first = _segment_index(segments, start)
    last = first
    while last + 1 < len(segments) and segments[last + 1].base_offset < end:
        last += 1
    return range(first, last + 1)


def _first_batch_timestamp(log: Log, index: int) -> int:
    batches = log.segment_batches(index)
    return batches[0].max_timestamp if batches else -1


def plan_cleaning(
    log: Log, last_stable_offset: int, cfg: CleanerConfig, now_ms: int
) -> CleaningPlan:
    """Kafka's cleanable range and dirty ratio of ``log`` at ``now_ms``."""
    segs = log.segments
    first_dirty = log.first_dirty_offset
    if not log.log_start_offset <= first_dirty <= log.log_end_offset:
        first_dirty = log.log_start_offset
    active = len(segs) - 1
    uncleanable = min(last_stable_offset, segs[active].base_offset)
    dirty_start = _segment_index(segs, first_dirty)
    non_active_dirty = range(dirty_start, active)
    lag = max(cfg.min_compaction_lag_ms, 0)
    if lag > 0:
        for i in non_active_dirty:
            if segs[i].largest_timestamp > now_ms - lag:
                uncleanable = min(uncleanable, segs[i].base_offset)
                break
    first_uncleanable = max(first_dirty, uncleanable)
    # The cleanable bytes run to the segment holding the first uncleanable offset.
    stop = _segment_index(segs, first_uncleanable)
    stop_base = segs[stop].base_offset
    cleanable = sum(
        segs[i].size for i in _overlapping(segs, min(first_dirty, stop_base), stop_base)
    )
    clean_bytes = sum(s.size for s in segs if s.base_offset < first_dirty)
    firsts = [t for t in (_first_batch_timestamp(log, i) for i in non_active_dirty) if t > 0]
    overdue = bool(firsts) and min(firsts) < now_ms - max(cfg.max_compaction_lag_ms, 0)
    return CleaningPlan(first_dirty, first_uncleanable, clean_bytes, cleanable, overdue)


class _Transactions:
    """What one pass has seen of transactions, to drop aborted data and spent markers."""

    def __init__(self) -> None:
        self._pending: list[tuple[int, int, AbortedTxn]] = []
        self._order = itertools.count()
        #: Producer id -> (its aborted transaction, last offset seen of its batches).
        self._aborting: dict[int, tuple[AbortedTxn, int]] = {}
        self._committing: set[int] = set()
        #: Aborted transactions whose marker this pass kept (a read_committed fetch
        #: still needs them).
        self.kept: list[AbortedTxn] = []

    def add_aborted(self, txns: list[AbortedTxn]) -> None:
        for t in txns:
            heapq.heappush(self._pending, (t.first_offset, next(self._order), t))

    def _reach(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            t = heapq.heappop(self._pending)[2]
            self._aborting.setdefault(t.producer_id, (t, -1))

    def control_batch(self, batch: RecordBatch) -> bool:
        """A marker was reached; True if this pass may discard it."""
        self._reach(batch.last_offset)
        records = batch.records()
        if not records:
            return True  # already emptied by an earlier pass
        kind = parse_control_key(records[0].key)
        pid = batch.producer_id
        if kind == ABORT_MARKER:
            aborting = self._aborting.pop(pid, None)
            if aborting is not None and aborting[1] >= 0:
                self.kept.append(aborting[0])
                return False
            return True
        if kind == COMMIT_MARKER:
            if pid in self._committing:
                self._committing.discard(pid)
                return False
            return True
        return False

    def data_batch(self, batch: RecordBatch) -> bool:
        """A data batch was reached; True if it belongs to an aborted transaction."""
        self._reach(batch.last_offset)
        if not batch.is_transactional:
            return False
        aborting = self._aborting.get(batch.producer_id)
        if aborting is not None:
            self._aborting[batch.producer_id] = (aborting[0], batch.last_offset)
            return True
        self._committing.add(batch.producer_id)
        return False


def _batches(log: Log, index: int) -> Iterator[tuple[LogBatch, RecordBatch]]:
    for b in log.segment_batches(index):
        yield b, RecordBatch(memoryview(b.data))


def _build_map(
    log: Log, partition: Partition, start: int, end: int
) -> tuple[dict[bytes, int], int]:
    """Key -> latest offset over the segments holding [start, end), and the last offset
    the map covers."""
    keys: dict[bytes, int] = {}
    latest = -1
    txns = _Transactions()
    txns.add_aborted(partition.producers.aborted_between(start, end))
    segs = log.segments
    dirty = list(_overlapping(segs, start, end))
    for n, i in enumerate(dirty):
        for _b, batch in _batches(log, i):
            if batch.is_control:
                txns.control_batch(batch)
            elif not txns.data_batch(batch):
                for r in batch:
                    if r.key is not None and r.offset >= start:
                        keys[r.key] = r.offset
            if batch.last_offset >= start:
                latest = max(latest, batch.last_offset)
        # A segment's offsets run to the next one's base even across a gap.
        next_base = segs[dirty[n + 1]].base_offset if n + 1 < len(dirty) else end
        latest = max(latest, next_base - 1)
    return keys, latest


def _group_by_size(segs: list[Segment], indexes: list[int], max_size: int) -> list[list[int]]:
    groups: list[list[int]] = []
    for i in indexes:
        if groups and sum(segs[k].size for k in groups[-1]) + segs[i].size <= max_size:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


class _Filter:
    """One pass's decisions, batch by batch (Kafka's retention rules, see the module)."""

    def __init__(
        self,
        keys: dict[bytes, int],
        latest: int,
        txns: _Transactions,
        last_of_producers: dict[int, tuple[int, int]],
        upper_bound: int,
        cfg: CleanerConfig,
        now_ms: int,
    ) -> None:
        self.keys = keys
        self.latest = latest
        self.txns = txns
        self.last_of_producers = last_of_producers
        self.upper_bound = upper_bound
        self.cfg = cfg
        self.now_ms = now_ms

    def _holds_producer_state(self, batch: RecordBatch) -> bool:
        last = self.last_of_producers.get(batch.producer_id)
        if last is None:
            return False
        last_data_offset, epoch = last
        if last_data_offset >= 0:
            return batch.last_offset == last_data_offset
        return batch.is_control and batch.producer_epoch == epoch

    def _keep_record(self, batch: RecordBatch, r: Record) -> bool:
        if r.offset > self.latest:
            return True
        if r.key is None:
            return False
        if r.offset < self.keys.get(r.key, -1):
            return False
        if r.value is not None:
            return True
        # A tombstone stays until its batch's delete horizon has passed.
        return not batch.has_delete_horizon or self.now_ms < batch.base_timestamp

    def filter(self, stored: LogBatch, batch: RecordBatch) -> LogBatch | None:
        discardable = (
            self.txns.control_batch(batch) if batch.is_control else self.txns.data_batch(batch)
        )
        if batch.is_control:
            drop_records = (
                discardable and batch.has_delete_horizon and batch.base_timestamp <= self.now_ms
            )
        else:
            drop_records = discardable
        retain_empty = (
            batch.has_producer_id and self._holds_producer_state(batch)
        ) or batch.next_offset == self.upper_bound
        if drop_records and not retain_empty:
            return None
        records = batch.records()
        if drop_records:
            kept: list[Record] = []
        elif batch.is_control:
            kept = records
        else:
            kept = [r for r in records if self._keep_record(batch, r)]
        if not kept and not retain_empty:
            return None
        stamp = (
            any(r.value is None for r in kept) or (discardable and batch.is_control)
        ) and not batch.has_delete_horizon
        if len(kept) == len(records) and not stamp:
            return stored
        horizon: int | None = None
        if stamp:
            horizon = self.now_ms + self.cfg.delete_retention_ms
        elif batch.has_delete_horizon:
            horizon = batch.base_timestamp
        append_time = batch.timestamp_type is TimestampType.LOG_APPEND_TIME
        # An empty batch is a bare header (no codec, no horizon) keeping the max timestamp.
        data = build_batch(
            kept,
            base_offset=batch.base_offset,
            compression=batch.compression if kept else 0,
            timestamp_type=batch.timestamp_type,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            transactional=batch.is_transactional,
            is_control=batch.is_control,
            partition_leader_epoch=batch.partition_leader_epoch,
            log_append_time=batch.max_timestamp if append_time else None,
            last_offset=batch.last_offset,
            delete_horizon_ms=horizon if kept else None,
            max_timestamp=None if kept else batch.max_timestamp,
        )
        rebuilt = RecordBatch(memoryview(data))
        if not kept:
            ts_offset = batch.last_offset
        elif append_time:
            ts_offset = batch.base_offset
        else:
            ts_offset = next(r.offset for r in kept if r.timestamp == rebuilt.max_timestamp)
        return LogBatch(
            batch.base_offset,
            batch.last_offset,
            data,
            rebuilt.max_timestamp,
            ts_offset,
            stored.leader_epoch,
        )


def clean(partition: Partition, cfg: CleanerConfig, now_ms: int, force: bool = False) -> bool:
    """One cleaner pass over ``partition``'s log if it is due (or ``force``d and has
    anything cleanable); True if it ran."""
    log = partition.log
    plan = plan_cleaning(log, partition.last_stable_offset, cfg, now_ms)
    if not (plan.due(cfg) or (force and plan.cleanable_bytes > 0)):
        log.first_dirty_offset = plan.first_dirty
        return False
    keys, latest = _build_map(log, partition, plan.first_dirty, plan.first_uncleanable)
    end = latest + 1
    last_of_producers = {
        pid: (e.last_data_offset, e.epoch) for pid, e in partition.producers.producers.items()
    }
    txns = _Transactions()
    filt = _Filter(keys, latest, txns, last_of_producers, plan.first_uncleanable, cfg, now_ms)
    segs = log.segments
    to_clean = [i for i in range(len(segs) - 1) if segs[i].base_offset < end]
    groups = _group_by_size(segs, to_clean, cfg.segment_bytes)
    # Replacing a group shifts the indexes of the later ones by what it merged.
    shift = 0
    cleaned_end = 0
    for group in groups:
        out: list[LogBatch] = []
        for i in (k - shift for k in group):
            nxt = log.segments[i + 1].base_offset
            txns.add_aborted(partition.producers.aborted_between(log.segments[i].base_offset, nxt))
            for stored, batch in _batches(log, i):
                kept = filt.filter(stored, batch)
                if kept is not None:
                    out.append(kept)
            cleaned_end = nxt
        log.replace_segments(group[0] - shift, len(group), out)
        shift += len(group) - 1
    # Aborted transactions whose marker went no longer need skipping.
    kept_txns = set(txns.kept)
    producers = partition.producers
    producers.aborted = [
        a for a in producers.aborted if a.last_offset >= cleaned_end or a in kept_txns
    ]
    log.first_dirty_offset = end
    _log.debug(
        "%s: cleaned [%d, %d), dirty ratio was %.3f",
        partition.tp,
        plan.first_dirty,
        end,
        plan.dirty_ratio,
    )
    return True
