"""Compatibility runs: ``kafkagen fuzz --package NEW --against OLD``.

Two generations of specs meet on real bytes. For every API, kind and version both
packages know, each side builds the fuzz's seeded random messages, writes them, and the
other side reads the bytes; the value read must be the value written, field by field, and
written back it must give the same bytes, which the first side reads back to the original.

Fields are matched per version by their place on the wire (and tagged fields by tag), not
by name, through both sides' layouts (:func:`kafkagen.fuzz.packages.layout_of`):

- the same place and type under another name is a *rename*: a note, not a failure;
- a tagged field only one side has must travel through the other as an unknown tag: read
  there into ``unknown_tagged_fields``, written back byte for byte, read back by the first
  side as the original value (counted as unknown-tag round trips);
- another type, another nullability or length form at the same place, or a non-tagged
  field only one side has, changes what the bytes mean: a failure, shown by the messages
  that break (the hex, both sides' JSON forms) and named by the layout difference.

APIs and versions only one side has are counted apart. Each failure's reproducer has an
id (``new:SEED:API:KIND:VERSION:INDEX@DIGESTS``: the side that wrote it, the message's
place in the seeded stream, the start of both sides' spec digests); ``--replay ID`` with
the same two sides builds that message again and shows what the other side reads.

The work runs on Spark as the fuzz does: both packages are shipped to the executors, each
task takes its chunks of every (API, kind, version), and the results go to
``stats.parquet``, ``differences.parquet``, ``run.json`` and ``report.html`` under ``--out``.
"""

from __future__ import annotations

import argparse
import functools
import html
import json
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NamedTuple

from .checks import (
    Fuzzer,
    FuzzOptions,
    failure_digest,
    failure_id,
    has_unknown_tags,
    parse_failure_id,
    without_unknown_tags,
)
from .packages import Package, PackageError, layout_of, load_shipped, run_on
from .plan import Combo, default_tasks, select_apis, task_slices

#: Sides, as reports name them.
NEW, OLD = "new", "old"
#: What a difference is: a failure, or a note (renames, tagged fields one side lacks).
FAILURE, RENAME, UNKNOWN_TAG = "failure", "rename", "unknown-tag"
SCHEMA_DDL = (
    "rec string, api int, kind string, version int, writer string, messages bigint, "
    "failures bigint, unknown_tags bigint, field string, what string, detail string, "
    "hex string, writer_json string, reader_json string, count bigint, id string, "
    "seconds double"
)


# ---------------------------------------------------------------- matching two layouts


class Pair(NamedTuple):
    """A field both sides have at one place: its attribute on each side, how to compare
    the values inside it (a nested struct's pairs), and whether it is an array."""

    mine: str
    theirs: str
    inner: tuple[Pair, ...] | None
    array: bool


class Static(NamedTuple):
    """A difference between two layouts: ``what`` is FAILURE, RENAME or UNKNOWN_TAG."""

    what: str
    field: str
    detail: str


def match(
    mine: Any, theirs: Any, path: str, me: str, other: str
) -> tuple[tuple[Pair, ...], list[Static]]:
    """Pair the fields of two struct layouts (see the module's text) and list how they
    differ; ``me`` and ``other`` name the sides in the details."""
    pairs: list[Pair] = []
    found: list[Static] = []
    if mine[0] != theirs[0]:
        found.append(Static(FAILURE, path, f"flexible only in {me if mine[0] else other}"))
    a, b = mine[1], theirs[1]
    for i in range(max(len(a), len(b))):
        if i >= len(a) or i >= len(b):
            extra, side = (a[i], me) if i < len(a) else (b[i], other)
            why = f"a non-tagged {extra[0]} field only {side} has (wire position {i})"
            found.append(Static(FAILURE, f"{path}.{extra[1]}", why))
            continue
        _match_field(a[i], b[i], path, me, other, pairs, found)
    tags_a = {t: f for t, f, _d in mine[2]}
    tags_b = {t: f for t, f, _d in theirs[2]}
    for tag in sorted(tags_a.keys() | tags_b.keys()):
        if tag in tags_a and tag in tags_b:
            _match_field(tags_a[tag], tags_b[tag], path, me, other, pairs, found)
        else:
            field, side = (tags_a[tag], me) if tag in tags_a else (tags_b[tag], other)
            why = f"tagged field (tag {tag}) only {side} has: the other keeps it as an unknown tag"
            found.append(Static(UNKNOWN_TAG, f"{path}.{field[1]}", why))
    return tuple(pairs), found


