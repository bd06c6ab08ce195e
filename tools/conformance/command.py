"""``kafkagen conformance``: the same requests to a broker and to a reference, compared."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from .core import Result, Target
from .random_sample import Sample, run_sample
from .suite import all_scenarios, exit_status, load_documented, run_suite, summary, table

__all__ = ["add_arguments", "run"]

#: The longest a random sample runs, whatever its count.
SAMPLE_S = 3600.0
#: The known differences of kafkagen's broker, in a source checkout.
DOCUMENTED = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "Exit status: 0 when every scenario agrees, is skipped or differs as documented "
        "(the --documented file names it); 1 when a scenario differs without being "
        "documented ('open'), stops with an error, or the brokers cannot be reached or "
        "started; 2 for a bad option."
    )
    parser.add_argument(
        "--bootstrap", required=True, metavar="HOST:PORT", help="the broker under test"
    )
    parser.add_argument(
        "--reference",
        metavar="HOST:PORT",
        help="the broker to compare with (default: start Apache Kafka 4.4.0 with as many "
        "nodes as the broker under test has, up to three)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="TEXT",
        help="run the scenarios whose name contains TEXT (repeatable)",
    )
    parser.add_argument(
        "--api-version",
        action="append",
        default=[],
        metavar="API=V",
        help="pin the version used for an API, e.g. Produce=8 (default: the highest both "
        "brokers and kafkagen's codecs know)",
    )
    parser.add_argument(
        "--documented",
        metavar="FILE",
        help="markdown whose table rows name known differences (default: kafkagen's "
        "docs/conformance.md when run from a checkout)",
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument(
        "--random",
        type=int,
        metavar="N",
        help="instead of the scenarios, send the same N random requests of every API both "
        "advertise to both brokers and compare their error codes (exit 1 if any differ)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="the random requests' seed (0; with --random)"
    )
    parser.add_argument("--json", metavar="FILE", help="also write every result to FILE")


def _versions(items: list[str]) -> dict[int, int]:
    from kafkagen.generated import APIS
    from kafkagen.runtime.client.versions import api_name

    by_name = {api_name(k).lower(): k for k in APIS}
    out = {}
    for item in items:
        name, sep, v = item.partition("=")
        key = by_name.get(name.strip().lower())
        if not sep or key is None or not v.strip().isdigit():
            raise ValueError(f"--api-version {item!r}: expected API=VERSION, e.g. Produce=8")
        out[key] = int(v)
    return out


async def _count_nodes(bootstrap: str) -> int:
    target = Target(bootstrap)
    try:
        await target.open()
        return max(1, len(target.nodes))
    finally:
        await target.close()


def run(args: argparse.Namespace) -> int:
    if args.list:
        for sc in all_scenarios():
            print(f"{sc.name:<50} {sc.about}")
        return 0
    try:
        versions = _versions(args.api_version)
    except ValueError as e:
        print(f"kafkagen conformance: {e}", file=sys.stderr)
        return 2
    doc = Path(args.documented) if args.documented else DOCUMENTED
    documented = load_documented(doc) if doc.is_file() else {}
    reference_kafka = None
    reference = args.reference
    if reference is None:
        from kafkagen.reference import KafkaReference, ReferenceError

        try:
            nodes = min(3, asyncio.run(_count_nodes(args.bootstrap)))
        except (OSError, ConnectionError, TimeoutError, ValueError) as e:
            print(f"kafkagen conformance: {args.bootstrap}: {e}", file=sys.stderr)
            return 1
        print(f"starting Apache Kafka with {nodes} node(s) as the reference ...", flush=True)
        reference_kafka = KafkaReference(nodes)
        try:
            reference_kafka.start()
        except ReferenceError as e:
            print(f"kafkagen conformance: {e}", file=sys.stderr)
            return 1
        reference = reference_kafka.bootstrap

    def progress(r: Result) -> None:
        print(f"  {r.status:<8} {r.scenario.name}", file=sys.stderr, flush=True)

    work: Coroutine[Any, Any, Sample | list[Result]] = (
        run_sample(args.bootstrap, reference, count=args.random, seconds=SAMPLE_S, seed=args.seed)
        if args.random is not None
        else run_suite(
            args.bootstrap, reference, only=args.only, versions=versions, on_result=progress
        )
    )
    try:
        outcome: Sample | list[Result] = asyncio.run(work)
    except (OSError, ConnectionError, TimeoutError) as e:
        print(f"kafkagen conformance: {e}", file=sys.stderr)
        return 1
    finally:
        if reference_kafka is not None:
            reference_kafka.stop()
    if isinstance(outcome, Sample):
        print(outcome.render())
        return 1 if outcome.differ else 0
    results = outcome
    print(table(results, documented))
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                [
                    {
                        "scenario": r.scenario.name,
                        "status": r.status,
                        "detail": r.detail,
                        "steps": [
                            [{"label": s.label, "outcome": s.outcome} for s in side]
                            for side in r.steps
                        ],
                    }
                    for r in results
                ],
                indent=1,
            )
        )
    print(summary(results, documented))
    return exit_status(results, documented)
