"""A partition's log kept in memory: v2 record batches with assigned offsets.

Batches are stored exactly as they will be served (compressed ones stay compressed), one
`bytes` object each, with a sorted list of base offsets for lookups. The leader-epoch cache
records at which offset each leader epoch started, for OffsetForLeaderEpoch and for
finding where a follower's log diverges.

The batches are grouped in segments as Kafka's are: a new one starts when the next batch
would take the active segment past ``segment.bytes``, or when that batch's timestamp lies
``segment.ms`` after the first batch of the segment. The cleaner (`log_cleaner`) compacts
whole segments below the active one and replaces them with one cleaned segment.

With a log directory (``--log-dir``) a `LogStorage` mirrors every change on disk: appends,
truncations and moves of the log start.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kafkagen.runtime.records import NO_TIMESTAMP, RecordBatch

__all__ = ["BatchHome", "Log", "LogBatch", "LogStorage", "Segment", "VIEW_MIN", "served"]


class BatchHome(Protocol):
    """Where a batch's bytes can be read again once memory let go of them (a segment file)."""

    def read(self, position: int, size: int) -> bytes: ...

    def view(self, position: int, size: int) -> memoryview: ...


#: From this many bytes, batches that lie one after another in one file are served as a
#: view of it (`served`) rather than read or joined into new bytes: below it a copy costs
#: less than mapping the file.
VIEW_MIN = 64 * 1024


def served(batches: Sequence[LogBatch]) -> bytes | memoryview:
    """The bytes of ``batches`` (consecutive, from `Log.read`) as one value to send.

    One batch in memory is its own bytes. Batches that one segment file holds one after
    another, ``VIEW_MIN`` bytes or more, are a view of the file, whether memory still has
    them or not: no copy is made, as Kafka sends a segment's bytes straight from the file.
    Anything else is read and joined."""
    if not batches:
        return b""
    first = batches[0]
    if len(batches) == 1 and first._data is not None:
        return first._data
    home = first._home
    if home is not None:
        end = first._position
        for b in batches:
            if b._home is not home or b._position != end:
                break
            end += b.size
        else:
            if end - first._position >= VIEW_MIN:
                return home.view(first._position, end - first._position)
    return first.data if len(batches) == 1 else b"".join(b.data for b in batches)


class LogBatch:
    """One stored batch. Its bytes stay in memory until a log directory holds them and the
    broker's batch cache lets them go (`evict`); ``data`` then reads them from the file."""

    __slots__ = (
        "base_offset",
        "last_offset",
        "_data",
        "size",
        "max_timestamp",
        "max_timestamp_offset",
        "leader_epoch",
        "_home",
        "_position",
    )

    def __init__(
        self,
        base_offset: int,
        last_offset: int,
        data: bytes,
        max_timestamp: int,
        max_timestamp_offset: int,
        leader_epoch: int,
    ) -> None:
        self.base_offset = base_offset
        self.last_offset = last_offset
        self._data: bytes | None = data
        self.size = len(data)
        self.max_timestamp = max_timestamp
        #: Offset of the record holding max_timestamp.
        self.max_timestamp_offset = max_timestamp_offset
        self.leader_epoch = leader_epoch
        self._home: BatchHome | None = None
        self._position = 0

    @property
    def data(self) -> bytes:
        data = self._data
        if data is None:
            assert self._home is not None
            data = self._home.read(self._position, self.size)
        return data

    @property
    def resident(self) -> bool:
        """Whether the bytes are in memory (not only in the file)."""
        return self._data is not None

    def stored_at(self, home: BatchHome, position: int) -> None:
        """The batch's bytes are also in ``home`` at ``position``."""
        self._home = home
        self._position = position

    def evict(self) -> int:
        """Let go of the bytes if a file holds them; the bytes freed (0 if kept)."""
        if self._home is None or self._data is None:
            return 0
        self._data = None
        return self.size

    def __repr__(self) -> str:
        return (
            f"LogBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"size={self.size}, leader_epoch={self.leader_epoch})"
        )


@dataclass(slots=True)
class Segment:
    """A run of consecutive batches, from ``base_offset`` up to the next segment's base."""

    base_offset: int
    size: int = 0
    #: Max timestamp of the segment's first batch (-1: none yet): segment.ms counts from it.
    rolling_timestamp: int = -1
    #: Largest batch max timestamp in the segment (min.compaction.lag.ms compares it).
    largest_timestamp: int = NO_TIMESTAMP
    created_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    def add(self, batch: LogBatch) -> None:
        if self.size == 0 and self.rolling_timestamp < 0:
            self.rolling_timestamp = batch.max_timestamp
        self.size += batch.size
        self.largest_timestamp = max(self.largest_timestamp, batch.max_timestamp)


