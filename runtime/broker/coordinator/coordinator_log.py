"""A coordinator's internal topic as one broker sees it: ownership and writes.

The group and transaction coordinators each keep their state in a compacted internal topic
(``__consumer_offsets``, ``__transaction_state``); a broker coordinates the keys (group ids,
transactional ids) that hash onto the partitions it leads. `CoordinatorLog` is that shared
part: it follows the replica manager's leadership changes (telling the coordinator to load
or unload a partition), answers which partition and which broker own a key, refuses keys
this broker does not own, and appends records with acks=all through the replica manager.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kafkagen.runtime.errors import (
    CoordinatorNotAvailableError,
    ErrorCode,
    KafkaError,
    NotCoordinatorError,
)
from kafkagen.runtime.records import Record, build_batch
from kafkagen.runtime.topic_partition import TopicPartition

from ..config.group_configs import group_setting
from ..config.store import ConfigStore
from ..metadata.cluster_metadata import ClusterMetadata
from ..storage.partition import Partition
from ..storage.replica_manager import ProduceResult, ReplicaManager
from ..types import hash_partition

__all__ = ["CoordinatorLog", "coordinator_error"]

#: ``callback(error code)`` of an append: 0 once the records are durable on the ISR.
AppendCallback = Callable[[int], None]


class CoordinatorLog:
    """One internal topic of one broker's coordinator (see the module's doc)."""

    def __init__(
        self,
        topic: str,
        node_id: int,
        configs: ConfigStore,
        metadata: ClusterMetadata,
        replica_manager: ReplicaManager,
        *,
        partitions_config: str,
        replication_config: str,
        segment_config: str,
        write_timeout_ms: Callable[[], int],
        on_load: Callable[[Partition], None],
        on_unload: Callable[[int], None],
    ) -> None:
        self.topic = topic
        self.node_id = node_id
        self.configs = configs
        self.metadata = metadata
        self.replica_manager = replica_manager
        self._partitions_config = partitions_config
        self._replication_config = replication_config
        self._segment_config = segment_config
        self._write_timeout_ms = write_timeout_ms
        #: (on load, on unload) of each coordinator keeping state in this topic.
        self._listeners = [(on_load, on_unload)]
        #: Partition this broker leads (so coordinates) -> its leader epoch when taken over.
        self.owned: dict[int, int] = {}
        #: Set by the coordinator's shutdown: every key is then refused.
        self.shut_down = False
        replica_manager.role_listeners.append(self._on_role_change)

    def add_listener(
        self, on_load: Callable[[Partition], None], on_unload: Callable[[int], None]
    ) -> None:
        """Another coordinator whose records share this topic (share groups' in
        ``__consumer_offsets``) loads and unloads with each partition too."""
        self._listeners.append((on_load, on_unload))

    def cfg(self, name: str) -> int:
        """An integer broker config of this broker."""
        return self.configs.broker_int(name, self.node_id)

    def group_cfg(self, group_id: str, name: str) -> int:
        """An integer group config of ``group_id``: its own, else the broker's synonym."""
        return int(
            group_setting(self.configs, self.metadata.group_configs, group_id, name, self.node_id)
        )

    def now_ms(self) -> int:
        return self.replica_manager.time_ms()

    # -- ownership --------------------------------------------------------------------

    @property
    def num_partitions(self) -> int:
        """The topic's partition count (the configured one before it exists)."""
        info = self.metadata.topic(self.topic)
        return len(info.partitions) if info is not None else self.cfg(self._partitions_config)

    def partition_of(self, key: str) -> int:
        return hash_partition(key, self.num_partitions)

    def owns(self, key: str) -> bool:
        return self.partition_of(key) in self.owned

    def ensure_topic(self) -> bool:
        """Create the topic on first use, as Kafka does; False if it cannot exist yet."""
        return self.metadata.ensure_internal_topic(
            self.topic,
            self.cfg(self._partitions_config),
            self.cfg(self._replication_config),
            segment_bytes=self.cfg(self._segment_config),
        )

    def coordinator_for(self, key: str) -> int:
        """The broker id coordinating ``key`` as this broker knows it (a broker cut off from
        the controller names the leader of its stale image); -1 if none is available."""
        if not self.ensure_topic():
            return -1
        info = self.metadata.image_of(self.node_id).topic(self.topic)
        if info is None:  # created after this broker lost the controller
            return -1
        return info.partitions[hash_partition(key, len(info.partitions))].leader

    def check_owner(self, key: str) -> None:
        """Raise COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR unless this broker owns ``key``."""
        if self.shut_down:
            raise CoordinatorNotAvailableError("the coordinator is shutting down")
        if self.metadata.topic(self.topic) is None:
            raise NotCoordinatorError(f"{self.topic} does not exist yet")
        if not self.owns(key):
            raise NotCoordinatorError(f"broker {self.node_id} does not coordinate {key!r}")

    def owner_error(self, key: str) -> int:
        """0 if this broker coordinates ``key``, else the error `check_owner` raises."""
        try:
            self.check_owner(key)
        except KafkaError as e:
            return e.code
        return 0

    def group_error(self, group_id: str) -> int:
        """INVALID_GROUP_ID for an empty group id, else `owner_error`: the first check of
        every group request, in Kafka's order."""
        return ErrorCode.INVALID_GROUP_ID if not group_id else self.owner_error(group_id)

    def _on_role_change(self, partition: Partition, leader: bool) -> None:
        if partition.tp.topic != self.topic:
            return
        index = partition.tp.partition
        if leader and index not in self.owned:
            self.owned[index] = partition.leader_epoch
            for on_load, _ in self._listeners:
                on_load(partition)
        elif not leader and index in self.owned:
            del self.owned[index]
            for _, on_unload in self._listeners:
                on_unload(index)

    # -- writing ----------------------------------------------------------------------

    def append(
        self,
        key: str,
        records: Sequence[Record],
        callback: AppendCallback,
        *,
        producer: tuple[int, int] | None = None,
    ) -> None:
        """Write ``records`` to ``key``'s partition (acks=all); ``callback(error code)``,
        the error as `coordinator_error` reports it.

        ``producer`` (id, epoch) makes the batch part of that producer's transaction.
        """
        if self.metadata.topic(self.topic) is None:
            callback(ErrorCode.NOT_COORDINATOR)
            return
        tp = TopicPartition(self.topic, self.partition_of(key))
        if producer is None:
            data = build_batch(records)
        else:
            data = build_batch(
                records, producer_id=producer[0], producer_epoch=producer[1], transactional=True
            )

        def done(results: dict[TopicPartition, ProduceResult]) -> None:
            callback(coordinator_error(results[tp].error))

        self.replica_manager.append_records(
            {tp: data},
            -1,
            self._write_timeout_ms(),
            done,
            from_client=False,
            internal_topics_allowed=True,
        )


def coordinator_error(error: KafkaError | None) -> int:
    """An append error as a coordinator reports it (Kafka's mapping); a fenced producer
    (a transactional offset commit) stays as it is."""
    if error is None:
        return 0
    code = error.code
    if code == ErrorCode.INVALID_PRODUCER_EPOCH:
        return code
    if code in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.NOT_COORDINATOR,
    ):
        return ErrorCode.NOT_COORDINATOR
    if code in (
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.INVALID_FETCH_SIZE,
    ):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return ErrorCode.UNKNOWN_SERVER_ERROR
