"""Delayed operations and the purgatory: watch, complete exactly once, expire, purge."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Hashable

import pytest
from kafkagen.runtime.purgatory import (
    STALE_ENTRIES_PER_OPERATION,
    DelayedOperation,
    DelayedOperationPurgatory,
)
from kafkagen.runtime.timer import AsyncioTimer, ManualClock, Timer, TimerTask


class Op(DelayedOperation):
    """Completes when `ready` is set; records every callback it gets."""

    __slots__ = ("name", "ready", "completions", "expirations", "checks", "then")

    def __init__(self, delay_ms: int = 100, name: str = "op", ready: bool = False) -> None:
        super().__init__(delay_ms)
        self.name = name
        self.ready = ready
        self.completions = 0
        self.expirations = 0
        self.checks = 0
        self.then: Callable[[], object] | None = None

    def try_complete(self) -> bool:
        self.checks += 1
        return self.ready and self.force_complete()

    def on_complete(self) -> None:
        self.completions += 1
        if self.then is not None:
            self.then()

    def on_expiration(self) -> None:
        self.expirations += 1


class Call(TimerTask):
    __slots__ = ("action",)

    def __init__(self, delay_ms: int, action: Callable[[], object]) -> None:
        super().__init__(delay_ms)
        self.action = action

    def run(self) -> None:
        self.action()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(0)


@pytest.fixture
def timer(clock: ManualClock) -> Timer:
    return Timer(clock)


@pytest.fixture
def purgatory(timer: Timer) -> DelayedOperationPurgatory[Op]:
    return DelayedOperationPurgatory("test", timer, purge_interval=1_000)


def advance(clock: ManualClock, timer: Timer, ms: int) -> None:
    for _ in range(ms):
        clock.advance(1)
        timer.advance_clock()


# -- try_complete_else_watch ---------------------------------------------------------------


def test_operation_that_can_complete_at_once_is_neither_watched_nor_armed(
    purgatory: DelayedOperationPurgatory[Op],
) -> None:
    op = Op(ready=True)
    assert purgatory.try_complete_else_watch(op, ["a", "b"]) is True
    assert op.completions == 1
    assert purgatory.watched == 0
    assert purgatory.delayed == 0


def test_pending_operation_is_watched_under_every_key_and_armed_once(
    purgatory: DelayedOperationPurgatory[Op],
) -> None:
    op = Op()
    assert purgatory.try_complete_else_watch(op, ["a", "b", "c"]) is False
    assert purgatory.watched == 3
    assert purgatory.delayed == 1
    assert op.completions == 0


def test_watch_checks_then_watches_all_keys_then_checks_again_then_arms(
    purgatory: DelayedOperationPurgatory[Op], timer: Timer
) -> None:
    seen: list[tuple[int, int]] = []

    class Spy(Op):
        __slots__ = ()

        def try_complete(self) -> bool:
            seen.append((purgatory.watched, timer.size))
            return False

    purgatory.try_complete_else_watch(Spy(), ["a", "b"])
    assert seen == [(0, 0), (2, 0)]
    assert timer.size == 1


def test_completion_between_the_two_checks_is_not_missed_and_nothing_is_armed(
    purgatory: DelayedOperationPurgatory[Op],
) -> None:
    class ReadyOnSecondCheck(Op):
        __slots__ = ()

        def try_complete(self) -> bool:
            self.checks += 1
            return self.checks == 2 and self.force_complete()

    op = ReadyOnSecondCheck()
    assert purgatory.try_complete_else_watch(op, ["a"]) is True
    assert op.completions == 1
    assert purgatory.delayed == 0


def test_watching_without_keys_is_rejected(purgatory: DelayedOperationPurgatory[Op]) -> None:
    with pytest.raises(ValueError, match="at least one key"):
        purgatory.try_complete_else_watch(Op(), [])


# -- check_and_complete --------------------------------------------------------------------


def test_check_and_complete_returns_how_many_operations_it_completed(
    purgatory: DelayedOperationPurgatory[Op],
) -> None:
    ops = [Op(name=str(i)) for i in range(5)]
    for op in ops:
        purgatory.try_complete_else_watch(op, ["p0"])
    for op in ops[:3]:
        op.ready = True
    assert purgatory.check_and_complete("p0") == 3
    assert [op.completions for op in ops] == [1, 1, 1, 0, 0]
    assert purgatory.check_and_complete("p0") == 0


def test_check_and_complete_of_an_unwatched_key_completes_nothing(
    purgatory: DelayedOperationPurgatory[Op],
) -> None:
    assert purgatory.check_and_complete("nobody") == 0


def test_completed_operation_leaves_its_key_and_the_timer(
    purgatory: DelayedOperationPurgatory[Op], timer: Timer
) -> None:
    op = Op()
    purgatory.try_complete_else_watch(op, ["p0"])
    op.ready = True
    purgatory.check_and_complete("p0")
    assert purgatory.watched == 0
    assert purgatory.delayed == 0
    assert timer.size == 0
    assert not op.scheduled


def test_operation_watched_under_many_keys_completes_once(
    purgatory: DelayedOperationPurgatory[Op],
) -> None:
    op = Op()
    purgatory.try_complete_else_watch(op, ["a", "b", "c"])
    op.ready = True
    counts = [purgatory.check_and_complete(key) for key in ["a", "b", "c"]]
    assert counts == [1, 0, 0]
    assert op.completions == 1


def test_check_of_the_same_key_from_inside_on_complete_completes_the_rest(
    purgatory: DelayedOperationPurgatory[Op],
) -> None:
    first, second = Op(name="first"), Op(name="second")
    for op in (first, second):
        purgatory.try_complete_else_watch(op, ["k"])
    nested: list[int] = []
    first.then = lambda: nested.append(purgatory.check_and_complete("k"))
    first.ready = second.ready = True
    total = purgatory.check_and_complete("k")
    assert first.completions == second.completions == 1
    assert total + sum(nested) == 2
    assert purgatory.watched == 0


def test_operation_watched_from_inside_on_complete_stays_watched(
    purgatory: DelayedOperationPurgatory[Op],
) -> None:
    first, late = Op(name="first"), Op(name="late")
    purgatory.try_complete_else_watch(first, ["k"])
    first.then = lambda: purgatory.try_complete_else_watch(late, ["k"])
    first.ready = True
    assert purgatory.check_and_complete("k") == 1
    assert purgatory.watched == 1
    late.ready = True
    assert purgatory.check_and_complete("k") == 1


def test_operations_watched_during_a_check_join_those_still_waiting(
    purgatory: DelayedOperationPurgatory[Op],
) -> None:
    ready, waiting, late = Op(name="ready", ready=False), Op(name="waiting"), Op(name="late")
    purgatory.try_complete_else_watch(ready, ["k"])
    purgatory.try_complete_else_watch(waiting, ["k"])
    ready.then = lambda: purgatory.try_complete_else_watch(late, ["k"])
    ready.ready = True
    assert purgatory.check_and_complete("k") == 1
    assert purgatory.watched == 2
    waiting.ready = late.ready = True
    assert purgatory.check_and_complete("k") == 2


def test_safe_try_complete_does_not_ask_a_completed_operation_again() -> None:
    op = Op(ready=True)
    assert op.safe_try_complete() is True
    assert op.safe_try_complete() is False
    assert op.checks == 1


# -- expiry --------------------------------------------------------------------------------


def test_operation_expires_at_its_timeout_not_a_tick_before(
    purgatory: DelayedOperationPurgatory[Op], clock: ManualClock, timer: Timer
) -> None:
    op = Op(delay_ms=200)
    purgatory.try_complete_else_watch(op, ["p0"])
    advance(clock, timer, 199)
    assert op.completions == 0
    advance(clock, timer, 1)
    assert (op.completions, op.expirations) == (1, 1)
    assert op.is_expired
    assert purgatory.delayed == 0


def test_completed_operation_never_expires(
    purgatory: DelayedOperationPurgatory[Op], clock: ManualClock, timer: Timer
) -> None:
    op = Op(delay_ms=50)
    purgatory.try_complete_else_watch(op, ["p0"])
    op.ready = True
    purgatory.check_and_complete("p0")
    advance(clock, timer, 100)
    assert (op.completions, op.expirations) == (1, 0)
    assert not op.is_expired


@pytest.mark.parametrize("completer_first", [True, False])
def test_completion_and_expiry_in_the_same_tick_complete_once(
    purgatory: DelayedOperationPurgatory[Op],
    clock: ManualClock,
    timer: Timer,
    completer_first: bool,
) -> None:
    op = Op(delay_ms=10)

    def complete() -> None:
        op.ready = True
        purgatory.check_and_complete("p0")

    # A timer task due in the same tick plays the state change, before or after the expiry.
    if completer_first:
        timer.add(Call(10, complete))
    purgatory.try_complete_else_watch(op, ["p0"])
    if not completer_first:
        timer.add(Call(10, complete))
    advance(clock, timer, 10)
    assert op.completions == 1
    assert op.expirations == (0 if completer_first else 1)


def test_force_complete_returns_true_only_for_the_first_caller(
    purgatory: DelayedOperationPurgatory[Op],
) -> None:
    op = Op()
    purgatory.try_complete_else_watch(op, ["p0"])
    assert [op.force_complete() for _ in range(3)] == [True, False, False]
    assert op.completions == 1


def test_force_complete_from_inside_another_operations_on_complete(
    purgatory: DelayedOperationPurgatory[Op],
) -> None:
    a, b = Op(name="a"), Op(name="b")
    purgatory.try_complete_else_watch(a, ["x"])
    purgatory.try_complete_else_watch(b, ["y"])
    results: list[bool] = []
    a.then = lambda: results.extend([b.force_complete(), a.force_complete(), b.force_complete()])
    assert a.force_complete() is True
    assert results == [True, False, False]
    assert (a.completions, b.completions) == (1, 1)
    assert purgatory.delayed == 0


def test_expiry_that_completes_another_operation_in_the_same_tick(
    purgatory: DelayedOperationPurgatory[Op], clock: ManualClock, timer: Timer
) -> None:
    a, b = Op(delay_ms=10, name="a"), Op(delay_ms=10, name="b")
    purgatory.try_complete_else_watch(a, ["x"])
    purgatory.try_complete_else_watch(b, ["y"])
    a.then = b.force_complete
    advance(clock, timer, 10)
    assert (a.completions, a.expirations) == (1, 1)
    assert (b.completions, b.expirations) == (1, 0)


def race_force_complete(op: Op, threads_n: int, calls: int) -> list[int]:
    """Each thread calls op.force_complete() `calls` times; returns the Trues per thread."""
    start = threading.Barrier(threads_n)
    wins = [0] * threads_n

    def race(i: int) -> None:
        start.wait()
        wins[i] = sum(op.force_complete() for _ in range(calls))

    threads = [threading.Thread(target=race, args=(i,)) for i in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return wins


def test_threads_racing_force_complete_get_exactly_one_true() -> None:
    for _ in range(20):
        op = Op()
        assert sum(race_force_complete(op, threads_n=8, calls=2_000)) == 1
        assert op.completions == 1


def test_threads_racing_force_complete_against_expiry_complete_once(
    clock: ManualClock, timer: Timer
) -> None:
    purgatory: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("race", timer)
    ops = [Op(delay_ms=1 + i % 5) for i in range(2_000)]
    for i, op in enumerate(ops):
        purgatory.try_complete_else_watch(op, [i])
    start = threading.Barrier(2)

    def complete_all() -> None:
        start.wait()
        for op in ops:
            op.force_complete()

    thread = threading.Thread(target=complete_all)
    thread.start()
    start.wait()
    advance(clock, timer, 6)
    thread.join()
    assert all(op.completions == 1 for op in ops)
    assert timer.size == 0


# -- purge, cancel, shutdown ---------------------------------------------------------------


def watch_many(purgatory: DelayedOperationPurgatory[Op], n: int, keys: list[Hashable]) -> list[Op]:
    ops = [Op(name=str(i)) for i in range(n)]
    for op in ops:
        purgatory.try_complete_else_watch(op, keys)
    return ops


def test_purge_waits_until_completed_watched_operations_exceed_the_interval(
    timer: Timer,
) -> None:
    purgatory: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("p", timer, 3)
    ops = watch_many(purgatory, 10, ["a", "b"])
    for op in ops[:3]:
        op.force_complete()
    watch_many(purgatory, 1, ["c"])  # any call may purge; 3 is not more than 3
    assert purgatory.watched == 21


def test_purge_drops_completed_operations_from_every_watcher_list(timer: Timer) -> None:
    purgatory: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("p", timer, 3)
    ops = watch_many(purgatory, 10, ["a", "b"])
    for op in ops[:4]:
        op.force_complete()
    watch_many(purgatory, 1, ["c"])
    assert purgatory.watched == 2 * 6 + 1


def test_expired_operations_are_purged_from_their_watcher_lists(
    clock: ManualClock, timer: Timer
) -> None:
    purgatory: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("p", timer, 5)
    watch_many(purgatory, 20, ["a", "b", "c"])
    advance(clock, timer, 100)
    # Every 6th expiry (more than 5) purges; the last 2 wait for the next batch.
    assert purgatory.watched == 2 * 3


def test_operations_watched_under_many_keys_are_purged_by_the_entries_they_hold(
    timer: Timer,
) -> None:
    """A follower's fetch waits under every partition it follows: past
    STALE_ENTRIES_PER_OPERATION times the interval in watcher entries, completed operations
    are purged before the interval's count of them has completed."""
    purgatory: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("p", timer, 4)
    keys: list[Hashable] = [f"p{i}" for i in range(STALE_ENTRIES_PER_OPERATION * 2 + 1)]
    ops = watch_many(purgatory, 3, keys)
    ops[0].force_complete()
    ops[1].force_complete()  # two operations, not more than 4: the entries decide
    watch_many(purgatory, 1, ["c"])
    assert purgatory.watched == len(keys) + 1  # only the pending one's entries stay
    # Under one key each, the count of operations decides, as before.
    single = watch_many(purgatory, 5, ["d"])
    for op in single[:4]:
        op.force_complete()
    watch_many(purgatory, 1, ["e"])
    assert purgatory.watched == len(keys) + 1 + 5 + 1


