"""Merge Kafka releases: a newer release's specs extended down by the versions older ones had.

Kafka 4.0 dropped the versions KIP-896 retired, and the ZooKeeper-era APIs lost all of
theirs, yet clients and brokers older than 4.0 still send them. An older release's file
supplies the versions below the newer file's lowest; the newer file rules from its lowest
up. Each merged range is the union of the older file's part and the newer file's part, and
the result is checked version by version against both, so a merge that cannot be stated
as one spec stops the import instead of changing a wire fact.

The per-version view used for that check (:func:`project`, :func:`differences`) is also
what ``import_specs --verify`` compares with.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from kafkagen.generator.errors import SpecError
from kafkagen.generator.loader import as_bool, as_int, normalize
from kafkagen.generator.versions import NONE, OPEN_END, Versions

#: Kafka's prose, never copied into the project.
DROPPED_KEYS = frozenset({"about"})
#: Field keys holding a version range besides ``versions``.
VERSION_KEYS = ("nullableVersions", "taggedVersions", "flexibleVersions")


# --- comparing specs version by version ---------------------------------------------------


def strip(obj: Any) -> Any:
    """``obj`` without Kafka's prose (``about``), at any depth."""
    if isinstance(obj, dict):
        return {k: strip(v) for k, v in obj.items() if k not in DROPPED_KEYS}
    if isinstance(obj, list):
        return [strip(v) for v in obj]
    return obj


#: Field facts that hold for a field as a whole rather than per version: ``ignorable`` only
#: matters where the field is absent, so when releases disagree the newest one's holds.
_UNVERSIONED = frozenset({"ignorable"})


