"""The replica manager: appends and fetches for every partition replica on one broker.

Handlers call `append_records` and `fetch_messages` with a callback; the answer comes from
the callback, at once or when a delayed operation completes (seed 002). Waiting lives in two
purgatories keyed by partition:

- `DelayedProduce` completes when the log directory's writer has written the appended
  batches (acks 1 and all) and, for acks=all, the high watermark passes every appended
  offset, or expires with REQUEST_TIMED_OUT;
- `DelayedFetch` completes when enough bytes are readable (below the high watermark for
  consumers, below the log end for followers), when a partition errors, or at its wait time.

Whatever moves a high watermark or a log end calls `_on_progress`, which checks both.

read_committed consumers read below the last stable offset and get the aborted
transactions of what they read; `append_markers` writes the transaction coordinator's
COMMIT and ABORT markers (acks=all, answered like a produce).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkagen.runtime.errors import (
    ErrorCode,
    InvalidRequiredAcksError,
    InvalidTopicExceptionError,
    KafkaError,
    KafkaStorageError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    RecordSetError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)
from kafkagen.runtime.purgatory import DelayedOperation, DelayedOperationPurgatory
from kafkagen.runtime.timer import Timer
from kafkagen.runtime.topic_partition import TopicPartition

from ..config.store import ConfigStore
from ..metadata.cluster_metadata import ClusterMetadata
from ..types import OFFSETS_TOPIC, TXN_STATE_TOPIC, PartitionInfo, TopicInfo
from . import log_cleaner
from ._log import LogBatch, served
from .partition import Partition
from .replication_quota import ReplicationQuota

if TYPE_CHECKING:
    from .log_store import BrokerStorage

__all__ = [
    "DelayedFetch",
    "DelayedProduce",
    "FetchInfo",
    "FetchParams",
    "FetchResult",
    "ProduceResult",
    "ReplicaManager",
]

_log = logging.getLogger(__name__)

#: A topic's min.insync.replicas, flush.messages and (segment.bytes, segment.ms), read
#: when used so that config changes apply at once.
_TopicReaders = tuple[Callable[[], int], Callable[[], int], Callable[[], tuple[int, int]]]

#: Offsets a ListOffsets request may ask for instead of a timestamp.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6

READ_UNCOMMITTED = 0
READ_COMMITTED = 1

#: The transaction coordinator's log; like the offsets topic, closed to clients.
_INTERNAL_TOPICS = (OFFSETS_TOPIC, TXN_STATE_TOPIC)
#: Append errors Kafka answers with log start offset -1 (the others carry the log's start).
_NO_LOG_START_ERRORS = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.INVALID_TOPIC_EXCEPTION,
    }
)


@dataclass(slots=True)
class ProduceResult:
    """One partition's outcome of `append_records`, the fields of a Produce response."""

    error: KafkaError | None = None
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    record_errors: list[tuple[int, str | None]] = field(default_factory=list)
    #: acks=all: the high watermark the append waits for; 0 once no wait is needed.
    required_offset: int = 0
    pending: bool = False
    #: With a log directory: the writer's job the answer waits for; 0 once written.
    write_seq: int = 0

    @property
    def error_code(self) -> int:
        return 0 if self.error is None else self.error.code

    @property
    def error_message(self) -> str | None:
        return None if self.error is None else self.error.message


@dataclass(frozen=True, slots=True)
class FetchParams:
    replica_id: int = -1
    max_wait_ms: int = 0
    min_bytes: int = 1
    max_bytes: int = 2**31 - 1
    isolation_level: int = READ_UNCOMMITTED
    #: A follower broker of this process: it takes the leader's batches themselves
    #: (`FetchResult.batches`) rather than a copy of their bytes.
    shared: bool = False

    @property
    def from_follower(self) -> bool:
        return self.replica_id >= 0


@dataclass(frozen=True, slots=True)
class FetchInfo:
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1


