"""Which generated package a fuzz or compatibility run tests, and how it reaches Spark.

A run tests the built-in ``kafkagen.generated`` unless told otherwise. A *package source*
is one of:

- an importable module name or a folder holding a package ``kafkagen generate`` wrote
  (its ``GENERATED_BY_KAFKAGEN`` marker says so);
- one or more spec folders (``--specs``), generated into a temporary package;
- a Kafka release number (``3.9.1``): that release's own spec files from the
  ``kafka-clients`` jar on Maven Central (cached), generated likewise.

Whatever the source, the package is loaded under an import name derived from its content
(``kafkagen_pkg_<digest>``), so two packages of the same folder name, or a package
changed between two runs on one Spark session, never meet in one Python process. Generated
modules import their siblings relatively, so the name is free to choose. The package folder
is zipped and shipped to the executors beside the kafkagen zip (kafkagen.fuzz.job.ship).

The fuzz's rules (:mod:`kafkagen.fuzz.rules`) come from the specs when there are any, and
otherwise from the package's own field tables and layouts (:func:`table_of`), which carry
every wire fact the rules need. Each (API, kind, version) has a *layout*
(:func:`layout_of`): its fields in wire order with their types, nullability and tags. The
package's spec digest is the digest of all its layouts, and Kafka's classes judge only the
versions whose layout is the built-in package's.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from kafkagen.generator import packages as shared
from kafkagen.generator.packages import BUILTIN, KINDS, MARKER, PackageError

from .rules import EMPTY, NULL, STRUCT, VALUE, FieldRule, MessageRules, StructRules, Table


@dataclass
class Package(shared.GeneratedPackage):
    """A generated package ready to fuzz: ``module`` is loaded in this process."""

    #: The command-line options that name it again (empty for the built-in).
    argument: str = ""
    _table: Table | None = None
    _layouts: dict[tuple[int, str, int], Any] | None = None

    @property
    def builtin(self) -> bool:
        return self.name == BUILTIN

    def message_type(self, api: int, kind: str) -> Any:
        return self.module.message_type(api, kind)

    @property
    def table(self) -> Table:
        """The fuzz's rules of every request and response (see the module's text)."""
        if self._table is None:
            from .rules import build_table

            if self.builtin:
                self._table = build_table()
            else:
                table = build_table(self.specs) if self.specs else table_of(self.module)
                same = kafka_versions(self.message_type, table)
                self._table = {k: r._replace(kafka_versions=same[k]) for k, r in table.items()}
        return self._table

    @property
    def layouts(self) -> dict[tuple[int, str, int], Any]:
        """(API, kind, version) -> its layout, for every request and response."""
        if self._layouts is None:
            self._layouts = {
                (api, kind, v): layout_of(self.message_type(api, kind), v)
                for (api, kind), rules in sorted(self.table.items())
                for v in rules.versions
            }
        return self._layouts

    @property
    def digest(self) -> str:
        """The spec digest: SHA-256 of every layout (names, types, versions, tags)."""
        return hashlib.sha256(repr(sorted(self.layouts.items())).encode()).hexdigest()

    @property
    def id_digest(self) -> str:
        """What the failure ids of the package carry: the start of its spec digest (none
        for the built-in, whose ids stay as they always were)."""
        return "" if self.builtin else self.digest[:12]

    def describe(self) -> dict[str, Any]:
        """What run.json records of the package."""
        return {
            "label": self.label,
            "argument": self.argument,
            "import_name": self.name,
            "spec_digest": self.digest,
            "specs": [str(p) for p in self.specs],
        }


# ---------------------------------------------------------------- resolving a source


def builtin() -> Package:
    return Package("kafkagen.generated (built-in)", BUILTIN, importlib.import_module(BUILTIN), None)


def resolve(source: str | Sequence[str] | None = None) -> Package:
    """The package of a source: None for the built-in, a module name, a package folder, a
    release number, or a sequence of spec folders. Raises :class:`PackageError`."""
    if source is None:
        return builtin()
    if isinstance(source, str):
        package = _resolve_one(source)
        package.argument = "" if package.builtin else f"--package {source}"
    else:
        package = from_specs([Path(p) for p in source])
        package.argument = " ".join(f"--specs {p}" for p in source)
    return package


def _resolve_one(source: str) -> Package:
    from kafkagen.cli.import_specs import is_release

    path = Path(source)
    if path.is_dir():
        if (path / MARKER).is_file():
            return from_folder(path, source)
        if any(path.glob("*.json")):
            return from_specs([path])
        raise PackageError(
            f"{source}: not a kafkagen-generated package (no {MARKER} file) nor a spec folder"
        )
    if is_release(source):
        return from_release(source)
    if "/" in source or source.startswith("."):
        raise PackageError(f"{source}: no such folder")
    return from_module(source)


def from_module(name: str) -> Package:
    if name == BUILTIN:
        return builtin()
    return _fuzzed(shared.from_module(name))


def from_folder(folder: Path, label: str) -> Package:
    """A generated package folder, loaded under a name made from its content."""
    return _fuzzed(shared.from_folder(folder, label))


def from_specs(spec_dirs: Sequence[Path], label: str | None = None) -> Package:
    """Generate the spec folders into a temporary package (removed by ``close``)."""
    return _fuzzed(shared.from_specs(spec_dirs, label))


def _fuzzed(loaded: shared.GeneratedPackage) -> Package:
    return Package(
        loaded.label, loaded.name, loaded.module, loaded.folder, loaded.specs, loaded.scratch
    )


def from_release(version: str) -> Package:
    """Kafka's own spec files of a release, generated (the jar is cached by Maven)."""
    from kafkagen.cli.import_specs import build_specs, read_specs, resolve_source, write_files
    from kafkagen.generator.errors import SpecError

    try:
        texts = build_specs(read_specs(resolve_source(version)), extensions=None)
    except SpecError as e:
        raise PackageError(f"Kafka {version}: {e.line()}") from None
    scratch = Path(tempfile.mkdtemp(prefix=f"kafka-{version}-specs-"))
    try:
        write_files(scratch, texts)
        package = from_specs([scratch], f"Kafka {version}")
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    package.scratch.append(scratch)
    return package


