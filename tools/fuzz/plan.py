"""How the work is split: (API, kind, version) combos, their message counts, and tasks.

The split is a pure function of the table, the selected APIs, the message count and the
number of tasks, so every process computes the same plan from a few numbers: a task is
shipped its task number and nothing else large. Chunks of :data:`CHUNK` messages are the
unit of generation (see :mod:`kafkagen.fuzz.checks`); chunk ``c`` of combo ``i`` goes to
task ``(c + i) % tasks``, which spreads every combo, cheap or dear, over all tasks.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

from .checks import CHUNK, ComboStats, Fuzzer, FuzzOptions
from .rules import Table


class Combo(NamedTuple):
    api: int
    kind: str
    version: int
    messages: int


def select_apis(table: Table, apis: Sequence[str] | None) -> list[int]:
    """API keys from names or numbers (``Metadata``, ``metadata``, ``3``, ``fetch,produce``);
    all APIs when ``apis`` is empty."""
    keys = sorted({api for api, _ in table})
    if not apis:
        return keys
    by_name: dict[str, int] = {}
    for (api, _kind), rules in table.items():
        base = rules.name.removesuffix("Request").removesuffix("Response")
        by_name[base.lower()] = api
        by_name[_snake(base)] = api
    chosen: set[int] = set()
    for item in apis:
        for word in item.replace(",", " ").split():
            w = word.strip().lower()
            if w.isdigit() and int(w) in keys:
                chosen.add(int(w))
            elif w in by_name:
                chosen.add(by_name[w])
            else:
                raise ValueError(f"unknown API {word!r} (use a name like Metadata or a key)")
    return sorted(chosen)


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and (not name[i - 1].isupper() or name[i + 1 : i + 2].islower()):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def plan_combos(table: Table, api_keys: Iterable[int], messages: int) -> list[Combo]:
    """Every (API, kind, version) of the selected APIs with its share of ``messages``:
    equal shares, the remainder to the first combos."""
    keys = set(api_keys)
    pairs = [
        (api, kind, v)
        for (api, kind), r in sorted(table.items())
        if api in keys
        for v in r.versions
    ]
    if not pairs:
        return []
    base, extra = divmod(messages, len(pairs))
    return [Combo(a, k, v, base + (1 if i < extra else 0)) for i, (a, k, v) in enumerate(pairs)]


def task_slices(combos: Sequence[Combo], tasks: int, task: int) -> Iterator[tuple[int, int, int]]:
    """(combo index, first index, end index) of the chunks that belong to ``task``."""
    for i, c in enumerate(combos):
        chunks = -(-c.messages // CHUNK)
        for chunk in range((task - i) % tasks, chunks, tasks):
            yield i, chunk * CHUNK, min(c.messages, (chunk + 1) * CHUNK)


def task_size(combos: Sequence[Combo], tasks: int, task: int) -> int:
    return sum(end - start for _, start, end in task_slices(combos, tasks, task))


def run_task(
    table: Table,
    combos: Sequence[Combo],
    options: FuzzOptions,
    tasks: int,
    task: int,
    progress: Callable[[int, int], None] | None = None,
    fault: Callable[[int], None] | None = None,
    fuzzer: Fuzzer | None = None,
) -> list[ComboStats]:
    """Run one task's share of the plan: one ComboStats per combo it touched.

    ``progress(done, failures)`` is called about twice a second; ``fault(done)`` after
    every chunk (tests use it to kill a task midway).
    """
    own = fuzzer is None
    fz = fuzzer or Fuzzer(table, options)
    stats: dict[int, ComboStats] = {}
    done = failures = 0
    last = time.monotonic()
    # Millions of short-lived trees: keep the cycle collector off the long-lived objects
    # (modules, the table) and run it less often; restored for whoever reuses the process.
    threshold = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(max(threshold[0], 50_000), threshold[1], threshold[2])
    try:
        for i, start, end in task_slices(combos, tasks, task):
            c = combos[i]
            st = stats.get(i)
            if st is None:
                st = stats[i] = ComboStats(c.api, c.kind, c.version)
            before = st.failures
            fz.run_range(c.api, c.kind, c.version, start, end, st)
            done += end - start
            failures += st.failures - before
            if fault is not None:
                fault(done)
            if progress is not None and time.monotonic() - last > 0.5:
                progress(done, failures)
                last = time.monotonic()
        if progress is not None:
            progress(done, failures)
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
        if own:
            fz.close()
    return [stats[i] for i in sorted(stats)]


#: Most messages one task checks by default: a retried task redoes under a minute.
TASK_MESSAGES = 250_000


def default_tasks(cores: int, messages: int = 0) -> int:
    """At least three tasks per core, and enough that none has more than TASK_MESSAGES:
    big enough that Spark's per-task cost is noise, small enough that a retried task
    redoes little; a multiple of the cores, so they finish together."""
    cores = max(1, cores)
    tasks = max(3 * cores, -(-messages // TASK_MESSAGES))
    return -(-tasks // cores) * cores


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


__all__ = [
    "Combo",
    "cpu_count",
    "default_tasks",
    "plan_combos",
    "run_task",
    "select_apis",
    "task_size",
    "task_slices",
]
