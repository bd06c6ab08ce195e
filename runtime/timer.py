"""A hierarchical timing wheel for request timeouts.

The design is Kafka's server timer (TimingWheel, TimerTaskList, SystemTimer). Time is cut into
ticks of 1 ms and a wheel has 20 buckets, each a doubly linked list of the tasks due in one
tick, so adding and cancelling a task costs O(1) however many are pending. A deadline beyond a
wheel's span goes to an overflow wheel whose tick is that span, created when first needed. When
an overflow bucket comes due, its tasks move down to a finer wheel, or run if they are due.

Buckets, not tasks, sit in a heap ordered by due time: the heap never holds more than one entry
per bucket, and the timer knows its next due time without scanning its tasks.

Nothing here starts a thread. `Timer.advance_clock` runs whatever is due. Tests drive it with a
`ManualClock`; under asyncio, `AsyncioTimer` arms one `loop.call_at` for the earliest bucket.
"""

from __future__ import annotations

import abc
import asyncio
import heapq
import logging
import math
import threading
from typing import Protocol

__all__ = [
    "TASK_LOCK",
    "AsyncioTimer",
    "Clock",
    "LoopClock",
    "ManualClock",
    "Timer",
    "TimerTask",
]

_log = logging.getLogger(__name__)

#: One lock for the lists of every timer. A task subclass that must change its own state and
#: leave its timer in one step (DelayedOperation's completion) takes it and calls
#: `TimerTask._detach`. It is held for a few attribute writes and never while a task runs,
#: so sharing it costs nothing under the GIL and keeps the hot path to one acquire.
TASK_LOCK = threading.Lock()


class Clock(Protocol):
    """A monotonic time source in milliseconds (fractions allowed)."""

    def now_ms(self) -> float: ...


class ManualClock:
    """A clock that moves only when told to, so tests decide exactly when each tick happens."""

    __slots__ = ("_now_ms",)

    def __init__(self, start_ms: int = 0) -> None:
        self._now_ms = start_ms

    def now_ms(self) -> int:
        return self._now_ms

    def advance(self, ms: int) -> int:
        """Move the clock forward by `ms` and return the new time."""
        if ms < 0:
            raise ValueError(f"a clock cannot go back ({ms} ms)")
        self._now_ms += ms
        return self._now_ms


