"""Build the project's ``message_specs/`` from a Kafka release: a jar, a folder or a number.

    kafkagen import-specs --kafka 4.4.0 --older 3.9.1 --prune    # import, write
    kafkagen import-specs --kafka 4.4.0 --older 3.9.1 --check    # would anything change?
    kafkagen import-specs --kafka 4.4.0 --older 3.9.1 --verify   # no upstream wire fact lost?

A release number is fetched as ``org.apache.kafka:kafka-clients`` from Maven Central and its
``common/message/*.json`` read from the jar; ``--from`` takes a jar or a folder. Older
releases (``--older``) supply the versions the newest one dropped (:mod:`kafkagen.cli.spec_merge`).

Each upstream file is read in Kafka's dialect and written back as plain JSON holding only
the wire facts: ``about`` texts are dropped and comments vanish because the document is
re-serialised. Loose forms are canonicalised (``"tag": "0"`` -> ``0``, ``"ignorable":
"false"`` -> ``false``, non-string defaults -> strings, ``"default": null`` dropped); every
other value stays as written. Project extensions (the seeds' new versions) are declared in
``spec_extensions.json`` next to this module and re-applied on every import, so a newer
Kafka release can be imported without losing them; an extension written against a
different upstream version range is refused rather than applied blindly.

The output is a pure function of the inputs, and nothing is written until every file has
been built; each file then goes through a temporary file and a rename.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkagen.cli.spec_merge import DROPPED_KEYS, differences, merge_releases, project, strip
from kafkagen.generator.errors import SpecError
from kafkagen.generator.loader import (
    as_bool,
    as_int,
    default_text,
    load_spec,
    normalize,
    parse_spec_text,
    spec_files,
)
from kafkagen.generator.versions import Versions

#: Top-level keys in the order Kafka's own files mostly use.
MESSAGE_KEYS = (
    "apiKey",
    "type",
    "listeners",
    "name",
    "validVersions",
    "deprecatedVersions",
    "flexibleVersions",
    "latestVersionUnstable",
)
#: Field (and common struct) keys, in a fixed order; nested lists always come last.
FIELD_KEYS = (
    "name",
    "type",
    "versions",
    "taggedVersions",
    "tag",
    "nullableVersions",
    "flexibleVersions",
    "ignorable",
    "default",
    "mapKey",
    "entityType",
    "zeroCopy",
)
#: Keys holding lists of objects; rendered one object per line.
LIST_KEYS = ("fields", "commonStructs")

_INT_KEYS = frozenset({"apiKey", "tag"})
_BOOL_KEYS = frozenset({"ignorable", "mapKey", "zeroCopy", "latestVersionUnstable"})

DEFAULT_EXTENSIONS = Path(__file__).with_name("spec_extensions.json")


# --- canonical form -----------------------------------------------------------------------


def _canonical_value(key: str, value: Any) -> Any:
    """The canonical form of one scalar (``default`` may become None: no default)."""
    if key in _INT_KEYS:
        return as_int(value)
    if key in _BOOL_KEYS:
        return as_bool(value)
    if key == "default" and not isinstance(value, str):
        return default_text(value)
    return value


def _ordered_keys(obj: Mapping[str, Any], known: Sequence[str]) -> list[str]:
    # Keys this tool does not know are kept (a newer Kafka may add one) after the known
    # ones, sorted, so the output stays deterministic; the validator judges them.
    extra = sorted(k for k in obj if k not in known and k not in LIST_KEYS)
    present = [k for k in known if k in obj] + extra + [k for k in LIST_KEYS if k in obj]
    return [k for k in present if k not in DROPPED_KEYS]


def canonical(
    obj: Mapping[str, Any], file: str, path: str = "", top: bool = True
) -> dict[str, Any]:
    """A spec document (or field) without ``about``, in canonical key order and forms."""
    out: dict[str, Any] = {}
    for key in _ordered_keys(obj, MESSAGE_KEYS if top else FIELD_KEYS):
        value = obj[key]
        where = f"{path}.{key}" if path else key
        if key in LIST_KEYS:
            if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                raise SpecError(file, where, "must be a list of objects", value)
            out[key] = [
                canonical(v, file, f"{where}[{v.get('name', i)}]", top=False)
                for i, v in enumerate(value)
            ]
            continue
        try:
            value = _canonical_value(key, value)
        except ValueError as e:
            raise SpecError(file, where, str(e)) from e
        if value is not None or key != "default":
            out[key] = value
    return out


# --- layout -------------------------------------------------------------------------------


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True)


def _render_object(
    obj: Mapping[str, Any], indent: str, comma: str, nested: Sequence[str]
) -> list[str]:
    """One object per line; a nested list opens on that line and closes with ``]}``."""
    # Objects have at most one nested list (fields), and it is their last key.
    key = next((k for k in obj if k in nested and obj[k]), None)
    scalars = ", ".join(f"{_dump(k)}: {_dump(v)}" for k, v in obj.items() if k != key)
    if key is None:
        return [f"{indent}{{{scalars}}}{comma}"]
    items = obj[key]
    lines = [f"{indent}{{{scalars + ', ' if scalars else ''}{_dump(key)}: ["]
    for i, item in enumerate(items):
        lines.extend(_render_object(item, indent + "  ", "," if i < len(items) - 1 else "", nested))
    lines.append(f"{indent}]}}{comma}")
    return lines


def render(doc: Mapping[str, Any], nested: Sequence[str] = LIST_KEYS) -> str:
    """The file text: 2-space indent, one scalar key or one list element per line."""
    lines = ["{"]
    keys = list(doc)
    for i, key in enumerate(keys):
        comma = "," if i < len(keys) - 1 else ""
        value = doc[key]
        if key in nested and isinstance(value, list) and value:
            lines.append(f"  {_dump(key)}: [")
            for j, item in enumerate(value):
                lines.extend(
                    _render_object(item, "    ", "," if j < len(value) - 1 else "", nested)
                )
            lines.append(f"  ]{comma}")
        else:
            lines.append(f"  {_dump(key)}: {_dump(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --- extensions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Requirement:
    """An upstream fact a seed decision relies on (checked, never written)."""

    seed: str
    file: str
    field: str  # dotted path through nested fields, e.g. "Coordinators.Key"
    type: str
    versions: str


@dataclass(frozen=True)
class Patch:
    """One spec's project extension: a new version range and the fields it appends."""

    seed: str
    file: str
    upstream_valid_versions: str
    valid_versions: str
    latest_version_unstable: bool | None
    append_fields: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Extensions:
    requires: tuple[Requirement, ...] = ()
    patches: tuple[Patch, ...] = ()


