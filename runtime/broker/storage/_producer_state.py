"""Producers' state per partition: epochs, sequences, recent batches and transactions.

Each producer id keeps its epoch and the metadata of its last five batches, as Kafka does
(a producer has at most five requests in flight per connection). A retried batch that
matches one of them is a duplicate: it is not written again, and the producer gets the
offsets it was first written at. Anything else must follow the last sequence exactly.

Transactions: the first transactional batch of a producer opens its transaction at that
offset; a COMMIT or ABORT marker closes it. The first unstable offset (the start of the
earliest transaction still open, or closed by a marker not yet below the high watermark)
bounds what read_committed consumers see; aborted transactions are indexed by the range
they cover so fetches can list them.
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field

from kafkagen.runtime.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError
from kafkagen.runtime.records import NO_PRODUCER_EPOCH, RecordBatch

__all__ = ["AbortedTxn", "BatchMetadata", "ProducerEntry", "ProducerStateManager"]

#: Batches remembered per producer for duplicate detection.
CACHED_BATCHES = 5
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))
    last_timestamp: int = -1
    coordinator_epoch: int = -1
    #: Offset of the open transaction's first batch, -1 when none is open.
    current_txn_first_offset: int = -1
    #: Broker clock (ms) of the last write, for expiry.
    last_update_ms: float = 0.0
    #: Last offset of the producer's last data batch in this epoch (-1: none, e.g. its
    #: last write was a marker that bumped the epoch); the cleaner keeps that batch.
    last_data_offset: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    #: Offset of the ABORT marker.
    last_offset: int


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (last_seq == _INT32_MAX and next_seq == 0)


class ProducerStateManager:
    """The producers of one partition."""

    __slots__ = ("producers", "ongoing", "_closing", "aborted", "verifying")

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        #: Producer id -> first offset of its open transaction.
        self.ongoing: dict[int, int] = {}
        #: (first offset, marker offset) of closed transactions whose marker may still be
        #: at or above the high watermark.
        self._closing: list[tuple[int, int]] = []
        #: Aborted transactions in marker order.
        self.aborted: list[AbortedTxn] = []
        #: Producer id -> (epoch, lowest sequence) of its transactional batches waiting for
        #: this partition to join their transaction, as Kafka's verification state keeps
        #: them: until the lowest is written, a later batch is out of order (else a batch
        #: after one refused as the coordinator was busy would be written over the gap).
        self.verifying: dict[int, tuple[int, int]] = {}

    def check(self, batch: RecordBatch) -> BatchMetadata | None:
        """Vet a batch before it is written: the duplicate it repeats, None if new.

        Raises INVALID_PRODUCER_EPOCH for a fenced epoch and OUT_OF_ORDER_SEQUENCE_NUMBER
        for a gap or a sequence that goes back.
        """
        waiting = self.verifying.get(batch.producer_id)
        if batch.is_transactional and waiting is not None and batch.base_sequence > waiting[1]:
            raise OutOfOrderSequenceNumberError(
                f"producer {batch.producer_id}: sequence {batch.base_sequence} is after "
                f"{waiting[1]}, still waiting to be written"
            )
        entry = self.producers.get(batch.producer_id)
        if entry is None:
            # Unknown producer (new, or its state expired): accept whatever sequence it has.
            return None
        epoch = batch.producer_epoch
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {batch.producer_id} wrote with epoch {epoch}, "
                f"older than its current epoch {entry.epoch}"
            )
        first, last = batch.base_sequence, batch.last_sequence
        if epoch == entry.epoch:
            for m in entry.batches:
                if m.first_seq == first and m.last_seq == last:
                    return m
            if not _in_sequence(entry.last_seq, first):
                raise OutOfOrderSequenceNumberError(
                    f"producer {batch.producer_id}: sequence {first} does not follow "
                    f"{entry.last_seq}"
                )
        elif first != 0 and entry.epoch != NO_PRODUCER_EPOCH:
            raise OutOfOrderSequenceNumberError(
                f"producer {batch.producer_id}: a new epoch ({epoch}) must start at "
                f"sequence 0, not {first}"
            )
        return None

    def start_verification(self, producer_id: int, epoch: int, sequence: int) -> None:
        """A transactional batch of the producer waits for this partition to be added to
        its transaction: keep the lowest sequence waiting, of the newest epoch."""
        if producer_id in self.ongoing:
            return  # the partition is in its transaction already
        known = self.verifying.get(producer_id)
        if known is None or epoch > known[0] or (epoch == known[0] and sequence < known[1]):
            self.verifying[producer_id] = (epoch, sequence)

    def check_epoch(self, producer_id: int, epoch: int) -> None:
        """Raise INVALID_PRODUCER_EPOCH if ``epoch`` is older than the producer's."""
        entry = self.producers.get(producer_id)
        if entry is not None and epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {producer_id} wrote with epoch {epoch}, "
                f"older than its current epoch {entry.epoch}"
            )

    def update(
        self, batch: RecordBatch, first_offset: int, last_offset: int, timestamp: int, now_ms: float
    ) -> None:
        """Record a batch that was written."""
        pid = batch.producer_id
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerEntry(pid)
        if batch.producer_epoch != entry.epoch:
            entry.epoch = batch.producer_epoch
            entry.batches.clear()
        entry.last_data_offset = last_offset
        if batch.base_sequence >= 0:
            entry.batches.append(
                BatchMetadata(
                    batch.base_sequence, batch.last_sequence, first_offset, last_offset, timestamp
                )
            )
        entry.last_timestamp = timestamp
        entry.last_update_ms = now_ms
        if batch.is_transactional and pid not in self.ongoing:
            self.verifying.pop(pid, None)
            self.ongoing[pid] = first_offset
            entry.current_txn_first_offset = first_offset

    def complete_txn(
        self,
        producer_id: int,
        epoch: int,
        commit: bool,
        marker_offset: int,
        coordinator_epoch: int,
        now_ms: float,
    ) -> None:
        """A COMMIT or ABORT marker was written at ``marker_offset``."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(producer_id)
        if epoch != entry.epoch:
            # A marker with a bumped epoch (a fenced or timed-out producer): the old
            # epoch's sequences no longer count.
            entry.epoch = epoch
            entry.batches.clear()
            entry.last_data_offset = -1
        entry.coordinator_epoch = coordinator_epoch
        entry.current_txn_first_offset = -1
        entry.last_update_ms = now_ms
        first = self.ongoing.pop(producer_id, None)
        if first is None:
            return  # nothing of this transaction reached this partition
        self._closing.append((first, marker_offset))
        if not commit:
            self.aborted.append(AbortedTxn(producer_id, first, marker_offset))

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """Start of the earliest transaction not yet stable below ``high_watermark``."""
        if self._closing:
            self._closing = [c for c in self._closing if c[1] >= high_watermark]
        starts = [first for first, _ in self._closing]
        starts.extend(self.ongoing.values())
        return min(starts) if starts else None

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping offsets [start, end)."""
        # Markers come in offset order, so the candidates start at the first marker >= start.
        i = bisect.bisect_left(self.aborted, start, key=lambda a: a.last_offset)
        return [a for a in self.aborted[i:] if a.first_offset < end]

    def trim_aborted(self, log_start_offset: int) -> None:
        """Forget aborted transactions wholly below the log start."""
        if self.aborted and self.aborted[0].last_offset < log_start_offset:
            self.aborted = [a for a in self.aborted if a.last_offset >= log_start_offset]

    def expire(self, now_ms: float, expiration_ms: int) -> int:
        """Forget producers idle longer than ``expiration_ms``; return how many went."""
        # A producer with an open transaction stays: the transaction still bounds the LSO.
        gone = [
            p
            for p, e in self.producers.items()
            if now_ms - e.last_update_ms > expiration_ms and p not in self.ongoing
        ]
        for p in gone:
            del self.producers[p]
        # A batch still waiting for its partition was never written: a producer that left
        # nothing else here is not kept for it either.
        self.verifying = {p: v for p, v in self.verifying.items() if p in self.producers}
        return len(gone)
