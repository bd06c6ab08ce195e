"""Evolution checks between two revisions of a spec directory.

A spec may grow: new versions at the top, new fields in those versions, new tagged fields
anywhere flexible. What it may not do is change the wire form of a version that already
shipped, because peers built from the old spec still speak it. Each incompatibility is a
:class:`SpecError` line naming the file, the struct/field path, the rule and the new value.

Specs are paired by file name. Versions above the old highest are new; when the old spec
marked its latest version unstable, that version never shipped, so it is free to change too.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import SpecError, SpecErrors
from .loader import load_spec, spec_files
from .types import FieldType
from .validate import validate_document
from .versions import NONE, Versions

Doc = Mapping[str, Any]


def _load_directory(directory: Path) -> dict[str, dict[str, Any]]:
    """Every spec of a directory, validated and normalized; SpecErrors if any is unusable."""
    try:
        files = spec_files(directory)
    except OSError as e:
        raise SpecErrors(
            [SpecError(str(directory), "", "cannot read spec directory", e.strerror)]
        ) from e
    if not files:
        # An empty side would make every spec look removed (or nothing checked at all).
        raise SpecErrors([SpecError(str(directory), "", "no spec files in directory")])
    docs: dict[str, dict[str, Any]] = {}
    errors: list[SpecError] = []
    for path in files:
        try:
            docs[path.name] = validate_document(load_spec(path), path.name)
        except SpecError as e:
            errors.append(e)
        except SpecErrors as e:
            errors.extend(e.errors)
    if errors:
        raise SpecErrors(errors)
    return docs


def _versions(text: str | None) -> Versions:
    return NONE if text is None else Versions.parse(text)


@dataclass(frozen=True)
class _Side:
    """What a field's meaning depends on beyond the field itself, for one revision."""

    flexible: Versions
    common: Mapping[str, Doc]

    def struct_fields(self, f: Doc) -> list[Doc]:
        inline: list[Doc] = f.get("fields") or []
        if inline:
            return inline
        name = FieldType.parse(f["type"]).struct_name
        struct = self.common.get(name or "")
        return list(struct["fields"]) if struct else []

    def field_flexible(self, f: Doc) -> Versions:
        return _versions(f["flexibleVersions"]) if "flexibleVersions" in f else self.flexible