def _keys(obj: Any, file: str, path: str, required: set[str], optional: set[str]) -> dict[str, Any]:
    # The extension file is hand-edited: reject typos instead of silently ignoring them.
    if not isinstance(obj, dict):
        raise SpecError(file, path, "must be a JSON object", obj)
    missing = required - obj.keys()
    unknown = obj.keys() - required - optional
    if missing:
        raise SpecError(file, path, "missing keys", sorted(missing))
    if unknown:
        raise SpecError(file, path, "unknown keys", sorted(unknown))
    return obj


def load_extensions(path: Path) -> Extensions:
    """The extension file's requirements and patches, checked for shape and typos."""
    raw = _keys(load_spec(path), path.name, "", set(), {"requires", "patches"})
    requires = tuple(
        Requirement(
            **_keys(
                r, path.name, f"requires[{i}]", {"seed", "file", "field", "type", "versions"}, set()
            )
        )
        for i, r in enumerate(raw.get("requires", []))
    )
    patches = []
    for i, p in enumerate(raw.get("patches", [])):
        p = _keys(
            p,
            path.name,
            f"patches[{i}]",
            {"seed", "file", "upstreamValidVersions", "validVersions", "appendFields"},
            {"latestVersionUnstable"},
        )
        fields = p["appendFields"]
        if not isinstance(fields, list) or not all(isinstance(f, dict) for f in fields):
            raise SpecError(path.name, f"patches[{i}].appendFields", "must be a list of fields")
        unstable = p.get("latestVersionUnstable")
        patches.append(
            Patch(
                seed=p["seed"],
                file=p["file"],
                upstream_valid_versions=p["upstreamValidVersions"],
                valid_versions=p["validVersions"],
                latest_version_unstable=None if unstable is None else as_bool(unstable),
                append_fields=tuple(fields),
            )
        )
    return Extensions(requires, tuple(patches))


