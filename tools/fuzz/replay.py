"""Replay one failure in this process, without Spark: ``kafkagen fuzz --replay ID``.

The id (``SEED:API:KIND:VERSION:INDEX``, as the report prints it) is all it takes: the
message is regenerated from its chunk's seed and every check runs again, against every
other version rather than a sample, with tracebacks.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO

from .checks import ComboStats, Finding, Fuzzer, FuzzOptions, failure_digest, parse_failure_id
from .packages import Package, builtin
from .peers import parse_oracles
from .rules import Table


def replay_findings(
    failure: str,
    table: Table | None = None,
    oracle: str | Sequence[str] | None = None,
    package: Package | None = None,
) -> tuple[object, bytes, list[Finding]]:
    """(the message, its bytes at its version, the failures the checks find now)."""
    message, data, stats = _replay(failure, table, oracle, package)
    return message, data, stats.findings


def same_package(failure: str, package: Package) -> None:
    """Raise ValueError, saying what to give instead, when ``failure`` was found on
    another package than ``package`` (its id carries the package's digest)."""
    made_on = failure_digest(failure)
    if made_on == package.id_digest:
        return
    given = f"{package.label} (spec digest {package.digest[:12]})"
    origin = "the built-in package" if not made_on else f"a package of spec digest {made_on}"
    raise ValueError(
        f"failure {failure.strip()} was found on {origin}, not on {given}: replay it with "
        "the --package or --specs of its run (its run.json names them)"
    )


def _replay(
    failure: str,
    table: Table | None,
    oracle: str | Sequence[str] | None,
    package: Package | None = None,
) -> tuple[object, bytes, ComboStats]:
    """(the message, its bytes at its version, what the checks count and find now, the
    peers' disagreements too when ``oracle`` names peers)."""
    seed, api, kind, version, index = parse_failure_id(failure)
    package = package or builtin()
    same_package(failure, package)
    table = table if table is not None else package.table
    if (api, kind) not in table:
        raise ValueError(f"no {kind} for API key {api} in the specs")
    rules = table[(api, kind)]
    if version not in rules.versions:
        raise ValueError(f"{rules.name} has no version {version}")
    options = FuzzOptions(
        seed=seed,
        cross=0,
        oracles=parse_oracles(oracle),
        package=package.name,
        digest=package.id_digest,
    )
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
    package: Package | None = None,
) -> int:
    """Print what the checks find for one message; 1 when a failure reproduces."""
    out = out if out is not None else sys.stdout
    message, data, stats = _replay(failure, table, oracle, package)
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
