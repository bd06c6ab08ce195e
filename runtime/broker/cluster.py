"""A cluster of N brokers in one process, each with its own listener on 127.0.0.1.

This is the one module that wires brokers and components together. `Broker` builds one
broker's replica manager, follower fetcher, coordinators and listener, handing each only
what it uses; `Cluster` is how a component reaches another broker (a leader's replica
manager, a transaction coordinator, the leaders that take transaction markers, the share
coordinator a broker's persister sends its share-group state requests to), and answers
only for brokers that are serving.

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
import time
import uuid
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from kafkagen import generated as builtin_codecs
from kafkagen.runtime.handlers import declare_handlers
from kafkagen.runtime.message import Message
from kafkagen.runtime.timer import AsyncioTimer, Timer
from kafkagen.runtime.topic_partition import TopicPartition

from .api import (
    TELEMETRY_CONFIG,
    BrokerServices,
    Registry,
    RequestContext,
    ServedApis,
    describe_gaps,
    dispatch,
)
from .config.store import ConfigStore
from .control.faults import Faults
from .control.interceptor import Control
from .group.group_coordinator import GroupCoordinator
from .metadata.cluster_metadata import ClusterMetadata
from .metadata.image import MetadataImage
from .security.authorizer import Authorizer
from .security.listeners import Listener, enabled_mechanisms, parse_listeners
from .security.sasl import SCRAM_MECHANISMS, Credentials
from .server import BrokerServer
from .share.persister import ShareStatePersister
from .share.share_coordinator import ShareCoordinator, coordinator_key
from .share.share_group import ShareGroupManager
from .share.share_partition_manager import SharePartitionManager
from .storage.log_store import ClusterStorage
from .storage.replica_fetcher import ReplicaFetcher
from .storage.replica_manager import ProduceResult, ReplicaManager
from .telemetry.client_telemetry import ClientTelemetry
from .transaction.transaction_coordinator import Marker, MarkersCallback, TransactionCoordinator
from .types import OFFSETS_TOPIC, BrokerInfo, MetadataListener, PartitionInfo, TopicInfo

__all__ = ["BackgroundCluster", "Broker", "Cluster"]

_log = logging.getLogger("kafkagen.broker")
T = TypeVar("T")

#: How often the replicas' high watermarks and log starts are checkpointed with a log dir.
CHECKPOINT_INTERVAL_S = 5.0
#: How often client telemetry instances past their expiry are dropped.
TELEMETRY_EXPIRY_S = 10.0


def _check_loopback(host: str) -> None:
    if host == "localhost":
        return
    if not ipaddress.ip_address(host).is_loopback:
        raise ValueError(f"brokers listen on loopback addresses only, not {host}")


class Broker(MetadataListener):
    """A broker of the cluster; every broker of a process shares one `ClusterMetadata`.

    ``cluster`` supplies the metadata and the log directory, and is how the broker's
    components reach other brokers (as their `LeaderLookup`, `MarkerWriter`, `Peers` and
    `ShareStateChannel`);
    the broker keeps no reference to it.
    """

    def __init__(
        self,
        cluster: Cluster,
        node_id: int,
        host: str,
        port: int,
        timer_factory: Callable[[], Timer],
        time_ms: Callable[[], int] | None = None,
        listeners: list[Listener] | None = None,
    ) -> None:
        self.node_id = node_id
        self.metadata: ClusterMetadata = cluster.metadata
        self.configs = cluster.metadata.configs
        md = self.metadata
        md.add_broker(BrokerInfo(node_id, host, port))
        self.replica_manager = rm = ReplicaManager(node_id, md, timer_factory, time_ms)
        if cluster.storage is not None:
            storage = cluster.storage.broker(node_id, md)
            storage.partitions = lambda: rm.partitions
            rm.attach_storage(storage)
        self.group_coordinator = GroupCoordinator(
            node_id, self.configs, md, rm, timer_factory, running=lambda: self.running
        )
        self.txn_coordinator = TransactionCoordinator(
            node_id,
            self.configs,
            md,
            rm,
            cluster,
            timer_factory,
            running=lambda: self.running,
        )
        self.fetcher = ReplicaFetcher(rm, cluster)
        self.share_coordinator = ShareCoordinator(node_id, self.configs, md, rm)
        #: This broker's client of the share coordinators (over the inter-broker path).
        self.share_state = ShareStatePersister(node_id, cluster, cluster.share_state_resets)
        share_partitions = SharePartitionManager(
            node_id, self.configs, md, rm, self.share_state, timer_factory
        )
        self.services = BrokerServices(
            node_id,
            self.configs,
            md,
            rm,
            self.group_coordinator,
            self.txn_coordinator,
            ServedApis(self.configs, node_id, cluster.registry),
            cluster,
            cluster.authorizer,
            cluster.credentials,
            share_groups=ShareGroupManager(
                node_id, self.configs, md, self.group_coordinator.log, self.share_state
            ),
            share_partitions=share_partitions,
            share_coordinator=self.share_coordinator,
            telemetry=ClientTelemetry(
                md,
                self.configs.broker_int("telemetry.max.bytes", node_id),
                keep=self.configs.broker_bool(TELEMETRY_CONFIG, node_id),
            ),
        )
        gaps = self.services.apis.unadvertised()
        if gaps:
            _log.warning(
                "broker %d plays Kafka %s but cannot advertise: %s",
                node_id,
                self.services.apis.preset,
                describe_gaps(gaps),
            )
        self.server = BrokerServer(self.services, host, port, listeners)
        md.listeners.append(self)
        #: False while paused or stopped: it serves no client and fetches nothing.
        self.running = False
        self._isr_check: asyncio.TimerHandle | None = None
        self._retention_check: asyncio.TimerHandle | None = None
        self._cleaner_check: asyncio.TimerHandle | None = None
        self._checkpoint: asyncio.TimerHandle | None = None
        self._telemetry_expiry: asyncio.TimerHandle | None = None

    @property
    def info(self) -> BrokerInfo:
        return self.metadata.brokers[self.node_id]

    async def start(self) -> None:
        self.info.port = await self.server.start()
        self.info.endpoints = {lst.name: (lst.host, lst.port) for lst in self.server.listeners}
        self.running = True
        self.fetcher.start()
        self._schedule_isr_check()
        self._schedule_retention()
        self._schedule_cleaner()
        self._schedule_checkpoint()
        self._schedule_telemetry_expiry()

    def _schedule_telemetry_expiry(self) -> None:
        loop = asyncio.get_running_loop()
        self._telemetry_expiry = loop.call_later(TELEMETRY_EXPIRY_S, self._telemetry_tick)

    def _telemetry_tick(self) -> None:
        self._telemetry_expiry = None
        self.services.telemetry.forget_expired()
        self._schedule_telemetry_expiry()

    def _schedule_checkpoint(self) -> None:
        # High watermarks reach the log directory every few seconds, as in Kafka; after a
        # crash they come back from there and move up again as followers fetch.
        if self.replica_manager.storage is not None:
            loop = asyncio.get_running_loop()
            self._checkpoint = loop.call_later(CHECKPOINT_INTERVAL_S, self._checkpoint_tick)

    def _checkpoint_tick(self) -> None:
        self._checkpoint = None
        if self.running and self.replica_manager.storage is not None:
            self.replica_manager.storage.write_checkpoints()
        self._schedule_checkpoint()

    def _schedule_retention(self) -> None:
        every = self.configs.broker_int("log.retention.check.interval.ms", self.node_id) / 1000
        self._retention_check = asyncio.get_running_loop().call_later(every, self._retention_tick)

    def _retention_tick(self) -> None:
        self._retention_check = None
        if self.running:
            self.replica_manager.enforce_retention()
        self._schedule_retention()

    def _schedule_cleaner(self) -> None:
        if not self.configs.broker_bool("log.cleaner.enable", self.node_id):
            return
        every = self.configs.broker_int("log.cleaner.backoff.ms", self.node_id) / 1000
        self._cleaner_check = asyncio.get_running_loop().call_later(every, self._cleaner_tick)

    def _cleaner_tick(self) -> None:
        self._cleaner_check = None
        if self.running:
            self.replica_manager.clean_logs()
        self._schedule_cleaner()

    def _schedule_isr_check(self) -> None:
        # Kafka checks every half of replica.lag.time.max.ms.
        every = self.configs.broker_int("replica.lag.time.max.ms", self.node_id) / 2000
        self._isr_check = asyncio.get_running_loop().call_later(every, self._isr_tick)

    def _isr_tick(self) -> None:
        self._isr_check = None
        if self.running:
            self.replica_manager.check_isr()
            self._schedule_isr_check()

    async def pause(self) -> None:
        """Act as if the broker died: drop connections, stop fetching, lose leaderships."""
        if not self.running:
            return
        self.running = False
        self.fetcher.stop()
        self.server.pause()
        self.metadata.broker_down(self.node_id)

    async def resume(self) -> None:
        """Come back: serve again, and catch up as a follower."""
        if self.running:
            return
        self.running = True
        self.server.resume()
        self.metadata.broker_up(self.node_id)
        self.fetcher.start()
        self._schedule_isr_check()

    def on_partitions_changed(self, partitions: Sequence[PartitionInfo]) -> None:
        if self.node_id in self.metadata.stale_images:
            return  # cut off from the controller: it learns of this at the heal
        self.replica_manager.apply_partitions(partitions)
        self.fetcher.kick()

    def catch_up(self, stale: MetadataImage) -> None:
        """Back in reach of the controller after keeping ``stale``: take the image as it
        is now at once, as a KRaft broker catching up from a snapshot (topics deleted
        meanwhile go, leaderships lost are given up and the logs truncated by the fetcher)."""
        md = self.metadata
        for topic in stale.topics.values():
            if md.topic_names.get(topic.topic_id) != topic.name:
                self.on_topic_deleted(topic)
        self.on_partitions_changed([p for t in md.topics.values() for p in t.partitions])

    def write_txn_markers(
        self,
        markers: Mapping[TopicPartition, Marker],
        timeout_ms: int,
        callback: MarkersCallback,
    ) -> None:
        """Append transaction markers to this broker's leader replicas (Kafka's
        WriteTxnMarkers); on ``__consumer_offsets`` a marker also settles the transaction's
        offset commits in the group coordinator."""

        def written(results: Mapping[TopicPartition, ProduceResult]) -> None:
            for tp, r in results.items():
                if r.error_code == 0 and tp.topic == OFFSETS_TOPIC:
                    pid, _, commit, _ = markers[tp]
                    self.group_coordinator.offsets.complete_transaction(pid, tp.partition, commit)
            callback(results)

        self.replica_manager.append_markers(markers, timeout_ms, written)

    def on_topic_deleted(self, topic: TopicInfo) -> None:
        if self.node_id in self.metadata.stale_images:
            return
        self.replica_manager.remove_topic(topic)
        self.group_coordinator.on_topic_deleted(topic.name)
        self.share_coordinator.on_topic_deleted(topic.topic_id)

    def shutdown(self) -> None:
        """Answer every waiting request; the listener must already have stopped reading."""
        self.running = False
        self.fetcher.stop()
        for handle in (
            self._isr_check,
            self._retention_check,
            self._cleaner_check,
            self._checkpoint,
            self._telemetry_expiry,
        ):
            if handle is not None:
                handle.cancel()
        self._isr_check = self._retention_check = self._cleaner_check = self._checkpoint = None
        self._telemetry_expiry = None
        self.group_coordinator.shutdown()
        self.txn_coordinator.shutdown()
        self.services.share_partitions.shutdown()
        self.replica_manager.shutdown()


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
        users: Mapping[str, str] | None = None,
        registry: Registry | None = None,
    ) -> None:
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        #: The handlers and the generated package every broker serves with (`Registry`).
        self.registry = registry or Registry(declare_handlers())
        self.registry.compose()  # a registration that cannot be served fails here
        _check_loopback(host)
        self.configs = ConfigStore(configs)
        self.metadata = ClusterMetadata(self.configs, cluster_id)
        # Security: the ``listeners`` config (its ports replace ``port``), users, ACLs.
        listeners = parse_listeners(self.configs)
        for lst in listeners or ():
            _check_loopback(lst.host)
        scram = [m for m in enabled_mechanisms(self.configs) if m in SCRAM_MECHANISMS]
        self.credentials = Credentials()
        #: Called when a share partition's state is reset or deleted: every broker's
        #: share partitions drop what they hold of it.
        self.share_state_resets: list[Callable[[str, uuid.UUID, int], None]] = []
        for name, password in (users or {}).items():
            self.credentials.add_user(name, password, scram)
        self.authorizer = Authorizer(self.configs, lambda: self.metadata.acls)
        log_dir = self.configs.broker_raw("log.dirs")[0]
        self.storage = ClusterStorage(log_dir, brokers) if log_dir else None
        try:
            restored = self.storage is not None and self.storage.load(self.metadata)
        except BaseException:
            if self.storage is not None:
                self.storage.close()
            raise
        #: In-process network, disk and clock faults (the control API injects them).
        self.faults = Faults(
            self.metadata,
            lambda node_id: self._serving(node_id) is not None,
            lambda node_id, stale: self._known(node_id).catch_up(stale),
        )
        self.metadata.reaches_controller = self.faults.reaches_controller
        if timer_factory is None:
            loop = asyncio.get_running_loop()

            def timer_factory() -> Timer:
                return AsyncioTimer(loop)

        def own(lst: Listener, i: int) -> Listener:
            return Listener(lst.name, lst.protocol, lst.host, lst.port + i if lst.port else 0)

        self.brokers = []
        for i in range(brokers):
            mine = [own(lst, i) for lst in listeners] if listeners else None
            b_host, b_port = (
                (mine[0].host, mine[0].port) if mine else (host, port + i if port else 0)
            )
            clock = _skewed(time_ms, self.faults, i)
            self.brokers.append(Broker(self, i, b_host, b_port, timer_factory, clock, mine))
        #: Fault injection and broker controls, in front of every broker's handlers.
        self.control = Control(self, dispatch)
        for b in self.brokers:
            b.server.dispatch = self.control.dispatch
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

    def describe_brokers(self) -> list[dict[str, Any]]:
        """Each broker's id, address and whether it is serving (for the control API)."""
        return [
            {"broker": b.node_id, "host": b.info.host, "port": b.info.port, "alive": b.running}
            for b in self.brokers
        ]

    def served_apis(self, node_id: int) -> ServedApis:
        return self._known(node_id).services.apis

    def telemetry_of(self, node_id: int) -> ClientTelemetry:
        return self._known(node_id).services.telemetry

    def _known(self, node_id: int) -> Broker:
        b = self.broker(node_id)
        if b is None:
            raise ValueError(f"there is no broker {node_id}")
        return b

    def _serving(self, node_id: int) -> Broker | None:
        b = self.broker(node_id)
        return b if b is not None and b.running else None

    # -- how components reach other brokers (replica_fetcher, api, transaction_coordinator)

    # The share-state channel (`ShareStateChannel`): each broker's persister sends the
    # share-group state requests to the share coordinator's broker, encoded and decoded as
    # on the wire, and cut as the brokers' other traffic is.

    def share_coordinator_node(self, sender: int, key: tuple[str, uuid.UUID, int]) -> int:
        b = self._serving(sender)
        if b is None:
            return -1
        return b.share_coordinator.log.coordinator_for(coordinator_key(key))

    def send_share_state(
        self, sender: int, node: int, request: Message, version: int
    ) -> Message | None:
        b = self._serving(node)
        if b is None or not self.faults.reaches(sender, node):
            return None
        api_key = request.API_KEY
        assert api_key is not None
        handler = self.registry.handlers[api_key]
        received = handler.request_type.decode(request.encode(version), version)
        answers: list[Message] = []
        ctx = _InterBrokerContext(
            b.services,
            api_key,
            version,
            0,
            f"broker-{sender}",
            "127.0.0.1",
            _Collect(answers),
        )
        try:
            dispatch(handler, ctx, received)
        except Exception:
            # As a broker's handler failing: logged, and the sender gets no answer.
            _log.exception("broker %d: share state request from broker %d failed", node, sender)
            return None
        if not answers:
            return None  # no answer (a handler that waits): as a request timing out
        response_type = builtin_codecs.message_type(api_key, "response")
        return response_type.decode(answers[0].encode(version), version)

    def share_state_keys(self, group_id: str) -> list[tuple[str, uuid.UUID, int]]:
        return [k for b in self.brokers if b.running for k in b.share_coordinator.keys_of(group_id)]

    def replica_manager_of(self, node_id: int) -> ReplicaManager | None:
        b = self._serving(node_id)
        return None if b is None else b.replica_manager

    def peer_delay(self, follower: int, leader: int) -> float | None:
        return self.faults.peer_delay(follower, leader)

    def txn_coordinator_of(self, node_id: int) -> TransactionCoordinator | None:
        b = self._serving(node_id)
        return None if b is None else b.txn_coordinator

    def write_txn_markers(
        self,
        node_id: int,
        markers: Mapping[TopicPartition, Marker],
        timeout_ms: int,
        callback: MarkersCallback,
        *,
        sender: int,
    ) -> bool:
        b = self._serving(node_id)
        if b is None or not self.faults.reaches(sender, node_id):
            return False
        b.write_txn_markers(markers, timeout_ms, callback)
        return True

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


class _Collect:
    """The responder of a request one broker sends another: keeps the answer."""

    def __init__(self, answers: list[Message]) -> None:
        self._answers = answers

    def send(self, response: Message, version: int) -> None:
        self._answers.append(response)

    def send_nothing(self) -> None:
        pass

    def close(self, reason: str) -> None:
        _log.warning("an inter-broker request was refused: %s", reason)

    def gone(self) -> bool:
        return False


class _InterBrokerContext(RequestContext):
    """A request from another broker of the cluster: the brokers trust each other, as a
    Kafka cluster's inter-broker principal is given CLUSTER_ACTION."""

    __slots__ = ()

    def allowed(self, operation: int, resource_type: int, name: str) -> bool:
        return True


def _skewed(time_ms: Callable[[], int] | None, faults: Faults, node_id: int) -> Callable[[], int]:
    """Broker ``node_id``'s wall clock: the cluster's, moved by its clock skew fault."""
    base = time_ms or (lambda: int(time.time() * 1000))
    return lambda: base() + faults.clock_offset_ms(node_id)


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

    @property
    def alive(self) -> bool:
        """True while the cluster's thread runs."""
        return self._thread is not None and self._thread.is_alive()

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
