"""Broker state on disk, for ``kafkagen serve --log-dir DIR`` (broker config ``log.dirs``).

Layout of the directory:

- ``cluster.json``: the controller's image (cluster id, brokers, topics and their ids,
  partition assignments, leaders, leader epochs, ISRs, dynamic configs, ACLs, the producer-id
  block), rewritten atomically (temporary file, fsync, rename) on every change;
- ``broker-<id>/<topic>-<partition>/``: one replica's log, as segment files named by the
  base offset of their first batch (``00000000000000000000.log``) holding the v2 batches
  exactly as the in-memory log keeps them, offsets assigned; ``partition.metadata`` names
  the topic id, so a stale directory of a deleted topic is never taken for a new one;
- ``broker-<id>/checkpoints.json``: each replica's log start offset, high watermark and
  the cleaner's first dirty offset (where its next pass starts).

Segment files follow the in-memory log's segments (rolled on ``segment.bytes`` and
``segment.ms``). The cleaner replaces a run of segments with one cleaned file: it is written
as ``<base>.cleaned``, fsynced, renamed to ``<base>.<end>.swap`` (the run it replaces is
[base, end)), the old files are deleted and the swap file is renamed to ``<base>.log``. On
start a ``.swap`` file completes its replacement and a ``.cleaned`` one is dropped, so a
crash leaves either the old segments or the cleaned one, never half of each. (A
truncation of a file a fetch's answer still maps writes the kept part as
``<base>.log.tmp`` and renames it over the file; a start drops a ``.log.tmp`` left.)

Every append is written to its segment by the broker's writer thread (`log_writer`), in
order, and acknowledged only once written, so a killed process loses nothing it answered
for. A failed write takes the broker's log directory offline until it restarts. As Kafka,
the files are fsynced every ``flush.messages`` records (by default never), when a segment
rolls and when the broker stops, not before an acks=-1 answer: replication is what that
waits for. The process keeps the newest `CACHE_BYTES` of batches in memory
(`BatchCache`); older ones are read from their files when fetched, and a fetch of 64 KiB
or more of one file's batches is sent from a read-only mapping of the file
(`_Segment.view`), which a truncation leaves intact.

Truncations (a follower's divergent tail) cut the files, log start moves drop whole
segments below the start and are checkpointed, deleted replicas lose their directory.

On start every segment is read back and each batch checked: framing, magic 2, CRC-32C,
offsets that follow on. The first torn or corrupt batch and everything after it is cut
off, with a warning naming the partition and the bytes cut. The partition then rebuilds
its producer state and transaction index from the batches, as a follower does, and the
coordinators reload from their partitions the usual way when leadership is applied.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import fcntl
import json
import logging
import mmap
import os
import re
import shutil
import struct
import uuid
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkagen.runtime.records import HEADER_SIZE, NO_TIMESTAMP, RecordBatch, TimestampType
from kafkagen.runtime.topic_partition import TopicPartition

from ..metadata.cluster_metadata import ClusterMetadata
from ..security.acls import AclBinding, AclFilter, AclStore
from ._log import LogBatch
from .log_writer import DiskWriter, write_all

if TYPE_CHECKING:
    from .partition import Partition

__all__ = [
    "BatchCache",
    "BrokerStorage",
    "CACHE_BYTES",
    "ClusterStorage",
    "LogDirError",
    "PartitionFiles",
]

_log = logging.getLogger("kafkagen.broker.log_dir")

METADATA_FILE = "cluster.json"
LOCK_FILE = ".lock"
CHECKPOINT_FILE = "checkpoints.json"
PARTITION_METADATA = "partition.metadata"
#: Bytes of stored batches a process keeps in memory beside its log directory (the most
#: recently written ones); older ones are read from their segment files when fetched.
CACHE_BYTES = 64 * 1024 * 1024
_SEGMENT = re.compile(r"(\d{20})\.log")
_SWAP = re.compile(r"(\d{20})\.(\d{20}|-1)\.swap")
_CLEANED = re.compile(r"\d{20}\.cleaned")
_TRUNCATED = re.compile(r"\d{20}\.log\.tmp")
_PARTITION_DIR = re.compile(r"(.+)-(\d+)")
_PREFIX = struct.Struct(">qi")  # base offset, batch length
_LAST_DELTA = struct.Struct(">i")
_LAST_DELTA_AT = 23
_MAGIC_AT = 16


class LogDirError(Exception):
    """The log directory cannot be used as it is; the message says why and where."""


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_synced(path: Path, data: bytes) -> None:
    """Write ``path`` anew with ``data`` and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new content."""
    tmp = path.with_name(path.name + ".tmp")
    _write_synced(tmp, data)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


# -- one replica's files ---------------------------------------------------------------------


@dataclass(slots=True)
class _Segment:
    path: Path
    size: int = 0
    #: Base offset and file position of each batch, ascending.
    bases: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    last_offset: int = -1
    #: Opened on the first read of a batch memory let go of.
    read_fd: int = -1
    #: The mappings `view` made that something still holds.
    maps: list[weakref.ref[mmap.mmap]] = field(default_factory=list)
    #: Bytes the file holds: ``size`` once the writer has caught up with this segment.
    written: int = 0
    #: The log directory's writer, whose queue may still hold this file's last bytes.
    writer: DiskWriter | None = None

    def _wait_written(self, end: int) -> None:
        if end > self.written and self.writer is not None:
            self.writer.drain()  # rare: a read of bytes appended a moment ago

    def view(self, position: int, size: int) -> memoryview:
        """The ``size`` bytes at ``position`` without a copy: a view of the file mapped
        read-only, so a fetch sends them from the page cache, as Kafka sends a segment's
        bytes. The mapping lives while the view (or a slice of it) does;
        `PartitionFiles.truncate` leaves its bytes in place meanwhile."""
        self._wait_written(position + size)
        if self.read_fd < 0:
            self.read_fd = os.open(self.path, os.O_RDONLY)
        start = position - position % mmap.ALLOCATIONGRANULARITY
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)  # one fault, not one a page
        m = mmap.mmap(self.read_fd, position - start + size, flags, mmap.PROT_READ, offset=start)
        self.maps = [r for r in self.maps if r() is not None]
        self.maps.append(weakref.ref(m))
        return memoryview(m)[position - start :]

    def mapped(self) -> bool:
        """Whether a view of this file is still held somewhere."""
        return any(r() is not None for r in self.maps)

    def read(self, position: int, size: int) -> bytes:
        """The ``size`` bytes at ``position`` (a `BatchHome` of the batches it holds)."""
        self._wait_written(position + size)
        if self.read_fd < 0:
            self.read_fd = os.open(self.path, os.O_RDONLY)
        data = os.pread(self.read_fd, size, position)
        if len(data) != size:
            raise LogDirError(
                f"{self.path}: {len(data)} bytes at position {position} where a batch of "
                f"{size} was written (the file was cut by something else)"
            )
        return data

    def close(self) -> None:
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1


def _replace_with_prefix(seg: _Segment, size: int) -> None:
    """Replace ``seg``'s file with a new one holding its first ``size`` bytes (written as
    ``<name>.tmp`` first, which a start finds and drops if the process stopped there)."""
    tmp = seg.path.with_name(seg.path.name + ".tmp")
    with open(seg.path, "rb") as old, open(tmp, "wb") as new:
        _copy_prefix(old.fileno(), new.fileno(), size, seg.path)
        os.fsync(new.fileno())
    seg.close()  # the read fd is of the old file
    seg.maps = []
    os.replace(tmp, seg.path)
    _fsync_dir(seg.path.parent)


def _copy_prefix(src: int, dst: int, size: int, path: Path) -> None:
    """Copy the first ``size`` bytes of ``src`` to ``dst``: in the kernel where it can."""
    copied = 0
    while copied < size:
        try:
            n = os.copy_file_range(src, dst, size - copied, copied, copied)
        except (AttributeError, OSError):  # not Linux, or a file system that cannot
            chunk = os.pread(src, min(size - copied, 1 << 20), copied)
            n = os.pwrite(dst, chunk, copied)
        if n == 0:
            raise LogDirError(f"{path}: ends before {size} bytes, where batches were")
        copied += n


class BatchCache:
    """The stored batches whose bytes stay in memory beside their files, oldest out
    first, within a byte budget shared by every replica of the process.

    Kafka leaves the recent part of its logs to the OS's page cache; a log directory here
    does the same for everything past the budget: a fetch of an older batch reads it from
    its segment file (and keeps no copy), as a consumer catching up makes Kafka do.
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        #: Bytes of the batches admitted and not yet let go of.
        self.bytes = 0
        self._resident: collections.deque[LogBatch] = collections.deque()

    def admit(self, batch: LogBatch) -> None:
        self._resident.append(batch)
        self.bytes += batch.size
        resident = self._resident
        while self.bytes > self.budget and resident:
            old = resident.popleft()
            self.bytes -= old.size
            old.evict()


