"""Run the scenarios against two brokers, and read and write the conformance report."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from .core import SCENARIOS, Result, Scenario, Session, Step, Target, choose_versions, compare_runs
from .core import new_prefix as _new_prefix

__all__ = ["exit_status", "load_documented", "run_suite", "summary", "table", "warm_up"]

#: How long one scenario may take on one broker.
SCENARIO_TIMEOUT_S = 90.0


def _load_scenarios() -> None:
    # Importing a scenario module registers its scenarios.
    from . import (  # noqa: F401
        admin_scenarios,
        every_api,
        group_scenarios,
        produce_fetch_scenarios,
        share_scenarios,
        streams_scenarios,
        txn_scenarios,
    )


def all_scenarios() -> list[Scenario]:
    _load_scenarios()
    return list(SCENARIOS.values())


async def _run_on(sc: Scenario, session: Session) -> list[Step]:
    try:
        async with asyncio.timeout(SCENARIO_TIMEOUT_S):
            await sc.run(session)
    except TimeoutError:
        session.note("scenario", {"stopped": f"not finished in {SCENARIO_TIMEOUT_S:.0f} s"})
    except Exception as e:  # a broken step must show as a difference, not stop the run
        session.note("scenario", {"stopped": f"{type(e).__name__}: {e}"})
    return session.steps


async def warm_up(target: Target) -> None:
    """Make the internal topics exist (they are created on first use) and their
    coordinators loaded, so that what comes next does not depend on who came first."""
    s = Session(target, "kafkagen-conformance-warm-up", {}, sorted(target.nodes))
    await s.coordinator("kafkagen-conformance-warm-up", 0)
    await s.coordinator("kafkagen-conformance-warm-up", 1)


async def run_suite(
    bootstrap: str,
    reference: str,
    *,
    only: Iterable[str] = (),
    versions: Mapping[int, int] | None = None,
    on_result: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Every scenario (or those whose name contains one of ``only``) against both."""
    scenarios = [s for s in all_scenarios() if not only or any(part in s.name for part in only)]
    a, b = Target(bootstrap), Target(reference)
    try:
        await asyncio.gather(a.open(), b.open())
        # The internal topics are created on first use; make them exist on both first, so
        # no scenario depends on whether an earlier one created them.
        await asyncio.gather(warm_up(a), warm_up(b))
        chosen = choose_versions([a, b], versions)
        prefix = _new_prefix()
        brokers = min(len(a.nodes), len(b.nodes))
        results = []
        for i, sc in enumerate(scenarios):
            if sc.brokers > brokers:
                result = Result(sc, "skipped", f"needs {sc.brokers} brokers")
            else:
                name = f"{prefix}-{i}"
                sa = Session(a, name, chosen, sorted(a.nodes))
                sb = Session(b, name, chosen, sorted(b.nodes))
                steps_a, steps_b = await asyncio.gather(_run_on(sc, sa), _run_on(sc, sb))
                result = compare_runs(sc, steps_a, steps_b)
            results.append(result)
            if on_result is not None:
                on_result(result)
        return results
    finally:
        await asyncio.gather(a.close(), b.close())


# ---------------------------------------------------------------------- the report

_DOC_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*(.+?)\s*\|\s*$")


def load_documented(path: Path) -> dict[str, str]:
    """Scenario name -> reason, from the table rows of ``docs/conformance.md`` that start
    with a scenario name in backquotes."""
    documented: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = _DOC_ROW.match(line)
        if m and "/" in m.group(1):
            documented[m.group(1)] = m.group(2)
    return documented


def status(result: Result, documented: Mapping[str, str]) -> str:
    """``agree``, ``documented``, ``open``, ``error`` (the scenario stopped on a broker)
    or ``skipped``."""
    if result.stopped:
        return "error"
    if result.status == "differ":
        return "documented" if result.scenario.name in documented else "open"
    return result.status


def exit_status(results: Iterable[Result], documented: Mapping[str, str]) -> int:
    """The command's exit status: 0 when every scenario agrees, is skipped or differs as
    documented; 1 when one differs without being documented, or stopped."""
    return 1 if any(status(r, documented) in ("open", "error") for r in results) else 0


def table(results: list[Result], documented: Mapping[str, str]) -> str:
    width = max([len(r.scenario.name) for r in results] + [8])
    lines = [f"{'scenario':<{width}}  {'status':<10}  first difference", "-" * (width + 40)]
    for r in results:
        lines.append(f"{r.scenario.name:<{width}}  {status(r, documented):<10}  {r.detail}")
    return "\n".join(lines)


def summary(results: list[Result], documented: Mapping[str, str]) -> str:
    ran = [r for r in results if r.status != "skipped"]
    counts = {
        k: sum(status(r, documented) == k for r in ran)
        for k in ("agree", "documented", "open", "error")
    }
    skipped = len(results) - len(ran)
    parts = [f"{counts[k]} {k}" for k in ("agree", "documented", "open")]
    if counts["error"]:
        parts.append(f"{counts['error']} stopped with an error")
    if skipped:
        parts.append(f"{skipped} skipped")
    return (
        ", ".join(parts)
        + f"\nconformance: {counts['agree']}/{len(ran)} scenarios agree with the reference"
    )