class LoopClock:
    """An event loop's own clock (`loop.time()`), in milliseconds."""

    __slots__ = ("_loop",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def now_ms(self) -> float:
        return self._loop.time() * 1000.0


class _Link:
    """A node of an intrusive circular doubly linked list (the bucket is the sentinel)."""

    __slots__ = ("_prev", "_next")

    _prev: _Link
    _next: _Link


# Unlinked tasks point here rather than to None (keeps the links typed) or to themselves
# (a self-reference would keep every finished task alive until the cyclic GC runs).
_UNLINKED = _Link()
_UNLINKED._prev = _UNLINKED._next = _UNLINKED


class TimerTask(_Link, metaclass=abc.ABCMeta):
    """Something to run once `delay_ms` has passed since it was added to a timer.

    The task is its own list node, so a pending task costs one object and cancelling it is an
    unlink. Subclasses implement `run`; a subclass that sets the slots itself (to save a call
    on a hot path) must set all of those `TimerTask.__init__` sets.
    """

    __slots__ = ("delay_ms", "expiration_ms", "_bucket")

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        # Absolute due time, set by Timer.add.
        self.expiration_ms = -1
        self._prev = self._next = _UNLINKED
        # The bucket holding the task, its timer's due marker between due and run, else None.
        self._bucket: _Bucket | None = None

    @abc.abstractmethod
    def run(self) -> None:
        """Called by the timer once the task is due."""

    @property
    def scheduled(self) -> bool:
        """True while the task waits in a timer (or is due and about to run)."""
        return self._bucket is not None

    def cancel(self) -> bool:
        """Take the task out of its timer; return True if that stopped it from running."""
        bucket = self._bucket
        if bucket is None:
            return False
        TASK_LOCK.acquire()
        try:
            # Read again under the lock: the timer may have moved the task meanwhile.
            bucket = self._bucket
            if bucket is None:
                return False
            _unlink(self, bucket)
            return True
        finally:
            TASK_LOCK.release()

    def _detach(self) -> None:
        """Take the task out of its timer if it is in one; the caller holds `TASK_LOCK`."""
        bucket = self._bucket
        if bucket is not None:
            _unlink(self, bucket)


def _unlink(task: TimerTask, bucket: _Bucket) -> None:
    """Take `task` out of `bucket` (lock held)."""
    task._bucket = None
    timer = bucket._timer
    if bucket is not timer._due:
        prev = task._prev
        nxt = task._next
        prev._next = nxt
        nxt._prev = prev
        task._prev = task._next = _UNLINKED
        timer._size -= 1


class _Bucket(_Link):
    """The tasks due in one tick of one wheel; the bucket is its list's sentinel node."""

    __slots__ = ("expiration_ms", "_timer", "_uid")

    def __init__(self, timer: Timer, uid: int) -> None:
        self._prev = self._next = self
        # Start of the tick this bucket currently stands for; -1 while it is not in the heap.
        self.expiration_ms = -1
        self._timer = timer
        # Tie-break in the heap, so buckets never need to be comparable.
        self._uid = uid


class _Wheel:
    __slots__ = ("tick_ms", "wheel_size", "interval_ms", "current_ms", "limit_ms", "buckets")

    def __init__(
        self, timer: Timer, tick_ms: int, wheel_size: int, start_ms: int, uid: int
    ) -> None:
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self.interval_ms = tick_ms * wheel_size
        self.buckets = [_Bucket(timer, uid + i) for i in range(wheel_size)]
        self.set_current(start_ms)

    def set_current(self, time_ms: int) -> None:
        self.current_ms = time_ms - time_ms % self.tick_ms
        # First due time this wheel cannot hold: it goes to the overflow wheel.
        self.limit_ms = self.current_ms + self.interval_ms


class Timer:
    """Hierarchical timing wheel: O(1) add and cancel, due tasks run by `advance_clock`.

    Deadlines are whole milliseconds: `add` rounds the clock up, `advance_clock` rounds it down,
    so a task never runs before its delay has fully passed. Tasks with the same deadline run in
    the order they were added; earlier deadlines always run first.

    Thread safety: `add`, `TimerTask.cancel` and `advance_clock` may be called from any thread
    (one lock guards the lists; tasks run outside it, so they may add and cancel freely).
    """

    __slots__ = (
        "_clock",
        "_now",
        "_size",
        "_queue",
        "_wheels",
        "_due",
        "_hint_when",
        "_hint_bucket",
        "_hint_start",
        "_advancing",
        "_target_ms",
        "_closed",
    )

    def __init__(
        self,
        clock: Clock,
        *,
        tick_ms: int = 1,
        wheel_size: int = 20,
        start_ms: int | None = None,
    ) -> None:
        if tick_ms < 1:
            raise ValueError(f"tick_ms must be at least 1, got {tick_ms}")
        if wheel_size < 2:
            raise ValueError(f"wheel_size must be at least 2, got {wheel_size}")
        self._clock = clock
        self._now = clock.now_ms
        self._size = 0
        # (due time, bucket uid, bucket) for every bucket holding a due time.
        self._queue: list[tuple[int, int, _Bucket]] = []
        start = math.floor(clock.now_ms()) if start_ms is None else start_ms
        self._wheels = [_Wheel(self, tick_ms, wheel_size, start, 0)]
        # Marks tasks taken out of a due bucket and about to run (never linked to anything).
        self._due = _Bucket(self, -1)
        # Last placement (see _place); starts out matching nothing.
        self._hint_when = -1
        self._hint_bucket = self._due
        self._hint_start = -2
        self._advancing = False
        self._target_ms = start
        self._closed = False

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def size(self) -> int:
        """Number of tasks waiting in the timer."""
        return self._size

    @property
    def levels(self) -> int:
        """Number of wheels so far (overflow wheels are created on demand)."""
        return len(self._wheels)

    def add(self, task: TimerTask) -> None:
        """Schedule `task` to run `task.delay_ms` from now (re-adding moves it).

        A task that is already due still waits for the next `advance_clock`: `add` never runs
        anything itself, so callers never see callbacks fire from inside it.
        """
        expiration = math.ceil(self._now()) + task.delay_ms
        task.expiration_ms = expiration
        lock = TASK_LOCK
        lock.acquire()
        try:
            bucket = task._bucket
            if bucket is not None:
                _unlink(task, bucket)
            current = self._wheels[0].current_ms
            # A past deadline goes into the current tick's bucket, which the next advance runs.
            self._place(task, expiration if expiration > current else current)
        finally:
            lock.release()

    def advance_clock(self, now_ms: float | None = None) -> int:
        """Run every task due at `now_ms` (default: the clock's time); return how many ran.

        Buckets come due in order of their start; each one's tasks either run or move to a
        finer wheel. Called again from inside a running task, it only raises the target time of
        the advance already under way.
        """
        now = math.floor(self._now() if now_ms is None else now_ms)
        lock = TASK_LOCK
        with lock:
            if self._advancing:
                if now > self._target_ms:
                    self._target_ms = now
                return 0
            self._advancing = True
            self._target_ms = now
        queue = self._queue
        mark = self._due
        due: list[TimerTask] = []
        ran = 0
        try:
            while True:
                with lock:
                    target = self._target_ms
                    if not queue or queue[0][0] > target:
                        self._advance_wheels(target)
                        self._advancing = False
                        # Tasks added while advancing did not wake the driver: do it now.
                        nxt = self._next_expiration()
                        if nxt is not None:
                            self._wake(nxt)
                        return ran
                    expiration, _, bucket = heapq.heappop(queue)
                    if bucket.expiration_ms != expiration:
                        continue
                    bucket.expiration_ms = -1
                    self._advance_wheels(expiration)
                    self._flush(bucket, due)
                # Run outside the lock so tasks can add, cancel and complete other tasks.
                for task in due:
                    # Claimed under the lock, so a cancel that returned True always wins: an
                    # earlier task of the batch, or another thread, may have cancelled it.
                    lock.acquire()
                    try:
                        if task._bucket is not mark:
                            continue
                        task._bucket = None
                    finally:
                        lock.release()
                    ran += 1
                    try:
                        task.run()
                    except Exception:
                        _log.exception("timer task %r failed", task)
                due.clear()
        except BaseException:
            # Interrupted (KeyboardInterrupt, cancellation): tasks of the batch that did not
            # run go back in, due at once, so the next advance runs them.
            with lock:
                self._advancing = False
                current = self._wheels[0].current_ms
                for task in due:
                    if task._bucket is mark:
                        task._bucket = None
                        self._place(task, current)
            raise

    def next_expiration_ms(self) -> int | None:
        """Due time of the earliest bucket that still holds a task, or None when idle."""
        with TASK_LOCK:
            return self._next_expiration()

    def close(self) -> None:
        """Stop any automatic driving; tasks still pending are left as they are."""
        self._closed = True

    # -- internals (called with the lock held) -------------------------------------------

    def _place(self, task: TimerTask, when: int) -> None:
        bucket = self._hint_bucket
        if when != self._hint_when or bucket.expiration_ms != self._hint_start:
            for wheel in self._wheels:
                if when < wheel.limit_ms:
                    break
            else:
                wheel = self._grow(when)
            tick = wheel.tick_ms
            slot = when // tick
            bucket = wheel.buckets[slot % wheel.wheel_size]
            start = slot * tick
            if bucket.expiration_ms != start:
                # The bucket was idle (or is reused for a later round): queue it once.
                bucket.expiration_ms = start
                queue = self._queue
                heapq.heappush(queue, (start, bucket._uid, bucket))
                if queue[0][2] is bucket and not self._advancing:
                    self._wake(start)
            # Requests arriving in the same millisecond with the same timeout share a
            # deadline: remember its bucket. The hint holds while that bucket keeps the start
            # it had (it has not come due); a coarser bucket than the wheels would now pick
            # is still right, its tasks just move down a wheel when it comes due.
            self._hint_when = when
            self._hint_bucket = bucket
            self._hint_start = start
        tail = bucket._prev
        task._prev = tail
        task._next = bucket
        tail._next = task
        bucket._prev = task
        task._bucket = bucket
        self._size += 1

    def _grow(self, when: int) -> _Wheel:
        """Add overflow wheels, each ticking once per span of the one below, to hold `when`."""
        wheels = self._wheels
        wheel = wheels[-1]
        while when >= wheel.limit_ms:
            wheel = _Wheel(
                self,
                wheel.interval_ms,
                wheel.wheel_size,
                wheel.current_ms,
                len(wheels) * wheel.wheel_size,
            )
            wheels.append(wheel)
        return wheel

    def _flush(self, bucket: _Bucket, due: list[TimerTask]) -> None:
        """Empty a bucket that came due: due tasks go to `due`, the rest to finer wheels."""
        node = bucket._next
        bucket._prev = bucket._next = bucket
        root = self._wheels[0]
        horizon = root.current_ms + root.tick_ms
        mark = self._due
        while node is not bucket:
            task: TimerTask = node  # type: ignore[assignment]  # all nodes but the sentinel
            node = task._next
            task._prev = task._next = _UNLINKED
            self._size -= 1
            if task.expiration_ms < horizon:
                task._bucket = mark
                due.append(task)
            else:
                self._place(task, task.expiration_ms)

    def _next_expiration(self) -> int | None:
        queue = self._queue
        while queue:
            expiration, _, bucket = queue[0]
            if bucket.expiration_ms == expiration and bucket._next is not bucket:
                return expiration
            # Emptied by cancels (or stale): forget it, a later add will queue it again.
            heapq.heappop(queue)
            if bucket.expiration_ms == expiration:
                bucket.expiration_ms = -1
        return None

    def _advance_wheels(self, time_ms: int) -> None:
        for wheel in self._wheels:
            if time_ms >= wheel.current_ms + wheel.tick_ms:
                wheel.set_current(time_ms)

    def _wake(self, expiration_ms: int) -> None:
        """Hook: the earliest due time dropped to `expiration_ms` (lock held)."""


class AsyncioTimer(Timer):
    """A `Timer` on the event loop's clock, driven by the loop itself.

    One `loop.call_at` is armed for the earliest bucket holding a task and re-armed when an
    earlier bucket appears or after each advance; an idle timer has nothing armed, so there is
    no polling and no thread. Use it from the loop's thread.
    """

    __slots__ = ("_loop", "_handle", "_wakeup_ms")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop | None = None,
        *,
        tick_ms: int = 1,
        wheel_size: int = 20,
    ) -> None:
        self._loop = asyncio.get_running_loop() if loop is None else loop
        self._handle: asyncio.TimerHandle | None = None
        self._wakeup_ms = -1
        super().__init__(LoopClock(self._loop), tick_ms=tick_ms, wheel_size=wheel_size)

    @property
    def wakeup_ms(self) -> int | None:
        """Loop time (ms) of the armed wake-up, or None when nothing is armed."""
        return self._wakeup_ms if self._handle is not None else None

    def close(self) -> None:
        super().close()
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _wake(self, expiration_ms: int) -> None:
        if self._closed:
            return
        handle = self._handle
        if handle is not None:
            if self._wakeup_ms <= expiration_ms:
                return
            handle.cancel()
        self._wakeup_ms = expiration_ms
        self._handle = self._loop.call_at(expiration_ms / 1000.0, self._fire)

    def _fire(self) -> None:
        self._handle = None
        # The loop runs a callback once its time is reached within the clock's resolution; the
        # float round trip of ms -> s -> ms can land a hair below, so trust the armed time.
        now = math.floor(self._loop.time() * 1000.0)
        # advance_clock re-arms for the next bucket when it is done.
        self.advance_clock(now if now > self._wakeup_ms else self._wakeup_ms)