def _match_field(
    x: Any, y: Any, path: str, me: str, other: str, pairs: list[Pair], found: list[Static]
) -> None:
    where = f"{path}.{x[1]}"
    if x[1] != y[1]:
        found.append(Static(RENAME, where, f"{me} {x[1]} is {other} {y[1]}"))
    if x[0] != y[0]:
        found.append(Static(FAILURE, where, f"type {x[0]} in {me}, {y[0]} in {other}"))
        return
    inner: tuple[Pair, ...] | None = None
    if x[0] in ("string", "bytes", "array"):
        if x[2] != y[2]:
            found.append(Static(FAILURE, where, "compact length in one side only"))
        if x[3] != y[3]:
            side = me if x[3] else other
            found.append(Static(FAILURE, where, f"nullable only in {side}"))
    if x[0] == "struct":
        if x[2] != y[2]:
            found.append(Static(FAILURE, where, f"nullable only in {me if x[2] else other}"))
        inner, more = match(x[3], y[3], where, me, other)
        found += more
    if x[0] == "array":
        ex, ey = x[4], y[4]
        if isinstance(ex, str) or isinstance(ey, str):
            if ex != ey:
                kinds = (e if isinstance(e, str) else "struct" for e in (ex, ey))
                found.append(
                    Static(
                        FAILURE,
                        where,
                        "item type {} in {me}, {} in {other}".format(*kinds, me=me, other=other),
                    )
                )
                return
        else:
            inner, more = match(ex, ey, where + "[]", me, other)
            found += more
    pairs.append(Pair(x[1], y[1], inner, x[0] == "array"))


def first_difference(a: Any, b: Any, pairs: tuple[Pair, ...], path: str) -> str | None:
    """Where the value ``b`` read by the other side differs from ``a`` as written, through
    the field pairs; None when every paired field holds the same value."""
    for p in pairs:
        x, y = getattr(a, p.mine), getattr(b, p.theirs)
        where = f"{path}.{p.mine}"
        if p.inner is None:
            if x != y:
                return f"{where}: {x!r:.60} written, {y!r:.60} read"
        elif x is None or y is None:
            if x is not y:
                return f"{where}: {x!r:.60} written, {y!r:.60} read"
        elif p.array:
            if len(x) != len(y):
                return f"{where}: {len(x)} items written, {len(y)} read"
            for i, (u, w) in enumerate(zip(x, y, strict=True)):
                found = first_difference(u, w, p.inner, f"{where}[{i}]")
                if found:
                    return found
        else:
            found = first_difference(x, y, p.inner, where)
            if found:
                return found
    return None


# ---------------------------------------------------------------- the plan and the task


@dataclass(frozen=True)
class CompatConfig:
    """What a task needs: both packages by import name, the shared (API, kind, version)
    combos, the seed, the number of tasks and what the ids carry of both sides' digests."""

    new: str
    old: str
    combos: tuple[Combo, ...]
    seed: int
    tasks: int
    digests: str


def pair_digest(new: Package, old: Package) -> str:
    """What a difference id carries of the two sides: the start of each spec digest."""
    return f"{new.digest[:12]}-{old.digest[:12]}"


def shared_combos(
    new: Package, old: Package, apis: list[str] | None, messages: int
) -> tuple[list[Combo], dict[str, Any]]:
    """The (API, kind, version) both sides have, each with its share of ``messages``, and
    what only one side has (counted apart)."""
    keys = set(select_apis(new.table, apis)) if apis else None
    shared: list[tuple[int, str, int]] = []
    only: dict[str, Any] = {
        "apis_only_new": [],
        "apis_only_old": [],
        "versions_only_new": 0,
        "versions_only_old": 0,
    }
    for key in sorted(new.table.keys() | old.table.keys()):
        if keys is not None and key[0] not in keys:
            continue
        if key not in old.table:
            only["apis_only_new"].append(f"{key[0]}:{key[1]}")
            continue
        if key not in new.table:
            only["apis_only_old"].append(f"{key[0]}:{key[1]}")
            continue
        vn, vo = set(new.table[key].versions), set(old.table[key].versions)
        only["versions_only_new"] += len(vn - vo)
        only["versions_only_old"] += len(vo - vn)
        shared += [(*key, v) for v in sorted(vn & vo)]
    if not shared:
        return [], only
    base, extra = divmod(messages, len(shared))
    combos = [Combo(a, k, v, base + (1 if i < extra else 0)) for i, (a, k, v) in enumerate(shared)]
    return combos, only


