"""Where ``kafkagen serve`` spends its CPU on produced and fetched bytes.

Starts ``kafkagen serve --brokers 3`` in a child process under cProfile, timed with the
process's CPU clock (``time.process_time``) so that other work on a shared machine moves the
figures little; creates a topic of three partitions with three replicas; sends
``--records`` 1 KiB records with confluent-kafka (librdkafka) at acks=1 and again at
acks=all (linger 5 ms, 1 MiB batches, as ``kafkagen bench kafka`` does), consumes all of
them, and stops the server. Then prints the server's CPU per request, per batch and per
record on the produce and fetch paths, and the functions with the most own time.

``--compare`` runs twice, first with the records of produced batches read in Python (the
accelerator's record scan switched off in the child), then as shipped, and prints both
with the ratio. Every wait is bounded.

Run: kafkagen bench profile [--records N] [--compare] [--top N] [--save DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import kafka as bench_kafka

__all__ = ["main"]

#: (label, source file, function): the places a produced or fetched byte goes through.
PLACES = (
    ("Produce requests, whole handler", "api_00_produce.py", "handle"),
    ("  leader append", "partition.py", "append_as_leader"),
    ("    batch validation", "records.py", "validate_batch_for_append"),
    ("      records read in Python", "records.py", "_parse_records"),
    ("CRC32C checks, leader and followers", "records.py", "ensure_valid"),
    ("followers' fetches of the leader", "replica_fetcher.py", "_fetch"),
    ("  follower append", "partition.py", "append_as_follower"),
    ("Fetch requests (consumers), handler", "api_01_fetch.py", "handle"),
    ("reading requests from sockets", "server.py", "read"),
    ("  receiving bytes", "server.py", "buffer_updated"),
    ("writing responses to sockets", "server.py", "send"),
)
LIMIT_S = 300.0


def serve_profiled(out: str, port: int, python_records: bool) -> None:
    """The child: serve three brokers under cProfile until SIGINT, then write the stats."""
    if python_records:
        from kafkagen.runtime import records

        records._native = None  # type: ignore[attr-defined]
    from kafkagen.cli.serve import main as serve

    prof = cProfile.Profile(time.process_time)
    prof.enable()
    try:
        serve(
            [
                "--brokers",
                "3",
                "--port",
                str(port),
                "--config",
                "group.initial.rebalance.delay.ms=0",
            ]
        )
    finally:
        prof.disable()
        prof.dump_stats(out)


@dataclass
class Run:
    label: str
    produced: int
    stats: Any  # pstats' table: (file, line, function) -> (cc, calls, own, cumulative, callers)
    rates: dict[str, float]  # client-side records per second, for the record

    @property
    def total(self) -> float:
        return sum(v[2] for v in self.stats.values())

    def place(self, filename: str, function: str) -> tuple[int, float]:
        """(calls, cumulative CPU seconds) of the functions of that name in that file."""
        calls, cum = 0, 0.0
        for (file, _line, func), (_cc, n, _own, c, _callers) in self.stats.items():
            if func == function and Path(file).name == filename:
                calls, cum = calls + n, cum + c
        return calls, cum


def profile_once(records: int, python_records: bool, save: Path | None, say: Any) -> Run:
    label = "records read in Python" if python_records else "as shipped"
    with tempfile.TemporaryDirectory() as tmp:
        out = str((save or Path(tmp)) / f"serve-{'python' if python_records else 'native'}.prof")
        port = bench_kafka._free_ports_from(3)
        child = [sys.executable, "-m", "kafkagen.bench.profile", "--child", out, str(port)]
        proc = subprocess.Popen(
            child + (["--python-records"] if python_records else []),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=bench_kafka._BYTECODE_ENV,  # compiling the sources is not serving
        )
        try:
            bench_kafka._wait_metadata(port, 3, time.monotonic(), proc)
            bootstrap = ",".join(f"127.0.0.1:{port + i}" for i in range(3))
            bench_kafka._create_topic(bootstrap, replicas=3)
            say(f"{label}: producing {records} records twice, then consuming them ...")
            rates = {
                "produce acks=1": bench_kafka.produce_confluent(bootstrap, records, "1")[0],
                "produce acks=all": bench_kafka.produce_confluent(bootstrap, records, "all")[0],
                "consume": bench_kafka.consume_confluent(bootstrap, 2 * records)[0],
            }
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(LIMIT_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        if not Path(out).exists():
            raise RuntimeError(
                f"the profiled server wrote no statistics (status {proc.returncode})"
            )
        stats: Any = pstats.Stats(out).stats  # type: ignore[attr-defined]
    return Run(label, 2 * records, stats, rates)


def report(run: Run, top: int) -> list[str]:
    total = run.total
    lines = [
        f"\n{run.label}: {run.produced:,} records of 1 KiB produced (acks=1, acks=all), "
        f"then consumed; the server's CPU: {total:.2f} s "
        f"({total / run.produced * 1e6:.1f} us per produced record, start-up included)",
        f"  {'':<42} {'calls':>7} {'CPU s':>7} {'share':>6} {'us/call':>9} {'us/record':>9}",
    ]
    for label, filename, function in PLACES:
        calls, cum = run.place(filename, function)
        per_call = cum / calls * 1e6 if calls else 0.0
        lines.append(
            f"  {label:<42} {calls:>7,} {cum:>7.3f} {100 * cum / total:>5.1f}% "
            f"{per_call:>9,.1f} {cum / run.produced * 1e6:>9.2f}"
        )
    lines.append(f"  the {top} functions with the most own CPU:")
    ranked = sorted(run.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    for (file, line, func), (_cc, calls, own, _cum, _callers) in ranked:
        where = "builtin" if file == "~" else f"{Path(file).name}:{line}"
        lines.append(f"  {100 * own / total:5.1f}% {own:7.3f} s {calls:>9,}  {func} ({where})")
    lines.append(
        "  client rates (records/s, noisy on a shared machine): "
        + ", ".join(f"{k} {v:,.0f}" for k, v in run.rates.items())
    )
    return lines


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kafkagen bench profile",
        description="Profile kafkagen serve's CPU per request, batch and record under "
        "confluent-kafka produce and consume load.",
    )
    parser.add_argument("--records", type=int, default=100_000, help="records per produce run")
    parser.add_argument(
        "--compare",
        action="store_true",
        help="also run with produced records read in Python, and print the ratio",
    )
    parser.add_argument("--top", type=int, default=12, help="functions listed by own CPU")
    parser.add_argument("--save", metavar="DIR", help="keep the cProfile statistics in DIR")
    parser.add_argument("--child", nargs=2, metavar=("OUT", "PORT"), help=argparse.SUPPRESS)
    parser.add_argument("--python-records", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        serve_profiled(args.child[0], int(args.child[1]), args.python_records)
        return 0
    if args.records < 1 or args.top < 0:
        parser.error("--records must be at least 1 and --top not negative")
    save = Path(args.save) if args.save else None
    if save:
        save.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load = os.getloadavg()[0]
    runs = [profile_once(args.records, True, save, say)] if args.compare else []
    runs.append(profile_once(args.records, False, save, say))
    print(f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    for run in runs:
        print("\n".join(report(run, args.top)))
    if args.compare:
        before, after = runs
        print(
            f"\nserver CPU per produced record: {before.total / before.produced * 1e6:.1f} us "
            f"with records read in Python, {after.total / after.produced * 1e6:.1f} us as "
            f"shipped: {before.total / after.total:.2f}x less"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
