"""The log directory's writer thread: order, gathered writes, and going offline."""

from __future__ import annotations

import asyncio
import os
import random
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafkagen.runtime.broker.storage.log_writer import INLINE_BYTES, DiskWriter
from kafkagen.runtime.topic_partition import TopicPartition


@dataclass(eq=False)
class _File:
    written: int = 0


@dataclass(eq=False)
class _Log:
    tp: TopicPartition
    written_end: int = 0


def _open(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def test_writes_land_in_order_and_are_reported_on_the_loop(tmp_path: Path) -> None:
    rng = random.Random(7)
    paths = [tmp_path / "a.log", tmp_path / "b.log"]
    files, logs = [_File(), _File()], [_Log(TopicPartition("t", i)) for i in range(2)]
    expected = [b"", b""]
    woken = []

    async def main() -> None:
        writer = DiskWriter(tmp_path)
        writer.on_written = lambda: woken.append(writer.written)
        fds = [_open(p) for p in paths]
        last = 0
        for n in range(400):
            i = rng.randrange(2)
            # Small ones are written at once while the writer is idle, the rest queued.
            data = bytes([n % 256]) * rng.choice([10, 5000, INLINE_BYTES + 1, 200_000])
            last = writer.write(fds[i], data, len(expected[i]), files[i], n + 1, logs[i])
            expected[i] += data
            if n % 97 == 0:
                writer.sync(fds[i])
        for fd in fds:
            last = writer.close(fd, sync=True)
        for _ in range(1000):  # the writer wakes the loop once it has written the last
            if woken and woken[-1] == last:
                break
            await asyncio.sleep(0.01)
        assert writer.written == writer.queued == last
        assert woken[-1] == last
        assert writer.written_logs() <= set(logs)
        writer.stop()

    asyncio.run(main())
    for path, file, data in zip(paths, files, expected, strict=True):
        assert path.read_bytes() == data
        assert file.written == len(data)
    assert {log.written_end for log in logs} <= set(range(1, 401))


def test_a_failed_write_takes_the_directory_offline_and_writes_nothing_after_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.log"
    file, log = _File(), _Log(TopicPartition("t", 0))

    async def main() -> None:
        writer = DiskWriter(tmp_path)
        fd = _open(path)
        full = os.open("/dev/full", os.O_WRONLY)  # every write: ENOSPC
        big = bytes(INLINE_BYTES + 1)
        first = writer.write(fd, big, 0, file, 1, log)
        failed = writer.write(full, big, 0, _File(), 2, log)
        after = writer.write(fd, big, len(big), file, 3, log)
        writer.drain()
        assert writer.offline
        assert (writer.done(first), writer.done(failed), writer.done(after)) == (True, None, None)
        with pytest.raises(OSError, match=f"log directory {tmp_path} is offline.*No space"):
            writer.write(fd, b"x", 2 * len(big), file, 4, log)
        writer.stop()
        os.close(fd)
        os.close(full)

    asyncio.run(main())
    assert path.stat().st_size == INLINE_BYTES + 1  # the batch after the failed one: never
    assert file.written == INLINE_BYTES + 1


def test_without_an_event_loop_every_job_runs_at_once(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    file, log = _File(), _Log(TopicPartition("t", 0))
    writer = DiskWriter(tmp_path)
    fd = _open(path)
    seq = writer.write(fd, bytes(100_000), 0, file, 5, log)
    assert writer.done(seq) and path.stat().st_size == 100_000
    assert (file.written, log.written_end) == (100_000, 5)
    writer.close(fd, sync=True)
    writer.stop()
