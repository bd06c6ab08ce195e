"""``kafkagen bench fuzz``: its CPU accounting (the figures on a loaded machine rest on
it), and the built-in package beside a user package, side by side."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafkagen.bench.fuzz import tree_cpu_seconds
from user_specs import narrow_field, small_specs

#: A child that spins on the CPU for about this long, then waits for its input to end.
SPIN_SECONDS = 0.3
SPIN = (
    "import sys, time\n"
    f"end = time.process_time() + {SPIN_SECONDS}\n"
    "while time.process_time() < end: pass\n"
    "print('spun', flush=True)\n"
    "sys.stdin.read()\n"
)


def test_cpu_of_running_and_ended_descendants_is_counted() -> None:
    """A grandchild still running and a child that ended both count: Spark's JVM and
    its Python workers are such descendants of the bench."""
    before = tree_cpu_seconds()
    # The running one: a child that starts a spinning grandchild and waits on it.
    outer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import subprocess, sys; subprocess.run([sys.executable, '-c', {SPIN!r}])",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert outer.stdout is not None and outer.stdout.readline() == "spun\n"
        running = tree_cpu_seconds() - before
        assert running >= SPIN_SECONDS * 0.9, running
        # The ended one: waited for, its time is in this process's children's totals.
        subprocess.run([sys.executable, "-c", SPIN], input="", capture_output=True, check=True)
        both = tree_cpu_seconds() - before
        assert both >= 2 * SPIN_SECONDS * 0.9, both
    finally:
        assert outer.stdin is not None
        outer.stdin.close()  # the grandchild reads to the end, then both return
        try:
            outer.wait(timeout=30)
        finally:
            outer.kill()


def test_idle_time_is_not_counted() -> None:
    before = tree_cpu_seconds()
    time.sleep(0.5)
    assert tree_cpu_seconds() - before < 0.25


#: One row of ``kafkagen bench fuzz --package``: a package's job rate and task CPU.
ROW = re.compile(
    r"^(?P<label>\S.*?)\s+(?P<n>[\d,]+) messages\s+[\d.]+ s\s+(?P<rate>[\d,]+) msg/s\s+"
    r"(?P<cpu>[\d.]+) us task CPU/message\s+failures (?P<failures>\d+)$",
    re.M,
)
RATIO = re.compile(r"^ratio package/built-in: ([\d.]+)x msg/s, ([\d.]+)x CPU per message", re.M)


@pytest.mark.slow
def test_bench_prints_the_builtin_and_a_user_package_side_by_side(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    specs = small_specs(tmp_path / "specs")
    # Not the built-in specs: FindCoordinator's KeyType narrowed, a package of its own.
    narrow_field(specs / "FindCoordinatorRequest.json", "KeyType", "int16")
    n = 3000
    proc = subprocess.run(
        [sys.executable, "-m", "kafkagen", "bench", "fuzz", "--specs", str(specs),
         "--spark", str(n)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [m.groupdict() for m in ROW.finditer(proc.stdout)]
    assert [r["label"] for r in rows] == ["kafkagen.generated (built-in)", str(specs)], proc.stdout
    assert all(int(r["n"].replace(",", "")) == n and r["failures"] == "0" for r in rows)
    (base_rate, base_cpu), (rate, cpu) = (
        (int(r["rate"].replace(",", "")), float(r["cpu"])) for r in rows
    )
    assert min(base_rate, rate, base_cpu, cpu) > 0
    ratio = RATIO.search(proc.stdout)
    assert ratio, proc.stdout
    # The ratios are those of the rows (to the rows' rounding).
    assert float(ratio[1]) == pytest.approx(rate / base_rate, abs=0.01)
    assert float(ratio[2]) == pytest.approx(cpu / base_cpu, rel=0.01, abs=0.01)


def test_bench_refuses_a_folder_that_is_no_package_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "kafkagen", "bench", "fuzz", "--package", "plain"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "kafkagen bench fuzz: plain: not a kafkagen-generated package "
        "(no GENERATED_BY_KAFKAGEN file) nor a spec folder"
    ]
