"""Delayed operations and the purgatory that holds them (seed 002, Kafka's DelayedOperation).

A delayed operation is a request that cannot be answered yet: a produce waiting for replicas, a
fetch waiting for bytes. It is watched under keys (partitions, groups, ...); whoever changes the
state behind a key calls `check_and_complete(key)`, and the operation completes when its
condition holds, or when its timeout on the `Timer` fires, whichever comes first, exactly once.

Threading: the purgatory's methods are meant for one thread (the event loop's); operations may
be completed from any thread, `force_complete` is safe under races and re-entrant calls.
"""

from __future__ import annotations

import abc
from collections.abc import Hashable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from .timer import TASK_LOCK, Timer, TimerTask

__all__ = ["STALE_ENTRIES_PER_OPERATION", "DelayedOperation", "DelayedOperationPurgatory"]

#: A purge also runs once completed operations hold this many times ``purge_interval``
#: watcher entries (operations watched under one key never reach it first).
STALE_ENTRIES_PER_OPERATION = 16

# Marks a missing dict entry in purges.
_ABSENT: Any = object()

# DelayedOperation._state values (one slot instead of two flags: pending operations are many).
_PENDING = 0
_COMPLETED = 1
_EXPIRED = 2


class DelayedOperation(TimerTask):
    """An operation that completes once its condition holds or after `delay_ms`, exactly once.

    Subclasses implement `try_complete` (check the condition, call `force_complete` if it holds,
    return what that returned) and `on_complete` (send the response); `on_expiration` is an
    optional extra hook for timeouts, called after `on_complete`.
    """

    __slots__ = ("_state", "_purgatory", "_keys")

    _keys: tuple[Hashable, ...]

    def __init__(self, delay_ms: int) -> None:
        TimerTask.__init__(self, delay_ms)
        self._state = _PENDING
        # Set while watched (with _keys), so completion can queue the operation for the purge.
        self._purgatory: DelayedOperationPurgatory[Any] | None = None

    @abc.abstractmethod
    def try_complete(self) -> bool:
        """Complete the operation if its condition holds; True only if this call completed it."""

    @abc.abstractmethod
    def on_complete(self) -> None:
        """The completion work (e.g. sending the response); runs exactly once."""

    def on_expiration(self) -> None:
        """Runs after `on_complete` when the completion came from the timeout."""

    @property
    def is_completed(self) -> bool:
        return self._state != _PENDING

    @property
    def is_expired(self) -> bool:
        """True if the operation was completed by its timeout rather than its condition."""
        return self._state == _EXPIRED

    def force_complete(self) -> bool:
        """Complete the operation now unless it already is; True only for the caller that did.

        Whoever calls first wins: a timeout and a completion in the same tick, several keys, a
        call from another operation's `on_complete`, or several threads at once. The winner
        also takes the operation out of its timer, under the same lock as the flip.
        """
        if self._state:
            return False
        TASK_LOCK.acquire()
        try:
            if self._state:
                return False
            self._state = _COMPLETED
            self._detach()
        finally:
            TASK_LOCK.release()
        purgatory = self._purgatory
        if purgatory is not None:
            # list.append is atomic, so this is safe from any thread (the entry count is
            # an estimate that only times the purge).
            purgatory._completed_ops.append(self)
            purgatory._stale += len(self._keys)
        self.on_complete()
        return True

    def safe_try_complete(self) -> bool:
        """`try_complete`, skipped for an operation that is already complete."""
        return not self._state and self.try_complete()

    def run(self) -> None:
        """Timer entry point: the timeout passed, so complete as expired (if nobody else did)."""
        if self._state:
            return
        TASK_LOCK.acquire()
        try:
            if self._state:
                return
            self._state = _EXPIRED
        finally:
            TASK_LOCK.release()
        purgatory = self._purgatory
        if purgatory is not None:
            purgatory._completed_ops.append(self)
            purgatory._stale += len(self._keys)
        self.on_complete()
        self.on_expiration()
        # Expiry runs on the thread that drives the timer, the purgatory's own thread.
        if purgatory is not None and purgatory._purge_due():
            purgatory.purge()


