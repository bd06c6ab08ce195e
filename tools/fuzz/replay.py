"""Replay one failure in this process, without Spark: ``kafkagen fuzz --replay ID``.

The id (``SEED:API:KIND:VERSION:INDEX``, as the report prints it) is all it takes: the
message is regenerated from its chunk's seed and every check runs again, against every
other version rather than a sample, with tracebacks.
"""

from __future__ import annotations

import sys
from typing import IO

from .checks import ComboStats, Finding, Fuzzer, FuzzOptions, parse_failure_id
from .rules import Table, build_table


def replay_findings(
    failure: str,
    table: Table | None = None,
    differential: str | None = None,
    oracle: str | None = None,
) -> tuple[object, bytes, list[Finding]]:
    """(the message, its bytes at its version, what the checks find now)."""
    seed, api, kind, version, index = parse_failure_id(failure)
    table = table if table is not None else build_table()
    if (api, kind) not in table:
        raise ValueError(f"no {kind} for API key {api} in the specs")
    rules = table[(api, kind)]
    if version not in rules.versions:
        raise ValueError(f"{rules.name} has no version {version}")
    options = FuzzOptions(seed=seed, cross=0, differential=differential, oracle=oracle)
    fz = Fuzzer(table, options)
    fz.replaying = True
    try:
        cls, rules, spec_oracle = fz._setup(api, kind)
        stats = ComboStats(api, kind, version)
        data = b""
        message: object = None
        for idx, m, bits in fz.messages(api, kind, version, index, index + 1):
            message = m
            if not isinstance(m, BaseException):
                try:
                    data = m.encode(version)
                except Exception:
                    data = b""
            fz.check_message(cls, rules, spec_oracle, version, idx, m, bits, stats)
        fz.flush_kafka()  # with --oracle kafka: Kafka answers here, in its own JVM
    finally:
        fz.close()
    return message, data, stats.findings


def replay(
    failure: str,
    out: IO[str] | None = None,
    table: Table | None = None,
    differential: str | None = None,
    oracle: str | None = None,
) -> int:
    """Print what the checks find for one message; 1 when a failure reproduces."""
    out = out if out is not None else sys.stdout
    message, data, findings = replay_findings(failure, table, differential, oracle)
    wanted = failure.strip().split(":")[5] if failure.count(":") >= 5 else None
    text = repr(message)
    out.write(f"message {failure}:\n  {text[:2000]}{' ...' if len(text) > 2000 else ''}\n")
    out.write(f"  {len(data)} bytes: {data.hex()}\n")
    failures = [f for f in findings if f.check != "differential"]
    for f in findings:
        kind = "disagreement" if f.check == "differential" else "FAILURE"
        mark = "" if wanted is None or wanted == f.check else " (another check)"
        out.write(f"{kind} in {f.check}{mark}: {f.error}\n")
        if f.hex and f.hex != data.hex():
            out.write(f"  bytes: {f.hex}\n")
    if not failures:
        out.write("no failure: the checks pass on this message now\n")
        return 0
    return 1


__all__ = ["replay", "replay_findings"]
