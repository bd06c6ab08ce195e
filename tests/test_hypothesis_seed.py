"""CI's Hypothesis seed: fresh each run, printed, and enough to reproduce a failure.

Each case runs pytest in a subprocess on a small property whose failure depends on the
seed, with the suite's ``hypothesis_seed`` plugin, as CI would (``CI=1``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis_seed import SEED_VARIABLE

TESTS = Path(__file__).parent

PROPERTY = """
import json, os
from hypothesis import Phase, given, settings, strategies as st

@settings(max_examples=20, phases=[Phase.generate])
@given(st.integers(0, 10**9))
def test_small(n):
    with open(os.environ["DRAWN"], "a") as out:
        out.write(json.dumps(n) + "\\n")
    assert n < 1000
"""


def _run(tmp_path: Path, name: str, *args: str, ci: bool) -> tuple[str, list[int]]:
    """pytest's output and the values the property drew."""
    drawn = tmp_path / f"{name}.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("CI", SEED_VARIABLE)}
    env.update(DRAWN=str(drawn), PYTHONPATH=str(TESTS))
    if ci:
        env["CI"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "hypothesis_seed", "-p", "no:kafkagen"]
        + ["-p", "no:cacheprovider", "-q", "test_property.py", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # the property fails
    values = [json.loads(line) for line in drawn.read_text().splitlines()]
    return done.stdout, values


def _seed(output: str) -> int:
    found = set(re.findall(r"hypothesis seed (\d+): reproduce with --hypothesis-seed=\1", output))
    assert len(found) == 1, output
    return int(found.pop())


@pytest.mark.slow  # three pytest processes
def test_ci_draws_a_fresh_printed_seed_that_reproduces_the_failure(tmp_path: Path) -> None:
    (tmp_path / "test_property.py").write_text(PROPERTY)
    first, drawn = _run(tmp_path, "first", ci=True)
    seed = _seed(first)
    # The failure itself says how to reproduce it, naming the test.
    assert f"--hypothesis-seed={seed} test_property.py::test_small" in first
    second, _ = _run(tmp_path, "second", ci=True)
    assert _seed(second) != seed
    # The seed alone, outside CI, replays the same examples to the same failure.
    again, replayed = _run(tmp_path, "again", f"--hypothesis-seed={seed}", ci=False)
    assert replayed == drawn
    assert drawn[-1] >= 1000 and f"assert {drawn[-1]} < 1000" in again