T = TypeVar("T", bound=DelayedOperation)


class DelayedOperationPurgatory(Generic[T]):
    """Watches delayed operations under keys and expires them through a `Timer`.

    Completed operations leave the timer at once (an O(1) unlink). They are dropped from the
    watcher list of the key that completed them at once, and from their other keys by a purge,
    which, as in Kafka, runs once more than `purge_interval` watched operations have completed
    since the last one, or once they hold more than `STALE_ENTRIES_PER_OPERATION` times that
    many watcher entries: a follower's fetch waits under every partition it follows, and a
    thousand of them over a few hundred partitions held megabytes until the purge. Unlike
    Kafka's purge, it visits only those operations' own keys, so its cost follows the number
    of completions, not the number of watched entries.

    `delayed` is the timer's size: give each purgatory its own timer (they are cheap) for it
    to count only this purgatory's operations.
    """

    __slots__ = (
        "name",
        "_timer",
        "_purge_interval",
        "_watchers",
        "_completed_ops",
        "_stale",
        "_stale_limit",
        "_depth",
        "_closed",
    )

    def __init__(self, name: str, timer: Timer, purge_interval: int = 1000) -> None:
        if purge_interval < 0:
            raise ValueError(f"purge_interval must not be negative, got {purge_interval}")
        self.name = name
        self._timer = timer
        self._purge_interval = purge_interval
        # Per key, its watcher list: the operation itself while it is the only one (most keys:
        # a dict per key would double the memory of a pending operation), else a dict used as
        # an ordered set (watch order, O(1) removal).
        self._watchers: dict[Hashable, T | dict[T, None]] = {}
        # Completed operations that may still sit in watcher lists, waiting for the purge.
        self._completed_ops: list[T] = []
        # Watcher entries those operations hold (about: completions on other threads may
        # race), and how many of them start a purge.
        self._stale = 0
        self._stale_limit = purge_interval * STALE_ENTRIES_PER_OPERATION
        # Nesting depth of check_and_complete: a purge waits until no key list is detached.
        self._depth = 0
        self._closed = False

    @property
    def timer(self) -> Timer:
        return self._timer

    @property
    def delayed(self) -> int:
        """Operations waiting for their timeout (the timer's size)."""
        return self._timer.size

    @property
    def watched(self) -> int:
        """Entries in all watcher lists; a completed operation may count until it is purged."""
        return sum(len(e) if isinstance(e, dict) else 1 for e in self._watchers.values())

    def try_complete_else_watch(self, op: T, keys: Sequence[Hashable]) -> bool:
        """Complete `op` now if it can; otherwise watch it under every key and arm its timeout.

        Kafka's order, so no completion is missed: check, watch under all keys, check again
        (a state change between the two checks now finds the operation on a list), then arm
        the timeout, and disarm it if a completion slipped in meanwhile. Returns True only if
        this call completed the operation.
        """
        if self._closed or not keys:
            if self._closed:
                raise RuntimeError(f"purgatory {self.name!r} is shut down")
            raise ValueError("an operation must be watched under at least one key")
        if op.try_complete():
            return True
        if type(keys) is not tuple:
            keys = tuple(keys)
        op._keys = keys
        op._purgatory = self
        watchers = self._watchers
        for key in keys:
            # Completed meanwhile (another thread): the remaining keys are not needed.
            if op._state:
                break
            entry = watchers.setdefault(key, op)
            if entry is op:
                continue
            if isinstance(entry, dict):
                entry[op] = None
            else:
                watchers[key] = {entry: None, op: None}
        completed = op.try_complete()
        if not completed and not op._state:
            self._timer.add(op)
            if op._state:
                op.cancel()
        # Every call may purge, like Kafka's reaper on each tick: completions forced from
        # outside (force_complete) are only noticed here.
        if self._purge_due():
            self.purge()
        return completed

    def check_and_complete(self, key: Hashable) -> int:
        """Try to complete every operation watched under `key`; return how many completed."""
        entry = self._watchers.pop(key, None)
        if entry is None:
            return 0
        if isinstance(entry, dict):
            completed = self._complete_listed(key, entry)
        else:
            # One watcher: no list to protect, just put it back if it stays pending.
            completed = 0
            if not entry._state:
                try:
                    if entry.try_complete():
                        completed = 1
                finally:
                    if not entry._state:
                        self._rewatch(key, entry)
        if self._purge_due():
            self.purge()
        return completed

    def _complete_listed(self, key: Hashable, entry: dict[T, None]) -> int:
        # The list is detached while callbacks run: operations they watch under this key go
        # to a fresh list, merged back after; a nested check of the key sees only those.
        self._depth += 1
        completed = 0
        done: list[T] = []
        try:
            for op in entry:
                if op._state:
                    done.append(op)
                elif op.try_complete():
                    completed += 1
                    done.append(op)
        finally:
            self._depth -= 1
            for op in done:
                del entry[op]
            if entry:
                self._rewatch(key, entry)
        return completed

    def cancel_for_key(self, key: Hashable) -> list[T]:
        """Stop watching `key`: return its pending operations, their timeouts cancelled.

        They are not completed (the caller decides what to answer); any other keys they are
        watched under still hold them.
        """
        entry = self._watchers.pop(key, None)
        if entry is None:
            return []
        cancelled = [op for op in _members(entry) if not op._state]
        for op in cancelled:
            op.cancel()
        return cancelled

    def purge(self) -> int:
        """Drop completed operations from the watcher lists; return how many entries went.

        Deferred (returns 0) while a `check_and_complete` is running.
        """
        if self._depth:
            return 0
        completed = self._completed_ops
        watchers = self._watchers
        get = watchers.get
        absent = _ABSENT
        removed = 0
        # Take a prefix rather than swapping the list: completions on other threads may be
        # appending, and they land after it.
        batch = completed[: len(completed)]
        del completed[: len(batch)]
        self._stale = max(0, self._stale - sum(len(op._keys) for op in batch))
        for op in batch:
            for key in op._keys:
                entry = get(key)
                if entry is op:
                    del watchers[key]
                    removed += 1
                elif (
                    entry is not None
                    and isinstance(entry, dict)
                    and entry.pop(op, absent) is not absent
                ):
                    removed += 1
                    if not entry:
                        del watchers[key]
            op._purgatory = None
        return removed

    def shutdown(self) -> list[T]:
        """Stop watching everything and cancel every pending timeout.

        Returns the operations that were still pending; they will neither complete through
        this purgatory nor expire, so the caller can answer them. The timer is not closed (it
        may be shared).
        """
        if self._closed:
            return []
        self._closed = True
        watchers = self._watchers
        self._watchers = {}
        pending: dict[T, None] = {}
        for entry in watchers.values():
            for op in _members(entry):
                if not op._state:
                    pending[op] = None
        for op in pending:
            op.cancel()
            op._purgatory = None
        for op in self._completed_ops:
            op._purgatory = None
        self._completed_ops.clear()
        self._stale = 0
        return list(pending)

    def _purge_due(self) -> bool:
        """Whether enough completed operations wait for the purge, and no key list is
        detached (a purge then would miss the entries of the detached lists)."""
        return (
            len(self._completed_ops) > self._purge_interval or self._stale > self._stale_limit
        ) and not self._depth

    def _rewatch(self, key: Hashable, entry: T | dict[T, None]) -> None:
        """Put back a detached watcher list, after any operations watched meanwhile."""
        if self._closed:
            # shutdown() ran inside a callback and could not see this list: finish its job.
            for op in _members(entry):
                op.cancel()
            return
        watchers = self._watchers
        newer = watchers.get(key)
        if newer is None:
            if isinstance(entry, dict) and len(entry) == 1:
                entry = next(iter(entry))
            watchers[key] = entry
            return
        merged = entry if isinstance(entry, dict) else {entry: None}
        if isinstance(newer, dict):
            merged.update(newer)
        else:
            merged[newer] = None
        watchers[key] = merged


def _members(entry: T | dict[T, None]) -> Iterable[T]:
    return entry if isinstance(entry, dict) else (entry,)
