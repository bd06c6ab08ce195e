"""Load a package ``kafkagen generate`` wrote, or generate one from spec folders.

What the command lines share when they take a user's package instead of the built-in
``kafkagen.generated`` (``kafkagen serve --package/--specs``, ``kafkagen fuzz``):

- :func:`load` takes an importable module name or a folder; the package must carry the
  ``GENERATED_BY_KAFKAGEN`` marker and import cleanly;
- :func:`from_specs` generates spec folders into a temporary package, removed by
  :meth:`GeneratedPackage.close`.

A package is loaded under an import name made from its content (``kafkagen_pkg_<digest>``),
so two packages of the same folder name, or a package changed between two loads, never
meet in one process. Generated modules import their siblings relatively, so the name is
free to choose. Every failure is a :class:`PackageError` whose text is one line naming
what and where.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

__all__ = [
    "BUILTIN",
    "MARKER",
    "GeneratedPackage",
    "PackageError",
    "from_folder",
    "from_module",
    "from_specs",
    "load",
]

BUILTIN = "kafkagen.generated"
#: The marker file every package ``kafkagen generate`` writes.
MARKER = "GENERATED_BY_KAFKAGEN"
KINDS = ("request", "response")


class PackageError(ValueError):
    """A package source that cannot be used; the text is one line naming what and where."""


@dataclass
class GeneratedPackage:
    """A generated package loaded in this process."""

    #: What the user named (a module, a folder, spec folders), for messages and reports.
    label: str
    #: The import name the package is loaded under.
    name: str
    module: ModuleType
    #: The package folder (None for the built-in).
    folder: Path | None
    #: The spec folders it was generated from, when known.
    specs: tuple[Path, ...] = ()
    #: Temporary folders to remove when done (generated packages and specs).
    scratch: list[Path] = field(default_factory=list)

    def close(self) -> None:
        for path in self.scratch:
            shutil.rmtree(path, ignore_errors=True)
        self.scratch.clear()


def load(source: str) -> GeneratedPackage:
    """The generated package at folder ``source``, or importable as module ``source``."""
    path = Path(source)
    if path.is_dir():
        if not (path / MARKER).is_file():
            raise PackageError(f"{source}: not a kafkagen-generated package (no {MARKER} file)")
        return from_folder(path, source)
    if "/" in source or source.startswith(".") or source.endswith(".py"):
        raise PackageError(f"{source}: no such folder")
    return from_module(source)


def from_module(name: str) -> GeneratedPackage:
    if name == BUILTIN:
        return GeneratedPackage(name, name, importlib.import_module(name), None)
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as e:
        raise PackageError(f"{name}: cannot be imported: {e}") from None
    if spec is None or not spec.submodule_search_locations:
        raise PackageError(f"{name}: no such package (not importable here, and no such folder)")
    folder = Path(list(spec.submodule_search_locations)[0])
    if not (folder / MARKER).is_file():
        raise PackageError(
            f"{name}: {folder} is not a kafkagen-generated package (no {MARKER} file)"
        )
    return from_folder(folder, name)


def from_folder(folder: Path, label: str) -> GeneratedPackage:
    """A generated package folder, loaded under a name made from its content."""
    folder = folder.resolve()
    if not (folder / "__init__.py").is_file():
        raise PackageError(f"{label}: {folder} has {MARKER} but no __init__.py")
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    name = f"kafkagen_pkg_{digest.hexdigest()[:16]}"
    module = sys.modules.get(name) or _load(name, folder, label)
    return GeneratedPackage(label, name, module, folder)


def _load(name: str, folder: Path, label: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        raise PackageError(f"{label}: {folder} cannot be loaded as a package")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        if not callable(getattr(module, "message_type", None)):
            raise PackageError(f"{label}: {folder} has no message_type(): not a kafkagen package")
    except PackageError:
        del sys.modules[name]
        raise
    except Exception as e:
        del sys.modules[name]
        raise PackageError(f"{label}: {folder} fails to import: {type(e).__name__}: {e}") from None
    return module


def from_specs(spec_dirs: Sequence[Path], label: str | None = None) -> GeneratedPackage:
    """Generate the spec folders into a temporary package (removed by ``close``)."""
    from . import generate as gen
    from . import output
    from .errors import SpecError, SpecErrors

    shown = label or ", ".join(str(p) for p in spec_dirs)
    for d in spec_dirs:
        if not d.is_dir():
            raise PackageError(f"{d}: spec folder does not exist")
    try:
        messages = gen.load_messages(list(spec_dirs))
        files = gen.render_package(messages)
    except SpecErrors as e:
        first = e.errors[0].line()
        more = f" (and {len(e.errors) - 1} more spec errors)" if len(e.errors) > 1 else ""
        raise PackageError(first + more) from None
    except SpecError as e:
        raise PackageError(e.line()) from None
    if not any(m.kind in KINDS and m.api_key is not None for m in messages):
        raise PackageError(f"{shown}: no request or response specs")
    scratch = Path(tempfile.mkdtemp(prefix="kafkagen-pkg-"))
    try:
        out = scratch / "package"
        output.write_package(files, out)
        package = from_folder(out, shown)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    package.specs = tuple(spec_dirs)
    package.scratch.append(scratch)
    return package
