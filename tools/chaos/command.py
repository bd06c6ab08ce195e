"""``kafkagen chaos``: a fault campaign against a cluster, then the history checked."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from .campaign import SERVE_CONFIGS, Campaign, ControlFaults, Faults, ProcessFaults
from .checker import check
from .requests import RequestStats, send_random_requests

__all__ = ["add_arguments", "run"]

#: Seconds the broker gets after the run before its memory and files are counted again.
SETTLE_S = 5.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "Exit status: 0 when the history holds no anomaly, 1 when it does, a client "
        "stopped on an error or a random request hung or got an answer that does not "
        "decode, 2 when the cluster could not be started or reached."
    )
    parser.add_argument(
        "--duration", type=float, default=60.0, metavar="S", help="seconds of campaign (60)"
    )
    parser.add_argument("--seed", type=int, default=0, help="the fault schedule's seed (0)")
    parser.add_argument(
        "--kafka",
        action="store_true",
        help="run against Apache Kafka 4.4.0 with three nodes (faults: SIGSTOP/SIGCONT, "
        "SIGKILL and restart) instead of kafkagen serve --brokers 3",
    )
    parser.add_argument("--no-faults", action="store_true", help="the same clients, without faults")
    parser.add_argument(
        "--history", type=Path, metavar="FILE", help="also write the history here (JSON lines)"
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=3,
        help="partitions of each topic (3); the transactional workers share those of the "
        "first, so more partitions keep more of them busy",
    )
    parser.add_argument("--producers", type=int, default=2, help="idempotent producers (2)")
    parser.add_argument(
        "--transactional", type=int, default=2, help="consume-transform-produce workers (2)"
    )
    parser.add_argument(
        "--consumers", type=int, default=2, help="consumers per isolation level (2)"
    )
    parser.add_argument(
        "--requests",
        type=int,
        default=0,
        metavar="N",
        help="also send up to N random requests, a quarter of them corrupted, over 8 "
        "connections while the clients run (kafkagen.chaos.requests)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        metavar="N",
        help="writes per second of each producer (default: as fast as they are acknowledged)",
    )
    parser.add_argument(
        "--log-dir",
        type=Path,
        metavar="DIR",
        help="kafkagen serve keeps its logs in DIR (an empty or new directory), so the "
        "campaign also runs through the log directories' writes (default: in memory)",
    )


def run(args: argparse.Namespace) -> int:
    # A SIGTERM unwinds like Ctrl-C, so the cluster started here goes with the campaign.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.partitions < 1:
        print(f"kafkagen chaos: --partitions {args.partitions}: needs at least 1", file=sys.stderr)
        return 2
    if args.log_dir is not None and (args.kafka or _not_empty(args.log_dir)):
        why = "is for kafkagen serve" if args.kafka else "must be empty or new"
        print(f"kafkagen chaos: --log-dir {args.log_dir}: {why}", file=sys.stderr)
        return 2
    requests: RequestStats | None = None
    campaign: Campaign | None = None
    try:
        with _cluster(args.kafka, args.partitions, args.log_dir) as (bootstrap, faults, pid):
            campaign = Campaign(
                bootstrap,
                duration=args.duration,
                seed=args.seed,
                partitions=args.partitions,
                producers=args.producers,
                transactional=args.transactional,
                consumers=args.consumers,
                rate=args.rate,
                faults=None if args.no_faults else faults,
            )
            started = time.monotonic()
            before = _usage(pid)
            if args.requests:
                with ThreadPoolExecutor(1) as pool:
                    sending = pool.submit(
                        asyncio.run,
                        send_random_requests(
                            bootstrap, count=args.requests, seconds=args.duration, seed=args.seed
                        ),
                    )
                    history = campaign.run()
                    requests = sending.result()
            else:
                history = campaign.run()
            took = time.monotonic() - started
            time.sleep(SETTLE_S)
            after = _usage(pid)
    except (OSError, RuntimeError) as e:
        print(f"kafkagen chaos: {e}", file=sys.stderr)
        if campaign is not None and args.history is not None:
            # What was recorded before the stop is kept, for reading what happened.
            campaign.recorder.history().dump(args.history)
            print(f"kafkagen chaos: the history so far is in {args.history}", file=sys.stderr)
        return 2
    if args.history is not None:
        history.dump(args.history)
    report = check(history)
    where = "Apache Kafka 4.4.0, 3 nodes" if args.kafka else "kafkagen serve --brokers 3"
    if args.log_dir is not None:
        where += f" --log-dir {args.log_dir}"
    print(f"campaign: {where}, {took:.0f} s, seed {args.seed}")
    print(f"faults: {len(campaign.faults_done)}")
    for what in campaign.faults_done:
        print(f"    {what}")
    hung = sum(1 for op in history.completed if str(op.value.get("error", "")).startswith("hung"))
    if hung:
        print(f"transactions abandoned on a client call that never returned: {hung}")
    if requests is not None:
        print(requests.render())
    if before and after:
        print(
            f"broker process: resident memory {before[0] / 2**20:.0f} MiB before, "
            f"{after[0] / 2**20:.0f} MiB after; open files {before[1]} before, {after[1]} after"
        )
    print(report.render())
    for error in campaign.errors:
        print(f"client stopped: {error}")
    failed = not report.valid or campaign.errors or (requests is not None and requests.failures)
    return 1 if failed else 0


def _usage(pid: int | None) -> tuple[int, int] | None:
    """Resident bytes and open file descriptors of a process (Linux), or None."""
    if pid is None:
        return None
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        rss = next(
            int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:")
        )
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration):
        return None


def _not_empty(path: Path) -> bool:
    return path.exists() and (not path.is_dir() or any(path.iterdir()))


@contextmanager
def _cluster(
    kafka: bool, partitions: int, log_dir: Path | None = None
) -> Iterator[tuple[str, Faults, int | None]]:
    if kafka:
        from kafkagen.reference import KafkaReference

        with KafkaReference(nodes=3) as ref:
            yield ref.bootstrap, ProcessFaults(ref.pids, ref.restart), None
        return
    configs = [*SERVE_CONFIGS, f"log.dirs={log_dir}"] if log_dir is not None else SERVE_CONFIGS
    with _serve(3, configs=configs) as (bootstrap, control, pid):
        faults = ControlFaults(control, range(3), Campaign.topic_names("chaos"), partitions)
        yield bootstrap, faults, pid


@contextmanager
def _serve(
    brokers: int,
    startup: float = 60.0,
    configs: Sequence[str] = SERVE_CONFIGS,
    env: Mapping[str, str] | None = None,
) -> Iterator[tuple[str, str, int]]:
    """``kafkagen serve`` with its control API, in a process of its own (the clients'
    threads and the brokers do not share an interpreter); ``env`` adds to its
    environment."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafkagen.cli.serve",
            "--brokers",
            str(brokers),
            "--port",
            "0",
            "--control-port",
            "0",
            *(arg for config in configs for arg in ("--config", config)),
        ],
        env=None if env is None else {**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        bootstrap = control = ""
        deadline = time.monotonic() + startup
        assert proc.stdout is not None
        while not (bootstrap and control) and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if m := re.search(r"bootstrap servers: (\S+)", line):
                bootstrap = m.group(1)
            if m := re.search(r"control API: (\S+)", line):
                control = m.group(1)
        if not (bootstrap and control):
            raise RuntimeError(f"kafkagen serve did not start (exit status {proc.poll()})")
        yield bootstrap, control, proc.pid
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