def _segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


class PartitionFiles:
    """The segment files of one replica; `Log` calls it on every change (a `LogStorage`)."""

    def __init__(
        self,
        tp: TopicPartition,
        directory: Path,
        topic_id: uuid.UUID,
        on_start_moved: Callable[[], None],
        writer: DiskWriter,
        cache: BatchCache | None = None,
    ) -> None:
        self.tp = tp
        self.cache = cache
        #: The log directory's writer (without an event loop it writes at once).
        self.writer = writer
        self.directory = directory
        self.topic_id = topic_id
        self._on_start_moved = on_start_moved
        self.segments: list[_Segment] = []
        #: The log end offset of the last batch given to the writer, and of the last one
        #: it wrote: the same when nothing waits (see `end_written`).
        self.queued_end = 0
        self.written_end = 0
        self._fd: int | None = None
        self._unsynced = False
        self.log_start_offset = 0

    # -- start ------------------------------------------------------------------------

    def recover(self) -> list[tuple[bytes, bool]]:
        """Read every segment back; cut the first bad batch and all after it.

        Returns the good batches in order, each with whether it starts a segment. A
        directory of another topic id (a deleted topic's) is emptied first; a cleaning cut
        short is finished or dropped first.
        """
        if not self.directory.is_dir():
            return []
        meta = self.directory / PARTITION_METADATA
        try:
            owner = uuid.UUID(meta.read_text().split(":", 1)[1].strip())
        except (OSError, ValueError, IndexError):
            owner = None
        if owner != self.topic_id:
            _log.warning(
                "%s: %s belongs to another topic id; starting empty", self.tp, self.directory
            )
            shutil.rmtree(self.directory)
            return []
        self._finish_replacements()
        names = sorted(p.name for p in self.directory.iterdir() if _SEGMENT.fullmatch(p.name))
        out: list[tuple[bytes, bool]] = []
        next_offset = -1
        for i, name in enumerate(names):
            path = self.directory / name
            data = path.read_bytes()
            seg = _Segment(path, writer=self.writer)
            pos = 0
            reason = ""
            while pos < len(data):
                reason = _check_batch(data, pos, next_offset)
                if reason:
                    break
                length = _PREFIX.unpack_from(data, pos)[1]
                size = length + 12
                base = _PREFIX.unpack_from(data, pos)[0]
                last = base + _LAST_DELTA.unpack_from(data, pos + _LAST_DELTA_AT)[0]
                out.append((data[pos : pos + size], not seg.bases))
                seg.bases.append(base)
                seg.positions.append(pos)
                seg.last_offset = last
                next_offset = last + 1
                pos += size
            seg.size = seg.written = pos
            if reason:
                _log.warning(
                    "%s: cut %d bytes at position %d of %s: %s",
                    self.tp,
                    len(data) - pos,
                    pos,
                    name,
                    reason,
                )
                with open(path, "r+b") as f:
                    f.truncate(pos)
                    os.fsync(f.fileno())
                for later in names[i + 1 :]:
                    dropped = self.directory / later
                    _log.warning(
                        "%s: dropped %s (%d bytes) after the cut",
                        self.tp,
                        later,
                        dropped.stat().st_size,
                    )
                    dropped.unlink()
            if seg.bases:
                self.segments.append(seg)
            else:
                path.unlink()
            if reason:
                break
        return out

    def _finish_replacements(self) -> None:
        """Complete a cleaner's swap that was renamed into place; drop unfinished output."""
        for p in sorted(self.directory.iterdir()):
            if _CLEANED.fullmatch(p.name):
                _log.warning("%s: dropped %s, a cleaning cut short", self.tp, p.name)
                p.unlink()
                continue
            if _TRUNCATED.fullmatch(p.name):
                _log.warning("%s: dropped %s, a truncation cut short", self.tp, p.name)
                p.unlink()
                continue
            m = _SWAP.fullmatch(p.name)
            if m is None:
                continue
            first, end = int(m.group(1)), int(m.group(2))
            for old in self.directory.iterdir():
                o = _SEGMENT.fullmatch(old.name)
                if (
                    o is not None
                    and first <= int(o.group(1))
                    and (end < 0 or int(o.group(1)) < end)
                ):
                    old.unlink()
            os.replace(p, self.directory / _segment_name(first))
            _fsync_dir(self.directory)
            _log.info(
                "%s: finished replacing segments [%d, %d) with a cleaned one", self.tp, first, end
            )

    # -- LogStorage -------------------------------------------------------------------

    def append(self, batch: LogBatch, new_segment: bool) -> None:
        seg = self.segments[-1] if self.segments else None
        if seg is None or (new_segment and seg.size):
            seg = self._roll(batch.base_offset)
        fd = self._fd
        if fd is None:
            fd = self._fd = os.open(seg.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.queued_end = batch.last_offset + 1
        self.writer.write(fd, batch.data, seg.size, seg, self.queued_end, self)
        seg.bases.append(batch.base_offset)
        seg.positions.append(seg.size)
        batch.stored_at(seg, seg.size)
        seg.size += batch.size
        seg.last_offset = batch.last_offset
        self._unsynced = True
        if self.cache is not None:
            self.cache.admit(batch)

    def stored(self, batches: Sequence[LogBatch]) -> None:
        """``batches`` (read back by `recover`, in its order) are in these files."""
        where = ((seg, pos) for seg in self.segments for pos in seg.positions)
        for batch, (seg, pos) in zip(batches, where, strict=True):
            batch.stored_at(seg, pos)
            if self.cache is not None:
                self.cache.admit(batch)

    def flush(self) -> None:
        if self._unsynced and self._fd is not None:
            self.writer.sync(self._fd)  # after the writes before it, as it must
        self._unsynced = False

    def end_written(self, log_end: int) -> int:
        """Where the written part of a log ending at ``log_end`` ends."""
        return log_end if self.written_end >= self.queued_end else self.written_end

    def _drain(self) -> None:
        """Let the writer finish this directory's queued jobs: the files are about to be
        cut, swapped or closed on this thread."""
        self.writer.drain()

    def truncate(self, base_offset: int) -> None:
        self._drain()
        self.queued_end = self.written_end = 0  # nothing waits
        self._close_fd()
        while self.segments:
            seg = self.segments[-1]
            i = bisect.bisect_left(seg.bases, base_offset)
            if i == 0:
                seg.close()
                seg.path.unlink(missing_ok=True)
                self.segments.pop()
                continue
            if i < len(seg.bases):
                pos = seg.positions[i]
                if seg.mapped():
                    # A view still held (an answer being sent) would fault on the cut
                    # pages: the kept part moves to a new file, the old one goes when the
                    # last view of it does.
                    _replace_with_prefix(seg, pos)
                else:
                    with open(seg.path, "r+b") as f:
                        f.truncate(pos)
                        os.fsync(f.fileno())
                seg.size = seg.written = pos
                del seg.bases[i:]
                del seg.positions[i:]
                # The new last batch ends before the first dropped one.
                seg.last_offset = base_offset - 1
            break

    def replace_segments(self, first: int, end: int, batches: Sequence[LogBatch]) -> None:
        """Swap the files holding offsets [first, end) (end -1: to the last segment) for
        one file of ``batches``, crash-safely (see the module's notes)."""
        old = [
            i
            for i, seg in enumerate(self.segments)
            if (end < 0 or seg.bases and seg.bases[0] < end)
            and (i + 1 == len(self.segments) or self.segments[i + 1].bases[0] > first)
        ]
        if not old:
            return
        self._drain()
        if old[-1] == len(self.segments) - 1:
            self._close_fd()
        name = _segment_name(first)
        cleaned = self.directory / (name[:-4] + ".cleaned")
        data = b"".join(b.data for b in batches)
        _write_synced(cleaned, data)
        swap = self.directory / f"{first:020d}.{end if end < 0 else f'{end:020d}'}.swap"
        os.replace(cleaned, swap)
        _fsync_dir(self.directory)
        for i in old:
            self.segments[i].close()
            self.segments[i].path.unlink(missing_ok=True)
        if data:
            os.replace(swap, self.directory / name)
        else:
            swap.unlink()  # everything in those segments went: no file left for them
        _fsync_dir(self.directory)
        seg = _Segment(self.directory / name, len(data), written=len(data), writer=self.writer)
        pos = 0
        for b in batches:
            seg.bases.append(b.base_offset)
            seg.positions.append(pos)
            b.stored_at(seg, pos)
            pos += b.size
            seg.last_offset = b.last_offset
            if self.cache is not None:
                self.cache.admit(b)
        self.segments[old[0] : old[-1] + 1] = [seg] if seg.bases else []

    def advance_start(self, offset: int) -> None:
        self.log_start_offset = offset
        # Whole segments below the new start go; the last one stays open for appends.
        while len(self.segments) > 1 and self.segments[0].last_offset < offset:
            gone = self.segments.pop(0)
            gone.close()
            gone.path.unlink(missing_ok=True)
        self._on_start_moved()

    # -- lifecycle --------------------------------------------------------------------

    def _roll(self, base_offset: int) -> _Segment:
        if self._fd is not None:
            # The old file is fsynced and closed after its queued writes, off this thread.
            self.writer.close(self._fd, self._unsynced)
            self._fd = None
            self._unsynced = False
        self._close_fd()
        new_dir = not self.directory.is_dir()
        if new_dir:
            self.directory.mkdir(parents=True)
            write_atomically(
                self.directory / PARTITION_METADATA, f"topic_id: {self.topic_id}\n".encode()
            )
            _fsync_dir(self.directory.parent)
        seg = _Segment(self.directory / _segment_name(base_offset), writer=self.writer)
        self._fd = os.open(seg.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o644)
        _fsync_dir(self.directory)
        self.segments.append(seg)
        return seg

    def _close_fd(self) -> None:
        if self._fd is not None:
            self.writer.drain()
            if self.writer.offline:  # nothing more is asked of a failed directory
                self._unsynced = False
            if self._unsynced:
                os.fsync(self._fd)
                self._unsynced = False
            os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        self._close_fd()
        for seg in self.segments:
            seg.close()

    def delete(self) -> None:
        """The replica is gone (topic deleted, replica moved away): remove its files."""
        if self._fd is not None:
            self.writer.drain()
            os.close(self._fd)
            self._fd = None
        for seg in self.segments:
            seg.close()
        self.segments.clear()
        shutil.rmtree(self.directory, ignore_errors=True)


def _check_batch(data: bytes, pos: int, next_offset: int) -> str:
    """Why the batch at ``pos`` cannot be kept ("" if it can)."""
    remaining = len(data) - pos
    if remaining < HEADER_SIZE:
        return f"{remaining} bytes left, less than a batch header"
    base, length = _PREFIX.unpack_from(data, pos)
    if length < HEADER_SIZE - 12:
        return f"batch length {length} is too small"
    if length + 12 > remaining:
        return f"batch of {length + 12} bytes but only {remaining} left"
    if data[pos + _MAGIC_AT] != 2:
        return f"magic byte {data[pos + _MAGIC_AT]}"
    batch = RecordBatch(memoryview(data)[pos : pos + length + 12])
    if not batch.is_valid():
        return "CRC mismatch"
    if batch.last_offset < base:
        return f"last offset delta {batch.last_offset - base} is negative"
    # Above the previous batch's end is fine: compaction leaves gaps.
    if next_offset >= 0 and base < next_offset:
        return f"base offset {base} does not follow {next_offset - 1}"
    return ""


def log_batch(b: RecordBatch, data: bytes) -> LogBatch:
    """The log's view of a batch read from disk, with the offset of its max timestamp."""
    ts_offset = b.last_offset
    if b.max_timestamp != NO_TIMESTAMP:
        if b.timestamp_type == TimestampType.LOG_APPEND_TIME:
            ts_offset = b.base_offset
        else:
            for r in b:
                if r.timestamp == b.max_timestamp:
                    ts_offset = r.offset
                    break
    return LogBatch(
        b.base_offset, b.last_offset, data, b.max_timestamp, ts_offset, b.partition_leader_epoch
    )


# -- one broker ------------------------------------------------------------------------------


class BrokerStorage:
    """The replicas of one broker under ``DIR/broker-<id>``."""

    def __init__(
        self,
        root: Path,
        broker_id: int,
        metadata: ClusterMetadata,
        cache: BatchCache | None = None,
    ) -> None:
        self.path = root / f"broker-{broker_id}"
        self.cache = cache
        self.path.mkdir(parents=True, exist_ok=True)
        #: Writes the segment files on a thread of its own (`log_writer`).
        self.writer = DiskWriter(self.path)
        self.broker_id = broker_id
        self.metadata = metadata
        self.files: dict[TopicPartition, PartitionFiles] = {}
        #: Replicas whose high watermark the checkpoint file reports (set by the broker).
        self.partitions: Callable[[], dict[TopicPartition, Partition]] = dict
        self._checkpoints: dict[str, tuple[int, ...]] = {}
        self._checkpoint_pending = False
        path = self.path / CHECKPOINT_FILE
        if path.exists():
            try:
                raw = json.loads(path.read_text())
                self._checkpoints = {str(k): tuple(int(n) for n in v) for k, v in raw.items()}
            except (ValueError, TypeError, IndexError, AttributeError) as e:
                raise LogDirError(f"{path}: unreadable checkpoints ({e})") from None

    def open(self, partition: Partition, clock_ms: float) -> None:
        """Read the replica's files into ``partition`` (log, producer state, high
        watermark), then mirror its log from now on."""
        tp = partition.tp
        topic = tp.topic
        files = PartitionFiles(
            tp,
            self.path / f"{topic}-{tp.partition}",
            partition.topic_id,
            self.checkpoint_soon,
            self.writer,
            self.cache,
        )
        log = partition.log
        batches = files.recover()
        first_base = 0
        if batches:
            # Segments below the log start may be gone: the log begins at the first
            # segment's base (its first batches may have been compacted away).
            first_base = int(files.segments[0].path.name[:20])
            log.log_start_offset = log.log_end_offset = first_base
        for data, starts_segment in batches:
            b = RecordBatch(memoryview(data))
            log.append(log_batch(b, data), starts_segment)
            partition.track_producer_state(b, clock_ms)
        files.stored(log.batches)
        start, hw, *dirty = self._checkpoints.get(repr(tp), (0, 0))
        if log.batches:
            start = max(start, first_base)
            if start > log.log_start_offset:
                log.advance_start(start)
        elif start > 0:
            # Everything below the start was deleted: the log is empty from there.
            log.log_start_offset = log.log_end_offset = start
        files.log_start_offset = log.log_start_offset
        partition.high_watermark = max(min(hw, log.log_end_offset), log.log_start_offset)
        log.first_dirty_offset = max(dirty[0] if dirty else 0, log.log_start_offset)
        partition.producers.trim_aborted(log.log_start_offset)
        log.storage = files
        self.files[tp] = files

    def remove(self, tp: TopicPartition) -> None:
        files = self.files.pop(tp, None)
        if files is not None:
            files.delete()
        else:
            shutil.rmtree(self.path / f"{tp.topic}-{tp.partition}", ignore_errors=True)
        self.checkpoint_soon()

    def remove_strays(self) -> None:
        """Drop directories of replicas this broker no longer has (a deletion cut short)."""
        for p in self.path.iterdir():
            m = _PARTITION_DIR.fullmatch(p.name)
            if not p.is_dir() or m is None:
                continue
            tp = TopicPartition(m.group(1), int(m.group(2)))
            info = self.metadata.partition(tp.topic, tp.partition)
            if info is None or self.broker_id not in info.replicas:
                _log.info("broker %d: removing %s, a replica it no longer has", self.broker_id, p)
                shutil.rmtree(p, ignore_errors=True)

    def checkpoint_soon(self) -> None:
        """Write the checkpoints once the current event is handled (several moves of log
        starts in one retention pass make one write)."""
        if self._checkpoint_pending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.write_checkpoints()
            return
        self._checkpoint_pending = True
        loop.call_soon(self.write_checkpoints)

    def write_checkpoints(self) -> None:
        self._checkpoint_pending = False
        parts = self.partitions()
        data = {
            repr(tp): [p.log.log_start_offset, p.high_watermark, p.log.first_dirty_offset]
            for tp, p in parts.items()
            if tp in self.files
        }
        self._checkpoints = {k: tuple(v) for k, v in data.items()}
        write_atomically(self.path / CHECKPOINT_FILE, json.dumps(data, indent=0).encode())

    def close(self) -> None:
        self.writer.drain()
        for files in self.files.values():
            files.close()
        self.writer.stop()
        self.write_checkpoints()


# -- the cluster -----------------------------------------------------------------------------


class _SavedAcls(AclStore):
    """ACLs that report every change (to save the metadata)."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        super().__init__()
        self._on_change = on_change

    def add(self, binding: AclBinding) -> None:
        super().add(binding)
        self._on_change()

    def delete(self, flt: AclFilter) -> list[AclBinding]:
        gone = super().delete(flt)
        if gone:
            self._on_change()
        return gone


class ClusterStorage:
    """The log directory of a whole cluster: its metadata and each broker's replicas."""

    def __init__(self, root: str | Path, brokers: int, cache_bytes: int = CACHE_BYTES) -> None:
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise LogDirError(f"cannot use log directory {self.root}: {e.strerror}") from None
        if not os.access(self.root, os.W_OK):
            raise LogDirError(f"log directory {self.root} is not writable")
        # One process per directory: two would write the same files.
        self._lock = os.open(self.root / LOCK_FILE, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._lock)
            raise LogDirError(
                f"log directory {self.root} is in use by another broker process"
            ) from None
        self.brokers = brokers
        self.metadata: ClusterMetadata | None = None
        self.cache = BatchCache(cache_bytes)

    @property
    def metadata_path(self) -> Path:
        return self.root / METADATA_FILE

    def load(self, metadata: ClusterMetadata) -> bool:
        """Restore the saved image into ``metadata``; False when there is none yet."""
        path = self.metadata_path
        if not path.exists():
            logs = [p for p in self.root.glob("broker-*/*") if p.is_dir()]
            if logs:
                raise LogDirError(
                    f"{self.root} holds replica logs ({logs[0]}, ...) but no {METADATA_FILE}: "
                    "without it they cannot be placed; restore it or use another --log-dir"
                )
            return False
        try:
            snap: Any = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise LogDirError(f"{path}: cannot read the cluster metadata ({e})") from None
        saved = snap.get("brokers") if isinstance(snap, dict) else None
        if saved != list(range(self.brokers)):
            n = len(saved) if isinstance(saved, list) else "?"
            raise LogDirError(
                f"{path} holds a cluster of {n} broker(s); start it with --brokers {n} "
                f"(not {self.brokers}) or use another --log-dir"
            )
        try:
            metadata.restore(snap)
        except ValueError as e:
            raise LogDirError(f"{path}: {e}") from None
        return True

    def attach(self, metadata: ClusterMetadata) -> None:
        """Save ``metadata`` now and after every change from here on."""
        self.metadata = metadata
        acls = _SavedAcls(self.save)
        for b in metadata.acls.find(_ANY):
            AclStore.add(acls, b)
        metadata.acls = acls
        metadata.on_change = self.save
        metadata.configs.on_change = self.save
        self.save()

    def save(self) -> None:
        if self.metadata is None:
            return
        data = json.dumps(self.metadata.snapshot(), indent=1, sort_keys=True).encode()
        write_atomically(self.metadata_path, data)

    def broker(self, broker_id: int, metadata: ClusterMetadata) -> BrokerStorage:
        return BrokerStorage(self.root, broker_id, metadata, self.cache)

    def close(self) -> None:
        """Let another process use the directory (the brokers closed their files)."""
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1


def _any_filter() -> AclFilter:
    from ..security.acls import AclOperation, AclPermission, PatternType, ResourceType

    return AclFilter(
        ResourceType.ANY, None, PatternType.ANY, None, None, AclOperation.ANY, AclPermission.ANY
    )


_ANY = _any_filter()