@dataclass(slots=True)
class FetchResult:
    error: KafkaError | None = None
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes | memoryview = b""
    #: A shared fetch's batches (`FetchParams.shared`); records stays empty then.
    batches: list[LogBatch] = field(default_factory=list)
    #: Bytes read, either way.
    size: int = 0
    #: (epoch, end offset) when the fetcher's log diverged from the leader's.
    diverging_epoch: tuple[int, int] | None = None
    #: (leader id, leader epoch) as this broker knows them, for NOT_LEADER answers.
    current_leader: tuple[int, int] = (-1, -1)
    #: read_committed: (producer id, first offset) of aborted transactions in the data.
    aborted_transactions: list[tuple[int, int]] | None = None

    @property
    def error_code(self) -> int:
        return 0 if self.error is None else self.error.code


ProduceCallback = Callable[[dict[TopicPartition, ProduceResult]], None]
FetchCallback = Callable[[list[tuple[TopicPartition, FetchResult]]], None]


def _storage_error(tp: TopicPartition, e: OSError) -> KafkaStorageError:
    _log.error("%s: cannot write to the log directory: %s", tp, e)
    return KafkaStorageError(f"{tp}: the log directory failed: {e.strerror or e}")


def _safe(callback: Callable[[Any], None], arg: Any) -> None:
    # A failing response callback must not break the append or fetch that completed it.
    try:
        callback(arg)
    except Exception:
        _log.exception("response callback failed")


#: The produce purgatory's key for answers waiting on the log directory's writer.
_WRITES = "log directory writes"


def _waits_for_write(rm: ReplicaManager, tp: TopicPartition, result: ProduceResult) -> bool:
    """Whether ``result`` still waits for its batch to be written (an error if the write
    failed)."""
    storage = rm.storage
    if storage is None:
        result.write_seq = 0
        return False
    done = storage.writer.done(result.write_seq)
    if done is False:
        return True
    result.write_seq = 0
    if done is None:
        result.pending = False
        result.base_offset = result.log_append_time = result.log_start_offset = -1
        result.error = KafkaStorageError(f"{tp}: the write failed, the log directory is offline")
    return False


def _answered(_: Any) -> None:
    """The callback of an operation that has already answered."""


class DelayedProduce(DelayedOperation):
    """A produce waiting for its batches to be written and (acks=all) for its partitions'
    high watermarks."""

    __slots__ = ("_rm", "_results", "_callback")

    def __init__(
        self,
        delay_ms: int,
        rm: ReplicaManager,
        results: dict[TopicPartition, ProduceResult],
        callback: ProduceCallback,
    ) -> None:
        super().__init__(delay_ms)
        self._rm = rm
        self._results = results
        self._callback = callback

    def try_complete(self) -> bool:
        rm = self._rm
        waiting = False
        for tp, result in self._results.items():
            if result.write_seq and _waits_for_write(rm, tp, result):
                waiting = True
                continue
            if not result.pending:
                continue
            partition = rm.partitions.get(tp)
            if partition is None:
                result.pending = False
                result.error = UnknownTopicOrPartitionError(f"{tp} was deleted")
                continue
            min_isr = rm.configs.topic_config(tp.topic).min_insync_replicas
            done, error = partition.check_replicated(result.required_offset, min_isr)
            if done:
                result.pending = False
                if isinstance(error, KafkaError):
                    result.error = error
            else:
                waiting = True
        if waiting:
            return False
        return self.force_complete()

    def on_complete(self) -> None:
        for tp, result in self._results.items():
            if result.write_seq and _waits_for_write(self._rm, tp, result):
                result.write_seq = 0
                result.pending = True  # not written in time: a timeout, as below
            if result.pending:
                result.pending = False
                result.error = RequestTimedOutError(
                    "the write did not reach enough replicas within the request timeout"
                )
        results, callback = self._results, self._callback
        # Answered, it may stay on its other partitions' watcher lists until the purge:
        # it holds on to nothing of its request meanwhile.
        self._results, self._callback = {}, _answered
        _safe(callback, results)


