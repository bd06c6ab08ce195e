"""Replay one failure in this process, without Spark: ``kafkagen fuzz --replay ID``.

The id (``SEED:API:KIND:VERSION:INDEX``, as the report prints it) is all it takes: the
message is regenerated from its chunk's seed and every check runs again, against every
other version rather than a sample, with tracebacks.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO

from .checks import ComboStats, Finding, Fuzzer, FuzzOptions, parse_failure_id
from .peers import parse_oracles
from .rules import Table, build_table


def replay_findings(
    failure: str,
    table: Table | None = None,
    oracle: str | Sequence[str] | None = None,
) -> tuple[object, bytes, list[Finding]]:
    """(the message, its bytes at its version, the failures the checks find now)."""
    message, data, stats = _replay(failure, table, oracle)
    return message, data, stats.findings


def _replay(
    failure: str,
    table: Table | None,
    oracle: str | Sequence[str] | None,
) -> tuple[object, bytes, ComboStats]:
    """(the message, its bytes at its version, what the checks count and find now, the
    peers' disagreements too when ``oracle`` names peers)."""
    seed, api, kind, version, index = parse_failure_id(failure)
    table = table if table is not None else build_table()
    if (api, kind) not in table:
        raise ValueError(f"no {kind} for API key {api} in the specs")
    rules = table[(api, kind)]
    if version not in rules.versions:
        raise ValueError(f"{rules.name} has no version {version}")
    options = FuzzOptions(seed=seed, cross=0, oracles=parse_oracles(oracle))
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
        fz.flush()  # the peers answer, and with --oracle kafka Kafka, in its own JVM
    finally:
        fz.close()
    return message, data, stats


def replay(
    failure: str,
    out: IO[str] | None = None,
    table: Table | None = None,
    oracle: str | Sequence[str] | None = None,
) -> int:
    """Print what the checks find for one message; 1 when a failure reproduces."""
    out = out if out is not None else sys.stdout
    message, data, stats = _replay(failure, table, oracle)
    failures = stats.findings
    wanted = failure.strip().split(":")[5] if failure.count(":") >= 5 else None
    text = repr(message)
    out.write(f"message {failure}:\n  {text[:2000]}{' ...' if len(text) > 2000 else ''}\n")
    out.write(f"  {len(data)} bytes: {data.hex()}\n")
    for f in failures:
        mark = "" if wanted is None or wanted == f.check else " (another check)"
        out.write(f"FAILURE in {f.check}{mark}: {f.error}\n")
        if f.hex and f.hex != data.hex():
            out.write(f"  bytes: {f.hex}\n")
    for (peer, check, kind), (findings, _) in sorted(stats.peer_groups.items()):
        verdict = "peer finding (Kafka agrees with kafkagen)" if findings else "unjudged"
        out.write(f"{peer} disagrees, {verdict}: {check}: {kind}\n")
        repro = stats.peer_repros.get((peer, check, kind))
        if repro is not None:
            out.write(f"  {repro.detail}\n  minimal reproducer: {repro.hex}\n")
            if repro.json is not None:
                out.write(f"  its JSON form: {repro.json}\n")
    if not failures:
        out.write("no failure: the checks pass on this message now\n")
        return 0
    return 1


__all__ = ["replay", "replay_findings"]