class _Group:
    """One difference of one (API, kind, version, writer): its count and the smallest
    message that shows it."""

    def __init__(self) -> None:
        self.count = 0
        self.repro: tuple[str, str, str, str] | None = None  # detail, hex, writer, reader JSON
        self.index = 0  # the reproducer's place in the writer's seeded stream


def compat_task(config: CompatConfig, task: int) -> Iterator[dict[str, Any]]:
    """Run one task's chunks in both directions; rows of counts and differences."""
    sides = {NEW: load_shipped(config.new), OLD: load_shipped(config.old)}
    fuzzers = {
        side: Fuzzer({}, FuzzOptions(seed=config.seed, package=name))
        for side, name in ((NEW, config.new), (OLD, config.old))
    }
    try:
        counts: dict[tuple[int, str, int, str], list[float]] = {}
        groups: dict[tuple[Any, ...], _Group] = {}
        for i, start, end in task_slices(config.combos, config.tasks, task):
            c = config.combos[i]
            for writer, reader in ((NEW, OLD), (OLD, NEW)):
                began = time.perf_counter()
                row = counts.setdefault((c.api, c.kind, c.version, writer), [0, 0, 0, 0.0])
                mine = sides[writer].message_type(c.api, c.kind)
                theirs = sides[reader].message_type(c.api, c.kind)
                pairs, static = match(
                    layout_of(mine, c.version),
                    layout_of(theirs, c.version),
                    mine.__name__,
                    writer,
                    reader,
                )
                field = next((s.field for s in static if s.what == FAILURE), mine.__name__)
                for index, m, _bits in fuzzers[writer].messages(
                    c.api, c.kind, c.version, start, end
                ):
                    if isinstance(m, BaseException):
                        continue
                    row[0] += 1
                    m = without_unknown_tags(m)  # tags either side may know are the point
                    found = _check(mine, theirs, pairs, m, c.version)
                    if isinstance(found, str):
                        row[1] += 1
                        key = (c.api, c.kind, c.version, writer, field)
                        group = groups.setdefault(key, _Group())
                        group.count += 1
                        data = m.encode(c.version)
                        if group.repro is None or len(data) * 2 < len(group.repro[1]):
                            group.repro = _reproducer(found, data, m, theirs, c.version)
                            group.index = index
                    elif found:
                        row[2] += 1
                row[3] += time.perf_counter() - began
    finally:
        for fz in fuzzers.values():
            fz.close()
    for (api, kind, version, writer), (n, failures, tags, seconds) in counts.items():
        yield {
            "rec": "stats",
            "api": api,
            "kind": kind,
            "version": version,
            "writer": writer,
            "messages": n,
            "failures": failures,
            "unknown_tags": tags,
            "seconds": seconds,
        }
    for (api, kind, version, writer, field), g in groups.items():
        assert g.repro is not None
        detail, hexed, wrote, read = g.repro
        yield {
            "rec": "difference",
            "api": api,
            "kind": kind,
            "version": version,
            "writer": writer,
            "field": field,
            "what": FAILURE,
            "detail": detail,
            "hex": hexed,
            "writer_json": wrote,
            "reader_json": read,
            "count": g.count,
            "id": f"{writer}:"
            + failure_id(config.seed, api, kind, version, g.index, config.digests),
        }