def _walk(fields: Sequence[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    for f in fields:
        yield f
        yield from _walk(f.get("fields", []))


def _struct_names(doc: Mapping[str, Any]) -> list[str]:
    names = [
        str(f["type"]).removeprefix("[]") for f in _walk(doc.get("fields", [])) if "fields" in f
    ]
    return names + [str(s["name"]) for s in doc.get("commonStructs", [])]


def _find_field(doc: Mapping[str, Any], dotted: str) -> Mapping[str, Any] | None:
    fields: Sequence[Mapping[str, Any]] = doc.get("fields", [])
    found: Mapping[str, Any] | None = None
    for name in dotted.split("."):
        found = next((f for f in fields if f.get("name") == name), None)
        if found is None:
            return None
        fields = found.get("fields", [])
    return found


def check_requirement(doc: Mapping[str, Any], req: Requirement) -> None:
    field = _find_field(doc, req.field)
    got = None if field is None else (field.get("type"), field.get("versions"))
    if got != (req.type, req.versions):
        raise SpecError(
            req.file,
            req.field,
            f"seed {req.seed} decision relies on {req.type} in versions {req.versions};"
            " revisit it in message_specs/README.md",
            "missing" if got is None else f"{got[0]} in versions {got[1]}",
        )


def apply_patch(doc: dict[str, Any], patch: Patch) -> dict[str, Any]:
    """The upstream document with the patch applied; refuses anything ambiguous."""
    file = patch.file
    upstream = Versions.parse(doc["validVersions"])
    if upstream != Versions.parse(patch.upstream_valid_versions):
        # A newer Kafka moved this API on: the extension's version numbers must be re-based
        # by hand, never shifted silently (clients would see a different wire format).
        raise SpecError(
            file,
            "validVersions",
            f"extension (seed {patch.seed}) was written against upstream validVersions"
            f" {patch.upstream_valid_versions}; re-base it in {DEFAULT_EXTENSIONS.name}",
            doc["validVersions"],
        )
    new = Versions.parse(patch.valid_versions)
    if new.lowest != upstream.lowest or new.highest <= upstream.highest:
        raise SpecError(
            file,
            "validVersions",
            "an extension must add versions above upstream's",
            patch.valid_versions,
        )
    if as_bool(doc.get("latestVersionUnstable", False)) and patch.latest_version_unstable is None:
        # Only the latest version can be unstable: adding one above an unstable version
        # changes what the flag means, so the patch must state it.
        raise SpecError(
            file,
            "latestVersionUnstable",
            "upstream latest is unstable; the patch must say what the new latest is",
        )
    names = {f["name"] for f in doc["fields"]}
    structs = _struct_names(doc)
    for raw in patch.append_fields:
        field = canonical(raw, file, f"appendFields[{raw.get('name')}]", top=False)
        if "about" in raw:
            raise SpecError(
                file, f"appendFields[{raw.get('name')}]", "extensions carry no about text"
            )
        if field["name"] in names:
            raise SpecError(file, f"fields[{field['name']}]", "field name already used upstream")
        for f in _walk([field]):
            lowest = Versions.parse(f["versions"]).lowest
            if lowest <= upstream.highest or lowest > new.highest:
                raise SpecError(
                    file,
                    f"fields[{f['name']}].versions",
                    "must start in a new version",
                    f["versions"],
                )
        for struct in _struct_names({"fields": [field]}):
            if struct in structs:
                raise SpecError(
                    file,
                    f"fields[{field['name']}].type",
                    "struct name already used in this message",
                    struct,
                )
            structs.append(struct)
        names.add(field["name"])
    out = dict(doc)
    out["fields"] = [*doc["fields"], *patch.append_fields]
    out["validVersions"] = patch.valid_versions
    if patch.latest_version_unstable is not None:
        out["latestVersionUnstable"] = patch.latest_version_unstable
    return out


# --- sources: a spec folder, a kafka-clients jar, or a Kafka release by number -------------

#: Where a ``kafka-clients`` jar keeps the spec files.
JAR_SPEC_DIR = "common/message/"


def is_release(source: str) -> bool:
    """Whether ``source`` names a Kafka release (``4.4.0``) rather than a path."""
    return bool(re.fullmatch(r"\d+\.\d+\.\d+(?:[-.][0-9A-Za-z.-]+)?", source))


def resolve_source(source: str) -> Path:
    """A folder or jar path as given, or a release number as its ``kafka-clients`` jar."""
    if is_release(source) and not Path(source).exists():
        from kafkagen.maven import MavenError, jar

        try:
            return jar(f"org.apache.kafka:kafka-clients:{source}")
        except MavenError as e:
            raise SpecError(
                source, "", "cannot fetch kafka-clients from Maven Central", str(e)
            ) from e
    return Path(source)


def read_specs(source: Path) -> dict[str, dict[str, Any]]:
    """Every spec of a folder or of a jar's ``common/message/``, by file name, as loaded."""
    if source.is_dir():
        paths = spec_files(source)
        if not paths:
            raise SpecError(str(source), "", "no .json spec files in the upstream directory")
        return {p.name: load_spec(p) for p in paths}
    try:
        with zipfile.ZipFile(source) as jar:
            members = sorted(
                n
                for n in jar.namelist()
                if n.startswith(JAR_SPEC_DIR) and n.endswith(".json") and n.count("/") == 2
            )
            texts = {n.removeprefix(JAR_SPEC_DIR): jar.read(n) for n in members}
    except (OSError, zipfile.BadZipFile) as e:
        raise SpecError(str(source), "", "not a spec folder or a readable jar", str(e)) from e
    if not texts:
        raise SpecError(str(source), "", f"the jar has no {JAR_SPEC_DIR}*.json spec files")
    docs = {}
    for name, data in texts.items():
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SpecError(name, "", "cannot read spec file", str(e)) from e
        docs[name] = parse_spec_text(text, name)
    return docs


# --- import -------------------------------------------------------------------------------


def build_directory(
    src: Path,
    extensions: Path | None = DEFAULT_EXTENSIONS,
    older: Sequence[Path] = (),
) -> dict[str, str]:
    """Every output file's name and text, built in memory; raises SpecError on any problem."""
    return build_specs(read_specs(src), [read_specs(o) for o in older], extensions)


def build_specs(
    newest: Mapping[str, dict[str, Any]],
    older: Sequence[Mapping[str, dict[str, Any]]] = (),
    extensions: Path | None = DEFAULT_EXTENSIONS,
) -> dict[str, str]:
    """The output files built from loaded releases (newest first, then older ones)."""
    ext = load_extensions(extensions) if extensions is not None else Extensions()
    docs, _ = merge_releases(newest, older)
    for req in ext.requires:
        if req.file not in docs:
            raise SpecError(
                req.file, "", f"seed {req.seed} requirement names a file upstream lacks"
            )
        check_requirement(docs[req.file], req)
    seen: set[str] = set()
    for patch in ext.patches:
        if patch.file not in docs or patch.file in seen:
            raise SpecError(patch.file, "", "each patch must name one upstream file, once")
        seen.add(patch.file)
        try:
            docs[patch.file] = apply_patch(docs[patch.file], patch)
        except (KeyError, TypeError, ValueError) as e:
            # A malformed range or a missing key, upstream or in the patch: still one line.
            raise SpecError(patch.file, "", "extension cannot be applied", str(e)) from e
    return {name: render(canonical(doc, name)) for name, doc in docs.items()}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_files(dst: Path, outputs: Mapping[str, str]) -> list[Path]:
    """Write all files: stage every changed one in a temporary file, then rename them all."""
    dst.mkdir(parents=True, exist_ok=True)
    mode = 0o666 & ~_umask()  # mkstemp creates 0600; spec files are ordinary files
    staged: list[tuple[Path, Path]] = []
    try:
        for name, text in outputs.items():
            target = dst / name
            data = text.encode("utf-8")
            if target.is_file() and target.read_bytes() == data:
                continue  # unchanged: keep the file (and its mtime) as it is
            fd, tmp_name = tempfile.mkstemp(dir=dst, prefix=f".{name}.", suffix=".tmp")
            staged.append((Path(tmp_name), target))
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp_name, mode)
    except BaseException:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, target in staged:
        os.replace(tmp, target)
    return sorted(dst / name for name in outputs)


def import_directory(
    src: Path, dst: Path, extensions: Path | None = DEFAULT_EXTENSIONS
) -> list[Path]:
    """Import every spec of ``src`` into ``dst``, extensions applied; all output paths."""
    return write_files(dst, build_directory(src, extensions))


# --- verification -------------------------------------------------------------------------


def _without_new(fields: Sequence[Mapping[str, Any]], latest: int) -> list[dict[str, Any]]:
    """Fields minus those that only exist above upstream's latest version."""
    out = []
    for f in fields:
        if Versions.parse(f["versions"]).lowest > latest:
            continue
        g = dict(f)
        if "fields" in f:
            g["fields"] = _without_new(f["fields"], latest)
        out.append(g)
    return out


def _compare(up: dict[str, Any], out: dict[str, Any]) -> list[str]:
    problems = []
    up_range, out_range = Versions.parse(up["validVersions"]), Versions.parse(out["validVersions"])
    if out_range.lowest != up_range.lowest or out_range.highest < up_range.highest:
        problems.append(
            f"validVersions {out['validVersions']} does not extend {up['validVersions']}"
        )
    # 1. Every version upstream defines has exactly the same fields and facts in the output.
    common_out = {s["name"]: s.get("fields", []) for s in out.get("commonStructs", [])}
    where: dict[str, list[int]] = {}
    for version in up_range:
        pairs = [("fields", up["fields"], out["fields"])] + [
            (f"commonStructs[{s['name']}]", s.get("fields", []), common_out.get(s["name"], []))
            for s in up.get("commonStructs", [])
        ]
        for label, a, b in pairs:
            for found in differences(project(a, version), project(b, version), label):
                where.setdefault(found, []).append(version)
    for found, versions in where.items():
        contiguous = versions == list(range(versions[0], versions[-1] + 1))
        span = Versions(versions[0], versions[-1]) if contiguous else ",".join(map(str, versions))
        problems.append(f"versions {span}: {found}")
    # 2. The written form itself (range strings included) is upstream's, bar new versions.
    extended = out_range.highest > up_range.highest
    trimmed = []
    for doc in (up, out):
        d = dict(doc, fields=_without_new(doc["fields"], up_range.highest))
        d.pop("validVersions")  # compared above
        if extended:
            d.pop("latestVersionUnstable", None)  # now describes the new latest version
        trimmed.append(d)
    problems.extend(differences(trimmed[0], trimmed[1]))
    return problems


def verify_file(name: str, upstream: Mapping[str, Any], output_path: Path) -> list[str]:
    """Problems found comparing one output spec with its upstream document."""
    try:
        text = output_path.read_text(encoding="utf-8")
        raw_out = json.loads(text)  # plain JSON: no comments, no dialect
    except (OSError, ValueError) as e:
        return [f"{name}: output unreadable as plain JSON: {e}"]
    problems = []
    try:
        up = normalize(strip(upstream))
        out = normalize(raw_out)
        if out != strip(out):
            problems.append("output contains about text")
        if render(canonical(raw_out, name)) != text:
            problems.append("output is not in canonical layout")
        problems.extend(_compare(up, out))
    except (KeyError, TypeError, ValueError, SpecError) as e:
        problems.append(f"cannot compare: {type(e).__name__}: {e}")
    return [f"{name}: {p}" for p in problems]


def verify_specs(
    newest: Mapping[str, dict[str, Any]],
    older: Sequence[Mapping[str, dict[str, Any]]],
    dst: Path,
) -> tuple[int, list[str]]:
    """Check every upstream spec (older releases merged in) against its output.

    The merge itself is checked version by version against each release it draws on, so
    comparing the output with the merged document covers every release. Returns the number
    of specs checked and the problems.
    """
    docs, _ = merge_releases(newest, older)
    problems: list[str] = []
    for name in sorted(docs):
        target = dst / name
        if not target.is_file():
            problems.append(f"{name}: missing from {dst}")
            continue
        problems.extend(verify_file(name, docs[name], target))
    return len(docs), problems


# --- command line -------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "upstream",
        nargs="?",
        metavar="SOURCE",
        help="the newest release's specs: a spec folder (Kafka's"
        " clients/src/main/resources/common/message), a kafka-clients jar, or a release"
        " number such as 4.4.0 (its jar is fetched from Maven Central)",
    )
    parser.add_argument(
        "out_dir",
        nargs="?",
        type=Path,
        metavar="OUT_DIR",
        help="where to write (default: the built-in message_specs/)",
    )
    parser.add_argument(
        "--kafka", metavar="VERSION", help="the newest release by number (same as SOURCE)"
    )
    parser.add_argument(
        "--from",
        dest="from_path",
        metavar="PATH",
        help="the newest release as a spec folder or jar (same as SOURCE)",
    )
    parser.add_argument(
        "--older",
        action="append",
        default=[],
        metavar="SOURCE",
        help="an older release (number, folder or jar) supplying the versions the newest"
        " one dropped; repeatable, newest first",
    )
    parser.add_argument("--out", type=Path, metavar="DIR", help="same as OUT_DIR")
    parser.add_argument(
        "--extensions",
        type=Path,
        default=DEFAULT_EXTENSIONS,
        metavar="FILE",
        help="extension patches to apply (default: spec_extensions.json next to this tool)",
    )
    parser.add_argument("--no-extensions", action="store_true", help="write upstream facts only")
    parser.add_argument(
        "--prune",
        action="store_true",
        help="delete spec files in the output folder that no release produced (renamed APIs)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if the output would change"
    )
    mode.add_argument(
        "--verify",
        action="store_true",
        help="write nothing; check the output keeps every upstream wire fact",
    )


