"""Purgatory benchmark: the timing wheel against one asyncio `call_later` per timeout.

Workload after Kafka's TestPurgatoryPerformance: requests arrive as a Poisson process, each one
waits for a completion latency drawn from a log-normal distribution given by its 50th and 75th
percentiles (20/60 ms and 200/400 ms) and times out after 200 ms. Each request is watched under
its own key plus keys shared with many others (as a partition's waiters share it) and is
completed by `check_and_complete` of its own key once its latency is over.

Both sides run the same purgatory; only the timeout mechanism differs:
  wheel       kafkagen.runtime.timer (hierarchical timing wheel, O(1) add and cancel)
  call_later  one asyncio TimerHandle per request (heap insert, lazy cancel)

Measurements:
  hot path    try_complete_else_watch + check_and_complete with --hot-pending requests
              waiting, in simulated time: operations per second of CPU time
  throughput  Kafka's scenarios in simulated time (a manual clock, which is the event loop's
              clock too, so call_later runs on the same time), at the request rate that keeps
              about --pending requests waiting; the workload driver's own cost is measured
              alone and shown taken out
  latency     a real event loop at --live-rate requests/s: how late completions and expiries
              run compared with their intended time
  memory      bytes per pending request, by tracemalloc and by RSS growth, each in a fresh
              child process; --memory-ops requests held at once

Run: kafkagen bench purgatory [--help]. Figures, not a test: nothing fails, but the
two targets (100,000 watch+complete ops/s, 1,000,000 pending within 1 GiB) are reported.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import heapq
import json
import math
import os
import platform
import random
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Protocol, cast

from kafkagen.runtime.purgatory import DelayedOperation, DelayedOperationPurgatory
from kafkagen.runtime.timer import AsyncioTimer, LoopClock, ManualClock, Timer, TimerTask

THROUGHPUT_TARGET = 100_000  # watch+complete operations per second
MEMORY_TARGET_OPS = 1_000_000  # pending operations ...
MEMORY_TARGET_BYTES = 1 << 30  # ... within 1 GiB
Z75 = 0.6744897501960817  # 75th percentile of the standard normal distribution

# -- operations ----------------------------------------------------------------------------


class Stats:
    """Counters (and, in live runs, lateness samples) shared by the operations of one run."""

    __slots__ = ("finished", "expired", "loop", "complete_late", "expire_late")

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.finished = 0  # on_complete calls, whether by completion or expiry
        self.expired = 0
        self.loop = loop
        self.complete_late: list[float] = []  # seconds after the intended completion
        self.expire_late: list[float] = []  # seconds after arrival + timeout


class Op(DelayedOperation):
    """A request that can complete once `ready` is set (its latency has passed)."""

    __slots__ = ("ready", "stats")

    def __init__(self, delay_ms: int, stats: Stats) -> None:
        DelayedOperation.__init__(self, delay_ms)  # not super(): one allocation less per request
        self.ready = False
        self.stats = stats

    def try_complete(self) -> bool:
        return self.ready and self.force_complete()

    def on_complete(self) -> None:
        self.stats.finished += 1

    def on_expiration(self) -> None:
        self.stats.expired += 1


class CallLaterOp(Op):
    """The baseline's request: its timeout is an asyncio handle to cancel on completion."""

    __slots__ = ("handle",)

    def __init__(self, delay_ms: int, stats: Stats) -> None:
        Op.__init__(self, delay_ms, stats)
        self.handle: asyncio.TimerHandle | None = None

    def on_complete(self) -> None:
        handle = self.handle
        if handle is not None:
            self.handle = None
            handle.cancel()
        self.stats.finished += 1


class TimedOp(Op):
    """Live runs: records how late completion or expiry came."""

    __slots__ = ("arrival", "due")

    def __init__(self, delay_ms: int, stats: Stats) -> None:
        Op.__init__(self, delay_ms, stats)
        self.arrival = 0.0
        self.due = 0.0

    def on_complete(self) -> None:
        _record(self)


