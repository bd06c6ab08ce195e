"""Resource limits: queued.max.request.bytes bounds the memory of requests being read,
max.connections.per.ip and connections.max.idle.ms close what exceeds them; other clients
keep being served throughout."""

from __future__ import annotations

import socket
import struct
import time

import pytest
from broker_helpers import BrokerProcess, WireClient, req

MIB = 1 << 20


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _stuff(socks: list[socket.socket], frame: int, seconds: float) -> int:
    """Send each socket a ``frame``-byte prefix and as much of the body as the broker
    takes within ``seconds``, never the whole body; the bytes sent."""
    chunk = b"\0" * MIB
    left = {s: frame - 1 for s in socks}
    for s in socks:
        s.sendall(struct.pack(">i", frame))
        s.setblocking(False)
    deadline = time.monotonic() + seconds
    stalled = 0
    while time.monotonic() < deadline and stalled < 10:
        moved = 0
        for s in socks:
            try:
                n = s.send(chunk[: min(len(chunk), left[s])])
            except BlockingIOError:
                continue
            left[s] -= n
            moved += n
        if moved:
            stalled = 0
        else:
            stalled += 1
            time.sleep(0.1)  # let the broker read; stop once nobody takes more
    return sum(frame - 1 - n for n in left.values())


@pytest.mark.slow
def test_partial_frames_stay_within_queued_max_request_bytes() -> None:
    # 10 connections each announcing a 12 MiB request and sending its body slowly: without a
    # bound the broker would buffer all of it; with 32 MiB it reads two bodies at a time.
    frame, bound = 12 * MIB, 32 * MIB
    with BrokerProcess(
        f"queued.max.request.bytes={bound}", "connections.max.idle.ms=60000"
    ) as broker:
        pid = broker.proc.pid
        base = _rss_mib(pid)
        host, port = broker.bootstrap.split(":")
        socks = [socket.create_connection((host, int(port)), timeout=5) for _ in range(10)]
        try:
            sent = _stuff(socks, frame, seconds=8)
            grown = _rss_mib(pid) - base
            # Unbounded, the broker would hold every byte sent; bounded, about one frame.
            print(f"RSS {base:.0f} -> {base + grown:.0f} MiB after {sent / MIB:.0f} MiB sent")
            assert sent > 2 * frame, f"only {sent / MIB:.0f} MiB sent"
            assert grown < bound / MIB + 16, f"RSS grew {grown:.0f} MiB, {sent / MIB:.0f} MiB sent"
            with WireClient(broker.bootstrap, timeout=5) as w:
                assert w.call(3, 12, req(3, topics=None)).cluster_id
        finally:
            for s in socks:
                s.close()
        assert broker.alive()
    # A frame that could never fit closes its connection at once.
    with BrokerProcess("queued.max.request.bytes=1048576") as broker:
        with WireClient(broker.bootstrap, timeout=5) as w:
            w.send_raw(struct.pack(">i", 2 * MIB))
            assert w.is_closed()
        assert "queued.max.request.bytes" in broker.stderr_text()


def test_max_connections_per_ip_and_idle_connections() -> None:
    from kafkagen.runtime.broker.cluster import BackgroundCluster

    configs = {"max.connections.per.ip": "2", "connections.max.idle.ms": "300"}
    with BackgroundCluster(configs=configs) as c:
        a, b = WireClient(c.bootstrap), WireClient(c.bootstrap)
        with a, b:
            assert a.call(18, 0, req(18)).error_code == 0
            with WireClient(c.bootstrap) as third:
                assert third.is_closed(wait=2)
            assert b.call(18, 0, req(18)).error_code == 0
            # Both go idle and are closed; the address's slots come back.
            assert a.is_closed(wait=3) and b.is_closed(wait=3)
        with WireClient(c.bootstrap) as w:
            assert w.call(18, 0, req(18)).error_code == 0
            # Half a frame does not keep a connection alive either.
            w.send_raw(struct.pack(">i", 100) + b"x" * 10)
            assert w.is_closed(wait=3)
