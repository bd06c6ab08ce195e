"""A partition's log kept in memory: v2 record batches with assigned offsets.

Batches are stored exactly as they will be served (compressed ones stay compressed), one
`bytes` object each, with a sorted list of base offsets for lookups. The leader-epoch cache
records at which offset each leader epoch started, for OffsetForLeaderEpoch and for
finding where a follower's log diverges.

With a log directory (``--log-dir``) a `LogStorage` mirrors every change on disk: appends,
truncations and moves of the log start.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Protocol

from kafkagen.runtime.records import NO_TIMESTAMP, RecordBatch, iter_batches

__all__ = ["Log", "LogBatch", "LogStorage"]


@dataclass(slots=True)
class LogBatch:
    base_offset: int
    last_offset: int
    data: bytes
    max_timestamp: int
    #: Offset of the record holding max_timestamp.
    max_timestamp_offset: int
    leader_epoch: int


class LogStorage(Protocol):
    """Where a log's changes go besides memory (files under the log directory)."""

    def append(self, batch: LogBatch) -> None: ...

    def truncate(self, base_offset: int) -> None:
        """The batches from the one at ``base_offset`` on are gone."""

    def advance_start(self, offset: int) -> None: ...

    def flush(self) -> None:
        """Make every append so far durable (before an acks=-1 answer)."""


class Log:
    """The batches of one replica of a partition, with its start and end offsets."""

    __slots__ = (
        "batches",
        "_bases",
        "log_start_offset",
        "log_end_offset",
        "size_in_bytes",
        "epochs",
        "storage",
    )

    def __init__(self) -> None:
        self.batches: list[LogBatch] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.size_in_bytes = 0
        # (leader epoch, start offset), ascending in both.
        self.epochs: list[tuple[int, int]] = []
        self.storage: LogStorage | None = None

    # -- writing ----------------------------------------------------------------------

    def append(self, batch: LogBatch) -> None:
        if batch.base_offset != self.log_end_offset:
            raise ValueError(
                f"batch at {batch.base_offset} does not follow the log end {self.log_end_offset}"
            )
        if self.storage is not None:
            self.storage.append(batch)
        self.batches.append(batch)
        self._bases.append(batch.base_offset)
        self.log_end_offset = batch.last_offset + 1
        self.size_in_bytes += len(batch.data)
        if not self.epochs or self.epochs[-1][0] < batch.leader_epoch:
            self.epochs.append((batch.leader_epoch, batch.base_offset))

    def append_replicated(self, data: bytes) -> int:
        """Append batches copied from a leader (offsets already set); return how many."""
        n = 0
        for b in iter_batches(data):
            self.append(_log_batch(b))
            n += 1
        return n

    def truncate_to(self, offset: int) -> None:
        """Drop everything at or after ``offset`` (a follower whose log diverged)."""
        if offset >= self.log_end_offset:
            return
        i = bisect.bisect_left(self._bases, offset)
        if self.storage is not None and i < len(self.batches):
            self.storage.truncate(self.batches[i].base_offset)
        # A batch straddling the offset goes too: followers truncate at batch boundaries.
        for b in self.batches[i:]:
            self.size_in_bytes -= len(b.data)
        del self.batches[i:]
        del self._bases[i:]
        self.log_end_offset = self.batches[-1].last_offset + 1 if self.batches else offset
        self.log_end_offset = max(self.log_end_offset, self.log_start_offset)
        # Epochs that started at or after the new end have no batches left.
        while self.epochs and self.epochs[-1][1] >= self.log_end_offset:
            self.epochs.pop()

    def advance_start(self, offset: int) -> int:
        """Move the log start to ``offset`` (retention, DeleteRecords); return batches freed."""
        offset = min(offset, self.log_end_offset)
        if offset <= self.log_start_offset:
            return 0
        self.log_start_offset = offset
        if self.storage is not None:
            self.storage.advance_start(offset)
        # Whole batches below the new start go; one straddling it stays (Kafka keeps segments).
        n = 0
        while n < len(self.batches) and self.batches[n].last_offset < offset:
            self.size_in_bytes -= len(self.batches[n].data)
            n += 1
        del self.batches[:n]
        del self._bases[:n]
        return n

    def flush(self) -> None:
        if self.storage is not None:
            self.storage.flush()

    # -- reading ----------------------------------------------------------------------

    def _first_index(self, offset: int) -> int:
        """Index of the batch holding ``offset``, or of the first batch after it."""
        i = bisect.bisect_right(self._bases, offset) - 1
        if i < 0:
            return 0
        return i if self.batches[i].last_offset >= offset else i + 1

    def read(self, offset: int, max_bytes: int, max_offset: int, min_one: bool) -> list[bytes]:
        """Whole batches from the one holding ``offset``, ending below ``max_offset``.

        At most ``max_bytes`` in all, except that with ``min_one`` the first batch comes
        even when it alone is larger (so a consumer can always make progress).
        """
        out: list[bytes] = []
        total = 0
        batches = self.batches
        for i in range(self._first_index(offset), len(batches)):
            b = batches[i]
            if b.last_offset >= max_offset:
                break
            size = len(b.data)
            if total + size > max_bytes and not (min_one and not out):
                break
            out.append(b.data)
            total += size
        return out

    def bytes_between(self, offset: int, max_offset: int, enough: int) -> int:
        """Bytes of the batches a read from ``offset`` below ``max_offset`` would return.

        Stops counting at ``enough`` (what a waiting fetch needs).
        """
        total = 0
        batches = self.batches
        for i in range(self._first_index(offset), len(batches)):
            b = batches[i]
            if b.last_offset >= max_offset:
                break
            total += len(b.data)
            if total >= enough:
                break
        return total

    def offset_for_timestamp(self, timestamp: int, max_offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after ``timestamp``, below max."""
        for b in self.batches:
            if b.base_offset >= max_offset:
                return None
            if b.max_timestamp < timestamp:
                continue
            for r in RecordBatch(memoryview(b.data)):
                if r.offset >= max_offset:
                    return None
                if r.offset >= self.log_start_offset and r.timestamp >= timestamp:
                    return r.offset, r.timestamp
        return None

    def max_timestamp(self, max_offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (first of ties)."""
        best: LogBatch | None = None
        for b in self.batches:
            if b.last_offset >= max_offset:
                break
            if best is None or b.max_timestamp > best.max_timestamp:
                best = b
        if best is None or best.max_timestamp == NO_TIMESTAMP:
            return None
        return best.max_timestamp_offset, best.max_timestamp

    # -- leader epochs ----------------------------------------------------------------

    def epoch_at(self, offset: int) -> int:
        """The leader epoch of the batch holding ``offset`` (-1 if unknown)."""
        epoch = -1
        for e, start in self.epochs:
            if start > offset:
                break
            epoch = e
        return epoch

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(largest epoch <= ``epoch``, the offset where it ended): Kafka's epoch lookup."""
        found = (-1, -1)
        for i, (e, _start) in enumerate(self.epochs):
            if e > epoch:
                break
            end = self.epochs[i + 1][1] if i + 1 < len(self.epochs) else self.log_end_offset
            found = (e, end)
        return found


def _log_batch(b: RecordBatch) -> LogBatch:
    return LogBatch(
        b.base_offset,
        b.last_offset,
        bytes(b.buffer),
        b.max_timestamp,
        b.last_offset,
        b.partition_leader_epoch,
    )
