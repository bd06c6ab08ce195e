"""Idempotent producers' state per partition: epochs, sequences, and recent batches.

Each producer id keeps its epoch and the metadata of its last five batches, as Kafka does
(a producer has at most five requests in flight per connection). A retried batch that
matches one of them is a duplicate: it is not written again, and the producer gets the
offsets it was first written at. Anything else must follow the last sequence exactly.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kafkagen.runtime.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError
from kafkagen.runtime.records import NO_PRODUCER_EPOCH, RecordBatch

__all__ = ["BatchMetadata", "ProducerEntry", "ProducerStateManager"]

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
    #: Transactions are not supported yet; kept for DescribeProducers.
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1
    #: Broker clock (ms) of the last write, for expiry.
    last_update_ms: float = 0.0

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (last_seq == _INT32_MAX and next_seq == 0)


class ProducerStateManager:
    """The producers of one partition."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def check(self, batch: RecordBatch) -> BatchMetadata | None:
        """Vet a batch before it is written: the duplicate it repeats, None if new.

        Raises INVALID_PRODUCER_EPOCH for a fenced epoch and OUT_OF_ORDER_SEQUENCE_NUMBER
        for a gap or a sequence that goes back.
        """
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
        entry.batches.append(
            BatchMetadata(
                batch.base_sequence, batch.last_sequence, first_offset, last_offset, timestamp
            )
        )
        entry.last_timestamp = timestamp
        entry.last_update_ms = now_ms

    def expire(self, now_ms: float, expiration_ms: int) -> int:
        """Forget producers idle longer than ``expiration_ms``; return how many went."""
        gone = [p for p, e in self.producers.items() if now_ms - e.last_update_ms > expiration_ms]
        for p in gone:
            del self.producers[p]
        return len(gone)
