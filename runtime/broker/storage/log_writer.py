"""The writes of one broker's log directory, on a thread of their own.

The event loop's thread serves every socket and every broker of the process; the
``write()`` of a batch into the page cache is kernel work that grows costly once a few GB
have been written (see docs/kafka-benchmark.md, "Sustained writes"). `os.write` releases
the interpreter lock, so a writer thread lets the kernel's copy run on the second core
while the loop goes on with the next request.

What stays on the loop's thread: every decision and all bookkeeping (offsets, segment
positions, rolls). The writer only carries out, in order, the jobs it is given: write
these bytes to that file, fsync it, close it. Its contract with the rest of the broker:

- ``queued`` numbers the jobs given, ``written`` the last one done; an answer that
  acknowledges an append waits until ``written`` reaches the job's number, as Kafka
  answers once its ``write()`` returned (`ReplicaManager` keeps such answers in the produce
  purgatory, woken by `on_written`).
- A job that fails takes the log directory offline, as Kafka does with a failed log
  directory: the failed write is cut back out of its file, no later job runs, and every
  append from then on raises, so no batch is ever written after a torn one. Answers
  waiting on jobs from the failed one on say KAFKA_STORAGE_ERROR.
- Without a running event loop (recovery, tests driving a log directly) jobs run at once
  on the caller's thread, with the same failure rule.
"""

from __future__ import annotations

import asyncio
import collections
import errno
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from kafkagen.runtime.topic_partition import TopicPartition

__all__ = [
    "DiskWriter",
    "INLINE_BYTES",
    "QUEUE_BYTES",
    "WrittenBytes",
    "WrittenOffsets",
    "write_all",
]

_log = logging.getLogger("kafkagen.broker.log_dir")

#: Bytes of writes a writer may have queued; an append past it waits for the writer, so a
#: disk slower than the network holds producers back instead of filling memory.
QUEUE_BYTES = 64 * 1024 * 1024

#: A write this small, with nothing queued, is made on the caller's thread: handing it
#: over (and waking the loop to answer) costs more than the write.
INLINE_BYTES = 16 * 1024

#: Job kinds; a close may fsync first (``_SYNC | _CLOSE``).
_WRITE, _SYNC, _CLOSE = 0, 1, 2
#: Buffers one gathered write may take.
_IOV_MAX = min(os.sysconf("SC_IOV_MAX"), 1024) if hasattr(os, "sysconf") else 16


class WrittenBytes(Protocol):
    """A file a write lands in: the writer moves ``written`` past it once it is there."""

    written: int


class WrittenOffsets(Protocol):
    """A log a write belongs to: the writer moves ``written_end`` past its batch."""

    tp: TopicPartition
    written_end: int


