"""The transaction coordinator: transactional ids, their producer ids, epochs and states.

Designed like the group coordinator. A transactional id hashes onto a partition of
``__transaction_state``; the broker leading that partition coordinates it. Every state
change is written to that partition through the replica manager with acks=all and applied
to the cache only in the append's completion callback, so nothing is visible before it is
durable (seed 002). While a write is in flight the id has a pending state, and requests
that would change it meanwhile get CONCURRENT_TRANSACTIONS, as in Kafka.

States follow Kafka's: Empty -> Ongoing (partitions added) -> PrepareCommit/PrepareAbort
(EndTxn; the producer is answered here) -> COMMIT/ABORT markers written to every partition
of the transaction -> CompleteCommit/CompleteAbort. A transaction open longer than its
timeout is aborted with the producer's epoch bumped, so the old producer is fenced; the
timeout waits in a purgatory on the broker's timer. A two-phase commit producer's
transactions (KIP-939) have no timeout.

Markers reach the leaders of the transaction's partitions through `MarkerWriter`, the one
thing this coordinator knows of other brokers (Kafka's WriteTxnMarkers request); what a
marker means to the group coordinator there (transactional offset commits) is that
broker's business.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from kafkagen.runtime.errors import (
    CoordinatorNotAvailableError,
    ErrorCode,
    KafkaError,
    error_for_code,
)
from kafkagen.runtime.purgatory import DelayedOperation, DelayedOperationPurgatory
from kafkagen.runtime.records import Record, iter_batches
from kafkagen.runtime.timer import Timer
from kafkagen.runtime.topic_partition import TopicPartition

from ..config.store import ConfigStore
from ..coordinator.coordinator_log import CoordinatorLog
from ..metadata.cluster_metadata import ClusterMetadata
from ..storage.partition import Partition
from ..storage.replica_manager import ProduceResult, ReplicaManager
from ..types import TXN_STATE_TOPIC
from .transaction_state import (
    NO_EPOCH,
    NO_PRODUCER_ID,
    TWO_PHASE_TIMEOUT_MS,
    TxnMetadata,
    TxnSnapshot,
    TxnState,
    decode_txn_key,
    decode_txn_value,
    txn_key,
    txn_value,
)

__all__ = ["MarkerWriter", "TransactionCoordinator"]

_log = logging.getLogger("kafkagen.broker.transactions")

#: How long a write to the state log or a round of markers may wait for replicas.
_WRITE_TIMEOUT_MS = 5000
#: Pause before markers that found no leader are sent again.
_MARKER_RETRY_S = 0.1
#: Epochs stop short of the int16 maximum; past it the producer gets a new id.
_MAX_EPOCH = 2**15 - 2


# -- results ------------------------------------------------------------------------------

#: EndTxn's answer in a Prepare state: the same outcome again is still being written.
_PREPARED_ANSWER: dict[tuple[TxnState, bool], int] = {
    (TxnState.PREPARE_COMMIT, True): ErrorCode.CONCURRENT_TRANSACTIONS,
    (TxnState.PREPARE_ABORT, False): ErrorCode.CONCURRENT_TRANSACTIONS,
}

InitCallback = Callable[[int, int, int], None]
"""(error code, producer id, producer epoch)."""
ErrorCallback = Callable[[int], None]
PartitionsCallback = Callable[[dict[TopicPartition, int]], None]
#: A marker: (producer id, producer epoch, commit?, coordinator epoch).
Marker = tuple[int, int, bool, int]
MarkersCallback = Callable[[Mapping[TopicPartition, ProduceResult]], None]


class MarkerWriter(Protocol):
    """Writes transaction markers on the broker leading their partitions."""

    def write_txn_markers(
        self,
        node_id: int,
        markers: Mapping[TopicPartition, Marker],
        timeout_ms: int,
        callback: MarkersCallback,
        *,
        sender: int,
    ) -> bool:
        """Append ``markers`` on broker ``node_id``, then ``callback(results)``; False (and
        no callback) when that broker is not serving or broker ``sender`` cannot reach it
        (a cut network: the markers wait for it to heal, as Kafka's marker channel does)."""
        ...


class DelayedTxnTimeout(DelayedOperation):
    """An open transaction's deadline: completes when the transaction ends first; expiry
    aborts it."""

    __slots__ = ("_coordinator", "_txn", "_version")

    def __init__(self, coordinator: TransactionCoordinator, txn: TxnMetadata, delay_ms: int):
        super().__init__(delay_ms)
        self._coordinator = coordinator
        #: None once completed: a completed deadline stays on its id's watcher list until
        #: the purgatory's purge, and must not keep a replaced or expired id's metadata.
        self._txn: TxnMetadata | None = txn
        self._version = txn.version

    def _still_open(self, txn: TxnMetadata | None) -> bool:
        return (
            txn is not None
            and txn.state is TxnState.ONGOING
            and self._coordinator.txns.get(txn.transactional_id) is txn
        )

    def try_complete(self) -> bool:
        if self._still_open(self._txn):
            return False
        completed = self.force_complete()
        self._txn = None
        return completed

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        txn, self._txn = self._txn, None
        if txn is not None and self._still_open(txn):
            self._coordinator._abort_timed_out(txn)


class TransactionCoordinator:
    """The transactional ids whose state-log partitions this broker leads."""

    def __init__(
        self,
        node_id: int,
        configs: ConfigStore,
        metadata: ClusterMetadata,
        replica_manager: ReplicaManager,
        markers: MarkerWriter,
        timer_factory: Callable[[], Timer],
        *,
        running: Callable[[], bool],
    ) -> None:
        self.log = CoordinatorLog(
            TXN_STATE_TOPIC,
            node_id,
            configs,
            metadata,
            replica_manager,
            partitions_config="transaction.state.log.num.partitions",
            replication_config="transaction.state.log.replication.factor",
            segment_config="transaction.state.log.segment.bytes",
            write_timeout_ms=lambda: _WRITE_TIMEOUT_MS,
            on_load=self._load,
            on_unload=self._unload,
        )
        self.metadata = metadata
        self._markers = markers
        #: Whether the broker serves (False while paused): idle ids expire only then.
        self._running = running
        self.txns: dict[str, TxnMetadata] = {}
        self._timeouts: DelayedOperationPurgatory[DelayedTxnTimeout] = DelayedOperationPurgatory(
            "TxnTimeout", timer_factory()
        )
        self._time_ms = self.log.now_ms
        self._cfg = self.log.cfg
        self._retries: set[asyncio.TimerHandle] = set()
        self._expiry: asyncio.TimerHandle | None = None
        #: Transactions v2 Produce requests on this broker waiting for the coordinator of
        #: their transactional id, oldest first (each queue's head is asking): a later
        #: batch of the same producer must not be appended before an earlier one.
        self.waiting_produces: dict[str, deque[Callable[[], None]]] = {}

    # -- ownership --------------------------------------------------------------------

    @property
    def owned(self) -> Mapping[int, int]:
        """State-log partitions this broker leads -> their leader epoch when taken over."""
        return self.log.owned

    def partition_of(self, transactional_id: str) -> int:
        return self.log.partition_of(transactional_id)

    def ensure_state_topic(self) -> bool:
        """Create ``__transaction_state`` on first use, as Kafka does; False if impossible."""
        return self.log.ensure_topic()

    def coordinator_for(self, transactional_id: str) -> int:
        """The broker id coordinating ``transactional_id`` (-1 if none is available)."""
        return self.log.coordinator_for(transactional_id)

    def _unload(self, index: int) -> None:
        for tid in [t for t, m in self.txns.items() if m.log_partition == index]:
            del self.txns[tid]
            self._timeouts.check_and_complete(tid)

    def _load(self, partition: Partition) -> None:
        """Rebuild the ids of a state-log partition this broker now leads, then finish
        what the previous coordinator left half done."""
        loaded: dict[str, TxnSnapshot | None] = {}
        for b in partition.log.batches:
            for batch in iter_batches(b.data, verify_crc=False):
                for r in batch:
                    tid = None if r.key is None else decode_txn_key(r.key)
                    if tid is None:
                        continue
                    loaded[tid] = None if r.value is None else decode_txn_value(r.value)
        for tid, snap in loaded.items():
            if snap is None:
                self.txns.pop(tid, None)
                continue
            txn = TxnMetadata(tid, snap.producer_id, log_partition=partition.tp.partition)
            txn.apply(snap)
            self.txns[tid] = txn
            if txn.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                self._complete(txn, txn.state is TxnState.PREPARE_COMMIT, snap.next_producer_id)
            elif txn.state is TxnState.ONGOING:
                self._watch_timeout(txn)
        self._schedule_expiry()

    def _coordinator_epoch(self, transactional_id: str) -> int:
        return self.owned.get(self.partition_of(transactional_id), -1)

    # -- InitProducerId ---------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected_pid: int,
        expected_epoch: int,
        callback: InitCallback,
        *,
        enable_2pc: bool = False,
        keep_prepared: bool = False,
    ) -> None:
        """A producer id and epoch for a transactional producer (a new epoch each time).

        ``enable_2pc`` (InitProducerId v6, KIP-939): the producer takes part in two-phase
        commits, so its transactions are kept under `TWO_PHASE_TIMEOUT_MS` and never time
        out; only a broker with ``transaction.two.phase.commit.enable`` takes it. Kafka 4.4
        does not yet keep a prepared transaction across producers: ``keep_prepared`` is
        answered UNSUPPORTED_VERSION, as there."""

        def fail(code: int) -> None:
            callback(code, NO_PRODUCER_ID, NO_EPOCH)

        if not transactional_id:
            fail(ErrorCode.INVALID_REQUEST)
            return
        if enable_2pc and not self.log.configs.broker_bool(
            "transaction.two.phase.commit.enable", self.log.node_id
        ):
            # Kafka's refusal: an authorization error, not one a client could probe with.
            fail(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            return
        if keep_prepared:
            fail(ErrorCode.UNSUPPORTED_VERSION)
            return
        if enable_2pc:
            timeout_ms = TWO_PHASE_TIMEOUT_MS
        elif timeout_ms <= 0 or timeout_ms > self._cfg("transaction.max.timeout.ms"):
            fail(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
            return
        error = self.log.owner_error(transactional_id)
        if error:
            fail(error)
            return
        txn = self.txns.get(transactional_id)
        if txn is None:
            pid = self.metadata.allocate_producer_id()
            txn = self.txns[transactional_id] = TxnMetadata(
                transactional_id,
                pid,
                timeout_ms=timeout_ms,
                update_ms=self._time_ms(),
                log_partition=self.log.partition_of(transactional_id),
            )
        if txn.pending is not None:
            fail(ErrorCode.CONCURRENT_TRANSACTIONS)
            return
        # As Kafka: a producer recovering from UNKNOWN_PRODUCER_ID may name an id and epoch
        # the coordinator never gave out; an id with no epoch yet starts afresh.
        if expected_pid != NO_PRODUCER_ID and txn.producer_epoch != NO_EPOCH:
            if expected_pid == txn.producer_id and expected_epoch == txn.producer_epoch:
                pass  # the current producer starts over
            elif (
                (expected_pid == txn.last_producer_id or expected_pid == txn.producer_id)
                and expected_epoch == txn.last_producer_epoch
                and txn.state is TxnState.EMPTY
            ):
                # A retry of an init that already bumped the epoch: same answer again.
                callback(0, txn.producer_id, txn.producer_epoch)
                return
            else:
                fail(ErrorCode.PRODUCER_FENCED)
                return
        state = txn.state
        if state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            fail(ErrorCode.CONCURRENT_TRANSACTIONS)
            return
        if state is TxnState.ONGOING:
            # The previous producer left a transaction open: fence it (new epoch) and
            # abort; this producer retries and gets the epoch after that.
            self._abort_with_new_epoch(txn)
            fail(ErrorCode.CONCURRENT_TRANSACTIONS)
            return
        if state not in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            fail(ErrorCode.CONCURRENT_TRANSACTIONS)
            return
        target = self._next_producer(txn, expected_pid != NO_PRODUCER_ID, timeout_ms)

        def written(error: int) -> None:
            if error:
                fail(error)
            else:
                callback(0, target.producer_id, target.producer_epoch)

        self._transit(txn, target, written)

    def _next_producer(self, txn: TxnMetadata, named_epoch: bool, timeout_ms: int) -> TxnSnapshot:
        """The id's state for its next producer: the epoch after the current one, or a new
        producer id at epoch 0 once the epochs run out."""
        if txn.producer_epoch >= _MAX_EPOCH:
            pid, epoch = self.metadata.allocate_producer_id(), 0
            last_pid, last_epoch = txn.producer_id, txn.producer_epoch
        else:
            pid, epoch = txn.producer_id, txn.producer_epoch + 1
            # Only a producer that named its epoch can retry with it (Kafka's rule).
            last_pid = NO_PRODUCER_ID
            last_epoch = txn.producer_epoch if named_epoch else NO_EPOCH
        return txn.snapshot(
            producer_id=pid,
            producer_epoch=epoch,
            last_producer_id=last_pid,
            last_producer_epoch=last_epoch,
            timeout_ms=timeout_ms,
            state=TxnState.EMPTY,
            partitions=frozenset(),
            start_ms=-1,
            update_ms=self._time_ms(),
            ends_with_bump=False,
        )

    # -- AddPartitionsToTxn, AddOffsetsToTxn ------------------------------------------

    def _check_producer(self, transactional_id: str, pid: int, epoch: int) -> TxnMetadata:
        """The id's metadata if ``pid``/``epoch`` may act on it; raises the Kafka error."""
        self.log.check_owner(transactional_id)
        txn = self.txns.get(transactional_id)
        if txn is None or txn.producer_id != pid:
            raise error_for_code(ErrorCode.INVALID_PRODUCER_ID_MAPPING)(
                f"producer {pid} does not own transactional id {transactional_id!r}",
            )
        if txn.producer_epoch != epoch:
            raise error_for_code(ErrorCode.PRODUCER_FENCED)(
                f"epoch {epoch} of producer {pid} is not the current one ({txn.producer_epoch})",
            )
        if txn.pending is not None or txn.state in (
            TxnState.PREPARE_COMMIT,
            TxnState.PREPARE_ABORT,
        ):
            raise error_for_code(ErrorCode.CONCURRENT_TRANSACTIONS)(
                f"the previous transaction of {transactional_id!r} is still completing",
            )
        return txn

    def add_partitions(
        self,
        transactional_id: str,
        pid: int,
        epoch: int,
        partitions: Iterable[TopicPartition],
        callback: PartitionsCallback,
        *,
        ends_with_bump: bool = False,
    ) -> None:
        """Add partitions to the open transaction (opening it); per-partition errors.
        ``ends_with_bump``: the broker adds them for a transactions v2 producer."""
        wanted = list(dict.fromkeys(partitions))
        md = self.metadata
        unknown = {tp for tp in wanted if md.partition(tp.topic, tp.partition) is None}
        if unknown:
            # Kafka attempts nothing when any partition is unknown.
            callback(
                {
                    tp: (
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                        if tp in unknown
                        else ErrorCode.OPERATION_NOT_ATTEMPTED
                    )
                    for tp in wanted
                }
            )
            return
        try:
            txn = self._check_producer(transactional_id, pid, epoch)
        except KafkaError as e:
            callback(dict.fromkeys(wanted, e.code))
            return
        if txn.state is TxnState.ONGOING and txn.partitions.issuperset(wanted):
            callback(dict.fromkeys(wanted, 0))
            return
        opening = txn.state is not TxnState.ONGOING
        now = self._time_ms()
        target = txn.snapshot(
            state=TxnState.ONGOING,
            partitions=txn.partitions | frozenset(wanted),
            start_ms=now if opening else txn.start_ms,
            update_ms=now,
            ends_with_bump=ends_with_bump or (txn.ends_with_bump and not opening),
        )

        def written(error: int) -> None:
            if not error and opening:
                self._watch_timeout(txn)
            callback(dict.fromkeys(wanted, error))

        self._transit(txn, target, written)

    def verify_partition(
        self, transactional_id: str, pid: int, epoch: int, tp: TopicPartition
    ) -> int:
        """Whether a transactional produce to ``tp`` belongs to the open transaction: 0, or
        the error code for the produce."""
        try:
            self.log.check_owner(transactional_id)
        except KafkaError:
            return ErrorCode.NOT_ENOUGH_REPLICAS  # retriable: the coordinator is moving
        txn = self.txns.get(transactional_id)
        if txn is None or txn.producer_id != pid:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if epoch < txn.producer_epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if txn.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS  # as Kafka: retriable, not refused
        if txn.state is not TxnState.ONGOING or tp not in txn.partitions:
            return ErrorCode.INVALID_TXN_STATE
        return 0

    # -- EndTxn -----------------------------------------------------------------------

    def end_txn(
        self,
        transactional_id: str,
        pid: int,
        epoch: int,
        commit: bool,
        callback: InitCallback,
        *,
        bump_epoch: bool = False,
    ) -> None:
        """Commit or abort: answered once the Prepare state is durable; the markers and
        the Complete state follow. ``callback(error, producer id, epoch)`` gives the
        identity the producer goes on with.

        ``bump_epoch`` is transactions v2 (KIP-890, EndTxn v5): every transaction ends
        under the next epoch, which the answer returns; a retry names the epoch before
        the bump; an abort is accepted with no transaction open, and still bumps."""
        error = self.log.owner_error(transactional_id)
        if error:
            callback(error, NO_PRODUCER_ID, NO_EPOCH)
            return
        txn = self.txns.get(transactional_id)
        if bump_epoch:
            code = self._end_txn_v2(txn, pid, epoch, commit, callback)
        else:
            code = self._end_txn_v1(txn, pid, epoch, commit, callback)
        if code is None:
            return  # preparing: the callback follows
        if code or txn is None:
            callback(code, NO_PRODUCER_ID, NO_EPOCH)
        else:
            callback(0, txn.producer_id, txn.producer_epoch)

    def _end_txn_v1(
        self, txn: TxnMetadata | None, pid: int, epoch: int, commit: bool, callback: InitCallback
    ) -> int | None:
        """The error code of an EndTxn before v5 (0: already done), None once preparing."""
        if txn is None or txn.producer_id != pid:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if txn.producer_epoch != epoch:
            return ErrorCode.PRODUCER_FENCED
        if txn.pending is not None:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        state = txn.state
        if state is TxnState.ONGOING:
            self._prepare(txn, commit, txn.producer_epoch, callback)
            return None
        if state is TxnState.COMPLETE_COMMIT:
            return 0 if commit else ErrorCode.INVALID_TXN_STATE
        if state is TxnState.COMPLETE_ABORT:
            return ErrorCode.INVALID_TXN_STATE if commit else 0
        return _PREPARED_ANSWER.get((state, commit), ErrorCode.INVALID_TXN_STATE)

    def _end_txn_v2(
        self, txn: TxnMetadata | None, pid: int, epoch: int, commit: bool, callback: InitCallback
    ) -> int | None:
        """The error code of an EndTxn v5+ (0: a retry of the one that ended it), None once
        preparing."""
        if txn is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        state = txn.state
        # A retry names the identity before the bump: the epoch below, or the previous
        # producer id at its last epoch once the epochs ran out.
        retry_after_bump = txn.producer_id == pid and txn.producer_epoch == epoch + 1
        retry_after_new_id = (
            txn.last_producer_id == pid
            and txn.last_producer_epoch == epoch
            and txn.producer_epoch == 0
        )
        if txn.producer_id != pid and not retry_after_new_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        retry = retry_after_bump or retry_after_new_id
        if state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            if not retry and epoch == txn.producer_epoch:
                # The producer's next EndTxn (under the epoch this one returned) while the
                # markers are still being written: Kafka, whose id is then in a pending
                # transition, answers CONCURRENT_TRANSACTIONS and the producer retries.
                return ErrorCode.CONCURRENT_TRANSACTIONS
            valid = retry
        elif state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            valid = retry or epoch == txn.producer_epoch
        else:
            valid = epoch == txn.producer_epoch
        if not valid:
            return ErrorCode.PRODUCER_FENCED
        if txn.pending is not None:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if state is TxnState.ONGOING:
            self._bump_and_prepare(txn, commit, callback)
            return None
        if state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT, TxnState.EMPTY):
            done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
            if retry:
                return 0 if state is done else ErrorCode.INVALID_TXN_STATE
            if commit:
                return ErrorCode.INVALID_TXN_STATE
            # An abort with nothing open: the producer may have written nothing, or not
            # know whether its first write added a partition; it still gets a new epoch.
            self._bump_and_prepare(txn, False, callback)
            return None
        return _PREPARED_ANSWER.get((state, commit), ErrorCode.INVALID_TXN_STATE)

    def _prepare(
        self,
        txn: TxnMetadata,
        commit: bool,
        epoch: int,
        callback: InitCallback | None,
        next_pid: int = NO_PRODUCER_ID,
        *,
        ends_with_bump: bool | None = None,
    ) -> None:
        """Write PrepareCommit/PrepareAbort under ``epoch``, then the markers; with
        ``next_pid`` the id moves to that producer id (epoch 0) once complete."""
        now = self._time_ms()
        target = txn.snapshot(
            state=TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
            producer_epoch=epoch,
            # An abort with nothing open (transactions v2) starts and ends a transaction.
            start_ms=txn.start_ms if txn.state is TxnState.ONGOING else now,
            update_ms=now,
            ends_with_bump=txn.ends_with_bump if ends_with_bump is None else ends_with_bump,
            next_producer_id=next_pid,
        )

        def written(error: int) -> None:
            if callback is not None:
                if error:
                    callback(error, NO_PRODUCER_ID, NO_EPOCH)
                elif next_pid != NO_PRODUCER_ID:
                    callback(0, next_pid, 0)
                else:
                    callback(0, txn.producer_id, txn.producer_epoch)
            if not error:
                self._timeouts.check_and_complete(txn.transactional_id)
                self._complete(txn, commit, next_pid)

        self._transit(txn, target, written)

    def _bump_and_prepare(self, txn: TxnMetadata, commit: bool, callback: InitCallback) -> None:
        """Transactions v2: end under the next epoch; when that is the last one, the id
        goes on with a new producer id. The answer names the new id at epoch 0, so the
        producer's next transaction finds it (Kafka answers the last epoch of the old id
        and holds the new one back until the transaction completes)."""
        exhausted = txn.producer_epoch >= _MAX_EPOCH
        next_pid = self.metadata.allocate_producer_id() if exhausted else NO_PRODUCER_ID
        self._prepare(txn, commit, txn.producer_epoch + 1, callback, next_pid, ends_with_bump=True)

    def _abort_with_new_epoch(self, txn: TxnMetadata) -> None:
        """Abort an open transaction under the next epoch, fencing its producer. Kafka 4.4
        bumps once under transactions v2 too, so the old producer's EndTxn then reads as a
        retry of this abort: an abort is answered done, a commit INVALID_TXN_STATE."""
        self._prepare(txn, False, min(txn.producer_epoch + 1, _MAX_EPOCH), None)

    def _abort_timed_out(self, txn: TxnMetadata) -> None:
        if txn.pending is not None:
            # A change is being written; look again shortly.
            self._watch_timeout(txn, 100)
            return
        _log.info("aborting transaction of %r: timed out", txn.transactional_id)
        self._abort_with_new_epoch(txn)

    def _watch_timeout(self, txn: TxnMetadata, delay_ms: int | None = None) -> None:
        if txn.two_phase:
            return  # ended only by its producer (or the next one), never by a timeout
        op = DelayedTxnTimeout(self, txn, txn.timeout_ms if delay_ms is None else delay_ms)
        self._timeouts.try_complete_else_watch(op, [txn.transactional_id])

    # -- markers ----------------------------------------------------------------------

    def _complete(self, txn: TxnMetadata, commit: bool, next_pid: int = NO_PRODUCER_ID) -> None:
        """Write the markers, then the Complete state (under ``next_pid`` at epoch 0 when
        the epochs ran out)."""
        remaining = set(txn.partitions)
        pid, epoch = txn.producer_id, txn.producer_epoch
        coordinator_epoch = self._coordinator_epoch(txn.transactional_id)
        rotated: dict[str, object] = {}
        if next_pid != NO_PRODUCER_ID:
            rotated = {
                "producer_id": next_pid,
                "producer_epoch": 0,
                "last_producer_id": pid,
                "last_producer_epoch": epoch - 1,  # what a retry of the EndTxn names
            }

        def all_written() -> None:
            if self.log.shut_down or self.txns.get(txn.transactional_id) is not txn:
                return  # this broker no longer coordinates it; the new one finishes
            target = txn.snapshot(
                state=TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT,
                partitions=frozenset(),
                update_ms=self._time_ms(),
                **rotated,
            )

            def written(error: int) -> None:
                if error == ErrorCode.COORDINATOR_NOT_AVAILABLE:
                    # The state log could not take it now (too few in-sync replicas, a
                    # timeout): write it again, as Kafka does, or the id would stay
                    # prepared for good and every later request of its producer would get
                    # CONCURRENT_TRANSACTIONS.
                    self._retry(all_written)
                elif error:
                    _log.warning(
                        "cannot complete the transaction of %r: error %d",
                        txn.transactional_id,
                        error,
                    )

            self._transit(txn, target, written)

        def send() -> None:
            if self.log.shut_down or self.txns.get(txn.transactional_id) is not txn:
                return
            md = self.metadata
            by_leader: dict[int, dict[TopicPartition, tuple[int, int, bool, int]]] = {}
            for tp in list(remaining):
                info = md.partition(tp.topic, tp.partition)
                if info is None:
                    remaining.discard(tp)  # deleted: nothing to mark
                    continue
                by_leader.setdefault(info.leader, {})[tp] = (pid, epoch, commit, coordinator_epoch)
            if not remaining:
                all_written()
                return
            rounds = len(by_leader)

            def one_done(results: Mapping[TopicPartition, ProduceResult]) -> None:
                nonlocal rounds
                for tp, r in results.items():
                    code = r.error_code
                    if code in (0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                        remaining.discard(tp)
                    elif code == ErrorCode.INVALID_PRODUCER_EPOCH:
                        # A newer epoch already wrote its marker there.
                        remaining.discard(tp)
                rounds -= 1
                if rounds:
                    return
                if remaining:
                    self._retry(send)
                else:
                    all_written()

            for leader_id, markers in by_leader.items():
                if not self._markers.write_txn_markers(
                    leader_id, markers, _WRITE_TIMEOUT_MS, one_done, sender=self.log.node_id
                ):
                    one_done({})

        send()

    def _retry(self, fn: Callable[[], None]) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        handle: asyncio.TimerHandle | None = None

        def run() -> None:
            assert handle is not None
            self._retries.discard(handle)
            fn()

        handle = loop.call_later(_MARKER_RETRY_S, run)
        self._retries.add(handle)

    # -- listing and describing -------------------------------------------------------

    def list_transactions(self) -> list[TxnMetadata]:
        """Every transactional id this broker coordinates (not Dead), sorted by id."""
        if self.log.shut_down:
            raise CoordinatorNotAvailableError("the coordinator is shutting down")
        return sorted(
            (
                t
                for t in self.txns.values()
                if t.state is not TxnState.DEAD and t.log_partition in self.owned
            ),
            key=lambda t: t.transactional_id,
        )

    def describe(self, transactional_id: str) -> TxnMetadata:
        """The id's metadata; raises NOT_COORDINATOR, TRANSACTIONAL_ID_NOT_FOUND, ..."""
        self.log.check_owner(transactional_id)
        txn = self.txns.get(transactional_id)
        if txn is None or txn.state is TxnState.DEAD:
            raise error_for_code(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)(
                f"no transactional id {transactional_id!r}",
            )
        return txn

    # -- writing to the state log -----------------------------------------------------

    def _transit(self, txn: TxnMetadata, target: TxnSnapshot, callback: ErrorCallback) -> None:
        """Write ``target`` for ``txn``; apply it once durable; ``callback(error code)``."""
        tid = txn.transactional_id
        txn.pending = target.state

        def written(error: int) -> None:
            txn.pending = None
            if not error:
                if self.txns.get(tid) is txn:
                    txn.apply(target)
                else:
                    error = ErrorCode.NOT_COORDINATOR
            callback(error)

        self.log.append(
            tid, [Record(-1, self._time_ms(), txn_key(tid), txn_value(target))], written
        )

    # -- expiry of idle ids ------------------------------------------------------------

    def _schedule_expiry(self) -> None:
        if self._expiry is not None or self.log.shut_down:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # not serving (a cluster driven by hand)
        every = self._cfg("transaction.remove.expired.transaction.cleanup.interval.ms") / 1000
        self._expiry = loop.call_later(every, self._expiry_tick)

    def _expiry_tick(self) -> None:
        self._expiry = None
        if self._running():
            self.expire_transactional_ids()
        if self.owned:
            self._schedule_expiry()

    def expire_transactional_ids(self) -> int:
        """Remove ids with no open transaction, idle past transactional.id.expiration.ms
        (a tombstone in the state log); return how many are being removed."""
        limit = self._cfg("transactional.id.expiration.ms")
        now = self._time_ms()
        idle = (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
        n = 0
        for txn in list(self.txns.values()):
            if (
                txn.pending is None
                and txn.state in idle
                and now - txn.update_ms > limit
                and txn.log_partition in self.owned
            ):
                self._remove(txn)
                n += 1
        return n

    def _remove(self, txn: TxnMetadata) -> None:
        tid = txn.transactional_id
        txn.pending = TxnState.DEAD

        def written(error: int) -> None:
            txn.pending = None
            if not error and self.txns.get(tid) is txn:
                txn.state = TxnState.DEAD
                del self.txns[tid]

        self.log.append(tid, [Record(-1, self._time_ms(), txn_key(tid), None)], written)

    # -- lifecycle --------------------------------------------------------------------

    def shutdown(self) -> None:
        self.log.shut_down = True
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        for handle in self._retries:
            handle.cancel()
        self._retries.clear()
        self._timeouts.shutdown()
        self._timeouts.timer.close()
