"""Hypothesis profiles and the run's seed, a pytest plugin of the suite (``conftest.py``
loads it).

"dev" explores new examples on every run and keeps failures in the example database; "ci"
(chosen when the CI environment variable is set) keeps no database. Under CI every run
draws a fresh seed, unless ``--hypothesis-seed`` names one or ``KAFKAGEN_HYPOTHESIS_SEED``
pins one: a failure that shows only on some seeds can then be found in CI, and the seed,
printed in the header, the summary and every failure Hypothesis took part in, reproduces it
with ``--hypothesis-seed=N`` on any machine (a forced seed also bypasses the database).
Tests choose their own max_examples; the profile sets only how examples are found.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Generator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import HealthCheck, core, settings

# Both from Hypothesis' "default" profile, with derandomize off: under CI Hypothesis loads
# its own "ci" profile at import, which derandomizes, and a derandomized run ignores any seed.
_COMMON: dict[str, Any] = dict(
    parent=settings.get_profile("default"),
    derandomize=False,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile("dev", **_COMMON)
settings.register_profile("ci", database=None, **_COMMON)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
SEED_VARIABLE = "KAFKAGEN_HYPOTHESIS_SEED"


@pytest.hookimpl(trylast=True)  # after Hypothesis' plugin has read --hypothesis-seed
def pytest_configure(config: pytest.Config) -> None:
    if core.global_force_seed is None and os.environ.get("CI"):
        pinned = os.environ.get(SEED_VARIABLE, "")
        try:
            seed = int(pinned) if pinned else secrets.randbelow(1_000_000)
        except ValueError:
            raise pytest.UsageError(f"{SEED_VARIABLE}={pinned!r} is not a whole number") from None
        # pytest-xdist workers inherit the environment: the whole run uses one seed.
        os.environ[SEED_VARIABLE] = str(seed)
        core.global_force_seed = seed  # type: ignore[assignment]


def _seed_line() -> str | None:
    seed = core.global_force_seed
    if seed is None:
        return None
    return f"hypothesis seed {seed}: reproduce with --hypothesis-seed={seed}"


def pytest_report_header() -> str | None:
    return _seed_line()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    line = _seed_line()
    if line is not None:
        terminalreporter.write_line(line)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    through = _through_hypothesis(call)  # before pytest prunes the traceback for its report
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    line = _seed_line()
    if line is not None and report.failed and through:
        report.sections.append(("Hypothesis", f"{line} {item.nodeid}"))


def _through_hypothesis(call: pytest.CallInfo[None]) -> bool:
    """Whether the failure came out of a Hypothesis run (a test or a state machine)."""
    if call.excinfo is None:
        return False
    package = Path(hypothesis.__file__).parent
    return any(Path(entry.path).is_relative_to(package) for entry in call.excinfo.traceback)
