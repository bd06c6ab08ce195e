"""Resource limits of a broker's listeners, as Kafka names them, so that hostile or broken
clients cannot take the process down.

- ``queued.max.request.bytes``: the bytes of request bodies being read or handled, across
  all connections of a broker. A connection reserves a frame's size before reading its
  body; while it does not fit, the connection is not read (its bytes wait in the kernel),
  as Kafka mutes a channel when its memory pool is empty. Unlike Kafka's pool, the bound is
  strict, and a sixteenth of it is kept for small requests (up to that size), so clients
  sending large frames slowly cannot starve everyone else; a frame larger than the rest of
  the bound could never be read and closes its connection.
- ``max.connections`` (in the server) and ``max.connections.per.ip``: further connections
  are closed as soon as they are accepted.
- ``connections.max.idle.ms``: a connection that sends nothing for that long (between
  requests or inside one) is closed.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ..config.store import ConfigStore

__all__ = ["ConnectionQuotas", "RequestMemory"]


class RequestMemory:
    """The memory pool of request bodies (``queued.max.request.bytes``; -1: unbounded)."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.available = bound
        #: Kept for requests no larger than itself.
        self.headroom = bound // 16 if bound > 0 else 0
        #: The largest frame that can ever be read (-1: any).
        self.max_frame = bound - self.headroom if bound > 0 else -1
        self._freed = asyncio.Event()

    def _fits(self, size: int) -> bool:
        reserve = 0 if size <= self.headroom else self.headroom
        return size <= self.available - reserve

    @property
    def in_use(self) -> int:
        return self.bound - self.available if self.bound > 0 else 0

    @asynccontextmanager
    async def reserve(self, size: int) -> AsyncIterator[None]:
        """Hold ``size`` bytes for the block; waits while the pool is exhausted."""
        if self.bound <= 0:
            yield
            return
        if size > self.max_frame:
            raise ValueError(f"a {size}-byte frame exceeds queued.max.request.bytes")
        while not self._fits(size):
            self._freed.clear()
            await self._freed.wait()
        self.available -= size
        try:
            yield
        finally:
            self.available += size
            self._freed.set()


class ConnectionQuotas:
    """Open connections per client address (``max.connections.per.ip``)."""

    def __init__(self, configs: ConfigStore) -> None:
        self.per_ip = configs.broker_int("max.connections.per.ip")
        self.open: collections.Counter[str] = collections.Counter()

    def admit(self, host: str) -> bool:
        if self.open[host] >= self.per_ip:
            return False
        self.open[host] += 1
        return True

    def release(self, host: str) -> None:
        self.open[host] -= 1
        if self.open[host] <= 0:
            del self.open[host]
