"""The fuzz on Spark: local mode, retried tasks, and an injected codec bug found on the
executors and replayed without Spark (the standalone cluster: test_fuzz_cluster.py)."""

from __future__ import annotations

import json
import os
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

from kafkagen.fuzz.checks import INJECT_ENV, FuzzOptions  # noqa: E402
from kafkagen.fuzz.job import Fault, run_plain, run_spark, spark_session  # noqa: E402
from kafkagen.fuzz.plan import plan_combos, select_apis  # noqa: E402
from kafkagen.fuzz.rules import Table, build_table  # noqa: E402

pytestmark = pytest.mark.slow

SMALL = 20_000


@pytest.fixture(scope="module")
def table() -> Table:
    return build_table()


def counts(stats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stats rows without the timing, which differs from run to run."""
    return [{k: v for k, v in s.items() if k != "seconds"} for s in stats]


def read_stats(folder: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    rows = pq.read_table(folder / "stats.parquet").to_pylist()
    return [{k: v for k, v in r.items() if k != "api_name"} for r in rows]


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path, str, str]:
    """``kafkagen fuzz`` on local[1] with 20,000 messages: (exit status, out, stdout, stderr)."""
    out = tmp_path_factory.mktemp("fuzz-local")
    script = (
        "import sys; from kafkagen.fuzz import main; "
        f"sys.exit(main(['--messages', '{SMALL}', '--master', 'local[1]', '--out', r'{out}']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600
    )
    return proc.returncode, out, proc.stdout, proc.stderr


def test_local_fuzz_counts_every_message_once(
    local_run: tuple[int, Path, str, str], table: Table
) -> None:
    status, out, stdout, stderr = local_run
    stats = read_stats(out)
    plan = plan_combos(table, select_apis(table, None), SMALL)
    assert [(s["api"], s["kind"], s["version"], s["messages"]) for s in stats] == [
        (c.api, c.kind, c.version, c.messages) for c in plan
    ]
    assert sum(s["messages"] for s in stats) == SMALL
    failures = sum(s["failures"] for s in stats)
    assert status == (1 if failures else 0), stderr[-2000:]
    assert failures == 0, stdout[-3000:]


def test_local_fuzz_reports_without_spark_noise(local_run: tuple[int, Path, str, str]) -> None:
    status, out, stdout, stderr = local_run
    for name in (
        "stats.parquet",
        "failures.parquet",
        "oracles.parquet",
        "peer_findings.parquet",
        "tasks.parquet",
        "run.json",
        "report.html",
    ):
        assert (out / name).exists(), name
    html = (out / "report.html").read_text()
    assert "<svg" in html and "messages/s per core" in html and "Metadata" in html
    assert json.loads((out / "run.json").read_text())["messages"] == SMALL
    assert "Metadata" in stdout and f"{SMALL:,} messages in" in stdout
    assert "fuzz: " in stderr  # the live status line
    noise = [line for line in stderr.splitlines() if not line.startswith("fuzz: ") and line]
    assert noise == [], noise[:10]


def test_local_tasks_run_the_shipped_package(local_run: tuple[int, Path, str, str]) -> None:
    import pyarrow.parquet as pq

    tasks = pq.read_table(local_run[1] / "tasks.parquet").to_pylist()
    assert tasks and all("kafkagen.zip" in t["origin"] for t in tasks)


def test_shipped_tasks_use_the_accelerator_when_the_driver_does(
    local_run: tuple[int, Path, str, str],
) -> None:
    import pyarrow.parquet as pq
    from kafkagen.fuzz.builders import compiled
    from kafkagen.fuzz.job import native_file

    tasks = pq.read_table(local_run[1] / "tasks.parquet").to_pylist()
    want = "codecs=native" if native_file() is not None else "codecs=python"
    want += " builders=compiled" if compiled is not None else " builders=python"
    assert tasks and all(want in t["origin"] for t in tasks), [t["origin"] for t in tasks]


# ---------------------------------------------------------------- Ctrl-C


def test_ctrl_c_writes_the_finished_tasks_marked_partial_and_exits_130(
    tmp_path: Path,
) -> None:
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it, once some of the
    100 tasks have finished: what finished is written and marked partial, nothing blames
    Java, and the exit status is 130."""
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    command = [
        sys.executable, "-m", "kafkagen", "fuzz", "--messages", "2000000", "--tasks", "100",
        "--master", "local[1]", "--out", str(out),
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    assert proc.stderr is not None
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 400
        # Non-terminal progress comes every 10 s: wait for one showing finished tasks.
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            seen.append(line)
            if line.startswith("fuzz: ") and " tasks 0/" not in line and " done" in line:
                break
        assert any(" done" in s and " tasks 0/" not in s for s in seen), seen[-5:]
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    stderr = "".join(seen) + stderr
    assert proc.returncode == 130, stderr[-3000:]
    assert "interrupted" in stderr and "Java" not in stderr, stderr[-3000:]
    run = json.loads((out / "run.json").read_text())
    assert run["complete"] is False and 0 < run["tasks_finished"] < 100
    tasks = pq.read_table(out / "tasks.parquet")
    stats = pq.read_table(out / "stats.parquet")
    assert stats.schema.metadata[b"kafkagen.complete"] == b"false"
    finished = sum(tasks.column("messages").to_pylist())
    assert sum(stats.column("messages").to_pylist()) == finished == run["messages"]
    assert 0 < finished < 2_000_000 and tasks.num_rows == run["tasks_finished"]
    html = (out / "report.html").read_text()
    assert "kafkagen fuzz (partial)" in html and "interrupted" in html
    assert "PARTIAL: interrupted" in stdout


def test_dev_sh_job_writes_where_the_user_stands(tmp_path: Path) -> None:
    """``bash tools/dev.sh job --out myout`` from another folder: ./myout there."""
    repo = Path(__file__).resolve().parents[1]
    command = [
        "bash", str(repo / "tools" / "dev.sh"), "job", "--messages", "300", "--apis",
        "ApiVersions", "--master", "local[1]", "--out", "myout",
    ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "myout" / "report.html").is_file()
    assert f"results: {tmp_path / 'myout'}/" in proc.stdout
    assert not (repo / "myout").exists()


# ---------------------------------------------------------------- retried tasks


@pytest.fixture(scope="class")
def spark() -> Iterator[Any]:
    # local[N,F]: N cores, F attempts per task, so local mode retries failed tasks.
    with spark_session("local[2,4]") as session:
        yield session


class TestOnRetryingLocalSpark:
    """One local[2,4] session for these tests, stopped when they end."""

    @pytest.mark.parametrize("mode", ["raise", "exit"])
    def test_a_task_that_dies_is_retried_and_counted_once(
        self, spark: Any, table: Table, mode: str
    ) -> None:
        combos = plan_combos(table, select_apis(table, ["Metadata", "Produce", "Fetch"]), 4000)
        options = FuzzOptions(seed=5)
        expected = run_plain(table, combos, options, tasks=4)
        result = run_spark(
            table, combos, options, tasks=4, fault=Fault(task=1, mode=mode), out=None, spark=spark
        )
        assert result.messages == 4000
        assert counts(result.stats) == counts(expected.stats)
        attempts = {t["task"]: t["attempt"] for t in result.task_info}
        assert attempts == {0: 0, 1: 1, 2: 0, 3: 0}  # task 1's output is its second attempt's

    def test_an_injected_bug_is_found_on_executors_and_replays_without_spark(
        self, spark: Any, table: Table, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        combos = plan_combos(table, select_apis(table, ["Metadata"]), 3000)
        monkeypatch.setenv(INJECT_ENV, "3:response:5")
        result = run_spark(table, combos, FuzzOptions(seed=8), out=None, spark=spark)
        responses = [f for f in result.failures if f["kind"] == "response"]
        assert responses and all("injected bug" in f["error"] for f in responses)
        assert {f["version"] for f in responses if f["check"] == "roundtrip"} == {5}
        fid = next(f["id"] for f in responses if f["check"] == "roundtrip")

        replay = [sys.executable, "-m", "kafkagen.fuzz", "--replay", fid]
        env = {**os.environ, INJECT_ENV: "3:response:5"}
        proc = subprocess.run(replay, capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 1, proc.stderr
        assert "injected bug in MetadataResponse v5" in proc.stdout
        env.pop(INJECT_ENV)
        proc = subprocess.run(replay, capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0 and "no failure" in proc.stdout