def test_explicit_purge_reports_the_entries_it_removed(
    purgatory: DelayedOperationPurgatory[Op],
) -> None:
    ops = watch_many(purgatory, 4, ["a", "b"])
    ops[0].force_complete()
    ops[1].force_complete()
    assert purgatory.purge() == 4
    assert purgatory.watched == 4
    assert purgatory.purge() == 0


def test_cancel_for_key_returns_pending_operations_without_completing_them(
    purgatory: DelayedOperationPurgatory[Op], clock: ManualClock, timer: Timer
) -> None:
    done, pending = Op(name="done"), Op(name="pending")
    purgatory.try_complete_else_watch(done, ["g"])
    purgatory.try_complete_else_watch(pending, ["g"])
    done.force_complete()
    assert purgatory.cancel_for_key("g") == [pending]
    assert purgatory.delayed == 0
    assert purgatory.watched == 0
    advance(clock, timer, 200)
    assert (pending.completions, pending.expirations) == (0, 0)


def test_cancel_for_an_unwatched_key_returns_nothing(
    purgatory: DelayedOperationPurgatory[Op],
) -> None:
    assert purgatory.cancel_for_key("nobody") == []


def test_shutdown_returns_pending_operations_and_drops_watchers_and_timeouts(
    purgatory: DelayedOperationPurgatory[Op], clock: ManualClock, timer: Timer
) -> None:
    ops = watch_many(purgatory, 3, ["a", "b"])
    ops[0].force_complete()
    assert purgatory.shutdown() == ops[1:]
    assert purgatory.watched == 0
    assert purgatory.delayed == 0
    advance(clock, timer, 200)
    assert [op.completions for op in ops] == [1, 0, 0]