class TimedCallLaterOp(CallLaterOp):
    __slots__ = ("arrival", "due")

    def __init__(self, delay_ms: int, stats: Stats) -> None:
        CallLaterOp.__init__(self, delay_ms, stats)
        self.arrival = 0.0
        self.due = 0.0

    def on_complete(self) -> None:
        handle = self.handle
        if handle is not None:
            self.handle = None
            handle.cancel()
        _record(self)


def _record(op: TimedOp | TimedCallLaterOp) -> None:
    stats = op.stats
    stats.finished += 1
    assert stats.loop is not None
    now = stats.loop.time()
    if op.is_expired:
        stats.expire_late.append(now - (op.arrival + op.delay_ms / 1000.0))
    else:
        stats.complete_late.append(now - op.due)


class _HasHandle(Protocol):
    handle: asyncio.TimerHandle | None


class CallLaterTimer(Timer):
    """Baseline timeout mechanism: `loop.call_later` per operation, cancelled on completion."""

    __slots__ = ("_loop",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        super().__init__(LoopClock(loop))

    def add(self, task: TimerTask) -> None:
        cast(_HasHandle, task).handle = self._loop.call_later(task.delay_ms / 1000.0, task.run)

    def advance_clock(self, now_ms: float | None = None) -> int:
        return 0  # the event loop runs the handles

    @property
    def size(self) -> int:
        return -1  # not tracked: the runs count pending requests themselves


class ManualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock is a ManualClock, so call_later follows simulated time."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__()
        self.manual_clock = clock

    def time(self) -> float:
        return self.manual_clock.now_ms() / 1000.0


# -- workload ------------------------------------------------------------------------------


@dataclass
class Scenario:
    p50_ms: float
    p75_ms: float

    @property
    def label(self) -> str:
        return f"{self.p50_ms:g}/{self.p75_ms:g} ms"


@dataclass
class Workload:
    """Everything random, drawn before the clock starts."""

    keys: list[tuple[Hashable, ...]]
    # Ring slot (due millisecond modulo ring_size) of each request's completion, -1 if it
    # times out first.
    due_slot: list[int]
    # Per simulated millisecond, how many requests have arrived by its end; the list runs
    # past the last arrival until every request has completed or expired.
    arrived_by_ms: list[int]
    ring_size: int
    rate_per_s: float


def latency_sampler(scenario: Scenario, rng: random.Random) -> Callable[[], int]:
    mu = math.log(scenario.p50_ms)
    sigma = (math.log(scenario.p75_ms) - mu) / Z75
    return lambda: int(rng.lognormvariate(mu, sigma))


def shared_key_names(key_space: int) -> list[str]:
    # Long-lived key objects, like a broker's partitions; str keeps them apart from own keys.
    return [f"p{k}" for k in range(key_space)]


def make_keys(
    i: int, n_keys: int, names: Sequence[str], rng: random.Random
) -> tuple[Hashable, ...]:
    # Own key first (completion checks it), then shared keys.
    return (i, *(names[rng.randrange(len(names))] for _ in range(n_keys - 1)))


def make_workload(
    scenario: Scenario,
    ops: int,
    pending: int,
    timeout_ms: int,
    n_keys: int,
    key_space: int,
    seed: int,
) -> Workload:
    rng = random.Random(seed)
    sample = latency_sampler(scenario, rng)
    latency = [sample() for _ in range(ops)]
    # Little's law: pending = rate x mean time in the purgatory.
    mean_stay_ms = sum(min(lat, timeout_ms) for lat in latency) / ops
    rate_per_ms = pending / max(mean_stay_ms, 1.0)
    ring_size = timeout_ms + 1  # completions are due within the timeout
    t = 0.0
    arrival = []
    for _ in range(ops):
        t += rng.expovariate(rate_per_ms)
        arrival.append(int(t))
    due_slot = [
        (at + lat) % ring_size if lat < timeout_ms else -1
        for at, lat in zip(arrival, latency, strict=True)
    ]
    arrived_by_ms = []
    i = 0
    for ms in range(arrival[-1] + timeout_ms + 2):
        while i < ops and arrival[i] <= ms:
            i += 1
        arrived_by_ms.append(i)
    names = shared_key_names(key_space)
    keys = [make_keys(i, n_keys, names, rng) for i in range(ops)]
    return Workload(keys, due_slot, arrived_by_ms, ring_size, rate_per_ms * 1000.0)


# -- throughput (simulated time) -------------------------------------------------------------


@dataclass
class Throughput:
    ops: int
    seconds: float  # CPU time of the run
    wall_seconds: float
    peak_pending: int
    expired: int
    finished: int
    rate_per_s: float
    aborted: bool = False

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.seconds

    @property
    def ops_per_wall_s(self) -> float:
        return self.ops / self.wall_seconds


async def _simulate(
    work: Workload, impl: str, timeout_ms: int, purge_interval: int, max_seconds: float
) -> Throughput:
    loop = asyncio.get_running_loop()
    clock = cast(ManualTimeLoop, loop).manual_clock
    stats = Stats()
    timer: Timer
    op_cls: type[Op] = Op
    if impl == "call_later":
        timer = CallLaterTimer(loop)
        op_cls = CallLaterOp
    else:
        timer = Timer(clock)
    purgatory: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory(
        "bench", timer, purge_interval
    )
    watch: Callable[[Op, Sequence[Hashable]], bool] = purgatory.try_complete_else_watch
    check: Callable[[Hashable], int] = purgatory.check_and_complete
    advance: Callable[[int], int] | None = timer.advance_clock if impl == "wheel" else None
    if impl == "driver":
        # The workload alone: requests are created and scheduled, the purgatory does nothing.
        def watch(op: Op, keys: Sequence[Hashable]) -> bool:
            return False

        def check(key: Hashable) -> int:
            return 0

    keys, due_slot, ends = work.keys, work.due_slot, work.arrived_by_ms
    ring_size = work.ring_size
    # Per millisecond, the requests whose latency ends then (two lists: no tuple per request).
    ring_keys: list[list[Hashable]] = [[] for _ in range(ring_size)]
    ring_ops: list[list[Op]] = [[] for _ in range(ring_size)]
    lo = peak = 0
    aborted = False
    gc.collect()
    started = time.process_time()
    wall_started = time.perf_counter()
    give_up = time.monotonic() + max_seconds
    # Each simulated millisecond: arrivals, then completions due, then the clock ticks.
    for ms, hi in enumerate(ends):
        for i in range(lo, hi):
            op = op_cls(timeout_ms, stats)
            slot = due_slot[i]
            if slot >= 0:
                ring_keys[slot].append(i)
                ring_ops[slot].append(op)
            watch(op, keys[i])
        lo = hi
        slot = ms % ring_size
        due_ops = ring_ops[slot]
        if due_ops:
            for op in due_ops:
                op.ready = True
            for key in ring_keys[slot]:
                check(key)
            due_ops.clear()
            ring_keys[slot].clear()
        if hi - stats.finished > peak:
            peak = hi - stats.finished
        now = clock.advance(1)
        if advance is not None:
            advance(now)
        # Let the loop run due call_later handles (and pay its per-iteration cost on both sides).
        await asyncio.sleep(0)
        if time.monotonic() > give_up:
            aborted = True
            break
    seconds = time.process_time() - started
    wall_seconds = time.perf_counter() - wall_started
    purgatory.shutdown()
    return Throughput(
        lo, seconds, wall_seconds, peak, stats.expired, stats.finished, work.rate_per_s, aborted
    )


def run_throughput(
    work: Workload, impl: str, timeout_ms: int, purge_interval: int, max_seconds: float
) -> Throughput:
    clock = ManualClock(0)
    loop = ManualTimeLoop(clock)
    try:
        return loop.run_until_complete(
            _simulate(work, impl, timeout_ms, purge_interval, max_seconds)
        )
    finally:
        loop.close()


# -- hot path (simulated time) ----------------------------------------------------------------


@dataclass
class HotPath:
    ops: int
    pending: int
    seconds: float  # CPU time

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.seconds


async def _hot_path(
    impl: str,
    pending: int,
    ops: int,
    per_ms: int,
    timeout_ms: int,
    keys: list[tuple[Hashable, ...]],
) -> HotPath:
    """try_complete_else_watch of a new request, check_and_complete of the one `pending` back.

    The clock ticks every `per_ms` requests, so deadlines spread over the wheel as they do
    under load, and each request completes well before its timeout.
    """
    loop = asyncio.get_running_loop()
    clock = cast(ManualTimeLoop, loop).manual_clock
    stats = Stats()
    timer: Timer
    op_cls: type[Op] = Op
    if impl == "call_later":
        timer = CallLaterTimer(loop)
        op_cls = CallLaterOp
    else:
        timer = Timer(clock)
    purgatory: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("hot", timer)
    watch = purgatory.try_complete_else_watch
    check = purgatory.check_and_complete
    window: list[Op | None] = [None] * pending
    total = pending + ops
    measured_from = 0.0
    for i in range(total):
        if i == pending:  # the window is full: measure from here
            gc.collect()
            measured_from = time.process_time()
        op = op_cls(timeout_ms, stats)
        watch(op, keys[i])
        slot = i % pending
        old = window[slot]
        window[slot] = op
        if old is not None:
            old.ready = True
            check(i - pending)
        if i % per_ms == 0:
            timer.advance_clock(clock.advance(1))
            await asyncio.sleep(0)
    seconds = time.process_time() - measured_from
    if stats.finished != ops or stats.expired:
        raise RuntimeError(f"hot path {impl}: {stats.finished} of {ops} completed")
    purgatory.shutdown()
    return HotPath(ops, pending, seconds)


def run_hot_path(
    impl: str, pending: int, ops: int, timeout_ms: int, n_keys: int, key_space: int, seed: int
) -> HotPath:
    rng = random.Random(seed)
    names = shared_key_names(key_space)
    keys = [make_keys(i, n_keys, names, rng) for i in range(pending + ops)]
    # Requests complete after `pending` more arrive: keep that under half the timeout.
    per_ms = max(1, 2 * pending // timeout_ms)
    loop = ManualTimeLoop(ManualClock(0))
    try:
        return loop.run_until_complete(_hot_path(impl, pending, ops, per_ms, timeout_ms, keys))
    finally:
        loop.close()


# -- latency (real event loop) ---------------------------------------------------------------


@dataclass
class Live:
    issued: int
    finished: int
    peak_pending: int
    complete_late: list[float] = field(default_factory=list)
    expire_late: list[float] = field(default_factory=list)


class CompletionQueue:
    """Makes requests ready at their intended time: one call_at for the earliest, both sides."""

    def __init__(self, loop: asyncio.AbstractEventLoop, check: Callable[[Hashable], int]):
        self._loop = loop
        self._check = check
        self._heap: list[tuple[float, int, Hashable, Op]] = []
        self._handle: asyncio.TimerHandle | None = None
        self._armed = math.inf

    def push(self, due: float, key: int, op: Op) -> None:
        heapq.heappush(self._heap, (due, key, key, op))
        if due < self._armed:
            self._arm(due)

    def _arm(self, due: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed = due
        self._handle = self._loop.call_at(due, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self._armed = math.inf
        heap = self._heap
        now = self._loop.time()
        while heap and heap[0][0] <= now:
            _, _, key, op = heapq.heappop(heap)
            op.ready = True
            self._check(key)
        if heap:
            self._arm(heap[0][0])

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()


async def _live(
    scenario: Scenario,
    impl: str,
    rate: float,
    seconds: float,
    timeout_ms: int,
    n_keys: int,
    key_space: int,
    seed: int,
) -> Live:
    loop = asyncio.get_running_loop()
    rng = random.Random(seed)
    sample = latency_sampler(scenario, rng)
    stats = Stats(loop)
    timer: Timer
    if impl == "wheel":
        timer = AsyncioTimer(loop)
        op_cls: type[TimedOp | TimedCallLaterOp] = TimedOp
    else:
        timer = CallLaterTimer(loop)
        op_cls = TimedCallLaterOp
    purgatory: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("live", timer)
    names = shared_key_names(key_space)
    completions = CompletionQueue(loop, purgatory.check_and_complete)
    timeout_s = timeout_ms / 1000.0
    start = loop.time()
    issued = peak = 0
    while True:
        now = loop.time()
        if now - start >= seconds:
            break
        target = int(rate * (now - start))
        while issued < target:
            op = op_cls(timeout_ms, stats)
            lat = sample()
            op.arrival = arrived = loop.time()
            if lat < timeout_ms:
                op.due = arrived + lat / 1000.0
                completions.push(op.due, issued, op)
            purgatory.try_complete_else_watch(op, make_keys(issued, n_keys, names, rng))
            issued += 1
        peak = max(peak, issued - stats.finished)
        await asyncio.sleep(0.001)
    drain_until = loop.time() + timeout_s + 1.0
    while stats.finished < issued and loop.time() < drain_until:
        await asyncio.sleep(0.01)
    completions.close()
    purgatory.shutdown()
    timer.close()
    return Live(issued, stats.finished, peak, stats.complete_late, stats.expire_late)


def run_live(
    scenario: Scenario,
    impl: str,
    rate: float,
    seconds: float,
    timeout_ms: int,
    n_keys: int,
    key_space: int,
    seed: int,
) -> Live:
    gc.collect()
    return asyncio.run(_live(scenario, impl, rate, seconds, timeout_ms, n_keys, key_space, seed))


# -- memory ------------------------------------------------------------------------------------


@dataclass
class Memory:
    ops: int
    bytes: int
    seconds: float

    @property
    def per_op(self) -> float:
        return self.bytes / self.ops


def _rss() -> int | None:
    """Resident set size now, in bytes; None where it cannot be read."""
    try:
        # Linux: current RSS. (A peak from getrusage would not do: a child started by exec
        # inherits its parent's peak, and the parent here is a big benchmark process.)
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


def memory_probe(
    impl: str, how: str, ops: int, timeout_ms: int, n_keys: int, key_space: int
) -> Memory:
    """Fill an empty purgatory with pending operations; return the memory that took.

    Counts the op, its keys, the watcher entries and the timeout. `how` is "rss" (growth of
    the process's peak RSS: everything, allocator included) or "tracemalloc" (Python
    allocations only; slower, and its bookkeeping would spoil an RSS reading, hence a
    separate process for each, see run_memory).
    """
    rng = random.Random(7)
    names = shared_key_names(key_space)
    shared = [make_keys(0, n_keys, names, rng)[1:] for _ in range(4096)]
    loop = asyncio.new_event_loop()  # the baseline's handles sit in its heap (never run)
    stats = Stats()
    timer: Timer
    if impl == "wheel":
        timer = Timer(ManualClock(0))
        op_cls: type[Op] = Op
    else:
        timer = CallLaterTimer(loop)
        op_cls = CallLaterOp
    purgatory: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("memory", timer)
    watch = purgatory.try_complete_else_watch
    gc.collect()
    started = time.perf_counter()
    if how == "tracemalloc":
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
    else:
        before = _rss() or 0
    for i in range(ops):
        watch(op_cls(timeout_ms, stats), (i, *shared[i & 4095]))
    if how == "tracemalloc":
        used = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
    else:
        used = (_rss() or 0) - before
    return Memory(ops, used, time.perf_counter() - started)


def run_memory(impl: str, how: str, ops: int, args: argparse.Namespace) -> Memory:
    """memory_probe in a fresh interpreter (its memory is the purgatory's), time-bounded."""
    command = [
        sys.executable,
        "-m",
        "kafkagen.bench.purgatory",
        "--memory-probe",
        f"{impl}:{how}",
        "--memory-ops",
        str(ops),
        "--timeout-ms",
        str(args.timeout_ms),
        "--keys",
        str(args.keys),
        "--key-space",
        str(args.key_space),
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=args.max_seconds * 4, check=True
    )
    return Memory(**json.loads(done.stdout.strip().splitlines()[-1]))


# -- report --------------------------------------------------------------------------------


def _pct(samples: Sequence[float], q: float) -> float:
    if not samples:
        return math.nan
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ms_summary(samples: Sequence[float]) -> str:
    if not samples:
        return "-"
    return "/".join(f"{_pct(samples, q) * 1000:.2f}" for q in (0.5, 0.99, 1.0))


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


class Table:
    def __init__(self, header: Sequence[str]) -> None:
        self.rows: list[Sequence[str]] = [header]

    def add(self, *cells: str) -> None:
        self.rows.append(cells)

    def render(self) -> str:
        widths = [max(len(row[i]) for row in self.rows) for i in range(len(self.rows[0]))]
        lines = []
        for n, row in enumerate(self.rows):
            cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])]
            cells += [cell.rjust(width) for cell, width in zip(row[2:], widths[2:], strict=True)]
            lines.append("  ".join(cells))
            if n == 0:
                lines.append("  ".join("-" * width for width in widths))
        return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="kafkagen bench purgatory",
        description="Timing-wheel purgatory against an asyncio call_later baseline.",
    )
    parser.add_argument(
        "--scenarios",
        default="20/60,200/400",
        help="latency percentiles p50/p75 in ms, comma separated",
    )
    parser.add_argument("--timeout-ms", type=int, default=200)
    parser.add_argument(
        "--keys", type=int, default=3, help="keys per request: its own plus shared ones"
    )
    parser.add_argument("--key-space", type=int, default=100, help="number of shared keys")
    parser.add_argument("--purge-interval", type=int, default=1000)
    parser.add_argument(
        "--hot-ops", type=int, default=200_000, help="requests measured on the hot path"
    )
    parser.add_argument(
        "--hot-pending", type=int, default=120_000, help="pending requests on the hot path"
    )
    parser.add_argument(
        "--ops", type=int, default=250_000, help="requests per scenario throughput run"
    )
    parser.add_argument(
        "--pending",
        type=int,
        default=150_000,
        help="pending requests the simulated rate is chosen to keep",
    )
    parser.add_argument(
        "--max-seconds", type=float, default=30.0, help="wall-clock cap per throughput run"
    )
    parser.add_argument(
        "--live-rate",
        type=float,
        default=20_000.0,
        help="requests per second on the real event loop",
    )
    parser.add_argument("--live-seconds", type=float, default=1.5)
    parser.add_argument(
        "--memory-ops", type=int, default=1_000_000, help="pending operations held at once"
    )
    parser.add_argument(
        "--traced-ops", type=int, default=50_000, help="operations traced by tracemalloc"
    )
    parser.add_argument(
        "--baseline-memory-ops",
        type=int,
        default=200_000,
        help="pending operations for the baseline's RSS reading (it is the slow one)",
    )
    parser.add_argument("--memory-probe", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=20_240_521)
    parser.add_argument("--skip-live", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    args = parser.parse_args(argv)
    sizes = (args.keys, args.ops, args.pending, args.hot_ops, args.hot_pending, args.memory_ops)
    if min(sizes) < 1:
        parser.error("sizes (--keys, --ops, --pending, --hot-*, --memory-ops) must be positive")
    return args


IMPLS = ("wheel", "call_later")


def hot_path_section(args: argparse.Namespace, table: Table) -> float:
    hot = {}
    for impl in IMPLS:
        print(f"  hot path, {args.hot_pending:,} pending, {impl} ...", flush=True)
        hot[impl] = run_hot_path(
            impl,
            args.hot_pending,
            args.hot_ops,
            args.timeout_ms,
            args.keys,
            args.key_space,
            args.seed,
        )
    w, c = hot["wheel"], hot["call_later"]
    table.add(
        f"hot path {args.hot_pending:,} pending",
        "watch+complete ops/s, CPU",
        f"{w.ops_per_s:,.0f}",
        f"{c.ops_per_s:,.0f}",
        _ratio(w.ops_per_s, c.ops_per_s),
    )
    return w.ops_per_s


def scenario_section(
    args: argparse.Namespace, scenarios: list[Scenario], table: Table, checks: list[str]
) -> float:
    """Throughput of Kafka's scenarios in simulated time; returns the wheel's worst ops/s."""
    worst = math.inf
    for n, scenario in enumerate(scenarios):
        work = make_workload(
            scenario,
            args.ops,
            args.pending,
            args.timeout_ms,
            args.keys,
            args.key_space,
            args.seed + n,
        )
        results = {}
        for impl in ("driver", *IMPLS):
            print(f"  throughput {scenario.label} {impl} ...", flush=True)
            results[impl] = run_throughput(
                work, impl, args.timeout_ms, args.purge_interval, args.max_seconds
            )
        drv, w, c = results["driver"], results["wheel"], results["call_later"]
        worst = min(worst, w.ops_per_s)
        # The same requests cost the driver the same CPU on both sides: take it out.
        w_net = w.ops / max(w.seconds - drv.seconds, 1e-9)
        c_net = c.ops / max(c.seconds - drv.seconds, 1e-9)
        name = f"throughput {scenario.label}"
        table.add(
            name,
            "watch+complete ops/s, CPU",
            f"{w.ops_per_s:,.0f}",
            f"{c.ops_per_s:,.0f}",
            _ratio(w.ops_per_s, c.ops_per_s),
        )
        table.add(
            "",
            f"  less the workload driver ({drv.seconds / drv.ops * 1e6:.2f} us/op)",
            f"{w_net:,.0f}",
            f"{c_net:,.0f}",
            _ratio(w_net, c_net),
        )
        table.add(
            "",
            "watch+complete ops/s, wall clock",
            f"{w.ops_per_wall_s:,.0f}",
            f"{c.ops_per_wall_s:,.0f}",
            _ratio(w.ops_per_wall_s, c.ops_per_wall_s),
        )
        table.add("", "simulated requests/s", f"{w.rate_per_s:,.0f}", f"{c.rate_per_s:,.0f}", "")
        table.add("", "peak pending", f"{w.peak_pending:,}", f"{c.peak_pending:,}", "")
        table.add("", "expired", f"{w.expired / w.ops:.1%}", f"{c.expired / c.ops:.1%}", "")
        for impl in IMPLS:
            result = results[impl]
            if result.aborted:
                checks.append(f"NOTE {name} {impl}: stopped at --max-seconds, partial figures")
            elif result.finished != result.ops:
                checks.append(f"FAIL {name} {impl}: {result.finished} of {result.ops} finished")
    return worst


def latency_section(
    args: argparse.Namespace, scenarios: list[Scenario], table: Table, checks: list[str]
) -> None:
    for n, scenario in enumerate(scenarios):
        lives = {}
        for impl in IMPLS:
            print(f"  latency {scenario.label} {impl} ...", flush=True)
            lives[impl] = run_live(
                scenario,
                impl,
                args.live_rate,
                args.live_seconds,
                args.timeout_ms,
                args.keys,
                args.key_space,
                args.seed + n,
            )
        w, c = lives["wheel"], lives["call_later"]
        name = f"latency {scenario.label}"
        table.add(
            name, f"requests at {args.live_rate:,.0f}/s", f"{w.issued:,}", f"{c.issued:,}", ""
        )
        table.add("", "peak pending", f"{w.peak_pending:,}", f"{c.peak_pending:,}", "")
        table.add(
            "",
            "completion late p50/p99/max ms",
            _ms_summary(w.complete_late),
            _ms_summary(c.complete_late),
            "",
        )
        table.add(
            "",
            "expiry late p50/p99/max ms",
            _ms_summary(w.expire_late),
            _ms_summary(c.expire_late),
            "",
        )
        for impl, live in lives.items():
            early = [x for x in live.expire_late if x < 0]
            if live.finished != live.issued:
                checks.append(f"FAIL {name} {impl}: {live.finished} of {live.issued} done")
            if early:
                checks.append(f"FAIL {name} {impl}: {len(early)} expiries before the deadline")


def memory_section(args: argparse.Namespace) -> tuple[dict[str, Memory], dict[str, Memory]]:
    """Fresh child processes, one per reading; run first, while this process is small."""
    traced, rss = {}, {}
    for impl in IMPLS:
        print(f"  memory {impl} ...", flush=True)
        traced[impl] = run_memory(impl, "tracemalloc", args.traced_ops, args)
        if _rss() is not None:
            ops = args.memory_ops if impl == "wheel" else args.baseline_memory_ops
            rss[impl] = run_memory(impl, "rss", ops, args)
    return traced, rss


def memory_rows(
    args: argparse.Namespace,
    traced: dict[str, Memory],
    rss: dict[str, Memory],
    table: Table,
    checks: list[str],
) -> None:
    w, c = traced["wheel"], traced["call_later"]
    table.add(
        "memory",
        f"bytes/pending op, tracemalloc, {args.traced_ops:,} ops",
        f"{w.per_op:,.0f}",
        f"{c.per_op:,.0f}",
        _ratio(w.per_op, c.per_op),
    )
    if rss:
        w_rss, c_rss = rss["wheel"], rss["call_later"]
        table.add(
            "",
            f"bytes/pending op, RSS growth, {w_rss.ops:,} / {c_rss.ops:,} ops",
            f"{w_rss.per_op:,.0f}",
            f"{c_rss.per_op:,.0f}",
            _ratio(w_rss.per_op, c_rss.per_op),
        )
        table.add("", f"MiB for {w_rss.ops:,} pending", f"{w_rss.bytes / 2**20:,.0f}", "", "")
        held, how = w_rss.bytes, "RSS growth"
    else:
        held, how = int(w.per_op * args.memory_ops), "tracemalloc, extrapolated"
    if args.memory_ops >= MEMORY_TARGET_OPS:
        verdict = "PASS" if held <= MEMORY_TARGET_BYTES else "FAIL"
        checks.append(
            f"{verdict} {args.memory_ops:,} pending operations in {held / 2**20:,.0f} MiB "
            f"({how}; target: {MEMORY_TARGET_OPS:,} within 1 GiB)"
        )
    else:
        checks.append(f"NOTE memory measured at {args.memory_ops:,} ops, below the target")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.memory_probe:
        # Child of run_memory: one measurement, one JSON line.
        impl, how = args.memory_probe.split(":")
        probe = memory_probe(impl, how, args.memory_ops, args.timeout_ms, args.keys, args.key_space)
        print(json.dumps(asdict(probe)))
        return 0
    scenarios = []
    for text in args.scenarios.split(","):
        p50, p75 = (float(part) for part in text.split("/"))
        scenarios.append(Scenario(p50, p75))
    print(
        f"kafkagen purgatory benchmark - Python {platform.python_version()} on "
        f"{platform.machine()}, one thread; timeout {args.timeout_ms} ms, {args.keys} keys "
        f"per request ({args.keys - 1} shared of {args.key_space}), purge interval "
        f"{args.purge_interval}",
        flush=True,
    )
    started = time.monotonic()
    table = Table(["measurement", "metric", "wheel", "call_later", "wheel/call_later"])
    checks: list[str] = []
    memory = None if args.skip_memory else memory_section(args)
    hot = hot_path_section(args, table)
    worst = scenario_section(args, scenarios, table, checks)
    if not args.skip_live:
        latency_section(args, scenarios, table, checks)
    if memory is not None:
        memory_rows(args, *memory, table, checks)
    verdict = "PASS" if hot >= THROUGHPUT_TARGET else "FAIL"
    checks.insert(
        0,
        f"{verdict} {hot:,.0f} watch+complete ops/s on one core with {args.hot_pending:,} "
        f"pending (target: {THROUGHPUT_TARGET:,}); in Kafka's scenarios, with expiries and "
        f"the workload driver: {worst:,.0f} at worst",
    )
    print()
    print(table.render())
    print()
    print("\n".join(checks))
    print(f"({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
