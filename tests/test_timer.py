"""The hierarchical timing wheel, driven tick by tick with a manual clock."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from kafkagen.runtime.timer import AsyncioTimer, ManualClock, Timer, TimerTask


class Recorder(TimerTask):
    """Appends its name and the clock's time to a shared log when it runs."""

    __slots__ = ("name", "clock", "log")

    def __init__(self, delay_ms: int, name: str, clock: ManualClock, log: list[tuple[str, int]]):
        super().__init__(delay_ms)
        self.name = name
        self.clock = clock
        self.log = log

    def run(self) -> None:
        self.log.append((self.name, self.clock.now_ms()))


class Call(TimerTask):
    """Runs a callable; for tasks that act on other tasks or on the timer."""

    __slots__ = ("action",)

    def __init__(self, delay_ms: int, action: object) -> None:
        super().__init__(delay_ms)
        self.action = action

    def run(self) -> None:
        assert callable(self.action)
        self.action()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_000)


@pytest.fixture
def timer(clock: ManualClock) -> Timer:
    return Timer(clock)


def tick_until(clock: ManualClock, timer: Timer, until_ms: int, step_ms: int = 1) -> None:
    while clock.now_ms() < until_ms:
        clock.advance(min(step_ms, until_ms - clock.now_ms()))
        timer.advance_clock()


def test_task_runs_at_its_deadline_and_not_one_tick_before(
    clock: ManualClock, timer: Timer
) -> None:
    log: list[tuple[str, int]] = []
    timer.add(Recorder(10, "t", clock, log))
    tick_until(clock, timer, 1_009)
    assert log == []
    clock.advance(1)
    assert timer.advance_clock() == 1
    assert log == [("t", 1_010)]


def test_add_never_runs_a_task_even_with_zero_delay(clock: ManualClock, timer: Timer) -> None:
    log: list[tuple[str, int]] = []
    timer.add(Recorder(0, "now", clock, log))
    assert log == []
    assert timer.advance_clock() == 1
    assert log == [("now", 1_000)]


def test_fractional_clock_rounds_deadlines_up_so_tasks_never_run_early() -> None:
    class FloatClock:
        now = 100.4

        def now_ms(self) -> float:
            return self.now

    clock = FloatClock()
    timer = Timer(clock)
    ran: list[int] = []
    timer.add(Call(5, lambda: ran.append(1)))
    # 100.4 + 5 = 105.4: the task is due at 106, the first whole millisecond not before.
    clock.now = 105.9
    assert timer.advance_clock() == 0
    clock.now = 106.0
    assert timer.advance_clock() == 1


@pytest.mark.parametrize("delay_ms", [25, 500, 10_000, 3_600_000])
def test_overflow_wheel_deadline_expires_at_the_exact_tick(
    clock: ManualClock, timer: Timer, delay_ms: int
) -> None:
    log: list[tuple[str, int]] = []
    timer.add(Recorder(delay_ms, "t", clock, log))
    assert timer.levels > 1
    deadline = 1_000 + delay_ms
    # Coarse irregular steps cascade the task down through every wheel.
    tick_until(clock, timer, deadline - 1, step_ms=7_919)
    assert log == []
    assert timer.size == 1
    clock.advance(1)
    timer.advance_clock()
    assert log == [("t", deadline)]
    assert timer.size == 0


@pytest.mark.parametrize("delay_ms", [25, 500])
def test_overflow_wheel_deadline_holds_when_ticking_every_millisecond(
    clock: ManualClock, timer: Timer, delay_ms: int
) -> None:
    log: list[tuple[str, int]] = []
    timer.add(Recorder(delay_ms, "t", clock, log))
    tick_until(clock, timer, 1_000 + delay_ms + 5)
    assert log == [("t", 1_000 + delay_ms)]