def _check(mine: Any, theirs: Any, pairs: tuple[Pair, ...], m: Any, v: int) -> str | bool:
    """What went wrong when ``theirs`` reads ``m`` written by ``mine`` (text), or whether
    the message travelled through unknown tags (True) or plainly (False)."""
    data = m.encode(v)
    try:
        d = theirs.decode(data, v)
    except Exception as e:
        return f"the reader refuses the bytes: {type(e).__name__}: {e}"[:300]
    differs = first_difference(m, d, pairs, mine.__name__)
    if differs:
        return differs
    try:
        back = d.encode(v)
    except Exception as e:
        return f"the reader cannot write back what it read: {type(e).__name__}: {e}"[:300]
    if back != data:
        return "the reader writes back other bytes"
    if mine.decode(back, v) != m:
        return "the writer reads the bytes written back to another value"
    return has_unknown_tags(d)


def _reproducer(detail: str, data: bytes, m: Any, theirs: Any, v: int) -> tuple[str, str, str, str]:
    try:
        read = json.dumps(theirs.decode(data, v).to_json(v), default=str)
    except Exception as e:
        read = json.dumps({"error": f"{type(e).__name__}: {e}"[:300]})
    return detail, data.hex(), json.dumps(m.to_json(v), default=str), read


# ---------------------------------------------------------------- the run


@dataclass
class CompatResult:
    new: dict[str, Any]
    old: dict[str, Any]
    only: dict[str, Any]
    stats: list[dict[str, Any]]
    differences: list[dict[str, Any]]
    master: str
    tasks: int
    wall_seconds: float

    @property
    def failures(self) -> int:
        return sum(d["count"] for d in self.differences if d["what"] == FAILURE)

    @property
    def messages(self) -> int:
        return sum(int(s["messages"]) for s in self.stats)


def static_differences(new: Package, old: Package, combos: Iterable[Combo]) -> list[dict[str, Any]]:
    """Every layout difference of the shared versions, as rows (renames and unknown tags
    are notes; the failures are joined by the messages that show them)."""
    rows = []
    for c in combos:
        mine = new.message_type(c.api, c.kind)
        theirs = old.message_type(c.api, c.kind)
        _pairs, found = match(
            layout_of(mine, c.version), layout_of(theirs, c.version), mine.__name__, NEW, OLD
        )
        for s in found:
            rows.append(
                {
                    "api": c.api,
                    "kind": c.kind,
                    "version": c.version,
                    "writer": "",
                    "field": s.field,
                    "what": s.what if s.what != FAILURE else "layout",
                    "detail": s.detail,
                    "hex": None,
                    "writer_json": None,
                    "reader_json": None,
                    "count": 1,
                    "id": None,
                }
            )
    return rows


def run_compat(
    new: Package,
    old: Package,
    messages: int,
    master: str = "local[*]",
    seed: int = 1,
    apis: list[str] | None = None,
    tasks: int | None = None,
) -> CompatResult:
    """Plan and run a compatibility run on Spark (see the module's text)."""
    from .job import ship, spark_session

    combos, only = shared_combos(new, old, apis, messages)
    if not combos:
        raise PackageError(f"{new.label} and {old.label} have no API in common")
    with spark_session(master) as spark:
        sc = spark.sparkContext
        ship(sc, new)
        ship(sc, old)
        n_tasks = tasks or default_tasks(sc.defaultParallelism, messages * 2)
        config = CompatConfig(
            new.name, old.name, tuple(combos), seed, n_tasks, pair_digest(new, old)
        )
        began = time.perf_counter()
        df = spark.range(0, n_tasks, 1, n_tasks).mapInArrow(
            functools.partial(_arrow_task, config), SCHEMA_DDL
        )
        rows = df.toArrow().to_pylist()
        wall = time.perf_counter() - began
        master = sc.master
    return _collect(
        rows, new, old, only, static_differences(new, old, combos), master, n_tasks, wall
    )


def _arrow_task(config: CompatConfig, batches: Iterable[Any]) -> Iterator[Any]:
    import pyarrow as pa

    from .job import _arrow_schema

    schema = _arrow_schema(SCHEMA_DDL)
    for batch in batches:
        for task in batch.column(0).to_pylist():
            rows = list(compat_task(config, int(task)))
            columns = [pa.array([r.get(f.name) for r in rows], type=f.type) for f in schema]
            yield pa.RecordBatch.from_arrays(columns, schema=schema)


