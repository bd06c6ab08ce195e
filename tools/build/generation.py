"""Generate a project's package at build time, only when its inputs changed.

The inputs are the project's spec files, kafkagen's version and the generator's own
sources and templates (so a development install of kafkagen that changed its templates
regenerates too). Their SHA-256 goes into a stamp file inside the generated package, written
in the same rename that swaps the package in: a package and its stamp always agree, and a
failed generation leaves the previous package and stamp whole.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import kafkagen
import kafkagen.generator
import kafkagen.templates
from kafkagen.generator import output
from kafkagen.generator.errors import SpecError, SpecErrors, report_spec_warnings
from kafkagen.generator.loader import spec_files

from .config import PYPROJECT, TABLE, BuildError, Settings


def _generator_sources() -> list[Path]:
    # found without importing the generator itself (black, Jinja2): a build that finds its
    # package current costs a digest, not an import of the formatter
    (generator,) = kafkagen.generator.__path__
    (templates,) = kafkagen.templates.__path__
    return sorted(
        [
            *Path(generator).glob("*.py"),
            *Path(generator).glob("*.json"),
            *Path(templates).glob("*.jinja"),
        ]
    )


def stamp_text(settings: Settings) -> str:
    """What the stamp of a package generated from the current inputs holds."""
    digest = hashlib.sha256()
    for path in _generator_sources():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for folder in settings.specs:
        digest.update(settings.shown(folder).encode() + b"\0")
        for path in spec_files(folder):
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return f"kafkagen {kafkagen.__version__}\ninputs sha256:{digest.hexdigest()}\n"


def is_current(settings: Settings, stamp: str) -> bool:
    package = settings.out
    if not (package / output.MARKER).is_file() or not (package / output.STAMP).is_file():
        return False
    return (package / output.STAMP).read_text(encoding="utf-8") == stamp


def ensure_generated(settings: Settings) -> str:
    """Regenerate ``settings.out`` unless its stamp matches the inputs; say what was done.

    Raises ``BuildError`` (one line per problem) for spec errors and for an output folder
    holding files kafkagen did not write; nothing is written then.
    """
    started = time.perf_counter()
    shown = settings.shown(settings.out)
    stamp = stamp_text(settings)
    if is_current(settings, stamp):
        return f"kafkagen: {shown} is up to date (specs and kafkagen unchanged)"
    from kafkagen.generator import generate as gen

    try:
        output.check_output_folder(settings.out)
        with report_spec_warnings():
            messages = gen.load_messages(settings.specs)
        files = gen.render_package(messages)
        output.write_package({**files, output.STAMP: stamp}, settings.out)
    except SpecErrors as e:
        lines = [err.line() for err in e.errors]
        lines.append(f"kafkagen: {len(lines)} spec error(s); nothing written")
        raise BuildError("\n".join(lines)) from None
    except SpecError as e:
        raise BuildError(e.line()) from None
    except output.OutputRefused as e:
        raise BuildError(f"{PYPROJECT}: {TABLE} out: {e}") from None
    except OSError as e:
        raise BuildError(f"kafkagen: {e.filename or shown}: {e.strerror or e}") from None
    took = time.perf_counter() - started
    return f"kafkagen: wrote {shown} ({len(messages)} specs, {len(files)} files) in {took:.1f}s"