class _Comparer:
    def __init__(self, file: str, old: Doc, new: Doc) -> None:
        self.file = file
        self.errors: list[SpecError] = []
        self.old = _Side(
            _versions(old.get("flexibleVersions")),
            {s["name"]: s for s in old.get("commonStructs", [])},
        )
        self.new = _Side(
            _versions(new.get("flexibleVersions")),
            {s["name"]: s for s in new.get("commonStructs", [])},
        )

    def err(self, path: str, rule: str, value: object = None) -> None:
        self.errors.append(SpecError(self.file, path, rule, value))

    def message(self, old: Doc, new: Doc) -> None:
        name = new["name"]
        if old["name"] != name:
            self.err(name, f"name changed (was {old['name']!r})", name)
        for key in ("apiKey", "type"):
            if old.get(key) != new.get(key):
                self.err(name, f"{key} changed (was {old.get(key)!r})", new.get(key))

        old_valid = Versions.parse(old["validVersions"])
        new_valid = Versions.parse(new["validVersions"])
        shipped = old_valid
        if old.get("latestVersionUnstable") and not old_valid.empty:
            shipped = Versions(old_valid.lowest, old_valid.highest - 1)
            shipped = NONE if shipped.empty else shipped
        if not shipped.empty and (
            new_valid.empty
            or new_valid.lowest != shipped.lowest
            or new_valid.highest < shipped.highest
        ):
            self.err(
                name,
                f"validVersions may only be extended at the top (was {old['validVersions']!r})",
                new["validVersions"],
            )
        existing = shipped.intersect(new_valid)

        if self.old.flexible.intersect(existing) != self.new.flexible.intersect(existing):
            self.err(
                name,
                f"flexibleVersions changed for existing versions (was {str(self.old.flexible)!r})",
                str(self.new.flexible),
            )
        self.struct(name, old["fields"], new["fields"], existing)

    def struct(
        self, path: str, old_fields: list[Doc], new_fields: list[Doc], existing: Versions
    ) -> None:
        if existing.empty:
            return
        old_by_name = {f["name"]: f for f in old_fields}
        new_by_name = {f["name"]: f for f in new_fields}
        for fname in [*old_by_name, *(n for n in new_by_name if n not in old_by_name)]:
            fpath = f"{path}.{fname}"
            old, new = old_by_name.get(fname), new_by_name.get(fname)
            old_here = NONE if old is None else _versions(old["versions"]).intersect(existing)
            new_here = NONE if new is None else _versions(new["versions"]).intersect(existing)
            if old_here.empty and new_here.empty:
                continue  # lives only in versions that never shipped
            if old is None or old_here.empty:
                # New to every shipped version: only a tagged field, which old readers skip.
                assert new is not None
                if "tag" not in new:
                    self.err(
                        fpath,
                        f"a field added to existing versions {new_here} must be tagged",
                        new["versions"],
                    )
                continue
            if new is None:
                self.err(fpath, f"field removed, but existing versions {old_here} have it")
                continue
            self.field(fpath, old, new, existing)
        self.order(path, old_fields, new_fields, existing)

    def order(
        self, path: str, old_fields: list[Doc], new_fields: list[Doc], existing: Versions
    ) -> None:
        # Untagged fields go on the wire in declaration order; tagged ones by tag number.
        def present(fields: list[Doc], version: int) -> list[str]:
            return [
                f["name"] for f in fields if "tag" not in f and version in _versions(f["versions"])
            ]

        for version in existing:
            old_seq, new_seq = present(old_fields, version), present(new_fields, version)
            common = set(old_seq) & set(new_seq)
            old_order = [n for n in old_seq if n in common]
            new_order = [n for n in new_seq if n in common]
            if old_order != new_order:
                self.err(
                    path,
                    f"fields reordered in existing version {version} (was {old_order})",
                    new_order,
                )
                return

    def field(self, path: str, old: Doc, new: Doc, existing: Versions) -> None:
        old_versions, new_versions = _versions(old["versions"]), _versions(new["versions"])
        here = old_versions.intersect(existing)
        if here != new_versions.intersect(existing):
            self.err(
                path,
                f"versions changed for existing versions (was {old['versions']!r})",
                new["versions"],
            )
        # Encoding details are compared only where both revisions have the field, so a
        # versions change is reported once, not again as every detail that moved with it.
        both = here.intersect(new_versions)
        if old["type"] != new["type"]:
            self.err(path, f"type changed (was {old['type']!r})", new["type"])
            return  # the rest would compare unrelated things
        if old.get("tag") != new.get("tag"):
            was = "untagged" if old.get("tag") is None else repr(old["tag"])
            now = new.get("tag", "untagged")
            self.err(path, f"tag changed (was {was})", now)
        for key in ("taggedVersions", "nullableVersions"):
            before = _versions(old.get(key)).intersect(both)
            after = _versions(new.get(key)).intersect(both)
            if before != after:
                self.err(
                    path,
                    f"{key} changed for existing versions (was {old.get(key, 'none')!r})",
                    new.get(key, "none"),
                )
        old_flex = self.old.field_flexible(old).intersect(both)
        new_flex = self.new.field_flexible(new).intersect(both)
        if old_flex != new_flex and "flexibleVersions" in (old.keys() | new.keys()):
            self.err(
                path,
                f"flexibleVersions changed for existing versions "
                f"(was {old.get('flexibleVersions', 'the message default')!r})",
                new.get("flexibleVersions", "the message default"),
            )
        # Readers of versions without the field fill in the default: it is part of the format.
        if old.get("default", "") != new.get("default", ""):
            self.err(
                path, f"default changed (was {old.get('default', '')!r})", new.get("default", "")
            )
        if FieldType.parse(new["type"]).struct_name is not None:
            self.struct(path, self.old.struct_fields(old), self.new.struct_fields(new), both)


def check_compat(old_dir: Path, new_dir: Path) -> list[SpecError]:
    """Every incompatible change from the specs in old_dir to those in new_dir.

    Raises SpecErrors when either side cannot be read or holds an invalid spec.
    """
    old_docs = _load_directory(old_dir)
    new_docs = _load_directory(new_dir)
    errors: list[SpecError] = []
    for file in sorted(old_docs):
        if file not in new_docs:
            errors.append(SpecError(file, "", "spec removed", None))
            continue
        comparer = _Comparer(file, old_docs[file], new_docs[file])
        comparer.message(old_docs[file], new_docs[file])
        errors.extend(comparer.errors)
    return errors


def run_check_compat(old_dir: Path, new_dir: Path) -> int:
    """Command-line face of check_compat: 0 compatible, 1 incompatible, 2 unusable input."""
    try:
        errors = check_compat(old_dir, new_dir)
    except SpecErrors as e:
        for err in e.errors:
            print(err.line(), file=sys.stderr)
        return 2
    for err in errors:
        print(err.line(), file=sys.stderr)
    if errors:
        return 1
    old_count, new_count = len(spec_files(old_dir)), len(spec_files(new_dir))
    print(
        f"OK: {old_count} specs compatible with {old_dir}, "
        f"{new_count - old_count} added in {new_dir}"
    )
    return 0