def _collect(
    rows: list[dict[str, Any]],
    new: Package,
    old: Package,
    only: dict[str, Any],
    static: list[dict[str, Any]],
    master: str,
    tasks: int,
    wall: float,
) -> CompatResult:
    stats: dict[tuple[Any, ...], dict[str, Any]] = {}
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:
        key = (r["api"], r["kind"], r["version"], r["writer"])
        if r["rec"] == "stats":
            s = stats.setdefault(
                key,
                {
                    "api": r["api"],
                    "kind": r["kind"],
                    "version": r["version"],
                    "writer": r["writer"],
                    "messages": 0,
                    "failures": 0,
                    "unknown_tags": 0,
                    "seconds": 0.0,
                },
            )
            for n in ("messages", "failures", "unknown_tags", "seconds"):
                s[n] += r[n]
        else:
            d = found.get((*key, r["field"]))
            if d is None:
                found[(*key, r["field"])] = {
                    k: r[k]
                    for k in (
                        "api",
                        "kind",
                        "version",
                        "writer",
                        "field",
                        "what",
                        "detail",
                        "hex",
                        "writer_json",
                        "reader_json",
                        "count",
                        "id",
                    )
                }
            else:
                d["count"] += r["count"]
                if len(r["hex"]) < len(d["hex"]):
                    d.update(
                        {k: r[k] for k in ("detail", "hex", "writer_json", "reader_json", "id")}
                    )
    # A layout failure no message showed is still a failure, without a reproducer.
    shown = {(d["api"], d["kind"], d["version"]) for d in found.values()}
    for s in static:
        if s["what"] == "layout":
            if (s["api"], s["kind"], s["version"]) in shown:
                continue
            s = {**s, "what": FAILURE, "detail": s["detail"] + " (no message showed it)"}
        found[(s["api"], s["kind"], s["version"], s["what"], s["field"], s["detail"])] = s
    layout: dict[tuple[Any, ...], list[str]] = {}
    for s in static:
        if s["what"] == "layout":
            layout.setdefault((s["api"], s["kind"], s["version"]), []).append(s["detail"])
    for d in found.values():
        why = layout.get((d["api"], d["kind"], d["version"]))
        if d["what"] == FAILURE and d["writer"] and why:
            d["detail"] = f"{'; '.join(why)}: {d['detail']}"
    differences = sorted(
        found.values(),
        key=lambda d: (d["api"], d["kind"], d["version"], d["what"], d["writer"], d["field"]),
    )
    return CompatResult(
        new.describe(),
        old.describe(),
        only,
        [stats[k] for k in sorted(stats)],
        differences,
        master,
        tasks,
        wall,
    )


# ---------------------------------------------------------------- the report


