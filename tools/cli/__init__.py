"""The ``kafkagen`` command: one entry point, one subcommand per job.

This package holds the command table and the subcommands' own modules: ``generate``
(generate, check-compat), ``roundtrip``, ``serve``, ``control`` and ``import_specs`` (with
``spec_merge`` and the project's ``spec_extensions.json``). The larger jobs are packages of
their own: ``kafkagen.fuzz``, ``kafkagen.conformance`` and ``kafkagen.bench``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast


@dataclass(frozen=True)
class Command:
    """One subcommand. Its module is imported only when the subcommand is the one run
    (so ``kafkagen generate`` never loads Spark, the broker or the benchmarks).

    Parsed commands name ``add_arguments(parser)`` and ``run(args) -> int`` in ``module``;
    a pass-through command (``parsed=False``) hands the arguments after its name to
    ``run(argv) -> int``, which parses them itself.
    """

    name: str
    module: str
    help: str
    description: str = ""
    add_arguments: str = "add_arguments"
    run: str = "run"
    parsed: bool = True

    def function(self, attribute: str) -> Callable[..., Any]:
        return cast(Callable[..., Any], getattr(importlib.import_module(self.module), attribute))


COMMANDS = (
    Command(
        "generate",
        "kafkagen.cli.generate",
        "generate the Python codec package from specs",
        "Read spec folders, check every rule, and write a formatted Python package of codecs "
        "(nothing is written on error, and an output folder holding files kafkagen did not "
        "write is refused).",
        add_arguments="_add_generate_arguments",
        run="_generate",
    ),
    Command(
        "check-compat",
        "kafkagen.cli.generate",
        "check that a spec change keeps wire compatibility",
        "Apply Kafka's evolution rules between two revisions of a spec folder: exit 0 when "
        "compatible, 1 with one line per problem.",
        add_arguments="_add_check_compat_arguments",
        run="_check_compat",
    ),
    Command(
        "roundtrip",
        "kafkagen.cli.roundtrip",
        "round-trip every API and version once (a smoke run)",
        "Build a message for every API, kind and version, encode, decode and compare, and "
        "print a summary table.",
    ),
    Command(
        "fuzz",
        "kafkagen.fuzz",
        "fuzz-round-trip generated messages across every version on Spark",
        "Build seeded random messages for every API, kind and version on Spark (embedded "
        "local Spark by default), check round trips, JSON, down-conversion, forward "
        "compatibility and mutations, and report per API.",
    ),
    Command(
        "serve",
        "kafkagen.cli.serve",
        "run a broker cluster on 127.0.0.1 that real Kafka clients can use",
        "Start N brokers in this process, each with its own listener on 127.0.0.1, print the "
        "bootstrap address and serve until interrupted.",
    ),
    Command(
        "control",
        "kafkagen.cli.control",
        "inject faults into, and control, a running kafkagen serve --control-port P",
        run="main",
        parsed=False,
    ),
    Command(
        "conformance",
        "kafkagen.conformance.command",
        "send the same requests to a broker and a reference Kafka, compare the answers",
        "Run the conformance scenarios against --bootstrap and --reference (default: an "
        "Apache Kafka 4.4.0 started for the run), compare the responses field by field after "
        "normalising ids, hosts and times, and print a table.",
    ),
    Command(
        "chaos",
        "kafkagen.chaos.command",
        "a fault campaign with real clients, then its history checked",
        "Start kafkagen serve --brokers 3 (or Apache Kafka 4.4.0 with --kafka), run idempotent "
        "producers, transactional consume-transform-produce workers and consumers of both "
        "isolation levels while a seeded schedule stops, pauses and slows brokers and moves "
        "leaders, then read everything back and report lost, duplicated or reordered writes, "
        "isolation anomalies and cycles between transactions.",
    ),
    Command(
        "import-specs",
        "kafkagen.cli.import_specs",
        "follow a Kafka release: import its spec files into message_specs/",
        "Read a Kafka release's spec files (a release number fetched from Maven Central, a "
        "kafka-clients jar or a folder), keep only wire facts, merge the versions older "
        "releases had below it (--older), re-apply the project's extensions and write the "
        "canonical files (nothing is written on error).",
    ),
    Command(
        "bench",
        "kafkagen.cli",
        "benchmarks: codecs, purgatory, fuzz, memory ... (kafkagen bench --help)",
        run="_bench",
        parsed=False,
    ),
)

#: ``kafkagen bench NAME``: the benchmark modules, each with its own ``main(argv)``.
BENCHMARKS = {
    "codecs": "codec speed side by side with kio and kafka-python, with ratios",
    "purgatory": "the request purgatory against an asyncio call_later baseline",
    "fuzz": "the fuzz job's message loop: plain, local[1], local[2] and two plain loops",
    "kafka": "kafkagen serve against Apache Kafka 4.4.0: start-up, produce, consume, latency",
    "profile": "kafkagen serve's CPU per request, batch and record under produce and consume",
    "memory": "kafkagen serve's memory under rounds of random requests and after a clean-up",
}


def _bench(argv: list[str]) -> int:
    if not argv or argv[0] not in BENCHMARKS:
        lines = [f"  {name:<10} {text}" for name, text in BENCHMARKS.items()]
        asked = argv[:1] in (["-h"], ["--help"])
        usage = "usage: kafkagen bench NAME [options]\n" + "\n".join(lines)
        print(usage, file=sys.stdout if asked else sys.stderr)
        return 0 if asked else 2
    main_of = importlib.import_module(f"kafkagen.bench.{argv[0]}").main
    return int(main_of(argv[1:]))


def _version() -> str:
    from kafkagen import __version__

    return f"kafkagen {__version__}"


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The command line; only ``chosen``'s own options are loaded (its module imported)."""
    parser = argparse.ArgumentParser(
        prog="kafkagen",
        description="Kafka wire codecs from JSON message specs, a broker runtime, and a "
        "Spark compatibility fuzz.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        p = sub.add_parser(
            command.name, help=command.help, description=command.description or command.help
        )
        if command.name == chosen and command.parsed:
            command.function(command.add_arguments)(p)
        p.set_defaults(command_spec=command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in args_list if not a.startswith("-")), None)
    command = next((c for c in COMMANDS if c.name == chosen), None)
    try:
        if command is not None and not command.parsed:
            rest = args_list[args_list.index(command.name) + 1 :]
            return int(command.function(command.run)(rest))
        args = build_parser(chosen).parse_args(args_list)
        spec: Command = args.command_spec
        return int(spec.function(spec.run)(args))
    except KeyboardInterrupt:
        print("kafkagen: interrupted", file=sys.stderr)
        return 130
