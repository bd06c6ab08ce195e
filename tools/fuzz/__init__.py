"""``kafkagen fuzz``: the compatibility fuzz of the generated codecs, on Spark.

Every (API, kind, version) gets its share of ``--messages`` random messages; each message
is round-tripped at its own version, through Kafka's JSON form, written at every other
version against the spec oracle, extended with unknown tagged fields, and corrupted (see
:mod:`kafkagen.fuzz.checks`). Results go to Parquet and an HTML report under ``--out``; the
exit status is 1 when anything failed. ``--replay ID`` re-runs one failure in this process.

Entry points: :func:`main` (``kafkagen fuzz`` arguments), :func:`add_arguments` and
:func:`run` (for the ``kafkagen`` command line), :func:`run_fuzz` (library use).
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO

#: The compiled extensions the driver ships beside the zip, in load order: the codec
#: accelerator, then the random builders that walk its tables.
SHIPPED_EXTENSIONS = ("kafkagen.runtime._native", "kafkagen.fuzz._builders")


def _load_shipped_native() -> None:
    """In a Spark worker running the shipped zip, load the compiled extensions shipped
    beside it (before anything imports the codecs, which look for them once).

    Python cannot import an extension module from a zip, so the driver ships the
    compiled files with ``addFile``; they land in the worker's SparkFiles folder. Built
    for another interpreter or platform, one is not there under this interpreter's
    suffixes, or fails to load: the codecs, or the random builders, then run in pure
    Python, as without it.
    """
    if ".zip" not in (__file__ or ""):
        return
    try:
        from pyspark import SparkFiles

        root = SparkFiles.getRootDirectory()
    except Exception:
        return
    for name in SHIPPED_EXTENSIONS:
        if name not in sys.modules and not _load_extension(name, root):
            return  # the builders need the accelerator loaded first


def _load_extension(name: str, root: str) -> bool:
    """Load extension ``name`` from its file in ``root``, as an import would (an attribute
    of its package too, where the builders' capsule import looks for the accelerator);
    whether it loaded."""
    package_name, leaf = name.rsplit(".", 1)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(root, leaf + suffix)
        if not os.path.isfile(path):
            continue
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            return False
        try:
            package = importlib.import_module(package_name)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except Exception:
            return False
        sys.modules[name] = module
        setattr(package, leaf, module)
        return True
    return False


_load_shipped_native()

from .checks import MAX_MUTATIONS, FuzzOptions  # noqa: E402
from .job import Fault, RunResult, keep_jvm_log, run_plain, run_spark  # noqa: E402
from .packages import Package, builtin, run_on  # noqa: E402
from .peers import parse_oracles  # noqa: E402
from .plan import plan_combos, select_apis  # noqa: E402
from .rules import Table, build_table  # noqa: E402

DEFAULT_MESSAGES = 1_000_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--messages",
        type=int,
        default=DEFAULT_MESSAGES,
        metavar="N",
        help=f"messages in all, shared equally by every API, kind and version "
        f"(default {DEFAULT_MESSAGES:,})",
    )
    parser.add_argument(
        "--apis",
        nargs="+",
        metavar="API",
        help="only these APIs, by name or key (e.g. Metadata Fetch 0); default: all",
    )
    parser.add_argument(
        "--master",
        default="local[*]",
        metavar="URL",
        help="Spark master (default local[*]; e.g. spark://host:7077, local[2,4] to retry "
        "failed tasks locally); the package is shipped to the executors",
    )
    parser.add_argument(
        "--out",
        default="fuzz-out",
        metavar="DIR",
        help="folder for the Parquet results and report.html (default ./fuzz-out)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=1,
        metavar="S",
        help="run seed: the same seed checks the same messages (default 1)",
    )
    parser.add_argument(
        "--replay",
        metavar="ID",
        help="re-run the checks of one failure (id from the report) in this process, without Spark",
    )
    parser.add_argument(
        "--package",
        metavar="NAME_OR_DIR",
        help="the generated package to fuzz: an importable module or a folder written by "
        "'kafkagen generate --out' (default: the built-in kafkagen.generated); it is "
        "shipped to the executors",
    )
    parser.add_argument(
        "--specs",
        action="append",
        default=[],
        metavar="DIR",
        help="spec folder(s) to generate into a temporary package and fuzz (repeatable, "
        "as for 'kafkagen generate'); the package is removed afterwards",
    )
    parser.add_argument(
        "--against",
        metavar="OLD",
        help="a compatibility run instead: messages of each side are written by it and read "
        "by the other, for every API, kind and version both know (see docs/compatibility.md). "
        "OLD, like --package, is a package name or folder, a spec folder, or a Kafka "
        "release number such as 3.9.1 (its spec files from Maven Central)",
    )
    parser.add_argument(
        "--oracle",
        type=_oracles,
        default=(),
        metavar="NAME[,NAME...]",
        help="others that judge every message too, a comma list of: kafka (Kafka's own "
        "message classes, kafka-clients 4.4.0, in a JVM beside each Python worker; any "
        "disagreement is a failure; needs Java 17 and Maven), kafka-python, kio (peer "
        "codecs: they read the bytes, write them back and read the corrupted copies; a "
        "disagreement is the peer's finding where Kafka agrees with kafkagen, unjudged "
        "without Kafka)",
    )
    parser.add_argument(
        "--tasks",
        type=int,
        metavar="N",
        help="Spark tasks (default: 3 per core, more for big runs: at most 250,000 "
        "messages a task)",
    )
    parser.add_argument(
        "--cross",
        type=int,
        default=FuzzOptions().cross,
        metavar="K",
        help="other versions each message is written at: 0 (the default) for every one "
        "of them; K for K per message, rotating, a cheaper sampling run",
    )
    parser.add_argument(
        "--mutations",
        type=int,
        choices=range(0, MAX_MUTATIONS + 1),
        default=FuzzOptions().mutations,
        metavar="M",
        help=f"corrupted copies of each message decoded (default {FuzzOptions().mutations}, "
        f"at most {MAX_MUTATIONS})",
    )


def _oracles(text: str) -> tuple[str, ...]:
    try:
        return parse_oracles(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--oracle: ")) from None


def run_fuzz(
    messages: int,
    master: str = "local[*]",
    seed: int = 1,
    apis: Sequence[str] | None = None,
    cross: int = FuzzOptions().cross,
    mutations: int = FuzzOptions().mutations,
    tasks: int | None = None,
    fault: Fault | None = None,
    table: Table | None = None,
    progress: IO[str] | None = sys.stderr,
    spark: bool = True,
    oracle: str | Sequence[str] | None = None,
    package: Package | None = None,
) -> tuple[RunResult, Table]:
    """Plan and run a fuzz of ``package`` (default: the built-in one); ``spark=False``
    runs the same tasks in this process. ``oracle``: "kafka,kio" or a sequence of names
    (``peers.ORACLES``)."""
    if table is None:
        table = package.table if package is not None else build_table()
    combos = plan_combos(table, select_apis(table, apis), messages)
    options = FuzzOptions(
        seed=seed, cross=cross, mutations=mutations, oracles=parse_oracles(oracle)
    )
    if package is not None:
        options = options._replace(package=package.name, digest=package.id_digest)
    if spark:
        result = run_spark(table, combos, options, master, tasks, fault, progress, package=package)
    else:
        result = run_plain(table, combos, options, tasks or 1)
    result.package = (package or builtin()).describe()
    return result, table


def run(args: argparse.Namespace) -> int:
    if args.package and args.specs:
        print("kafkagen fuzz: give --package or --specs, not both", file=sys.stderr)
        return 2
    if args.messages < 1:
        print("kafkagen fuzz: --messages must be at least 1", file=sys.stderr)
        return 2
    if not args.replay:
        try:
            import pyspark  # noqa: F401
        except ImportError:
            print("kafkagen fuzz needs PySpark: pip install 'kafkagen[spark]'", file=sys.stderr)
            return 2
    if args.against:
        from .compat import run_against

        return run_against(args)
    return run_on(args.specs or args.package, "kafkagen fuzz", lambda p: _run_package(args, p))


def _run_package(args: argparse.Namespace, package: Package) -> int:
    from .report import print_summary, write_html, write_parquet

    if args.replay:
        from .replay import replay

        try:
            return replay(args.replay, oracle=args.oracle, package=package)
        except ValueError as e:
            print(f"kafkagen fuzz: {e}", file=sys.stderr)
            return 2
    try:
        result, table = run_fuzz(
            args.messages,
            args.master,
            args.seed,
            args.apis,
            args.cross,
            args.mutations,
            args.tasks,
            oracle=args.oracle,
            package=package,
        )
    except KeyboardInterrupt:
        print(
            "kafkagen fuzz: interrupted before any results were gathered; nothing written",
            file=sys.stderr,
        )
        return 130
    except ValueError as e:
        print(f"kafkagen fuzz: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # Spark could not start, or the job failed after its retries
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        # Only a JVM that never came up is a matter of the Java installation.
        java = " (Java 17+ must be installed for Spark)" if "JAVA_GATEWAY" in str(e) else ""
        print(
            f"kafkagen fuzz: the Spark job failed: {first}\n"
            f"  Spark's own log: {keep_jvm_log()}{java}",
            file=sys.stderr,
        )
        return 2
    out = Path(args.out)
    write_parquet(result, table, out)
    write_html(result, table, out / "report.html")
    print_summary(result, table, sys.stdout)
    print(f"results: {out.resolve()}/ (stats.parquet, failures.parquet, report.html)")
    if result.interrupted:
        print(
            f"kafkagen fuzz: interrupted; the {len(result.task_info)} of {result.tasks} tasks "
            "that finished are written, marked as partial",
            file=sys.stderr,
        )
        return 130
    return 1 if result.failure_count else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kafkagen fuzz",
        description="Fuzz the generated codecs on Spark: round trips, JSON, other "
        "versions, unknown tagged fields and corrupted bytes, for every API and version.",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


__all__ = ["DEFAULT_MESSAGES", "add_arguments", "main", "run", "run_fuzz"]