def test_overflow_wheels_are_created_only_when_a_deadline_needs_them(timer: Timer) -> None:
    assert timer.levels == 1
    timer.add(Call(19, lambda: None))
    assert timer.levels == 1  # 1 ms x 20 buckets covers it
    timer.add(Call(25, lambda: None))
    assert timer.levels == 2
    # Wheels span 20 ms, 400 ms, 8 s, 160 s, 3200 s: one hour needs a sixth.
    timer.add(Call(3_600_000, lambda: None))
    assert timer.levels == 6


def test_jumping_far_ahead_runs_everything_in_deadline_order(
    clock: ManualClock, timer: Timer
) -> None:
    log: list[tuple[str, int]] = []
    for delay in [450, 3, 8_000, 21, 7, 3_600_000, 399, 20]:
        timer.add(Recorder(delay, f"d{delay}", clock, log))
    clock.advance(5_000_000)
    assert timer.advance_clock() == 8
    assert [name for name, _ in log] == [
        "d3",
        "d7",
        "d20",
        "d21",
        "d399",
        "d450",
        "d8000",
        "d3600000",
    ]


def test_tasks_sharing_a_deadline_but_added_at_different_times_run_together(
    clock: ManualClock, timer: Timer
) -> None:
    log: list[tuple[str, int]] = []
    timer.add(Recorder(30, "early", clock, log))  # an overflow bucket at first
    tick_until(clock, timer, 1_015)
    timer.add(Recorder(15, "late", clock, log))  # same deadline, now within the first wheel
    tick_until(clock, timer, 1_029)
    assert log == []
    tick_until(clock, timer, 1_030)
    assert log == [("early", 1_030), ("late", 1_030)]


def test_tasks_with_the_same_deadline_run_in_the_order_they_were_added(
    clock: ManualClock, timer: Timer
) -> None:
    log: list[tuple[str, int]] = []
    for name in "abcde":
        timer.add(Recorder(30, name, clock, log))
    tick_until(clock, timer, 1_030)
    assert [name for name, _ in log] == list("abcde")


def test_cancelled_task_never_runs_and_leaves_the_timer(clock: ManualClock, timer: Timer) -> None:
    log: list[tuple[str, int]] = []
    keep = Recorder(50, "keep", clock, log)
    drop = Recorder(50, "drop", clock, log)
    timer.add(keep)
    timer.add(drop)
    assert timer.size == 2
    assert drop.cancel() is True
    assert timer.size == 1
    assert not drop.scheduled
    tick_until(clock, timer, 1_100)
    assert log == [("keep", 1_050)]


def test_cancelling_twice_or_after_running_reports_nothing_to_cancel(
    clock: ManualClock, timer: Timer
) -> None:
    task = Call(5, lambda: None)
    timer.add(task)
    assert task.cancel() is True
    assert task.cancel() is False
    timer.add(task)
    tick_until(clock, timer, 1_010)
    assert task.cancel() is False


def test_adding_a_scheduled_task_again_moves_its_deadline(clock: ManualClock, timer: Timer) -> None:
    log: list[tuple[str, int]] = []
    task = Recorder(10, "t", clock, log)
    timer.add(task)
    clock.advance(5)
    timer.advance_clock()
    timer.add(task)
    assert timer.size == 1
    tick_until(clock, timer, 1_020)
    assert log == [("t", 1_015)]


def test_task_cancelled_by_an_earlier_task_of_the_same_tick_does_not_run(
    clock: ManualClock, timer: Timer
) -> None:
    log: list[tuple[str, int]] = []
    victim = Recorder(10, "victim", clock, log)
    timer.add(Call(10, victim.cancel))
    timer.add(victim)
    clock.advance(10)
    assert timer.advance_clock() == 1
    assert log == []


def test_task_added_by_a_running_task_is_due_relative_to_that_moment(
    clock: ManualClock, timer: Timer
) -> None:
    log: list[tuple[str, int]] = []
    timer.add(Call(10, lambda: timer.add(Recorder(5, "child", clock, log))))
    tick_until(clock, timer, 1_014)
    assert log == []
    tick_until(clock, timer, 1_015)
    assert log == [("child", 1_015)]