@contextlib.contextmanager
def opened(source: str | Sequence[str] | None) -> Iterator[Package]:
    """:func:`resolve`, with the package's temporary folders removed afterwards."""
    package = resolve(source)
    try:
        yield package
    finally:
        package.close()


def run_on(source: str | Sequence[str] | None, command: str, body: Callable[[Package], int]) -> int:
    """The exit status of ``body`` run on the package of ``source``, its temporary folders
    removed afterwards; a source that cannot be used is one line on stderr and status 2."""
    try:
        package = resolve(source)
    except PackageError as e:
        print(f"{command}: {e}", file=sys.stderr)
        return 2
    try:
        return body(package)
    finally:
        package.close()


# ---------------------------------------------------------------- the executors


def load_shipped(name: str) -> ModuleType:
    """The package ``name`` in a worker: the built-in, or one shipped by :func:`ship`
    (its zip is on sys.path there)."""
    return importlib.import_module(name)


# ---------------------------------------------------------------- what a package says


#: Plan ops of fixed-width kinds: (kind, attribute, run size).
_OPTIONAL = {"string": 3, "bytes": 3, "array": 3, "struct": 2}


def _nullable(op: tuple[Any, ...]) -> bool:
    at = _OPTIONAL.get(op[0])
    return bool(op[at]) if at is not None else False


def _field_layout(op: tuple[Any, ...]) -> tuple[Any, ...]:
    """One field on the wire: kind, attribute, and what decides its bytes."""
    kind, attr = op[0], op[1]
    if kind in ("string", "bytes"):
        return (kind, attr, bool(op[2]), bool(op[3]))
    if kind == "struct":
        return (kind, attr, bool(op[2]), _plan_layout(op[3]))
    if kind == "array":
        elem = op[4] if isinstance(op[4], str) else _plan_layout(op[4])
        return (kind, attr, bool(op[2]), bool(op[3]), elem)
    return (kind, attr)


def _plan_layout(plan: tuple[Any, ...]) -> tuple[Any, ...]:
    """A struct at one version: (flexible, fields in wire order, tagged fields by tag)."""
    _cls, flexible, ops, tags, _qualname, _other_tags = plan
    fields = tuple(_field_layout(op) for op in ops if op[0] != "absent")
    tagged = tuple((tag, _field_layout(op), _default_key(default)) for tag, op, default in tags)
    return (bool(flexible), fields, tagged)


def _default_key(default: tuple[Any, ...]) -> tuple[Any, ...]:
    """A tagged field's default as plain data (it decides whether the field is written)."""
    if default[0] == "value":
        return ("value", default[1])
    return (default[0],)