class DelayedFetch(DelayedOperation):
    """A fetch waiting for ``min_bytes`` of readable data, an error, or its wait time."""

    __slots__ = ("_rm", "_params", "_infos", "_callback")

    def __init__(
        self,
        rm: ReplicaManager,
        params: FetchParams,
        infos: Sequence[tuple[TopicPartition, FetchInfo]],
        callback: FetchCallback,
    ) -> None:
        super().__init__(params.max_wait_ms)
        self._rm = rm
        self._params = params
        self._infos = infos
        self._callback = callback

    def try_complete(self) -> bool:
        rm = self._rm
        params = self._params
        accumulated = 0
        for tp, info in self._infos:
            p = rm.partitions.get(tp)
            if p is None or not p.is_leader:
                return self.force_complete()  # the answer is an error now
            end = p.upper_bound(params.from_follower, params.isolation_level == READ_COMMITTED)
            offset = info.fetch_offset
            if offset > p.log.log_end_offset or offset < p.log.log_start_offset:
                return self.force_complete()  # out of range now (truncated or deleted)
            if offset < end and not rm.leader_throttled(p, params.replica_id):
                accumulated += p.log.bytes_between(
                    offset, end, min(info.partition_max_bytes, params.min_bytes)
                )
                if accumulated >= params.min_bytes:
                    return self.force_complete()
        return False

    def on_complete(self) -> None:
        infos, callback = self._infos, self._callback
        # As a produce's: a follower's fetch watches every partition it follows.
        self._infos, self._callback = (), _answered
        _safe(callback, self._rm.read_from_local_log(self._params, infos))