def run(args: argparse.Namespace) -> int:
    """The import as the command line runs it; the exit status."""
    from kafkagen.generator.errors import report_spec_warnings

    sources = [x for x in (args.upstream, args.kafka, args.from_path) if x]
    if len(sources) != 1:
        print("error: give the newest release once: SOURCE, --kafka or --from", file=sys.stderr)
        return 2
    out: Path = args.out or args.out_dir or _builtin_specs()
    extensions = None if args.no_extensions else args.extensions
    try:
        with report_spec_warnings():
            newest = read_specs(resolve_source(sources[0]))
            older = [read_specs(resolve_source(o)) for o in args.older]
            if args.verify:
                count, problems = verify_specs(newest, older, out)
                for line in problems:
                    print(line, file=sys.stderr)
                verdict = "FAILED" if problems else "ok"
                print(f"verify {verdict}: {count} upstream specs checked, {len(problems)} problems")
                return 1 if problems else 0
            outputs = build_specs(newest, older, extensions)
        if args.check:
            stale = [
                n
                for n, text in outputs.items()
                if not (out / n).is_file() or (out / n).read_text(encoding="utf-8") != text
            ]
            for n in stale:
                print(f"{out / n}: out of date", file=sys.stderr)
            verdict = "FAILED" if stale else "ok"
            print(f"check {verdict}: {len(outputs)} specs, {len(stale)} out of date")
            return 1 if stale else 0
        written = write_files(out, outputs)
    except SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 1
    produced = {p.name for p in written}
    for extra in spec_files(out):
        if extra.name in produced:
            continue
        if args.prune:
            extra.unlink()
            print(f"removed {extra}: no release has it", file=sys.stderr)
        else:
            print(f"note: {extra} is not an upstream spec; left untouched", file=sys.stderr)
    print(f"wrote {len(written)} specs to {out}")
    return 0


def _builtin_specs() -> Path:
    from kafkagen.generator.generate import BUILTIN_SPECS

    return BUILTIN_SPECS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kafkagen.cli.import_specs",
        description="Import Kafka's message specs (wire facts only) from a release, merge the"
        " versions older releases had below it, then re-apply the project's extensions.",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