class DiskWriter:
    """Runs one log directory's file writes in order, on its own thread (see the module)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: Number of the last job given, and of the last one done.
        self.queued = 0
        self.written = 0
        #: The error that took the directory offline, and the number of the job it ended.
        self.failure: OSError | None = None
        self.failed_at = 0
        #: Called on the loop's thread after jobs were done (or one failed).
        self.on_written: Callable[[], None] = _nothing
        #: The logs written to since `written_logs` was last asked.
        self._touched: collections.deque[WrittenOffsets] = collections.deque()
        self._jobs: collections.deque[_Job] = collections.deque()
        self._bytes = 0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake_pending = False
        self._stopping = False

    # -- the loop's side -----------------------------------------------------------------

    @property
    def offline(self) -> bool:
        return self.failure is not None

    def offline_error(self) -> OSError:
        e = self.failure
        assert e is not None
        return OSError(
            e.errno or errno.EIO,
            f"the log directory {self.path} is offline after a failed write "
            f"({e.strerror or e})",
        )

    def write(
        self,
        fd: int,
        data: bytes,
        position: int,
        file: WrittenBytes,
        end_offset: int,
        log: WrittenOffsets,
    ) -> int:
        """Append ``data`` to ``fd`` (at ``position`` of ``file``), a batch that ends
        ``log`` at ``end_offset``; the job's number."""
        return self._give((0, _WRITE, fd, data, position, file, end_offset, log))

    def sync(self, fd: int) -> int:
        return self._give((0, _SYNC, fd, None, 0, None, 0, None))

    def close(self, fd: int, sync: bool) -> int:
        return self._give((0, _CLOSE | _SYNC if sync else _CLOSE, fd, None, 0, None, 0, None))

    def written_logs(self) -> set[WrittenOffsets]:
        """The logs written to since the last call (on the loop's thread)."""
        touched = self._touched
        out = set()
        while touched:
            out.add(touched.popleft())
        return out

    def _give(self, job: _Job) -> int:
        if self.failure is not None:
            raise self.offline_error()
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        idle = self.written == self.queued
        data = job[3]
        inline = loop is None or self._stopping
        if not inline and idle and data is not None and len(data) <= INLINE_BYTES:
            inline = True  # a small write with nothing queued: a hand-over costs more
        if inline and not idle:
            self.drain()
        self.queued += 1
        seq = self.queued
        job = (seq, *job[1:])
        if inline:
            self._run_job(job)
            if self.failure is not None:
                raise self.offline_error()
            return seq
        self._loop = loop
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"log-writer {self.path.name}", daemon=True
            )
            self._thread.start()
        with self._cond:
            self._jobs.append(job)
            if job[3] is not None:
                self._bytes += len(job[3])
            self._cond.notify()
            full = self._bytes > QUEUE_BYTES
        if full:
            self.drain()
        return seq

    def done(self, seq: int) -> bool | None:
        """Whether job ``seq`` is done: True, False (still queued), None (it failed)."""
        if self.written >= seq:
            return True
        if self.failure is not None and seq >= self.failed_at:
            return None
        return False

    def drain(self) -> None:
        """Wait until every job given is done (or the directory went offline)."""
        if self.written >= self.queued or self._thread is None:
            return
        with self._cond:
            while self.written < self.queued and self.failure is None and self._thread.is_alive():
                self._cond.wait(1.0)

    def stop(self) -> None:
        """Finish the queued jobs and end the thread (the broker is stopping)."""
        self.drain()
        self._stopping = True
        thread = self._thread
        if thread is not None:
            with self._cond:
                self._cond.notify()
            thread.join(10.0)
            self._thread = None

    def _woken(self) -> None:
        self._wake_pending = False
        self.on_written()

    # -- the writer's side ---------------------------------------------------------------

    def _run(self) -> None:
        cond = self._cond
        jobs = self._jobs
        while True:
            with cond:
                while not jobs and not self._stopping:
                    cond.wait()
                if not jobs:
                    return
                batch = list(jobs)
                jobs.clear()
            i = 0
            while i < len(batch):
                job = batch[i]
                if self.failure is not None:
                    if job[1] & _CLOSE:  # offline: nothing more is written, files still close
                        try:
                            os.close(job[2])
                        except OSError:
                            pass
                    i += 1
                    continue
                if job[1] != _WRITE:
                    self._run_job(job)
                    i += 1
                    continue
                # Appends to one file that follow each other leave in one gathered write.
                j = i + 1
                while (
                    j < len(batch)
                    and j - i < _IOV_MAX
                    and batch[j][1] == _WRITE
                    and batch[j][2] == job[2]
                ):
                    j += 1
                self._write_run(batch[i:j])
                i = j
            with cond:
                self._bytes -= sum(len(done[3]) for done in batch if done[3] is not None)
                cond.notify_all()
            loop = self._loop
            if loop is not None and not self._wake_pending:
                self._wake_pending = True
                try:
                    loop.call_soon_threadsafe(self._woken)
                except RuntimeError:  # the loop closed: nobody waits for the answers
                    self._wake_pending = False

    def _write_run(self, run: list[_Job]) -> None:
        seq, _, fd, _, pos, *_ = run[0]
        views = [memoryview(job[3]) for job in run]  # type: ignore[arg-type]
        try:
            k = 0
            while k < len(views):
                n = os.writev(fd, views[k:] if k else views)
                while k < len(views) and n >= len(views[k]):
                    n -= len(views[k])
                    k += 1
                if n:  # a short write: the rest of that batch, and on
                    views[k] = views[k][n:]
        except OSError as e:
            self._fail(seq, fd, pos, e)
            return
        touched = self._touched
        for _, _, _, data, at, file, end, log in run:
            file.written = at + len(data)  # type: ignore[union-attr,arg-type]
            log.written_end = end  # type: ignore[union-attr]
            touched.append(log)  # type: ignore[arg-type]
        self.written = run[-1][0]

    def _fail(self, seq: int, fd: int, pos: int, e: OSError) -> None:
        if pos >= 0:
            # Leave no half batch behind: nothing is written after a torn one.
            try:
                os.ftruncate(fd, pos)
            except OSError:
                _log.error("%s: cannot cut a failed write back out of its file", self.path)
        _log.error("%s: a write failed, the log directory goes offline: %s", self.path, e)
        self.failed_at = seq
        self.failure = e

    def _run_job(self, job: _Job) -> None:
        seq, kind, fd, data, pos, file, end, log = job
        try:
            if kind == _WRITE:
                assert data is not None and file is not None and log is not None
                write_all(fd, data)
                file.written = pos + len(data)
                log.written_end = end
            else:
                try:
                    if kind & _SYNC:
                        os.fsync(fd)
                finally:
                    if kind & _CLOSE:
                        os.close(fd)
        except OSError as e:
            self._fail(seq, fd, pos if kind == _WRITE else -1, e)
            return
        self.written = seq


#: A job: its number, kind and file descriptor; for a write its bytes, their position in
#: the file, the file, and the log offset the batch ends at in its log.
_Job = tuple[int, int, int, bytes | None, int, WrittenBytes | None, int, WrittenOffsets | None]


def write_all(fd: int, data: bytes | memoryview) -> None:
    """Write all of ``data`` to ``fd`` (a write may take less than it was given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _nothing() -> None:
    pass
