"""One partition as a share group sees it (KIP-932): which of its records are in flight,
in which state, delivered how many times, and where the group's window starts.

The window runs from the share-partition start offset (SPSO: every record before it is
done) to the last offset ever acquired (the end offset, SPEO). A record inside it is
available, acquired by one member under a time lock, acknowledged or archived. Acquiring
counts a delivery; a record released (by the member, its lock running out, or its member
going) becomes available again unless it has reached the group's delivery limit, in which
case it is archived. The start moves past records once they are done.

Locks are timed by the caller: `acquire` returns each acquired record's lock token, and
`expire(token)` releases what still holds it.

The partition remembers which records changed since its state was last written
(`changes`), so that a write carries only those, as Kafka's leaders write; `save` and
`roll_back` undo an acknowledgement whose write failed.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Iterable
from dataclasses import dataclass

from kafkagen.runtime.errors import InvalidRecordStateError, InvalidRequestError

__all__ = ["AckType", "PartitionState", "RecordState", "SharePartition"]


class RecordState(enum.IntEnum):
    """A record's state, numbered as KIP-932's persisted state batches number them."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AckType(enum.IntEnum):
    """An acknowledgement's type on the wire (RENEW from ShareFetch/ShareAcknowledge v2)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


_DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


@dataclass(slots=True)
class _InFlight:
    state: RecordState
    delivery_count: int
    member_id: str = ""
    lock: int = 0


#: A partition's window as `SharePartition.save` keeps it.
Saved = tuple[int, int, dict[int, "_InFlight"], set[int]]


@dataclass(slots=True)
class PartitionState:
    """What is kept durably of a share partition: its start and the in-flight records'
    states and delivery counts (an acquired record is kept as available)."""

    #: -1 until a leader first uses the partition (it then starts at the latest offset).
    start_offset: int
    end_offset: int
    records: dict[int, tuple[int, int]]
    #: The leader epoch of the leader that wrote it (0 when the coordinator did).
    leader_epoch: int = 0
    #: The coordinator's state epoch, which a reset moves on.
    state_epoch: int = 0
    #: Records done past the start as the coordinator counted them (-1: count ``records``).
    complete: int = -1

    def delivery_complete_count(self) -> int:
        """How many records past the start are done (acknowledged or archived)."""
        if self.complete >= 0:
            return self.complete
        return sum(1 for state, _ in self.records.values() if state in _DONE)


class SharePartition:
    """The in-flight records of one partition for one share group."""

    def __init__(self, start_offset: int, delivery_limit: int, max_in_flight: int) -> None:
        #: SPSO: every record before it is acknowledged or archived.
        self.start_offset = start_offset
        #: The first offset never acquired (SPEO + 1).
        self.next_offset = start_offset
        self.delivery_limit = delivery_limit
        self.max_in_flight = max_in_flight
        self._records: dict[int, _InFlight] = {}
        self._locks = 0
        #: The coordinator's state epoch this partition's state was read at.
        self.state_epoch = 0
        #: Offsets whose persisted state or delivery count changed since the last write.
        self._dirty: set[int] = set()

    @classmethod
    def restore(
        cls, state: PartitionState, delivery_limit: int, max_in_flight: int
    ) -> SharePartition:
        sp = cls(state.start_offset, delivery_limit, max_in_flight)
        sp.next_offset = state.end_offset
        sp.state_epoch = state.state_epoch
        for offset, (record_state, count) in state.records.items():
            sp._records[offset] = _InFlight(RecordState(record_state), count)
        return sp

    def snapshot(self) -> PartitionState:
        records = {
            offset: (
                int(RecordState.AVAILABLE if r.state is RecordState.ACQUIRED else r.state),
                r.delivery_count,
            )
            for offset, r in self._records.items()
        }
        return PartitionState(
            self.start_offset, self.next_offset, records, state_epoch=self.state_epoch
        )

    def changes(self) -> list[tuple[int, int, int, int]]:
        """The records changed since `written` as state batches (first offset, last
        offset, state, delivery count), consecutive offsets alike merged; those before the
        start are left out (the start offset covers them)."""
        out: list[tuple[int, int, int, int]] = []
        for offset in sorted(o for o in self._dirty if o >= self.start_offset):
            record = self._records.get(offset)
            if record is None:
                continue
            state = RecordState.AVAILABLE if record.state is RecordState.ACQUIRED else record.state
            count = record.delivery_count
            if out and out[-1][1] == offset - 1 and out[-1][2:] == (state, count):
                out[-1] = (out[-1][0], offset, int(state), count)
            else:
                out.append((offset, offset, int(state), count))
        return out

    def written(self) -> None:
        """The changes were written: the next write carries only later ones."""
        self._dirty.clear()

    def save(self) -> Saved:
        """What `roll_back` restores: the window as it is now."""
        return (self.start_offset, self.next_offset, copy.deepcopy(self._records), set(self._dirty))

    def roll_back(self, saved: Saved) -> None:
        """Undo every change made since `save` returned ``saved``."""
        self.start_offset, self.next_offset, self._records, self._dirty = saved

    @property
    def end_offset(self) -> int:
        """SPEO: the last offset acquired so far (start - 1 before any)."""
        return self.next_offset - 1

    @property
    def settled(self) -> bool:
        """Whether this partition's state is all in the persister: nothing acquired, every
        change written (so it can leave memory and be read again)."""
        return not self._dirty and all(
            r.state is not RecordState.ACQUIRED for r in self._records.values()
        )

    def in_flight(self) -> int:
        return len(self._records)

    def first_fetchable(self, end: int) -> int | None:
        """The lowest offset `acquire` could take now, None if none."""
        for offset in sorted(self._records):
            if self._records[offset].state is RecordState.AVAILABLE:
                return offset
        if self.next_offset < end and len(self._records) < self.max_in_flight:
            return self.next_offset
        return None

    def move_start(self, offset: int) -> None:
        """The log no longer holds records before ``offset``: they leave the window."""
        if offset <= self.start_offset:
            return
        for o in [o for o in self._records if o < offset]:
            del self._records[o]
        self.start_offset = offset
        self.next_offset = max(self.next_offset, offset)

    def acquire(
        self,
        member_id: str,
        batches: Iterable[tuple[int, int]],
        end: int,
        max_records: int,
        aborted: frozenset[int] = frozenset(),
    ) -> tuple[list[tuple[int, int, int]], set[int], int]:
        """Acquire for ``member_id`` up to ``max_records`` available records among the
        log's ``batches`` (first, last offset) below ``end``; the records of the batches
        indexed in ``aborted`` (aborted transactions' data) are archived undelivered.
        Returns the acquired ranges (first, last, delivery count), the indexes of the
        batches they lie in, and their lock token."""
        self._locks += 1
        lock = self._locks
        acquired: list[int] = []
        used: set[int] = set()
        for i, (first, last) in enumerate(batches):
            if i in aborted:
                self._archive_unread(max(first, self.start_offset), min(last + 1, end))
                continue
            for offset in range(max(first, self.start_offset), min(last + 1, end)):
                if len(acquired) >= max_records:
                    break
                record = self._enter(offset)
                if record is None or record.state is not RecordState.AVAILABLE:
                    continue
                record.state = RecordState.ACQUIRED
                record.delivery_count += 1
                record.member_id = member_id
                record.lock = lock
                self._dirty.add(offset)
                acquired.append(offset)
                used.add(i)
        if aborted:
            self._advance()
        ranges: list[tuple[int, int, int]] = []
        for offset in acquired:
            count = self._records[offset].delivery_count
            if ranges and ranges[-1][1] == offset - 1 and ranges[-1][2] == count:
                ranges[-1] = (ranges[-1][0], offset, count)
            else:
                ranges.append((offset, offset, count))
        return ranges, used, lock

    def _enter(self, offset: int) -> _InFlight | None:
        """The in-flight record at ``offset``, entered as available when the window first
        reaches it; None if it is done already or the window is full."""
        if offset >= self.next_offset:
            if len(self._records) >= self.max_in_flight:
                return None
            self._records[offset] = _InFlight(RecordState.AVAILABLE, 0)
            self.next_offset = offset + 1
        return self._records.get(offset)

    def _archive_unread(self, first: int, end: int) -> None:
        """Archive the records in [first, end) that nobody holds or has finished with."""
        for offset in range(max(first, self.start_offset), end):
            record = self._enter(offset)
            if record is not None and record.state is RecordState.AVAILABLE:
                record.state = RecordState.ARCHIVED
                self._dirty.add(offset)

    def acknowledge(
        self, member_id: str, first: int, last: int, types: list[int], renewed_lock: int
    ) -> bool:
        """Apply one acknowledgement batch of ``member_id``; all or nothing. Raises
        INVALID_REQUEST for a malformed batch and INVALID_RECORD_STATE for a record the
        member does not hold. Returns whether a lock was renewed (to ``renewed_lock``)."""
        if last < first or len(types) not in (1, last - first + 1):
            raise InvalidRequestError(f"bad acknowledgement batch {first}-{last}")
        try:
            kinds = [AckType(t) for t in types]
        except ValueError:
            raise InvalidRequestError(f"unknown acknowledge type in {types}") from None
        offsets = range(first, last + 1)
        for offset in offsets:
            record = self._records.get(offset)
            if record is None or record.state is not RecordState.ACQUIRED:
                raise InvalidRecordStateError(f"offset {offset} is not acquired")
            if record.member_id != member_id:
                raise InvalidRecordStateError(f"offset {offset} is acquired by another member")
        renewed = False
        for i, offset in enumerate(offsets):
            kind = kinds[0] if len(kinds) == 1 else kinds[i]
            record = self._records[offset]
            if kind is not AckType.RENEW:  # a renewal changes no persisted state
                self._dirty.add(offset)
            if kind is AckType.ACCEPT:
                record.state = RecordState.ACKNOWLEDGED
            elif kind is AckType.RELEASE:
                self._release(record)
            elif kind is AckType.RENEW:
                record.lock = renewed_lock
                renewed = True
            else:  # REJECT, or GAP: no record at this offset
                record.state = RecordState.ARCHIVED
        self._advance()
        return renewed

    def new_lock(self) -> int:
        self._locks += 1
        return self._locks

    def expire(self, lock: int) -> bool:
        """The lock ``lock`` ran out: its records still acquired are released. Returns
        whether any were."""
        released = False
        for offset, record in self._records.items():
            if record.state is RecordState.ACQUIRED and record.lock == lock:
                self._release(record)
                self._dirty.add(offset)
                released = True
        self._advance()
        return released

    def release_member(self, member_id: str) -> bool:
        """``member_id`` is gone: what it holds is released. Returns whether anything was."""
        released = False
        for offset, record in self._records.items():
            if record.state is RecordState.ACQUIRED and record.member_id == member_id:
                self._release(record)
                self._dirty.add(offset)
                released = True
        self._advance()
        return released

    def _release(self, record: _InFlight) -> None:
        done = record.delivery_count >= self.delivery_limit
        record.state = RecordState.ARCHIVED if done else RecordState.AVAILABLE
        record.member_id = ""
        record.lock = 0

    def _advance(self) -> None:
        while self.start_offset < self.next_offset:
            record = self._records.get(self.start_offset)
            if record is not None and record.state not in _DONE:
                return
            self._records.pop(self.start_offset, None)
            self.start_offset += 1
