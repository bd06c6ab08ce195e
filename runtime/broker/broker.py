"""One broker: its replica manager, follower fetcher, coordinators and listener."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kafkagen.runtime.timer import Timer

from .group_coordinator import GroupCoordinator
from .metadata import ClusterMetadata
from .replica_fetcher import ReplicaFetcher
from .replica_manager import ReplicaManager
from .server import BrokerServer
from .transaction_coordinator import TransactionCoordinator, TxnOffsetStore
from .types import BrokerInfo, MetadataListener, PartitionInfo, TopicInfo

if TYPE_CHECKING:
    from .cluster import Cluster

__all__ = ["Broker"]

#: How often the replicas' high watermarks and log starts are checkpointed with a log dir.
CHECKPOINT_INTERVAL_S = 5.0


class Broker(MetadataListener):
    """A broker of the cluster; every broker of a process shares one `ClusterMetadata`."""

    def __init__(
        self,
        cluster: Cluster,
        node_id: int,
        host: str,
        port: int,
        timer_factory: Callable[[], Timer],
        time_ms: Callable[[], int] | None = None,
    ) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.metadata: ClusterMetadata = cluster.metadata
        self.configs = cluster.metadata.configs
        self.metadata.add_broker(BrokerInfo(node_id, host, port))
        self.replica_manager = ReplicaManager(node_id, self.metadata, timer_factory, time_ms)
        if cluster.storage is not None:
            storage = cluster.storage.broker(node_id, self.metadata)
            storage.partitions = lambda: self.replica_manager.partitions
            self.replica_manager.storage = storage
        self.group_coordinator = GroupCoordinator(self, timer_factory)
        self.txn_coordinator = TransactionCoordinator(self, timer_factory)
        self.txn_offsets = TxnOffsetStore(self)
        self.fetcher = ReplicaFetcher(self)
        self.server = BrokerServer(self, host, port)
        self.metadata.listeners.append(self)
        #: False while paused or stopped: it serves no client and fetches nothing.
        self.running = False
        self._isr_check: asyncio.TimerHandle | None = None
        self._retention_check: asyncio.TimerHandle | None = None
        self._checkpoint: asyncio.TimerHandle | None = None

    @property
    def info(self) -> BrokerInfo:
        return self.metadata.brokers[self.node_id]

    async def start(self) -> None:
        self.info.port = await self.server.start()
        self.running = True
        self.fetcher.start()
        self._schedule_isr_check()
        self._schedule_retention()
        self._schedule_checkpoint()

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
        self.replica_manager.apply_partitions(partitions)
        self.fetcher.kick()

    def on_topic_deleted(self, topic: TopicInfo) -> None:
        self.replica_manager.remove_topic(topic)
        self.group_coordinator.on_topic_deleted(topic.name)

    def shutdown(self) -> None:
        """Answer every waiting request; the listener must already have stopped reading."""
        self.running = False
        self.fetcher.stop()
        for handle in (self._isr_check, self._retention_check, self._checkpoint):
            if handle is not None:
                handle.cancel()
        self._isr_check = self._retention_check = self._checkpoint = None
        self.group_coordinator.shutdown()
        self.txn_coordinator.shutdown()
        self.replica_manager.shutdown()
