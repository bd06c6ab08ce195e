"""``kafkagen generate`` and ``kafkagen check-compat``: the generator's two commands."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def _generate(args: argparse.Namespace) -> int:
    from kafkagen.generator import generate as gen
    from kafkagen.generator import output
    from kafkagen.generator.errors import SpecError, SpecErrors, report_spec_warnings

    specs = [Path(p) for p in args.specs] or list(gen.BUILTIN_SPEC_DIRS)
    out = Path(args.out) if args.out else gen.BUILTIN_OUT
    started = time.perf_counter()
    try:
        if not args.check:
            output.check_output_folder(out)  # before the work, so a refusal is immediate
        with report_spec_warnings():
            messages = gen.load_messages(specs)
        files = gen.render_package(messages)
        if args.check:
            return _report_drift(output.diff_package(files, out), out, len(messages), len(files))
        output.write_package(files, out)
    except SpecErrors as e:
        for err in e.errors:
            print(err.line(), file=sys.stderr)
        print(f"kafkagen generate: {len(e.errors)} spec error(s); nothing written", file=sys.stderr)
        return 1
    except SpecError as e:
        print(e.line(), file=sys.stderr)
        return 1
    except output.OutputRefused as e:
        print(f"kafkagen generate: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # the output folder cannot be made or written
        print(f"kafkagen generate: {e.filename or out}: {e.strerror or e}", file=sys.stderr)
        return 1
    took = time.perf_counter() - started
    print(f"wrote {out.resolve()} ({len(messages)} specs, {len(files)} files) in {took:.1f}s")
    return 0


def _report_drift(drift: list[str], out: Path, specs: int, files: int) -> int:
    if drift:
        for name in drift:
            print(f"{out / name}: differs from what the generator writes", file=sys.stderr)
        print(
            "kafkagen generate --check: run 'kafkagen generate' and commit the result",
            file=sys.stderr,
        )
        return 1
    print(f"{out}: up to date ({specs} specs, {files} files)")
    return 0


def _check_compat(args: argparse.Namespace) -> int:
    from kafkagen.generator.compat import run_check_compat

    return run_check_compat(Path(args.old), Path(args.new))


def _add_generate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--specs",
        action="append",
        default=[],
        metavar="DIR",
        help="a spec folder (repeatable; default: the built-in message_specs)",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="the package folder to write; its name is the package's name (default: the "
        "built-in kafkagen.generated). It is replaced as a whole, so it must be new, empty or "
        "a package kafkagen generated (marked by its GENERATED_BY_KAFKAGEN file): a folder "
        "holding anything else is refused and left untouched",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the output folder differs from what would be written",
    )


def _add_check_compat_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", metavar="OLD_DIR")
    parser.add_argument("new", metavar="NEW_DIR")