def layout_of(cls: Any, version: int) -> tuple[Any, ...]:
    """``cls`` at ``version`` as plain data: two versions (of one package or of two) with
    equal layouts read and write the same bytes alike, under the same names."""
    return _plan_layout(cls._plans[version])


def kafka_versions(message_type: Any, table: Table) -> dict[tuple[int, str], tuple[int, ...]]:
    """Per (API, kind) of ``table``, the versions whose layout in the package of
    ``message_type`` is the built-in package's: those Kafka's classes may judge (the
    built-in's own changes to Kafka are documented differences)."""
    reference = importlib.import_module(BUILTIN)
    out: dict[tuple[int, str], tuple[int, ...]] = {}
    for (api, kind), rules in table.items():
        same = []
        if api in reference.APIS:
            theirs = reference.message_type(api, kind)
            mine = message_type(api, kind)
            for v in rules.versions:
                if v in theirs._plans and layout_of(theirs, v) == layout_of(mine, v):
                    same.append(v)
        out[(api, kind)] = tuple(same)
    return out


def table_of(module: ModuleType) -> Table:
    """The fuzz's rules of every request and response of a generated package, read from
    its classes' field tables and per-version layouts (no specs needed)."""
    table: Table = {}
    for api in sorted(module.APIS):
        for kind in KINDS:
            cls = module.message_type(api, kind)
            table[(api, kind)] = _message_rules(cls, kind)
    return table


def _message_rules(cls: Any, kind: str) -> MessageRules:
    classes: list[Any] = []
    tables: list[Any] = []

    def visit(ftable: Any) -> None:
        if any(c is ftable[0] for c in classes):
            return
        classes.append(ftable[0])
        tables.append(ftable)
        for row in ftable[1]:
            if row[4] is not None:
                visit(row[4])

    visit(cls._field_table)
    index = {id(c): i for i, c in enumerate(classes)}
    structs = tuple(_struct_rules(c, t, index) for c, t in zip(classes, tables, strict=True))
    versions = sorted(cls._plans)
    flexible = [v for v in versions if cls._plans[v][1]]
    return MessageRules(
        name=cls.__name__,
        api_key=cls.API_KEY,
        kind=kind,
        lowest=versions[0],
        highest=versions[-1],
        flex_low=flexible[0] if flexible else None,
        flex_high=flexible[-1] if flexible else None,
        structs=structs,
    )


def _struct_rules(cls: Any, ftable: Any, index: dict[int, int]) -> StructRules:
    plans = cls._plans
    defaults = cls()
    fields = []
    for attr, _json_key, _tagged, ever_nullable, sub in ftable[1]:
        present: list[int] = []
        nullable: list[int] = []
        ignorable = False
        array = False
        tag = None
        for v in sorted(plans):
            _c, _flex, ops, tags, _q, _other = plans[v]
            op = next((o for o in ops if o[1] == attr), None)
            tagged = next(((t, o) for t, o, _d in tags if o[1] == attr), None)
            if tagged is not None:
                tag, op = tagged
            if op is None or op[0] == "absent":
                ignorable = ignorable or bool(op is not None and op[3])
                continue
            present.append(v)
            array = array or op[0] == "array"
            if _nullable(op):
                nullable.append(v)
        if ever_nullable and not nullable:
            # Nullable only in versions the message no longer has: none of these.
            nullable = [-1]
        default = getattr(defaults, attr)
        if default is None:
            default_kind: str = NULL
        elif isinstance(default, list):
            default_kind, default = EMPTY, None
        elif sub is not None:
            default_kind, default = STRUCT, None
        else:
            default_kind = VALUE
        fields.append(
            FieldRule(
                attr=attr,
                low=present[0] if present else 1,
                high=present[-1] if present else 0,
                null_low=nullable[0] if nullable else 1,
                null_high=nullable[-1] if nullable else 0,
                ignorable=ignorable,
                default_kind=default_kind,
                default=default,
                child=index[id(sub[0])] if sub is not None else -1,
                array=array,
                tag=tag,
            )
        )
    name = cls.__qualname__.rsplit(".", 1)[-1].lstrip("_")
    return StructRules(name, tuple(fields), ftable[2])


__all__ = [
    "BUILTIN",
    "MARKER",
    "Package",
    "PackageError",
    "builtin",
    "kafka_versions",
    "layout_of",
    "load_shipped",
    "opened",
    "resolve",
    "run_on",
    "table_of",
]
