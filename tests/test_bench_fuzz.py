"""``kafkagen bench fuzz``'s CPU accounting: the figures on a loaded machine rest on it."""

from __future__ import annotations

import subprocess
import sys
import time

from kafkagen.bench.fuzz import tree_cpu_seconds

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