class ReplicaManager:
    """The partition replicas of one broker, their appends, fetches and waiting requests."""

    def __init__(
        self,
        broker_id: int,
        metadata: ClusterMetadata,
        timer_factory: Callable[[], Timer],
        time_ms: Callable[[], int] | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.metadata = metadata
        self.configs: ConfigStore = metadata.configs
        self.partitions: dict[TopicPartition, Partition] = {}
        self._topic_readers: dict[str, _TopicReaders] = {}
        # A completed operation stays on its other keys' watcher lists until this many have
        # completed (Kafka's settings): a follower's fetch holds every partition it follows.
        self.produce_purgatory: DelayedOperationPurgatory[DelayedProduce] = (
            DelayedOperationPurgatory(
                "Produce",
                timer_factory(),
                self.configs.broker_int("producer.purgatory.purge.interval.requests", broker_id),
            )
        )
        self.fetch_purgatory: DelayedOperationPurgatory[DelayedFetch] = DelayedOperationPurgatory(
            "Fetch",
            timer_factory(),
            self.configs.broker_int("fetch.purgatory.purge.interval.requests", broker_id),
        )
        self._clock = self.produce_purgatory.timer.clock
        self.time_ms = time_ms or (lambda: int(time.time() * 1000))
        #: Called with (partition, became_leader) when a replica's role changes.
        self.role_listeners: list[Callable[[Partition, bool], None]] = []
        #: The replicas' files under the log directory (None: memory only).
        self.storage: BrokerStorage | None = None
        #: What this broker sends, as leader, of throttled replicas (replication_quota).
        self.leader_quota = ReplicationQuota(self.configs, broker_id, "leader")

    def now(self) -> float:
        """The broker's monotonic clock in ms (the purgatories' clock)."""
        return self._clock.now_ms()

    # -- metadata ---------------------------------------------------------------------

    def apply_partitions(self, infos: Iterable[PartitionInfo]) -> None:
        """Follow the cluster metadata: create, update or drop local replicas."""
        for info in infos:
            tp = info.tp
            partition = self.partitions.get(tp)
            if self.broker_id not in info.replicas:
                if partition is not None:
                    self._drop(tp)
                continue
            if partition is None:
                topic = self.metadata.topic(info.topic)
                assert topic is not None
                partition = self.partitions[tp] = Partition(tp, topic.topic_id, self.broker_id)
                min_isr, flush_interval, roll_limits = self._readers(tp.topic)
                partition.log.roll_limits = roll_limits
                partition.log.flush_interval = flush_interval
                partition.min_isr = min_isr
                if self.storage is not None:
                    self.storage.open(partition, self.now())
            was_leader = partition.is_leader
            partition.apply_metadata(info, self.now())
            if partition.is_leader != was_leader or not was_leader:
                for listener in self.role_listeners:
                    listener(partition, partition.is_leader)
            # Waiting requests may now have an answer (e.g. NOT_LEADER_OR_FOLLOWER).
            self._on_progress(tp)

    def _readers(self, topic: str) -> _TopicReaders:
        """The config readers every replica of ``topic`` here shares: made once per topic,
        not per replica (a topic of a thousand partitions would otherwise hold three
        thousand closures on each broker)."""
        found = self._topic_readers.get(topic)
        if found is None:
            found = (self._min_isr(topic), self._flush_interval(topic), self._roll_limits(topic))
            self._topic_readers[topic] = found
        return found

    def _min_isr(self, topic: str) -> Callable[[], int]:
        return lambda: self.configs.topic_config(topic).min_insync_replicas

    def _flush_interval(self, topic: str) -> Callable[[], int]:
        return lambda: self.configs.topic_config(topic).flush_messages

    def _roll_limits(self, topic: str) -> Callable[[], tuple[int, int]]:
        def limits() -> tuple[int, int]:
            cfg = self.configs.topic_config(topic)
            return cfg.segment_bytes, cfg.segment_ms

        return limits

    def remove_topic(self, topic: TopicInfo) -> None:
        for p in topic.partitions:
            self._drop(p.tp)
        self._topic_readers.pop(topic.name, None)

    def _drop(self, tp: TopicPartition) -> None:
        partition = self.partitions.pop(tp, None)
        if partition is None:
            return
        if self.storage is not None:
            self.storage.remove(tp)
        if partition.is_leader:
            for listener in self.role_listeners:
                listener(partition, False)
        self._on_progress(tp)

    def replica_partition(self, tp: TopicPartition) -> Partition:
        """This broker's replica of ``tp``, leader or follower."""
        partition = self.partitions.get(tp)
        if partition is None:
            if self.metadata.partition(tp.topic, tp.partition) is None:
                raise UnknownTopicOrPartitionError(f"{tp} does not exist")
            raise NotLeaderOrFollowerError(f"broker {self.broker_id} has no replica of {tp}")
        return partition

    def leader_partition(self, tp: TopicPartition) -> Partition:
        partition = self.replica_partition(tp)
        partition.require_leader()
        if self.storage is not None and self.storage.writer.offline:
            raise KafkaStorageError(
                f"{tp}: broker {self.broker_id}'s log directory is offline after a failed write"
            )
        return partition

    # -- appends ----------------------------------------------------------------------

    def append_records(
        self,
        entries: Mapping[TopicPartition, bytes | bytearray | memoryview],
        acks: int,
        timeout_ms: int,
        callback: ProduceCallback,
        *,
        from_client: bool = True,
        produce_version: int | None = None,
        internal_topics_allowed: bool = False,
    ) -> None:
        """Append one batch per partition; ``callback`` gets every partition's result.

        acks 0 and 1 answer once the leader wrote; acks -1 waits in the purgatory until
        the high watermark passes the written offsets, or ``timeout_ms``.
        """
        results: dict[TopicPartition, ProduceResult] = {}
        if acks not in (-1, 0, 1):
            err = InvalidRequiredAcksError(f"acks must be -1, 0 or 1, not {acks}")
            _safe(callback, {tp: ProduceResult(err) for tp in entries})
            return
        now_ms = self.time_ms()
        clock_ms = self.now()
        progressed: list[TopicPartition] = []
        for tp, records in entries.items():
            result = ProduceResult()
            results[tp] = result
            partition = None
            try:
                if tp.topic in _INTERNAL_TOPICS and not internal_topics_allowed:
                    raise InvalidTopicExceptionError(f"clients may not write to {tp.topic}")
                partition = self.leader_partition(tp)
                appended = partition.append_as_leader(
                    records,
                    self.configs.topic_config(tp.topic),
                    required_acks=acks,
                    from_client=from_client,
                    produce_version=produce_version,
                    now_ms=now_ms,
                    clock_ms=clock_ms,
                )
            except RecordSetError as e:
                result.error = e
                result.record_errors = [(i, reason) for i, reason in e.record_errors]
                if partition is not None and e.code not in _NO_LOG_START_ERRORS:
                    result.log_start_offset = partition.log.log_start_offset
                continue
            except KafkaError as e:
                result.error = e
                if partition is not None and e.code not in _NO_LOG_START_ERRORS:
                    # As Kafka: a refusal by the log's own checks (producer state,
                    # transactions) reports where the log starts; the rest -1.
                    result.log_start_offset = partition.log.log_start_offset
                continue
            except OSError as e:
                result.error = _storage_error(tp, e)
                continue
            result.base_offset = appended.first_offset
            result.log_append_time = appended.log_append_time
            result.log_start_offset = appended.log_start_offset
            if acks == -1:
                result.required_offset = appended.last_offset + 1
                result.pending = True
            if not appended.duplicate:
                partition.maybe_increment_hw()
                progressed.append(tp)
        for tp in progressed:
            self._on_progress(tp)
        keys: list[Any] = [tp for tp, r in results.items() if r.pending]
        if acks != 0 and self._wait_for_writes(results):
            keys.append(_WRITES)
        if keys:
            op = DelayedProduce(timeout_ms, self, results, callback)
            self.produce_purgatory.try_complete_else_watch(op, keys)
        else:
            _safe(callback, results)

    def append_markers(
        self,
        markers: Mapping[TopicPartition, tuple[int, int, bool, int]],
        timeout_ms: int,
        callback: ProduceCallback,
    ) -> None:
        """Write end-transaction markers: tp -> (producer id, epoch, commit, coordinator
        epoch). Answered like an acks=all produce, once every marker is replicated."""
        now_ms = self.time_ms()
        clock_ms = self.now()
        results: dict[TopicPartition, ProduceResult] = {}
        progressed = []
        for tp, (pid, epoch, commit, coordinator_epoch) in markers.items():
            result = results[tp] = ProduceResult()
            try:
                partition = self.leader_partition(tp)
                appended = partition.append_marker(
                    pid, epoch, commit, coordinator_epoch, now_ms=now_ms, clock_ms=clock_ms
                )
            except KafkaError as e:
                result.error = e
                continue
            except OSError as e:
                result.error = _storage_error(tp, e)
                continue
            result.base_offset = appended.first_offset
            result.log_start_offset = appended.log_start_offset
            result.required_offset = appended.last_offset + 1
            result.pending = True
            partition.maybe_increment_hw()
            progressed.append(tp)
        for tp in progressed:
            self._on_progress(tp)
        if progressed:
            keys: list[Any] = list(progressed)
            if self._wait_for_writes(results):
                keys.append(_WRITES)
            op = DelayedProduce(timeout_ms, self, results, callback)
            self.produce_purgatory.try_complete_else_watch(op, keys)
        else:
            _safe(callback, results)

    def _wait_for_writes(self, results: Mapping[TopicPartition, ProduceResult]) -> bool:
        """Make the appended partitions' answers wait for the writer's jobs given so far
        (Kafka answers once its write returned); whether any has to."""
        storage = self.storage
        if storage is None:
            return False
        writer = storage.writer
        seq = writer.queued
        if writer.done(seq):
            return False
        waits = False
        for result in results.values():
            if result.error is None:
                result.write_seq = seq
                waits = True
        return waits

    def attach_storage(self, storage: BrokerStorage) -> None:
        """Mirror the replicas in ``storage``; its writer wakes the answers waiting on it."""
        self.storage = storage
        storage.writer.on_written = self._on_written

    def _on_written(self) -> None:
        assert self.storage is not None
        for log in self.storage.writer.written_logs():
            # A leader's high watermark may follow its written log now.
            partition = self.partitions.get(log.tp)
            if partition is not None and partition.maybe_increment_hw():
                self._on_progress(log.tp)
        self.produce_purgatory.check_and_complete(_WRITES)

    def _on_progress(self, tp: TopicPartition) -> None:
        """A log end or high watermark moved (or a replica changed): wake waiting requests."""
        self.produce_purgatory.check_and_complete(tp)
        self.fetch_purgatory.check_and_complete(tp)

    # -- fetches ----------------------------------------------------------------------

    def fetch_messages(
        self,
        params: FetchParams,
        infos: Sequence[tuple[TopicPartition, FetchInfo]],
        callback: FetchCallback,
    ) -> None:
        """Read from each partition; answer now if there is enough, else wait in purgatory."""
        if params.from_follower:
            self._update_followers(params.replica_id, infos)
        results = self.read_from_local_log(params, infos)
        total = 0
        errored = False
        for _, r in results:
            total += r.size
            errored = errored or r.error is not None or r.diverging_epoch is not None
        if params.max_wait_ms <= 0 or not infos or total >= params.min_bytes or errored:
            _safe(callback, results)
            return
        op = DelayedFetch(self, params, infos, callback)
        self.fetch_purgatory.try_complete_else_watch(op, [tp for tp, _ in infos])

    def _update_followers(
        self, replica_id: int, infos: Sequence[tuple[TopicPartition, FetchInfo]]
    ) -> None:
        clock_ms = self.now()
        for tp, info in infos:
            partition = self.partitions.get(tp)
            if partition is None or not partition.is_leader:
                continue
            moved = partition.update_follower(replica_id, info.fetch_offset, clock_ms)
            if partition.can_join_isr(replica_id):
                # Caught up: back in the ISR, unless the controller cannot be reached.
                self.metadata.set_isr(
                    tp.topic, tp.partition, [*partition.isr, replica_id], self.broker_id
                )
            if moved:
                self._on_progress(tp)

    def check_isr(self) -> int:
        """Drop followers that lag more than replica.lag.time.max.ms; return how many went."""
        max_lag = self.configs.broker_int("replica.lag.time.max.ms", self.broker_id)
        clock_ms = self.now()
        dropped = 0
        for tp, partition in list(self.partitions.items()):
            if not partition.is_leader:
                continue
            lagging = partition.lagging_followers(clock_ms, max_lag)
            if lagging:
                dropped += len(lagging)
                isr = [r for r in partition.isr if r not in lagging]
                self.metadata.set_isr(tp.topic, tp.partition, isr, self.broker_id)
        return dropped

    def leader_throttled(self, partition: Partition, replica_id: int) -> bool:
        """Whether a follower's fetch of ``partition`` is held back by the leader's quota:
        a throttled replica, a follower outside the ISR, the rate over its bound."""
        return (
            replica_id >= 0
            and replica_id not in partition.isr
            and self.leader_quota.throttles(partition.tp)
            and self.leader_quota.exceeded(self.now())
        )

    def read_from_local_log(
        self, params: FetchParams, infos: Sequence[tuple[TopicPartition, FetchInfo]]
    ) -> list[tuple[TopicPartition, FetchResult]]:
        """The records each partition can give now, within the request's byte limits.

        The first partition that has data returns at least one whole batch even when the
        batch is larger than the limits, so a consumer never gets stuck (Kafka's KIP-74).
        A follower's throttled replicas count into the leader's replication quota.
        """
        limit = params.max_bytes
        min_one = True
        throttled_bytes = 0
        out = []
        for tp, info in infos:
            result = self._read_partition(
                tp, info, params, min(limit, info.partition_max_bytes), min_one
            )
            n = result.size
            if n:
                min_one = False
                limit = max(0, limit - n)
                if params.from_follower and self.leader_quota.throttles(tp):
                    throttled_bytes += n
            out.append((tp, result))
        self.leader_quota.record(throttled_bytes, self.now())
        return out

    def _read_partition(
        self, tp: TopicPartition, info: FetchInfo, params: FetchParams, limit: int, min_one: bool
    ) -> FetchResult:
        result = FetchResult()
        partition = self.partitions.get(tp)
        try:
            partition = self.leader_partition(tp)
            partition.check_leader_epoch(info.current_leader_epoch)
        except KafkaError as e:
            result.error = e
            if partition is not None:
                result.current_leader = (partition.leader_id, partition.leader_epoch)
            else:  # no replica here: the cluster's metadata still names the leader
                known = self.metadata.partition(tp.topic, tp.partition)
                if known is not None:
                    result.current_leader = (known.leader, known.leader_epoch)
            return result
        log = partition.log
        result.high_watermark = partition.high_watermark
        result.last_stable_offset = partition.last_stable_offset
        result.log_start_offset = log.log_start_offset
        if info.last_fetched_epoch >= 0:
            epoch, end = log.end_offset_for_epoch(info.last_fetched_epoch)
            if epoch != info.last_fetched_epoch or end < info.fetch_offset:
                result.diverging_epoch = (epoch, end)
                return result
        try:
            partition.check_fetch_offset(info.fetch_offset)
        except KafkaError as e:
            result.error = e
            return result
        if self.leader_throttled(partition, params.replica_id):
            return result  # over the replication quota: no records this time
        read_committed = params.isolation_level == READ_COMMITTED and not params.from_follower
        upper = partition.upper_bound(params.from_follower, read_committed)
        batches = log.read(info.fetch_offset, limit, upper, min_one)
        result.size = sum(b.size for b in batches)
        if params.shared:
            result.batches = batches
        else:
            result.records = served(batches)
        if read_committed:
            result.aborted_transactions = []
            if batches:
                end = batches[-1].last_offset + 1
                result.aborted_transactions = [
                    (a.producer_id, a.first_offset)
                    for a in partition.aborted_transactions(info.fetch_offset, end)
                ]
        return result

    # -- retention --------------------------------------------------------------------

    def enforce_retention(self) -> int:
        """Trim leaders' logs by retention.ms and retention.bytes; return batches dropped.

        Only whole batches go, never at or above the high watermark, and only where
        cleanup.policy has delete (``compact,delete`` too). Followers move their log start
        when the leader's answers tell them. Idle producers expire too.
        """
        now = self.time_ms()
        dropped = 0
        expiry = self.configs.broker_int("producer.id.expiration.ms", self.broker_id)
        clock_ms = self.now()
        for tp, p in self.partitions.items():
            p.expire_producers(clock_ms, expiry)
            if not p.is_leader:
                continue
            cfg = self.configs.topic_config(tp.topic)
            if not cfg.deletes:
                continue
            log = p.log
            start = log.log_start_offset
            remaining = log.size_in_bytes
            for b in log.batches:
                if b.last_offset >= p.high_watermark:
                    break
                too_old = cfg.retention_ms >= 0 and b.max_timestamp < now - cfg.retention_ms
                # As Kafka: drop while the log stays at least retention.bytes without it.
                too_big = cfg.retention_bytes >= 0 and (remaining - b.size >= cfg.retention_bytes)
                if not (too_old or too_big):
                    break
                remaining -= b.size
                start = b.last_offset + 1
            if start > log.log_start_offset:
                dropped += log.advance_start(start)
                self._on_progress(tp)
        return dropped

    def clean_logs(self, force: bool = False) -> int:
        """One pass of this broker's log cleaner over every compacted replica, leader or
        follower, that is due (``force``: that has anything cleanable); return how many
        were cleaned. Kafka's cleaner runs the same way on every broker."""
        now = self.time_ms()
        cleaned = 0
        for tp, p in list(self.partitions.items()):
            cfg = self.configs.topic_config(tp.topic)
            if not cfg.compacted:
                continue
            try:
                if log_cleaner.clean(p, self._cleaner_config(tp.topic), now, force):
                    cleaned += 1
                    self._on_progress(tp)
            except OSError as e:
                # The old segments stay in place; the next pass tries again.
                _log.error("%s: cleaning failed: %s", tp, e)
        if cleaned and self.storage is not None:
            self.storage.checkpoint_soon()
        return cleaned

    def _cleaner_config(self, topic: str) -> log_cleaner.CleanerConfig:
        def value(name: str) -> Any:
            return self.configs.topic_value(topic, name)

        return log_cleaner.CleanerConfig(
            delete_retention_ms=value("delete.retention.ms"),
            min_compaction_lag_ms=value("min.compaction.lag.ms"),
            max_compaction_lag_ms=value("max.compaction.lag.ms"),
            min_cleanable_dirty_ratio=value("min.cleanable.dirty.ratio"),
            segment_bytes=value("segment.bytes"),
        )

    def delete_records(self, tp: TopicPartition, offset: int) -> int:
        """Move the log start up to ``offset`` (-1: the high watermark); return the new start.

        Answered as soon as the leader moved (Kafka also waits for the followers' log
        starts); followers follow with their next fetch.
        """
        partition = self.leader_partition(tp)
        if not self.configs.topic_config(tp.topic).deletes:
            # As Kafka: a compact-only topic keeps its history for the cleaner to decide.
            raise PolicyViolationError(
                f"Records of partition {tp} can not be deleted due to the configured policy"
            )
        if offset == -1:
            offset = partition.high_watermark
        if not 0 <= offset <= partition.high_watermark:
            raise OffsetOutOfRangeError(
                f"{tp}: cannot delete up to {offset}, the high watermark is "
                f"{partition.high_watermark}"
            )
        if offset > partition.log.log_start_offset:
            partition.log.advance_start(offset)
            self._on_progress(tp)
        return partition.log.log_start_offset

    def end_offset_for_epoch(
        self, tp: TopicPartition, epoch: int, current_leader_epoch: int = -1
    ) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (largest epoch <= ``epoch``, where it ended), or (-1, -1)."""
        partition = self.leader_partition(tp)
        partition.check_leader_epoch(current_leader_epoch)
        if epoch > partition.leader_epoch:
            return -1, -1
        if epoch == partition.leader_epoch:
            # The current epoch (with or without batches yet) ends at the log end.
            return epoch, partition.log.log_end_offset
        return partition.log.end_offset_for_epoch(epoch)

    # -- offsets ----------------------------------------------------------------------

    def list_offset(
        self,
        tp: TopicPartition,
        timestamp: int,
        *,
        isolation_level: int = READ_UNCOMMITTED,
        current_leader_epoch: int = -1,
        replica_id: int = -1,
    ) -> tuple[int, int, int]:
        """(offset, timestamp, leader epoch) for a ListOffsets query; raises Kafka errors.

        Not found (a timestamp after every record): (-1, -1, -1), as Kafka answers.
        """
        partition = self.leader_partition(tp)
        partition.check_leader_epoch(current_leader_epoch)
        log = partition.log
        if replica_id >= 0:
            upper = log.log_end_offset
        elif isolation_level == READ_COMMITTED:
            upper = partition.last_stable_offset
        else:
            upper = partition.high_watermark
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            offset = log.log_start_offset
            if offset >= log.log_end_offset:  # nothing stored: the epoch this leader began
                return offset, -1, partition.leader_epoch
            return offset, -1, log.epoch_at(offset)
        if timestamp == LATEST_TIMESTAMP:
            return upper, -1, log.epoch_at(upper - 1) if upper > 0 else partition.leader_epoch
        if timestamp in (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):
            return -1, -1, -1  # no tiered storage: nothing uploaded, nothing waiting to be
        if timestamp == MAX_TIMESTAMP:
            found = log.max_timestamp(upper)
        else:
            found = log.offset_for_timestamp(timestamp, upper)
        if found is None:
            return -1, -1, -1
        return found[0], found[1], log.epoch_at(found[0])

    # -- lifecycle --------------------------------------------------------------------

    def shutdown(self) -> None:
        """Answer every waiting request now (with what it has) and stop the purgatories."""
        if self.storage is not None:
            self.storage.writer.drain()  # what was appended is answered as written
        for purgatory in (self.produce_purgatory, self.fetch_purgatory):
            pending: list[DelayedOperation] = list(purgatory.shutdown())
            for op in pending:
                op.force_complete()
            purgatory.timer.close()
        if self.storage is not None:
            self.storage.close()
