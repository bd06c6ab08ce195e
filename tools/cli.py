"""The ``kafkagen`` command: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path


def _generate(args: argparse.Namespace) -> int:
    from kafkagen.generator import generate as gen
    from kafkagen.generator.errors import SpecError, SpecErrors

    specs = [Path(p) for p in args.specs] or [gen.BUILTIN_SPECS]
    out = Path(args.out) if args.out else gen.BUILTIN_OUT
    started = time.perf_counter()
    try:
        messages = gen.load_messages(specs)
        files = gen.render_package(messages)
    except SpecErrors as e:
        for err in e.errors:
            print(err.line(), file=sys.stderr)
        print(f"kafkagen generate: {len(e.errors)} spec error(s); nothing written", file=sys.stderr)
        return 1
    except SpecError as e:
        print(e.line(), file=sys.stderr)
        return 1
    if args.check:
        drift = gen.diff_package(files, out)
        if drift:
            for name in drift:
                print(f"{out / name}: differs from what the generator writes", file=sys.stderr)
            print(
                "kafkagen generate --check: run 'kafkagen generate' and commit the result",
                file=sys.stderr,
            )
            return 1
        print(f"{out}: up to date ({len(messages)} specs, {len(files)} files)")
        return 0
    gen.write_package(files, out)
    took = time.perf_counter() - started
    print(f"wrote {out} ({len(messages)} specs, {len(files)} files) in {took:.1f}s")
    return 0


def _check_compat(args: argparse.Namespace) -> int:
    from kafkagen.generator.compat import run_check_compat

    return run_check_compat(Path(args.old), Path(args.new))


def _roundtrip(args: argparse.Namespace) -> int:
    from kafkagen.roundtrip import main as roundtrip_main

    return roundtrip_main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafkagen",
        description="Kafka wire codecs from JSON message specs, a broker runtime, and a "
        "Spark compatibility fuzz.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    g = sub.add_parser(
        "generate",
        help="generate the Python codec package from specs",
        description="Read spec folders, check every rule, and write a "
        "formatted Python package of codecs (nothing is written on error).",
    )
    g.add_argument(
        "--specs",
        action="append",
        default=[],
        metavar="DIR",
        help="a spec folder (repeatable; default: the built-in message_specs)",
    )
    g.add_argument(
        "--out",
        metavar="DIR",
        help="the package folder to write (default: the built-in kafkagen.generated)",
    )
    g.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the output folder differs from what would be written",
    )
    g.set_defaults(run=_generate)

    c = sub.add_parser(
        "check-compat",
        help="check that a spec change keeps wire compatibility",
        description="Apply Kafka's evolution rules between two revisions of a "
        "spec folder: exit 0 when compatible, 1 with one line per problem.",
    )
    c.add_argument("old", metavar="OLD_DIR")
    c.add_argument("new", metavar="NEW_DIR")
    c.set_defaults(run=_check_compat)

    r = sub.add_parser(
        "roundtrip",
        help="round-trip every API and version once (a smoke run)",
        description="Build a message for every API, kind and version, encode, "
        "decode and compare, and print a summary table.",
    )
    r.add_argument("--seed", type=int, default=1)
    r.set_defaults(run=_roundtrip)

    from kafkagen import bench, fuzz, serve

    f = sub.add_parser(
        "fuzz",
        help="fuzz-round-trip generated messages across every version on Spark",
        description="Build seeded random messages for every API, kind and version on Spark "
        "(embedded local Spark by default), check round trips, JSON, down-conversion, "
        "forward compatibility and mutations, and report per API.",
    )
    fuzz.add_arguments(f)
    f.set_defaults(run=fuzz.run)

    s = sub.add_parser(
        "serve",
        help="run a broker cluster on 127.0.0.1 that real Kafka clients can use",
        description="Start N brokers in this process, each with its own listener on "
        "127.0.0.1, print the bootstrap address and serve until interrupted.",
    )
    serve.add_arguments(s)
    s.set_defaults(run=serve.run)

    b = sub.add_parser(
        "bench",
        help="codec speed side by side with kio and kafka-python",
        description="Encode and decode the standard workloads with kafkagen and, when "
        "installed, kio and kafka-python; print figures and ratios against the targets.",
    )
    bench.add_arguments(b)
    b.set_defaults(run=bench.run)

    from kafkagen.conformance import command as conformance

    k = sub.add_parser(
        "conformance",
        help="send the same requests to a broker and a reference Kafka, compare the answers",
        description="Run the conformance scenarios against --bootstrap and --reference "
        "(default: a reference Apache Kafka started for the run), compare the responses "
        "field by field after normalising ids, hosts and times, and print a table.",
    )
    conformance.add_arguments(k)
    k.set_defaults(run=conformance.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130
