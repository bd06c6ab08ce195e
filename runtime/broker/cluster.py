"""A cluster of N brokers in one process, each with its own listener on 127.0.0.1.

Broker ``i`` listens on ``port + i`` (or an ephemeral port when ``port`` is 0). All
brokers share one `ClusterMetadata`, the controller's image, and one event loop. With a
log directory (broker config ``log.dirs``) the metadata and every replica's log are kept
on disk and read back on start (`log_store`).
`BackgroundCluster` runs a cluster on a loop in its own thread, for code (tests,
synchronous clients) that cannot run the loop itself.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import threading
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from kafkagen.runtime.timer import AsyncioTimer, Timer

from .broker import Broker
from .config import ConfigStore
from .log_store import ClusterStorage
from .metadata import ClusterMetadata

__all__ = ["BackgroundCluster", "Cluster"]

_log = logging.getLogger("kafkagen.broker")
T = TypeVar("T")


def _check_loopback(host: str) -> None:
    if host == "localhost":
        return
    if not ipaddress.ip_address(host).is_loopback:
        raise ValueError(f"brokers listen on loopback addresses only, not {host}")


class Cluster:
    """N brokers sharing metadata. Build it on the loop that will run it (or pass timers)."""

    def __init__(
        self,
        brokers: int = 1,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        configs: Mapping[str, str] | None = None,
        cluster_id: str | None = None,
        timer_factory: Callable[[], Timer] | None = None,
        time_ms: Callable[[], int] | None = None,
    ) -> None:
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        _check_loopback(host)
        self.configs = ConfigStore(configs)
        self.metadata = ClusterMetadata(self.configs, cluster_id)
        log_dir = self.configs.broker_raw("log.dirs")[0]
        self.storage = ClusterStorage(log_dir, brokers) if log_dir else None
        try:
            restored = self.storage is not None and self.storage.load(self.metadata)
        except BaseException:
            if self.storage is not None:
                self.storage.close()
            raise
        if timer_factory is None:
            loop = asyncio.get_running_loop()

            def timer_factory() -> Timer:
                return AsyncioTimer(loop)

        self.brokers = [
            Broker(self, i, host, port + i if port else 0, timer_factory, time_ms)
            for i in range(brokers)
        ]
        if self.storage is not None:
            self.storage.attach(self.metadata)
            for b in self.brokers:
                assert b.replica_manager.storage is not None
                b.replica_manager.storage.remove_strays()
            if restored:
                # Every broker reads its replicas back and takes its roles.
                self.metadata.publish_all()
        self._started = False

    @property
    def bootstrap(self) -> str:
        """``host:port,...`` of every broker, for clients' bootstrap.servers."""
        return ",".join(f"{b.info.host}:{b.info.port}" for b in self.brokers)

    def broker(self, node_id: int) -> Broker | None:
        return self.brokers[node_id] if 0 <= node_id < len(self.brokers) else None

    async def pause_broker(self, node_id: int) -> None:
        """Take a broker away as if it died; its leaderships move to in-sync followers."""
        b = self.broker(node_id)
        if b is None:
            raise ValueError(f"there is no broker {node_id}")
        await b.pause()

    async def resume_broker(self, node_id: int) -> None:
        b = self.broker(node_id)
        if b is None:
            raise ValueError(f"there is no broker {node_id}")
        await b.resume()

    async def start(self) -> None:
        started = []
        try:
            for b in self.brokers:
                await b.start()
                started.append(b)
        except BaseException:
            for b in started:
                await b.server.stop_accepting()
                await b.server.close_connections(0.1)
            if self.storage is not None:
                self.storage.close()
            raise
        self._started = True

    async def stop(self, timeout: float = 2.0) -> None:
        """Stop listening, answer every waiting request, flush, and close connections."""
        for b in self.brokers:
            await b.server.stop_accepting()
        for b in self.brokers:
            b.shutdown()
        for b in self.brokers:
            await b.server.close_connections(timeout)
        if self.storage is not None:
            self.storage.close()
        self._started = False


class BackgroundCluster:
    """A `Cluster` on its own event loop in a daemon thread; a context manager.

    ``with BackgroundCluster(configs={...}) as c: c.bootstrap``. `call` runs a function on
    the loop thread (the cluster is not thread-safe) and returns its result.
    """

    def __init__(self, brokers: int = 1, **kwargs: Any) -> None:
        self._brokers = brokers
        self._kwargs = kwargs
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.cluster: Cluster | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stop: asyncio.Event | None = None

    def start(self, timeout: float = 10.0) -> BackgroundCluster:
        self._thread = threading.Thread(target=self._run, name="kafkagen-broker", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("the cluster did not start in time")
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        finally:
            loop.close()

    async def _main(self) -> None:
        try:
            self._stop = asyncio.Event()
            self.cluster = Cluster(self._brokers, **self._kwargs)
            await self.cluster.start()
        except BaseException as e:
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        await self._stop.wait()
        await self.cluster.stop()

    @property
    def bootstrap(self) -> str:
        assert self.cluster is not None
        return self.cluster.bootstrap

    def call(self, fn: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Run ``fn()`` on the cluster's loop and return its result."""
        assert self._loop is not None

        async def run() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        """Run a coroutine (e.g. ``cluster.pause_broker(1)``) on the cluster's loop."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:
                pass  # the loop already ended
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                _log.error("the broker thread did not stop within %.0f s", timeout)

    def __enter__(self) -> BackgroundCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
