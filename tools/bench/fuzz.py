"""Scale benchmark of the compatibility fuzz: plain Python loop against Spark.

    kafkagen bench fuzz [--plain N] [--spark N] [--full N] [--profile N]

Prints, for the same checks on the same messages:

- the plain loop in this process (one core): messages/s, wall and CPU;
- ``local[1]`` and ``local[2]``: job messages/s (session start excluded), the tasks' own
  CPU rate, Spark's share (plain per-core rate / Spark per-core rate) and the scaling of
  two cores over one;
- the same plain loop in two processes at once, without Spark: what two cores of this
  machine give at best, so Spark's part of the two-core scaling shows apart from the
  machine's;
- the time ``kafkagen fuzz --messages 10000000 --master local[2]`` takes, extrapolated from
  the local[2] rate, or measured end to end with ``--full 10000000``;
- with ``--profile N``: where the plain loop's time goes, check by check (timers), then
  by function and by file (cProfile), so the hot spots are visible.

``kafkagen bench fuzz --oracles N`` instead prints, in one run, N messages on ``local[2]``
without an oracle, with ``--oracle kafka`` and with every oracle the fuzz knows: job
messages/s, the CPU seconds the whole run took per message (driver, Spark's JVM with
Kafka's classes, Python workers: the figure that holds on a loaded machine) and messages
per CPU second, and the time 10,000,000 messages with ``--oracle kafka`` would take.

``kafkagen bench fuzz --package NAME_OR_DIR N`` (or ``--specs DIR``) runs N messages of
the built-in package and N of that package on one ``local[2]`` session, one after the
other, and prints both rates and their ratio: a package generated from the same specs
must fuzz at the built-in's rate.

Wall-clock figures depend on what else the machine runs; the CPU figures much less.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafkagen.fuzz.checks import Fuzzer, FuzzOptions
from kafkagen.fuzz.job import (
    RunResult,
    native_file,
    run_plain,
    run_spark,
    spark_session,
)
from kafkagen.fuzz.packages import Package, builtin, run_on
from kafkagen.fuzz.peers import ORACLES
from kafkagen.fuzz.plan import plan_combos, run_task, select_apis
from kafkagen.fuzz.rules import Table, build_table

TARGET = 10_000_000


def _rates(result: RunResult) -> tuple[float, float]:
    """(messages per wall second of the job, messages per CPU second of the tasks)."""
    cpu = sum(float(t.get("cpu_seconds") or 0.0) for t in result.task_info)
    return result.messages / result.wall_seconds, result.messages / cpu if cpu else 0.0


def plain(table: Table, n: int, options: FuzzOptions) -> tuple[float, float]:
    combos = plan_combos(table, select_apis(table, None), n)
    run_plain(table, plan_combos(table, select_apis(table, None), 680), options)  # warm-up
    began, cpu = time.perf_counter(), time.process_time()
    result = run_plain(table, combos, options)
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    print(
        f"plain loop   {n:>10,} messages  {wall:7.1f} s  {n / wall:8,.0f} msg/s wall"
        f"  {n / cpu:8,.0f} msg/s CPU  ({wall / n * 1e6:.0f} us/message)"
        f"  failures {result.failure_count}"
    )
    return n / wall, n / cpu


def _plain_worker(args: tuple[int, int]) -> tuple[float, float]:
    """One of the processes of :func:`two_plain`: (wall seconds, CPU seconds) for n."""
    n, seed = args
    table = build_table()
    options = FuzzOptions(seed=seed)
    run_plain(table, plan_combos(table, select_apis(table, None), 680), options)  # warm-up
    combos = plan_combos(table, select_apis(table, None), n)
    began, cpu = time.perf_counter(), time.process_time()
    run_plain(table, combos, options)
    return time.perf_counter() - began, time.process_time() - cpu


def two_plain(n: int, seed: int) -> float:
    """The machine's own ceiling for two cores: the plain loop in two processes at once,
    no Spark. Two busy cores share caches and memory, so this is what local[2] can reach
    at best; returns the combined messages per second."""
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(2) as pool:
        runs = pool.map(_plain_worker, [(n, seed), (n, seed + 1)])
    wall = max(w for w, _ in runs)
    cpu_rates = ", ".join(f"{n / c:,.0f}" for _, c in runs)
    print(
        f"plain x2     {2 * n:>10,} messages  {wall:7.1f} s  {2 * n / wall:8,.0f} msg/s wall"
        f"  (two processes at once, no Spark; msg/s CPU each: {cpu_rates})"
    )
    return 2 * n / wall


def spark(table: Table, n: int, master: str, options: FuzzOptions) -> tuple[float, float, float]:
    """(job messages/s, task CPU messages/s, fixed seconds: session start and first job)."""
    began = time.perf_counter()
    with spark_session(master) as session:
        # A first small job starts the Python workers and warms the JVM: a long run pays
        # that once, so it is timed apart from the steady rate.
        warm = plan_combos(table, select_apis(table, None), 680)
        run_spark(table, warm, options, out=None, spark=session)
        fixed = time.perf_counter() - began
        combos = plan_combos(table, select_apis(table, None), n)
        result = run_spark(table, combos, options, out=None, spark=session)
    wall_rate, cpu_rate = _rates(result)
    print(
        f"{master:<12} {n:>10,} messages  {result.wall_seconds:7.1f} s  {wall_rate:8,.0f} "
        f"msg/s wall  {cpu_rate:8,.0f} msg/s task CPU  ({result.tasks} tasks; session start "
        f"and first job {fixed:.0f} s)  failures {result.failure_count}"
    )
    return wall_rate, cpu_rate, fixed


def tree_cpu_seconds() -> float:
    """CPU seconds this process and every process under it (Spark's JVM, its Python
    workers) have used so far, those that ended included; from /proc where there is one,
    else only this process and its children that ended."""
    proc = Path("/proc")
    me = os.getpid()
    if not (proc / str(me) / "stat").is_file():
        own = resource.getrusage(resource.RUSAGE_SELF)
        ended = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime
    children: dict[int, list[int]] = defaultdict(list)
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        pid = int(entry.name)
        children[int(fields[1])].append(pid)
        # utime, stime, and those of its children that ended and were waited for
        times[pid] = sum(int(f) for f in fields[11:15]) / tick
    total, todo = 0.0, [me]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0.0)
        todo += children.get(pid, [])
    return total


def oracle_table(table: Table, n: int, seed: int) -> None:
    """N messages on local[2] without an oracle, with Kafka's, and with every oracle the
    fuzz knows; each on a session of its own, after a first job that warms it up."""
    every = tuple(ORACLES)
    runs: list[tuple[str, tuple[str, ...]]] = [("no oracle", ()), ("--oracle kafka", ("kafka",))]
    if every != ("kafka",):
        runs.append((f"--oracle {','.join(every)}", every))
    warm_n = max(n // 10, 20_000)
    print(
        f"{n:,} messages on local[2] each, after a first job of {warm_n:,} that starts the "
        "session and warms the JVMs up; CPU: the whole process tree (driver, Spark's JVM, "
        "Python workers and, with --oracle kafka, the oracle JVM beside each)"
    )
    kafka_rate = fixed = 0.0
    for label, oracles in runs:
        options = FuzzOptions(seed=seed, oracles=oracles)
        began = time.perf_counter()
        with spark_session("local[2]") as session:
            warm = plan_combos(table, select_apis(table, None), warm_n)
            run_spark(table, warm, options, out=None, spark=session)
            warm_seconds = time.perf_counter() - began
            combos = plan_combos(table, select_apis(table, None), n)
            cpu = tree_cpu_seconds()
            result = run_spark(table, combos, options, out=None, spark=session)
            cpu = tree_cpu_seconds() - cpu
        rate = result.messages / result.wall_seconds
        checks = sum(int(st["kafka_checks"]) for st in result.stats)
        print(
            f"{label:<16} {rate:8,.0f} msg/s  {cpu / result.messages * 1e6:6.0f} us CPU/msg  "
            f"{result.messages / cpu:8,.0f} msg/CPU-s  ({result.wall_seconds:.1f} s, "
            f"{cpu:.0f} CPU-s, load {os.getloadavg()[0]:.1f}; Kafka's answers {checks:,}; "
            f"failures {result.failure_count})"
        )
        if oracles == ("kafka",):
            kafka_rate, fixed = rate, warm_seconds
    if every == ("kafka",):
        print("every oracle     = --oracle kafka (the only oracle the fuzz knows)")
    minutes = (TARGET / kafka_rate + fixed) / 60
    print(
        f"10,000,000 messages with --oracle kafka on local[2] at this rate: {minutes:.1f} min "
        f"including {fixed:.0f} s of session start and first job (target <= 5 min)"
    )


#: The check methods timed by :func:`breakdown`, with the names it prints.
_TIMED = (
    ("_check_json", "JSON form"),
    ("_check_cross", "every other version"),
    ("_check_forward", "unknown tagged fields"),
    ("_check_mutations", "mutations"),
    ("_check_native", "compiled vs pure codecs"),
)


def breakdown(table: Table, n: int, options: FuzzOptions) -> None:
    """Where a message's time goes, check by check: the plain loop with a timer around
    each check (timers cost about a microsecond a call)."""
    combos = plan_combos(table, select_apis(table, None), n)
    run_plain(table, plan_combos(table, select_apis(table, None), 680), options)  # warm-up
    fz = Fuzzer(table, options)
    spent: dict[str, float] = defaultdict(float)
    clock = time.process_time

    def timed(name: str, label: str) -> None:
        inner = getattr(fz, name)

        def wrapper(*args: Any) -> Any:
            began = clock()
            try:
                return inner(*args)
            finally:
                spent[label] += clock() - began

        setattr(fz, name, wrapper)

    for name, label in (*_TIMED, ("check_message", "all checks")):
        timed(name, label)
    began = clock()
    try:
        run_task(table, combos, options, 1, 0, fuzzer=fz)
    finally:
        fz.close()
    total = clock() - began
    checks = spent.pop("all checks")
    rows = [("generating the message", total - checks)]
    rows.append(("round trip (and the loop)", checks - sum(spent.values())))
    rows += [(label, spent[label]) for _, label in _TIMED]
    print(f"where the time goes (plain loop, {n:,} messages, CPU):")
    for label, seconds in rows:
        print(f"  {label:<28} {seconds / n * 1e6:6.1f} us/message  {100 * seconds / total:5.1f}%")
    print(f"  {'total':<28} {total / n * 1e6:6.1f} us/message  ({n / total:,.0f} msg/s CPU)")


def profile(table: Table, n: int, options: FuzzOptions, top: int = 30) -> None:
    combos = plan_combos(table, select_apis(table, None), n)
    run_plain(table, plan_combos(table, select_apis(table, None), 680), options)  # warm-up
    prof = cProfile.Profile()
    prof.enable()
    run_plain(table, combos, options)
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    print(out.getvalue())
    by_file: dict[str, float] = defaultdict(float)
    raw = stats.stats  # type: ignore[attr-defined]
    for (filename, _line, _name), (_cc, _nc, tt, _ct, _callers) in raw.items():
        if "/generated/" in filename:
            key = "generated/* (encoders, decoders, JSON, builders)"
        elif "/runtime/" in filename:
            key = "runtime/" + filename.rsplit("/", 1)[-1]
        elif "/fuzz/" in filename:
            key = "fuzz/" + filename.rsplit("/", 1)[-1]
        elif filename.startswith("~"):
            key = "built-ins (C calls)"
        else:
            key = filename.rsplit("/", 1)[-1]
        by_file[key] += tt
    total = sum(by_file.values())
    print("time by file (own time, profiler on):")
    for key, tt in sorted(by_file.items(), key=lambda kv: -kv[1])[:15]:
        print(f"  {100 * tt / total:5.1f}%  {key}")


def package_table(package: Package, n: int, seed: int) -> int:
    """N messages of the built-in package, then N of ``package``, on one local[2] session:
    job msg/s and task CPU per message side by side, with the ratio; exit status 0."""
    rates = []
    with spark_session("local[2]") as session:
        for pkg in (builtin(), package):
            table = pkg.table
            options = FuzzOptions(seed=seed, package=pkg.name, digest=pkg.id_digest)
            warm = plan_combos(table, select_apis(table, None), 680)
            run_spark(table, warm, options, out=None, spark=session, package=pkg)
            combos = plan_combos(table, select_apis(table, None), n)
            result = run_spark(table, combos, options, out=None, spark=session, package=pkg)
            wall_rate, cpu_rate = _rates(result)
            rates.append((wall_rate, cpu_rate))
            print(
                f"{pkg.label:<40} {n:>9,} messages  {result.wall_seconds:6.1f} s  "
                f"{wall_rate:8,.0f} msg/s  {1e6 / cpu_rate:6.1f} us task CPU/message  "
                f"failures {result.failure_count}"
            )
    (base_wall, base_cpu), (wall, cpu) = rates
    print(
        f"ratio package/built-in: {wall / base_wall:.2f}x msg/s, "
        f"{base_cpu / cpu:.2f}x CPU per message (load average {os.getloadavg()[0]:.1f})"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kafkagen bench fuzz",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--plain", type=int, default=100_000, metavar="N")
    parser.add_argument(
        "--spark",
        type=int,
        default=300_000,
        metavar="N",
        help="messages for each of local[1] and local[2] (0: skip Spark)",
    )
    parser.add_argument(
        "--full",
        type=int,
        default=0,
        metavar="N",
        help="also time a whole local[2] run of N messages, session included",
    )
    parser.add_argument(
        "--profile", type=int, default=0, metavar="N", help="profile the plain loop on N messages"
    )
    parser.add_argument(
        "--oracles",
        type=int,
        default=0,
        metavar="N",
        help="instead: N messages on local[2] without an oracle, with --oracle kafka and "
        "with every oracle, in one run (wall and CPU rates, 10M extrapolated)",
    )
    parser.add_argument(
        "--package",
        metavar="NAME_OR_DIR",
        help="instead: the built-in package and this generated package side by side on "
        "local[2], --spark N messages each",
    )
    parser.add_argument(
        "--specs", action="append", default=[], metavar="DIR", help="as --package, generated"
    )
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.package or args.specs:
        return run_on(
            args.specs or args.package,
            "kafkagen bench fuzz",
            lambda p: package_table(p, args.spark, args.seed),
        )

    table = build_table()
    if args.oracles:
        oracle_table(table, args.oracles, args.seed)
        return 0
    options = FuzzOptions(seed=args.seed)
    n_combos = len(plan_combos(table, select_apis(table, None), 1))
    against = "every other version" if not options.cross else f"{options.cross} other version(s)"
    print(
        f"checks per message: round trip, JSON, written at {against}, forward "
        f"compatibility at flexible versions, {options.mutations} mutation(s); {n_combos} "
        "(API, kind, version) combinations; codecs: "
        + ("compiled accelerator" if native_file() is not None else "pure Python")
    )
    if args.profile:
        breakdown(table, args.profile, options)
        profile(table, args.profile, options)
    plain_wall, plain_cpu = plain(table, args.plain, options) if args.plain else (0.0, 0.0)
    if args.spark:
        one_wall, one_cpu, _ = spark(table, args.spark, "local[1]", options)
        two_wall, two_cpu, fixed = spark(table, args.spark, "local[2]", options)
        if args.plain:
            # Again after Spark: on a shared machine the rate drifts; compare with the mean.
            again_wall, again_cpu = plain(table, args.plain, options)
            plain_wall, plain_cpu = (plain_wall + again_wall) / 2, (plain_cpu + again_cpu) / 2
        if plain_wall:
            print(
                f"Spark's share, one core: plain (mean of both runs)/local[1] = "
                f"{plain_wall / one_wall:.2f}x wall, "
                f"{plain_cpu / one_cpu:.2f}x CPU (target <= 1.25x)"
            )
        print(
            f"two cores over one: local[2]/local[1] = {two_wall / one_wall:.2f}x (target >= 1.8x)"
        )
        if args.plain:
            ceiling = two_plain(args.plain, args.seed)
            print(
                f"the machine's two-core ceiling: two plain processes/one = "
                f"{ceiling / plain_wall:.2f}x; local[2] reaches {two_wall / ceiling:.0%} of it"
            )
        minutes = (TARGET / two_wall + fixed) / 60
        print(
            f"10,000,000 messages on local[2] at this rate: {minutes:.1f} min including "
            f"{fixed:.0f} s of session start and first job (target <= 10 min)"
        )
    if args.full:
        began = time.perf_counter()
        combos = plan_combos(table, select_apis(table, None), args.full)
        result = run_spark(table, combos, options, master="local[2]", out=sys.stderr)
        took = time.perf_counter() - began
        print(
            f"full run: {args.full:,} messages on local[2] in {took / 60:.1f} min end to end "
            f"(job {result.wall_seconds / 60:.1f} min), failures {result.failure_count}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