class LogStorage(Protocol):
    """Where a log's changes go besides memory (files under the log directory)."""

    def append(self, batch: LogBatch, new_segment: bool) -> None:
        """Write ``batch``, first starting a new segment file if ``new_segment``."""

    def replace_segments(self, first: int, end: int, batches: Sequence[LogBatch]) -> None:
        """The segments whose base offsets lie in [first, end) become one, of ``batches``."""

    def truncate(self, base_offset: int) -> None:
        """The batches from the one at ``base_offset`` on are gone."""

    def advance_start(self, offset: int) -> None: ...

    def flush(self) -> None:
        """Make every append so far durable (every flush.messages records, at a roll)."""

    def end_written(self, log_end: int) -> int:
        """How far a log ending at ``log_end`` is written (appends may be queued)."""


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
        "segments",
        "roll_limits",
        "flush_interval",
        "_unflushed",
        "first_dirty_offset",
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
        self.segments: list[Segment] = [Segment(0)]
        #: (segment.bytes, segment.ms) of the topic now; None: one segment forever.
        self.roll_limits: Callable[[], tuple[int, int]] | None = None
        #: flush.messages of the topic now; None: the storage is never asked to fsync
        #: (it still does when a segment rolls or the log closes).
        self.flush_interval: Callable[[], int] | None = None
        #: Records appended to the storage since it last made them durable.
        self._unflushed = 0
        #: Where the cleaner's next pass starts: everything below was cleaned (Kafka's
        #: cleaner checkpoint).
        self.first_dirty_offset = 0

    # -- writing ----------------------------------------------------------------------

    def append(self, batch: LogBatch, new_segment: bool | None = None) -> None:
        """Add ``batch`` at the end; ``new_segment`` None lets the roll rules decide.

        The batch may start above the log end: a compacted log copied from a leader has
        gaps.
        """
        if batch.base_offset < self.log_end_offset:
            raise ValueError(
                f"batch at {batch.base_offset} does not follow the log end {self.log_end_offset}"
            )
        if new_segment is None:
            new_segment = self._should_roll(batch)
        elif not self.batches and self.segments[-1].size == 0:
            new_segment = False  # a recovered log's first batch opens the empty segment
        if self.storage is not None:
            self.storage.append(batch, new_segment)
            # Kafka's rule: fsync once flush.messages records wait (by default never: the
            # OS writes them back; replication, not fsync, is what acks=all waits for).
            self._unflushed += batch.last_offset - batch.base_offset + 1
            if self.flush_interval is not None and self._unflushed >= self.flush_interval():
                self.flush()
        if new_segment:
            self.segments.append(Segment(batch.base_offset))
        elif not self.batches and self.segments[-1].size == 0:
            self.segments[-1].base_offset = batch.base_offset
        self.segments[-1].add(batch)
        self.batches.append(batch)
        self._bases.append(batch.base_offset)
        self.log_end_offset = batch.last_offset + 1
        self.size_in_bytes += batch.size
        if not self.epochs or self.epochs[-1][0] < batch.leader_epoch:
            self.epochs.append((batch.leader_epoch, batch.base_offset))

    def _should_roll(self, batch: LogBatch) -> bool:
        """Kafka's rule: the active segment would outgrow segment.bytes, or (not empty) it
        has waited segment.ms, counted between batch timestamps when they exist."""
        active = self.segments[-1]
        if self.roll_limits is None or active.size == 0:
            return False
        segment_bytes, segment_ms = self.roll_limits()
        if active.size > segment_bytes - batch.size:
            return True
        if active.rolling_timestamp >= 0:
            waited = batch.max_timestamp - active.rolling_timestamp
        else:
            waited = int(time.time() * 1000) - active.created_ms
        return waited > segment_ms

    def append_shared(self, batches: Sequence[LogBatch]) -> None:
        """Append a leader's batches (offsets already set) holding the very same bytes: the
        brokers share a process and a batch's bytes never change, so a follower needs no
        copy of its own, and the leader checked them when they were produced."""
        for b in batches:
            self.append(
                LogBatch(
                    b.base_offset,
                    b.last_offset,
                    b.data,
                    b.max_timestamp,
                    b.max_timestamp_offset,
                    b.leader_epoch,
                )
            )

    def truncate_to(self, offset: int) -> None:
        """Drop everything at or after ``offset`` (a follower whose log diverged)."""
        if offset >= self.log_end_offset:
            return
        i = bisect.bisect_left(self._bases, offset)
        if self.storage is not None and i < len(self.batches):
            self.storage.truncate(self.batches[i].base_offset)
        # A batch straddling the offset goes too: followers truncate at batch boundaries.
        for b in self.batches[i:]:
            self.size_in_bytes -= b.size
        del self.batches[i:]
        del self._bases[i:]
        self.log_end_offset = self.batches[-1].last_offset + 1 if self.batches else offset
        self.log_end_offset = max(self.log_end_offset, self.log_start_offset)
        self.first_dirty_offset = min(self.first_dirty_offset, self.log_end_offset)
        self._resize_segments()
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
            self.size_in_bytes -= self.batches[n].size
            n += 1
        del self.batches[:n]
        del self._bases[:n]
        self.first_dirty_offset = max(self.first_dirty_offset, offset)
        self._resize_segments()
        return n

    def replace_segments(self, first: int, count: int, batches: list[LogBatch]) -> None:
        """Put ``batches`` (a cleaned copy) in place of ``count`` segments from index
        ``first``, as one segment with the first one's base offset."""
        segs = self.segments
        start = segs[first].base_offset
        end = segs[first + count].base_offset if first + count < len(segs) else None
        lo = bisect.bisect_left(self._bases, start)
        hi = len(self._bases) if end is None else bisect.bisect_left(self._bases, end)
        if self.storage is not None:
            self.storage.replace_segments(start, -1 if end is None else end, batches)
        self.size_in_bytes += sum(b.size for b in batches) - sum(
            b.size for b in self.batches[lo:hi]
        )
        self.batches[lo:hi] = batches
        self._bases[lo:hi] = [b.base_offset for b in batches]
        cleaned = Segment(start, created_ms=segs[first].created_ms)
        for b in batches:
            cleaned.add(b)
        segs[first : first + count] = [cleaned]

    def _resize_segments(self) -> None:
        """Recount segment sizes after batches went from either end; drop emptied
        segments (the last one stays, to take appends)."""
        if not self.batches:
            self.segments = [Segment(self.log_end_offset)]
            return
        first_base = self.batches[0].base_offset
        kept: list[Segment] = []
        for seg in self.segments:
            if seg.base_offset <= self.batches[-1].last_offset:
                kept.append(seg)
        while len(kept) > 1 and kept[1].base_offset <= first_base:
            kept.pop(0)
        j = 0
        for k, seg in enumerate(kept):
            end = kept[k + 1].base_offset if k + 1 < len(kept) else None
            size = 0
            while j < len(self.batches) and (end is None or self.batches[j].base_offset < end):
                size += self.batches[j].size
                j += 1
            seg.size = size
        self.segments = kept

    def segment_batches(self, index: int) -> list[LogBatch]:
        """The batches of segment ``index``."""
        segs = self.segments
        lo = bisect.bisect_left(self._bases, segs[index].base_offset)
        if index + 1 == len(segs):
            return self.batches[lo:]
        return self.batches[lo : bisect.bisect_left(self._bases, segs[index + 1].base_offset)]

    def flush(self) -> None:
        if self.storage is not None:
            self.storage.flush()
        self._unflushed = 0

    @property
    def written_end_offset(self) -> int:
        """The log end as far as the log directory holds it (all of it without one): the
        leader's high watermark goes no further, as Kafka's follows its written log."""
        storage = self.storage
        return self.log_end_offset if storage is None else storage.end_written(self.log_end_offset)

    # -- reading ----------------------------------------------------------------------

    def _first_index(self, offset: int) -> int:
        """Index of the batch holding ``offset``, or of the first batch after it."""
        i = bisect.bisect_right(self._bases, offset) - 1
        if i < 0:
            return 0
        return i if self.batches[i].last_offset >= offset else i + 1

    def read(self, offset: int, max_bytes: int, max_offset: int, min_one: bool) -> list[LogBatch]:
        """Whole batches from the one holding ``offset``, ending below ``max_offset``.

        At most ``max_bytes`` in all, except that with ``min_one`` the first batch comes
        even when it alone is larger (so a consumer can always make progress).
        """
        out: list[LogBatch] = []
        total = 0
        batches = self.batches
        for i in range(self._first_index(offset), len(batches)):
            b = batches[i]
            if b.last_offset >= max_offset:
                break
            size = b.size
            if total + size > max_bytes and not (min_one and not out):
                break
            out.append(b)
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
            total += b.size
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