def test_watching_after_shutdown_is_refused(purgatory: DelayedOperationPurgatory[Op]) -> None:
    purgatory.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        purgatory.try_complete_else_watch(Op(), ["a"])


def test_memory_stays_flat_when_operations_keep_completing(
    clock: ManualClock, timer: Timer
) -> None:
    purgatory: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("p", timer, 100)
    for i in range(20_000):
        op = Op(delay_ms=200)
        purgatory.try_complete_else_watch(op, [i, "shared"])
        op.ready = True
        purgatory.check_and_complete(i)
    assert timer.size == 0
    assert purgatory.watched <= 101


# -- asyncio -------------------------------------------------------------------------------


@pytest.mark.timeout(10)
def test_operations_expire_and_complete_on_a_real_event_loop() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        timer = AsyncioTimer()
        purgatory: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("live", timer)
        expiring = [Op(delay_ms=d, name=f"e{d}") for d in (5, 10, 20)]
        completing = Op(delay_ms=1_000, name="c")
        started = loop.time()
        for op in [*expiring, completing]:
            purgatory.try_complete_else_watch(op, ["p0"])
        done = asyncio.Event()
        expiring[-1].then = done.set
        await asyncio.wait_for(done.wait(), timeout=5)
        assert all(op.is_expired and op.completions == 1 for op in expiring)
        assert (loop.time() - started) * 1000 >= 20
        completing.ready = True
        assert purgatory.check_and_complete("p0") == 1
        assert purgatory.delayed == 0
        timer.close()

    asyncio.run(scenario())
