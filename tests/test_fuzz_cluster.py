"""``kafkagen fuzz --oracle kafka`` on a Spark standalone cluster of two workers: the
package and Kafka's jars ship themselves, the counts equal local[2]'s for the same seed,
and a worker killed mid-run (with its executor) loses no message and counts none twice.
A user package (``--specs``) ships itself too, fuzzed and in a compatibility run
(``--against``), with the counts of local[2].

One cluster serves every test but the kill, which runs first on a cluster of its own."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from spark_cluster import Cluster, standalone_cluster  # noqa: E402
from user_specs import add_field, narrow_field, small_specs  # noqa: E402

pytestmark = pytest.mark.slow

SEED = 13
MESSAGES = 30_000
#: Enough tasks that a worker killed once some have finished still has others running.
TASKS = 24
STATUS = re.compile(r"tasks (\d+)/(\d+) done, (\d+) running")


def fuzz_command(master: str, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "kafkagen", "fuzz", "--oracle", "kafka", "--seed", str(SEED),
        "--messages", str(MESSAGES), "--tasks", str(TASKS), "--master", master,
        "--out", str(out),
    ]  # fmt: skip


def counts(out: Path, name: str = "stats.parquet") -> list[dict[str, Any]]:
    """Every count of a run per (API, kind, version): messages, checks, skipped and the
    oracle's answers, failures by check; timings (``seconds``, each oracle's
    ``*_seconds``) left out."""
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    rows = pq.read_table(out / name).to_pylist()
    return [{k: v for k, v in r.items() if not k.endswith("seconds")} for r in rows]


def tasks_of(out: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = pq.read_table(out / "tasks.parquet").to_pylist()
    return rows


def finished_whole(out: Path) -> dict[str, Any]:
    """run.json of a run that must have finished every task, each exactly once."""
    run: dict[str, Any] = json.loads((out / "run.json").read_text())
    assert run["complete"] is True and run["tasks"] == run["tasks_finished"] == TASKS, run
    assert sorted(t["task"] for t in tasks_of(out)) == list(range(TASKS))
    assert run["messages"] == MESSAGES
    return run


@pytest.fixture(scope="module")
def local_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference: the same seed on local[2]."""
    out = tmp_path_factory.mktemp("local2") / "out"
    began = time.monotonic()
    proc = subprocess.run(
        fuzz_command("local[2]", out), capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    print(f"local[2]: {time.monotonic() - began:.1f} s")
    finished_whole(out)
    return out


def read_status(fd: int, proc: subprocess.Popen[bytes], seconds: float) -> Iterator[str]:
    """The fuzz's status line, each time it is redrawn: the run's stderr is a terminal
    here (a pty), where the line is redrawn every half second (every 10 s otherwise).
    Reads until the run ends, so its output never blocks it; bounded by ``seconds``."""
    deadline, pending = time.monotonic() + seconds, b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            if proc.poll() is not None:
                return
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the run closed the terminal: it ended
            return
        if not chunk:
            return
        *lines, pending = re.split(rb"[\r\n]", pending + chunk)
        for line in lines:
            yield line.replace(b"\x1b[K", b"").decode(errors="replace")
    raise TimeoutError(f"the fuzz run did not end within {seconds:.0f} s")


def test_a_worker_killed_mid_run_loses_no_message_and_counts_none_twice(
    local_out: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    seen: list[str] = []
    killed_at = None
    with standalone_cluster(tmp_path / "cluster") as cluster:
        began = time.monotonic()
        terminal, their_end = pty.openpty()
        with open(tmp_path / "stdout.txt", "wb") as stdout:
            proc = subprocess.Popen(
                fuzz_command(cluster.url, out),
                stdout=stdout,
                stderr=their_end,
                start_new_session=True,
            )
        os.close(their_end)
        try:
            for line in read_status(terminal, proc, 900):
                seen.append(line)
                m = STATUS.search(line)
                # Kill once some tasks have finished and others run, with more to come.
                if killed_at is None and m and int(m[1]) >= 1 and int(m[3]) >= 1:
                    if int(m[1]) + int(m[3]) < TASKS:
                        cluster.kill_worker(0)
                        killed_at = line.strip()
            proc.wait(timeout=60)
        finally:
            os.close(terminal)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        took = time.monotonic() - began
        alive = int(cluster.status()["aliveworkers"])
    log = "\n".join(seen[-20:]) + (tmp_path / "stdout.txt").read_text()[-3000:]
    assert killed_at is not None, log
    retried = [t["task"] for t in tasks_of(out) if t["attempt"] > 0]
    print(f"killed worker 0 at: {killed_at}; run {took:.1f} s; tasks run again: {retried}")
    assert proc.returncode == 0, log
    assert alive == 1  # the master saw the worker go
    finished_whole(out)
    assert counts(out) == counts(local_out)  # nothing lost, nothing counted twice
    # The kill caught tasks running: they ran again, on the other worker's executor.
    assert retried, "no task was running on the killed worker"


def test_the_cluster_ships_everything_and_counts_what_local_spark_counts(
    cluster: Cluster, local_out: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    proc = run_timed("built-in on the cluster", fuzz_command(cluster.url, out))
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    run = finished_whole(out)
    assert run["master"] == cluster.url
    mine, reference = counts(out), counts(local_out)
    assert sum(r["kafka_checks"] for r in mine) > 0  # Kafka answered on the executors
    assert mine == reference
    on_both_executors(out, "kafkagen.zip")  # shipped, not installed


def on_both_executors(out: Path, shipped: str) -> None:
    """Every task ran from the zip named ``shipped``, and both workers' executors took
    tasks: the Python workers' ids differ between them."""
    origins = [t["origin"] for t in tasks_of(out)]
    assert all(shipped in o for o in origins), origins[:3]
    pids = {re.search(r"pid=(\d+)", o).group(1) for o in origins}  # type: ignore[union-attr]
    assert len(pids) >= 2, origins


def run_timed(what: str, command: list[str]) -> subprocess.CompletedProcess[str]:
    began = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True, timeout=900)
    print(f"{what}: {time.monotonic() - began:.1f} s")
    return proc


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The cluster every test but the kill shares: one start-up for all of them."""
    began = time.monotonic()
    with standalone_cluster(tmp_path_factory.mktemp("cluster")) as started:
        print(f"cluster start {time.monotonic() - began:.1f} s")
        yield started


@pytest.fixture(scope="module")
def user_specs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(new, old): a small spec folder, and a copy changed so it is no longer Kafka's: a
    new tagged field in FindCoordinator request v3+ (compatible) and the response's Port
    narrowed to int16 (incompatible; a top-level field of v0-3 only)."""
    base = tmp_path_factory.mktemp("specs")
    old, new = small_specs(base / "old"), small_specs(base / "new")
    add_field(
        new / "FindCoordinatorRequest.json",
        {"name": "Hint", "type": "string", "versions": "3+", "taggedVersions": "3+", "tag": 0},
    )
    narrow_field(new / "FindCoordinatorResponse.json", "Port", "int16")
    return new, old


#: The (kind, version) of FindCoordinator the user specs changed: not Kafka's to judge.
CHANGED = {("request", v) for v in range(3, 7)} | {("response", v) for v in range(4)}
USER_MESSAGES = 4000
USER_TASKS = 8


def on_cluster_and_local(
    cluster: Cluster, tmp_path: Path, status: int, *args: str
) -> dict[str, Path]:
    """``kafkagen fuzz ARGS`` of the user specs' size on the cluster, then on local[2] with
    the same seed, each ending with ``status``: their output folders by name."""
    runs = {}
    for master, name in ((cluster.url, "cluster"), ("local[2]", "local")):
        out = tmp_path / name
        proc = run_timed(
            f"{' '.join(args)} on {name}",
            [
                sys.executable,
                "-m",
                "kafkagen",
                "fuzz",
                *args,
                "--seed",
                str(SEED),
                "--messages",
                str(USER_MESSAGES),
                "--tasks",
                str(USER_TASKS),
                "--master",
                master,
                "--out",
                str(out),
            ],  # fmt: skip
        )
        assert proc.returncode == status, proc.stderr[-3000:] + proc.stdout[-3000:]
        runs[name] = out
    return runs


def test_a_user_package_ships_itself_and_counts_what_local_spark_counts(
    cluster: Cluster, user_specs: tuple[Path, Path], tmp_path: Path
) -> None:
    new, _old = user_specs
    runs = on_cluster_and_local(cluster, tmp_path, 0, "--oracle", "kafka", "--specs", str(new))
    run = json.loads((runs["cluster"] / "run.json").read_text())
    assert run["master"] == cluster.url and run["messages"] == USER_MESSAGES
    assert run["package"]["specs"] == [str(new)]
    mine = counts(runs["cluster"])
    assert mine == counts(runs["local"])
    on_both_executors(runs["cluster"], f"{run['package']['import_name']}.zip")
    # Kafka judged the versions whose schema is still its own, and only those.
    for r in mine:
        changed = r["api"] == 10 and (r["kind"], r["version"]) in CHANGED
        assert (r["kafka_checks"] == 0) == changed, r
        assert (r["kafka_skipped"] > 0) == changed, r
    assert {(r["kind"], r["version"]) for r in mine if r["kafka_skipped"]} == CHANGED


def test_a_compatibility_run_on_the_cluster_counts_what_local_spark_counts(
    cluster: Cluster, user_specs: tuple[Path, Path], tmp_path: Path
) -> None:
    new, old = user_specs
    runs = on_cluster_and_local(cluster, tmp_path, 1, "--specs", str(new), "--against", str(old))
    run = json.loads((runs["cluster"] / "run.json").read_text())
    assert run["master"] == cluster.url and run["tasks"] == USER_TASKS
    assert run["messages"] == 2 * USER_MESSAGES  # each message written by one side
    assert run["failures"] > 0 and run["unknown_tag_round_trips"] > 0
    assert counts(runs["cluster"]) == counts(runs["local"])
    differences = counts(runs["cluster"], "differences.parquet")
    assert differences == counts(runs["local"], "differences.parquet")
    assert {(d["kind"], d["version"]) for d in differences if d["what"] == "failure"} == {
        ("response", v) for v in range(4)
    }