def summary_text(result: CompatResult, table: Any, limit: int = 20) -> str:
    from .report import api_name

    head = ("key", "API", "kind", "versions", "messages", "failures", "unknown-tag trips")
    per: dict[tuple[int, str], list[Any]] = {}
    for s in result.stats:
        row = per.setdefault((s["api"], s["kind"]), [s["version"], s["version"], 0, 0, 0])
        row[0], row[1] = min(row[0], s["version"]), max(row[1], s["version"])
        row[2] += s["messages"]
        row[3] += s["failures"]
        row[4] += s["unknown_tags"]
    body = [
        (
            str(api),
            api_name(table, api),
            kind,
            f"{lo}-{hi}",
            f"{n:,}",
            str(f) if f else "-",
            f"{t:,}" if t else "-",
        )
        for (api, kind), (lo, hi, n, f, t) in sorted(per.items())
    ]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [head, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    rate = result.messages / result.wall_seconds if result.wall_seconds else 0.0
    renames = [d for d in result.differences if d["what"] == RENAME]
    tags = [d for d in result.differences if d["what"] == UNKNOWN_TAG]
    failures = [d for d in result.differences if d["what"] == FAILURE]
    only = result.only
    lines += [
        "",
        f"new: {result.new['label']} (spec digest {result.new['spec_digest'][:12]}); "
        f"old: {result.old['label']} (spec digest {result.old['spec_digest'][:12]})",
        f"{result.messages:,} messages (each written by one side, read by the other) in "
        f"{result.wall_seconds:.1f} s on {result.master} ({result.tasks} tasks): "
        f"{rate:,.0f} msg/s",
        f"{len(result.stats) // 2} (API, kind, version) in common; apart: "
        f"{len(only['apis_only_new'])} API kinds only new has, "
        f"{len(only['apis_only_old'])} only old has; {only['versions_only_new']} versions "
        f"only new has, {only['versions_only_old']} only old has",
        f"notes: {len(renames)} renamed fields (by version), {len(tags)} tagged fields only "
        f"one side has, {sum(s['unknown_tags'] for s in result.stats):,} messages read "
        "through unknown tags",
    ]
    if failures:
        lines.append(
            f"INCOMPATIBLE: {result.failures:,} failing messages in {len(failures)} groups"
        )
        for d in failures[:limit]:
            lines.append(
                f"  {d['api']}:{d['kind']}:v{d['version']} {d['field']} "
                f"(written by {d['writer'] or '-'}): {d['detail'][:160]}"
            )
            if d["hex"] is not None:
                lines.append(f"    bytes {d['hex'][:160]}{'...' if len(d['hex']) > 160 else ''}")
                lines.append(f"    replay: --replay {d['id']}")
        if len(failures) > limit:
            lines.append(f"  ... {len(failures) - limit} more in differences.parquet")
    else:
        lines.append("compatible: every message read alike by both sides")
    for d in renames[:limit]:
        lines.append(f"  rename {d['api']}:{d['kind']}:v{d['version']} {d['field']}: {d['detail']}")
    return "\n".join(lines)


def write_report(result: CompatResult, table: Any, out: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .report import api_name

    out.mkdir(parents=True, exist_ok=True)
    named = [{**s, "api_name": api_name(table, s["api"])} for s in result.stats]
    pq.write_table(pa.Table.from_pylist(named), out / "stats.parquet")
    diff_schema = pa.schema(
        [
            ("api", pa.int16()),
            ("kind", pa.string()),
            ("version", pa.int16()),
            ("writer", pa.string()),
            ("field", pa.string()),
            ("what", pa.string()),
            ("detail", pa.string()),
            ("hex", pa.string()),
            ("writer_json", pa.string()),
            ("reader_json", pa.string()),
            ("count", pa.int64()),
            ("id", pa.string()),
        ]
    )
    pq.write_table(
        pa.Table.from_pylist(result.differences, schema=diff_schema), out / "differences.parquet"
    )
    run = {
        "mode": "compatibility",
        "new": result.new,
        "old": result.old,
        "master": result.master,
        "tasks": result.tasks,
        "messages": result.messages,
        "failures": result.failures,
        "renames": sum(1 for d in result.differences if d["what"] == RENAME),
        "unknown_tag_fields": sum(1 for d in result.differences if d["what"] == UNKNOWN_TAG),
        "unknown_tag_round_trips": sum(s["unknown_tags"] for s in result.stats),
        "apart": result.only,
        "wall_seconds": round(result.wall_seconds, 3),
    }
    (out / "run.json").write_text(json.dumps(run, indent=2) + "\n")
    rows = []
    for d in result.differences:
        cells = [
            f"{d['api']} {html.escape(api_name(table, d['api']))}",
            d["kind"],
            f"v{d['version']}",
            d["what"],
            d["writer"] or "",
            html.escape(d["field"]),
            html.escape(d["detail"]),
            f"<code>{d['hex'] or ''}</code>",
            f"<code>{html.escape(d['writer_json'] or '')}</code>",
            f"<code>{html.escape(d['reader_json'] or '')}</code>",
            f"<code>{d['id'] or ''}</code>",
        ]
        css = ' class="fail"' if d["what"] == FAILURE else ""
        rows.append(f"<tr{css}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "API",
            "kind",
            "version",
            "what",
            "written by",
            "field",
            "detail",
            "bytes",
            "writer's JSON",
            "reader's JSON",
            "replay id",
        )
    )
    title = f"{html.escape(result.new['label'])} against {html.escape(result.old['label'])}"
    page = f"""<!doctype html><html><head><meta charset="utf-8">
<title>kafkagen compatibility: {title}</title>
<style>body{{font-family:sans-serif;margin:1em}} td,th{{border:1px solid #ccc;padding:2px 4px;
vertical-align:top;font-size:12px}} table{{border-collapse:collapse}} tr.fail{{background:#fdd}}
code{{word-break:break-all}}</style></head><body>
<h1>Compatibility: {title}</h1>
<pre>{html.escape(summary_text(result, table))}</pre>
<h2>Differences</h2><table><tr>{head}</tr>{"".join(rows)}</table></body></html>
"""
    (out / "report.html").write_text(page)


def run_against(args: argparse.Namespace) -> int:
    """``kafkagen fuzz --package NEW --against OLD`` (``--specs`` may name NEW), or with
    ``--replay ID`` one difference of such a run again, in this process."""
    command = "kafkagen fuzz"
    return run_on(
        args.specs or args.package,
        command,
        lambda new: run_on(args.against, command, lambda old: _against(args, new, old)),
    )


def _against(args: argparse.Namespace, new: Package, old: Package) -> int:
    try:
        if args.replay:
            return replay_difference(args.replay, new, old)
        result = run_compat(new, old, args.messages, args.master, args.seed, args.apis, args.tasks)
    except (PackageError, ValueError) as e:
        print(f"kafkagen fuzz: {e}", file=sys.stderr)
        return 2
    out = Path(args.out)
    write_report(result, new.table, out)
    print(summary_text(result, new.table))
    print(f"results: {out.resolve()}/ (stats.parquet, differences.parquet, report.html)")
    return 1 if result.failures else 0


def replay_difference(text: str, new: Package, old: Package, out: IO[str] | None = None) -> int:
    """Build the message of difference id ``text`` again on its writer's side, let the
    other side read it and print both forms and what went wrong; 1 when it still does.
    Raises ValueError for an id that is not one, or was found on other sides."""
    out = out if out is not None else sys.stdout
    writer, _, rest = text.strip().partition(":")
    if writer not in (NEW, OLD):
        raise ValueError(
            f"not a compatibility difference id (new|old:SEED:API:KIND:VERSION:INDEX@DIGESTS): "
            f"{text.strip()!r}"
        )
    seed, api, kind, version, index = parse_failure_id(rest)
    made_on, given = failure_digest(rest), pair_digest(new, old)
    if made_on != given:
        raise ValueError(
            f"difference {text.strip()} was found on sides of spec digests {made_on}, not on "
            f"{new.label} against {old.label} ({given}): replay it with the --package or "
            "--specs and --against of its run (its run.json names them)"
        )
    reader = OLD if writer == NEW else NEW
    sides = {NEW: new, OLD: old}
    if (api, kind) not in sides[writer].table or (api, kind) not in sides[reader].table:
        raise ValueError(f"API {api} {kind} is not on both sides")
    mine = sides[writer].message_type(api, kind)
    theirs = sides[reader].message_type(api, kind)
    if version not in mine._plans or version not in theirs._plans:
        raise ValueError(f"{mine.__name__} v{version} is not on both sides")
    pairs, static = match(
        layout_of(mine, version), layout_of(theirs, version), mine.__name__, writer, reader
    )
    fuzzer = Fuzzer({}, FuzzOptions(seed=seed, package=sides[writer].name))
    try:
        [(_index, m, _bits)] = fuzzer.messages(api, kind, version, index, index + 1)
    finally:
        fuzzer.close()
    if isinstance(m, BaseException):
        raise ValueError(f"the builder of {mine.__name__} v{version} fails at index {index}: {m}")
    m = without_unknown_tags(m)
    found = _check(mine, theirs, pairs, m, version)
    detail, hexed, wrote, read = _reproducer(str(found), m.encode(version), m, theirs, version)
    out.write(
        f"{mine.__name__} v{version}, written by {writer} ({sides[writer].label}), read by "
        f"{reader} ({sides[reader].label}):\n  bytes {hexed}\n  {writer}'s JSON: {wrote}\n"
        f"  {reader}'s JSON: {read}\n"
    )
    for s in static:
        out.write(f"  layout {s.what}: {s.field}: {s.detail}\n")
    if isinstance(found, str):
        out.write(f"INCOMPATIBLE: {detail}\n")
        return 1
    out.write("read alike by both sides" + (" (through unknown tags)" if found else "") + "\n")
    return 0


__all__ = [
    "CompatResult",
    "first_difference",
    "match",
    "replay_difference",
    "run_against",
    "run_compat",
    "summary_text",
    "write_report",
]