def project(
    fields: Sequence[Mapping[str, Any]], version: int, skip: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """The fields present in one version, with every *Versions key evaluated at it."""
    out = []
    for f in fields:
        if version not in Versions.parse(f["versions"]):
            continue
        facts: dict[str, Any] = {
            k: v
            for k, v in f.items()
            if k not in ("versions", "fields", *VERSION_KEYS) and k not in skip
        }
        for key in VERSION_KEYS:
            facts[key] = version in Versions.parse(f[key]) if key in f else None
        facts["fields"] = project(f.get("fields", []), version, skip)
        out.append(facts)
    return out


def differences(a: Any, b: Any, path: str = "") -> Iterator[str]:
    """Every place two JSON values differ, as readable paths."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys()):
            if key not in a or key not in b:
                yield f"{path}.{key}: only in {'upstream' if key in a else 'output'}"
            else:
                yield from differences(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            label = x.get("name", i) if isinstance(x, dict) else i
            yield from differences(x, y, f"{path}[{label}]")
        if len(a) != len(b):
            yield f"{path}: {len(a)} items upstream, {len(b)} in output"
    elif a != b:
        yield f"{path}: upstream {a!r}, output {b!r}"


# --- merging -----------------------------------------------------------------------------


def _spec_key(doc: Mapping[str, Any]) -> tuple[str, str]:
    # The API key identifies a request or response across renames (74 was
    # ListClientMetricsResources before 4.1, ListConfigResources since).
    if doc.get("type") in ("request", "response") and "apiKey" in doc:
        return str(doc["type"]), str(as_int(doc["apiKey"]))
    return str(doc.get("type")), str(doc.get("name"))


def _older_part(new: Versions, old: Versions, old_unstable: bool) -> Versions:
    """The versions an older file adds below a newer one (never an unstable latest)."""
    if old.empty:
        return NONE
    top = old.highest - 1 if old_unstable else old.highest
    if not new.empty:
        top = min(top, new.lowest - 1)
    return Versions(old.lowest, top) if old.lowest <= top else NONE


def _merged_range(
    file: str, where: str, old: str | None, new: str | None, taken: Versions, cut: int
) -> str | None:
    """The range that is ``old`` within ``taken`` and ``new`` from ``cut`` up, as text.

    Upstream's own text is kept when it already says exactly that (``"0+"`` stays ``"0+"``).
    """
    old_v = Versions.parse(old) if old is not None else NONE
    new_v = Versions.parse(new) if new is not None else NONE
    low_part = old_v.intersect(taken)
    high_part = new_v.intersect(Versions(cut, OPEN_END))
    if low_part.empty and high_part.empty:
        return None
    if low_part.empty:
        merged = high_part
    elif high_part.empty:
        merged = low_part
    elif low_part.highest + 1 >= high_part.lowest:
        merged = Versions(low_part.lowest, high_part.highest)
    else:
        raise SpecError(
            file,
            where,
            f"the older release's {old} and the newer's {new} leave a gap: not one range",
        )
    for text, parsed in ((new, new_v), (old, old_v)):
        if text is not None and parsed == merged:
            return text
    return str(merged)


_MERGED_RANGES = ("versions", "taggedVersions", "nullableVersions", "flexibleVersions")


def _merge_fields(
    file: str,
    path: str,
    old: Sequence[Mapping[str, Any]],
    new: Sequence[Mapping[str, Any]],
    taken: Versions,
    cut: int,
) -> list[dict[str, Any]]:
    """One field list holding the older list's fields within ``taken`` and the newer's."""
    old_by_name = {f["name"]: f for f in old}
    new_names = {f["name"] for f in new}
    out: list[dict[str, Any]] = []
    for f in new:
        o = old_by_name.get(f["name"])
        out.append(_merge_field(file, f"{path}.{f['name']}", o, f, taken, cut))
    # Fields the newer release removed keep their place after the field they followed.
    for i, o in enumerate(old):
        if o["name"] in new_names:
            continue
        kept = _merge_field(file, f"{path}.{o['name']}", o, None, taken, cut)
        if "versions" not in kept:
            continue  # only in versions the older release no longer contributes
        before = [p["name"] for p in old[:i]]
        at = 0
        for j, placed in enumerate(out):
            if placed["name"] in before:
                at = j + 1
        out.insert(at, kept)
    return out


def _merge_field(
    file: str,
    path: str,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    taken: Versions,
    cut: int,
) -> dict[str, Any]:
    base = dict(new if new is not None else old or {})
    for key in _MERGED_RANGES:
        value = _merged_range(
            file,
            f"{path}.{key}",
            None if old is None else old.get(key),
            None if new is None else new.get(key),
            taken,
            cut,
        )
        if value is not None:
            base[key] = value
        elif key != "versions" and key in (old or {}).keys() | (new or {}).keys():
            base[key] = "none"  # a field's own flexibleVersions "none" is a fact, not absence
        else:
            base.pop(key, None)
    if old is not None and new is not None and "fields" in (old.keys() | new.keys()):
        base["fields"] = _merge_fields(
            file, path, old.get("fields", []), new.get("fields", []), taken, cut
        )
    return base


def merge_older(
    name: str, new: Mapping[str, Any], old: Mapping[str, Any], old_unstable: bool = False
) -> tuple[dict[str, Any], Versions]:
    """``new`` extended by the versions ``old`` has below it; the merged doc and those versions.

    ``old_unstable`` says the older release's latest version was unstable (a response takes
    it from its request): never shipped, so never merged. Returns ``new`` unchanged with an
    empty range when ``old`` adds nothing.
    """
    new_valid = Versions.parse(new["validVersions"])
    old_valid = Versions.parse(old["validVersions"])
    taken = _older_part(new_valid, old_valid, old_unstable)
    if taken.empty:
        return dict(new), NONE
    if new_valid.empty:
        return dict(old), taken  # a retired API: the older release states all of it
    if taken.highest + 1 != new_valid.lowest:
        raise SpecError(
            name, "validVersions", "the older release's versions leave a gap", str(taken)
        )
    cut = new_valid.lowest
    out = dict(new)
    out["validVersions"] = f"{taken.lowest}-{new_valid.highest}"
    for key in ("flexibleVersions", "deprecatedVersions"):
        value = _merged_range(
            name,
            key,
            old.get(key, "none" if key == "flexibleVersions" else None),
            new.get(key),
            taken,
            cut,
        )
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    out["fields"] = _merge_fields(
        name, str(new["name"]), old.get("fields", []), new.get("fields", []), taken, cut
    )
    old_common = {s["name"]: s for s in old.get("commonStructs", [])}
    new_common = {s["name"]: s for s in new.get("commonStructs", [])}
    if old_common or new_common:
        merged_common = []
        for sname in [*new_common, *(n for n in old_common if n not in new_common)]:
            merged_common.append(
                _merge_field(name, sname, old_common.get(sname), new_common.get(sname), taken, cut)
            )
        out["commonStructs"] = merged_common
    return out, taken


def _check_merge(
    name: str,
    merged: Mapping[str, Any],
    parts: Sequence[tuple[Mapping[str, Any], Versions]],
) -> None:
    """Every version of the merged spec states what the release it came from states."""
    doc = normalize(strip(merged))
    for source, versions in parts:
        src = normalize(strip(source))
        src_common = {s["name"]: s.get("fields", []) for s in src.get("commonStructs", [])}
        common = {s["name"]: s.get("fields", []) for s in doc.get("commonStructs", [])}
        for version in versions:
            pairs = [("fields", src.get("fields", []), doc.get("fields", []))] + [
                (f"commonStructs[{n}]", fields, common.get(n, []))
                for n, fields in src_common.items()
            ]
            for label, a, b in pairs:
                found_all = differences(
                    project(a, version, _UNVERSIONED), project(b, version, _UNVERSIONED), label
                )
                for found in found_all:
                    raise SpecError(
                        name, f"version {version}", "merging releases changed a wire fact", found
                    )


def merge_releases(
    newest: Mapping[str, dict[str, Any]], older: Sequence[Mapping[str, dict[str, Any]]]
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The newest release's specs, each extended down by the older releases (newest first).

    Returns the merged documents and, per file, which versions came from older releases.
    """
    docs = {n: dict(d) for n, d in newest.items()}
    keys = {_spec_key(d): n for n, d in docs.items()}
    added: dict[str, list[str]] = {}
    for release in older:
        requests = {str(d.get("apiKey")): d for d in release.values() if d.get("type") == "request"}
        for old_name, old in sorted(release.items()):
            name = keys.get(_spec_key(old))
            if name is None:
                continue  # a spec the newest release does not have at all is not revived
            current = docs[name]
            request = requests.get(str(old.get("apiKey")), old)
            unstable = as_bool(request.get("latestVersionUnstable", False))
            merged, taken = merge_older(name, current, old, unstable)
            if taken.empty:
                continue
            new_valid = Versions.parse(current["validVersions"])
            _check_merge(name, merged, [(old, taken), (current, new_valid)])
            docs[name] = merged
            added.setdefault(name, []).append(f"{taken} from {old_name}")
    return docs, {n: "; ".join(v) for n, v in added.items()}