def test_size_counts_waiting_tasks_only(clock: ManualClock, timer: Timer) -> None:
    for delay in (1, 2, 30, 30_000):
        timer.add(Call(delay, lambda: None))
    assert timer.size == 4
    clock.advance(2)
    assert timer.advance_clock() == 2
    assert timer.size == 2


def test_next_expiration_skips_buckets_emptied_by_cancel(timer: Timer) -> None:
    early = Call(3, lambda: None)
    timer.add(early)
    timer.add(Call(9, lambda: None))
    assert timer.next_expiration_ms() == 1_003
    early.cancel()
    assert timer.next_expiration_ms() == 1_009


def test_idle_timer_has_no_next_expiration(clock: ManualClock, timer: Timer) -> None:
    timer.add(Call(3, lambda: None))
    tick_until(clock, timer, 1_003)
    assert timer.next_expiration_ms() is None


def test_failing_task_is_logged_and_does_not_stop_the_others(
    clock: ManualClock, timer: Timer, caplog: pytest.LogCaptureFixture
) -> None:
    def boom() -> None:
        raise RuntimeError("boom")

    log: list[tuple[str, int]] = []
    timer.add(Call(5, boom))
    timer.add(Recorder(5, "after", clock, log))
    clock.advance(5)
    with caplog.at_level(logging.ERROR):
        assert timer.advance_clock() == 2
    assert log == [("after", 1_005)]
    assert "boom" in caplog.text


def test_advance_from_inside_a_task_extends_the_running_advance(
    clock: ManualClock, timer: Timer
) -> None:
    log: list[tuple[str, int]] = []

    def jump() -> None:
        clock.advance(100)
        assert timer.advance_clock() == 0  # nested: the outer advance does the work

    timer.add(Call(1, jump))
    timer.add(Recorder(50, "later", clock, log))
    clock.advance(1)
    assert timer.advance_clock() == 2
    assert log == [("later", 1_101)]


def test_cancel_from_other_threads_while_ticking_either_stops_a_task_or_it_runs(
    clock: ManualClock, timer: Timer
) -> None:
    tasks = [Call(1 + i % 500, lambda: None) for i in range(4_000)]
    for task in tasks:
        timer.add(task)
    start = threading.Barrier(3)
    cancelled = [0, 0]

    def cancel(worker: int) -> None:
        start.wait()
        cancelled[worker] = sum(task.cancel() for task in tasks[worker::2])

    threads = [threading.Thread(target=cancel, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    start.wait()
    ran = 0
    for _ in range(600):
        clock.advance(1)
        ran += timer.advance_clock()
    for thread in threads:
        thread.join()
    assert ran + sum(cancelled) == len(tasks)
    assert timer.size == 0
    assert timer.next_expiration_ms() is None


@pytest.mark.timeout(10)
def test_asyncio_timer_runs_real_delays_from_the_loop_without_polling() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        timer = AsyncioTimer()
        assert timer.wakeup_ms is None
        fired: list[tuple[int, float]] = []
        added_at = loop.time()
        for delay in (30, 5, 15):
            timer.add(Call(delay, lambda d=delay: fired.append((d, loop.time()))))
        # One wake-up, armed for the earliest bucket.
        assert timer.wakeup_ms is not None
        assert timer.wakeup_ms <= loop.time() * 1000 + 6
        await asyncio.wait_for(_until(lambda: len(fired) == 3), timeout=5)
        assert [delay for delay, _ in fired] == [5, 15, 30]
        for delay, at in fired:
            assert (at - added_at) * 1000 >= delay
        assert timer.size == 0
        assert timer.wakeup_ms is None  # idle: nothing armed
        timer.close()

    asyncio.run(scenario())


async def _until(predicate: object) -> None:
    assert callable(predicate)
    while not predicate():
        await asyncio.sleep(0.001)
