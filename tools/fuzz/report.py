"""The fuzz results: Parquet files, a terminal summary (one row per API), an HTML report.

Files under the output folder:

- ``stats.parquet``: one row per (API, kind, version): messages, bytes, failures (also by
  check), disagreements, checks run, task seconds;
- ``failures.parquet``: each kept failure with its replay id (``kafkagen fuzz --replay
  ID``), check, error and the bytes in hex;
- with ``--oracle``: ``oracles.parquet``, one row per oracle and (API, kind, version):
  questions agreed on, disagreed on and skipped, and the oracle's seconds; and
  ``peer_findings.parquet``, the peers' disagreements grouped by (peer, API, kind,
  version, question, kind of difference), with counts of findings (Kafka agreed with
  kafkagen) and unjudged ones, and a minimal reproducer (hex and kafkagen's JSON form);
- ``tasks.parquet``: each task's messages, seconds and where its package came from;
- ``run.json``: the run's parameters and totals; ``report.html``: self-contained (inline
  SVG and CSS): heat maps of API x version coloured by agreement, for kafkagen's own
  checks and for each oracle that judged the run, the failures with their replay ids,
  the peers' findings, and throughput per API.

A run stopped by Ctrl-C writes the tasks that finished, marked as partial everywhere:
``"complete": false`` in run.json, ``kafkagen.complete=false`` in each Parquet file's
metadata, and a banner in report.html.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .checks import CHECKS
from .job import SECONDS_FIELDS, STAT_FIELDS, RunResult
from .peers import ORACLES, PEERS, column
from .rules import Table


@dataclass
class ApiRow:
    api: int
    name: str
    low: int
    high: int
    messages: int
    bytes: int
    failures: int
    disagreements: int
    seconds: float

    @property
    def rate(self) -> float:
        """Messages per second of task time: the throughput of one core."""
        return self.messages / self.seconds if self.seconds > 0 else 0.0


def api_name(table: Table, api: int) -> str:
    for kind in ("request", "response"):
        rules = table.get((api, kind))
        if rules is not None:
            return rules.name.removesuffix("Request").removesuffix("Response")
    return str(api)


def per_api(result: RunResult, table: Table) -> list[ApiRow]:
    rows: dict[int, ApiRow] = {}
    for s in result.stats:
        api = int(s["api"])
        r = rows.get(api)
        if r is None:
            r = rows[api] = ApiRow(
                api, api_name(table, api), s["version"], s["version"], 0, 0, 0, 0, 0.0
            )
        r.low, r.high = min(r.low, s["version"]), max(r.high, s["version"])
        r.messages += s["messages"]
        r.bytes += s["bytes"]
        r.failures += s["failures"]
        r.disagreements += s["disagreements"]
        r.seconds += s["seconds"]
    return [rows[k] for k in sorted(rows)]


# ---------------------------------------------------------------- Parquet


def write_parquet(result: RunResult, table: Table, out: Path) -> list[Path]:
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    out.mkdir(parents=True, exist_ok=True)
    names = {api: api_name(table, api) for api, _ in table}
    stats_schema = pa.schema(
        [
            ("api", pa.int16()),
            ("api_name", pa.string()),
            ("kind", pa.string()),
            ("version", pa.int16()),
        ]
        + [(n, pa.int64()) for n in STAT_FIELDS]
        + [("seconds", pa.float64())]
        + [(n, pa.float64()) for n in SECONDS_FIELDS]
    )
    finding_schema = pa.schema(
        [
            ("id", pa.string()),
            ("seed", pa.int64()),
            ("api", pa.int16()),
            ("api_name", pa.string()),
            ("kind", pa.string()),
            ("version", pa.int16()),
            ("index", pa.int64()),
            ("check", pa.string()),
            ("error", pa.string()),
            ("hex", pa.string()),
        ]
    )
    task_schema = pa.schema(
        [
            ("task", pa.int32()),
            ("attempt", pa.int32()),
            ("messages", pa.int64()),
            ("seconds", pa.float64()),
            ("cpu_seconds", pa.float64()),
            ("origin", pa.string()),
        ]
    )

    oracle_schema = pa.schema(
        [
            ("oracle", pa.string()),
            ("api", pa.int16()),
            ("api_name", pa.string()),
            ("kind", pa.string()),
            ("version", pa.int16()),
            *((n, pa.int64()) for n in ORACLE_COUNTS),
            ("seconds", pa.float64()),
        ]
    )
    peer_schema = pa.schema(
        [
            ("peer", pa.string()),
            ("api", pa.int16()),
            ("api_name", pa.string()),
            ("kind", pa.string()),
            ("version", pa.int16()),
            ("check", pa.string()),
            ("difference", pa.string()),
            ("findings", pa.int64()),
            ("unjudged", pa.int64()),
            ("id", pa.string()),
            ("detail", pa.string()),
            ("hex", pa.string()),
            ("json", pa.string()),
        ]
    )

    def named(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seed = result.options.seed
        return [{**r, "seed": seed, "api_name": names.get(int(r["api"]), "")} for r in rows]

    files = {
        "stats.parquet": pa.Table.from_pylist(named(result.stats), schema=stats_schema),
        "failures.parquet": pa.Table.from_pylist(named(result.failures), schema=finding_schema),
        "oracles.parquet": pa.Table.from_pylist(named(oracle_rows(result)), schema=oracle_schema),
        "peer_findings.parquet": pa.Table.from_pylist(
            named(result.peer_groups), schema=peer_schema
        ),
        "tasks.parquet": pa.Table.from_pylist(result.task_info, schema=task_schema),
    }
    complete = b"false" if result.interrupted else b"true"
    written = []
    for name, data in files.items():
        data = data.replace_schema_metadata({b"kafkagen.complete": complete})
        pq.write_table(data, out / name)
        written.append(out / name)
    run = {
        "complete": not result.interrupted,
        "master": result.master,
        "tasks": result.tasks,
        "tasks_finished": len(result.task_info),
        "seed": result.options.seed,
        "messages": result.messages,
        "failures": result.failure_count,
        "disagreements": result.disagreement_count,
        "oracle_seconds": {
            o: round(sum(float(r[column(o, "seconds")]) for r in result.stats), 3)
            for o in result.options.oracles
        },
        "peer_findings": sum(int(g["findings"]) for g in result.peer_groups),
        "peer_unjudged": sum(int(g["unjudged"]) for g in result.peer_groups),
        "wall_seconds": round(result.wall_seconds, 3),
        "options": result.options._asdict(),
        "package": result.package,
        "combos": len(result.combos),
    }
    (out / "run.json").write_text(json.dumps(run, indent=2) + "\n")
    written.append(out / "run.json")
    return written


# ---------------------------------------------------------------- terminal


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def checks_text(result: RunResult) -> str:
    """What every message went through, with the counts that show it."""

    def total(name: str) -> int:
        return sum(int(s.get(name) or 0) for s in result.stats)

    cross = result.options.cross
    against = (
        "every other version of its message"
        if not cross
        else f"{cross} other version(s) per message, rotating (a sampling run)"
    )
    text = (
        f"checks: round trip and JSON form of every message; written at {against}: "
        f"{total('cross_checks'):,} version checks, {total('cross_raised'):,} refused as the "
        f"spec demands; {total('forward_checks'):,} with unknown tagged fields added; "
        f"{total('mutations'):,} mutations ({total('mutations_decoded'):,} still decoded)"
    )
    if "kafka" in result.options.oracles:
        text += (
            f"\nKafka's own classes: {total('kafka_checks'):,} questions answered (bytes read, "
            f"JSON forms written, corrupted copies read), {total('kafka_known'):,} of them "
            f"documented differences (docs/kafka-differences.md); {total('kafka_skipped'):,} "
            "skipped: versions Kafka does not have"
        )
    for peer in PEERS:
        if peer in result.options.oracles:
            t = {w: total(column(peer, w)) for w in ("agree", "disagree", "skipped")}
            judged = {w: total(column(peer, w)) for w in ("findings", "unjudged")}
            text += (
                f"\n{peer}: {t['agree']:,} questions agreed on, {t['disagree']:,} disagreed on "
                f"({judged['findings']:,} the peer's findings: Kafka agrees with kafkagen; "
                f"{judged['unjudged']:,} unjudged), {t['skipped']:,} skipped: APIs and "
                "versions it lacks"
            )
    seconds = [
        f"{o} {sum(float(s.get(column(o, 'seconds')) or 0.0) for s in result.stats):,.1f} s"
        for o in result.options.oracles
    ]
    if seconds:
        text += "\noracle time in the tasks: " + ", ".join(seconds)
    return text


def summary_text(result: RunResult, table: Table, limit: int = 10) -> str:
    rows = per_api(result, table)
    head = ("key", "API", "versions", "messages", "bytes", "msg/s/core", "failures", "disagree")
    body = [
        (
            str(r.api),
            r.name,
            f"{r.low}-{r.high}",
            f"{r.messages:,}",
            _size(r.bytes),
            f"{r.rate:,.0f}",
            str(r.failures) if r.failures else "-",
            str(r.disagreements) if r.disagreements else "-",
        )
        for r in rows
    ]
    seconds = sum(r.seconds for r in rows)
    total = (
        "",
        "all",
        f"{len(result.combos)} combos",
        f"{result.messages:,}",
        _size(sum(r.bytes for r in rows)),
        f"{result.messages / seconds:,.0f}" if seconds else "-",
        str(result.failure_count),
        str(result.disagreement_count),
    )
    widths = [max(len(x[i]) for x in [head, *body, total]) for i in range(len(head))]
    right = {0, 3, 4, 5, 6, 7}

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    rule = "  ".join("-" * w for w in widths)
    lines = [fmt(head), rule, *(fmt(b) for b in body), rule, fmt(total), ""]
    rate = result.messages / result.wall_seconds if result.wall_seconds else 0.0
    lines.append(
        f"{result.messages:,} messages in {result.wall_seconds:.1f} s on {result.master} "
        f"({result.tasks} task{'s' if result.tasks != 1 else ''}): {rate:,.0f} msg/s"
    )
    lines.append(checks_text(result))
    if result.interrupted:
        lines.append(partial_text(result))
    by_check = {c: sum(int(s.get(f"by_{c}", 0)) for s in result.stats) for c in CHECKS}
    if result.failure_count:
        parts = ", ".join(f"{c} {n}" for c, n in by_check.items() if n)
        lines.append(f"FAILED: {result.failure_count} failure(s): {parts}")
        for f in result.failures[:limit]:
            lines.append(f"  {f['id']}  {f['check']}: {f['error'][:120]}")
        if len(result.failures) > limit:
            lines.append(f"  ... {len(result.failures) - limit} more in failures.parquet")
        first = result.failures[0]
        oracle = " --oracle kafka" if first["check"] == "kafka" else ""  # what replays it
        package = result.package.get("argument") or ""
        package = f" {package}" if package else ""
        lines.append(f"  reproduce one: kafkagen fuzz --replay {first['id']}{package}{oracle}")
    else:
        lines.append("no failures")
    if result.peer_groups:
        lines.append(peers_text(result))
    return "\n".join(lines)


def peers_text(result: RunResult, limit: int = 12) -> str:
    """The peers' disagreements (not failures), the largest groups first."""
    groups = sorted(result.peer_groups, key=lambda g: -(g["findings"] + g["unjudged"]))
    lines = [
        f"{result.disagreement_count:,} disagreement(s) of peer codecs, not failures, in "
        f"{len(groups)} groups (peer_findings.parquet, report.html):"
    ]
    for g in groups[:limit]:
        lines.append(
            f"  {g['peer']} {g['api']}:{g['kind']}:v{g['version']} {g['check']}: "
            f"{g['difference']}: {g['findings']} finding(s), {g['unjudged']} unjudged"
        )
    if len(groups) > limit:
        lines.append(f"  ... {len(groups) - limit} more groups")
    return "\n".join(lines)


def partial_text(result: RunResult) -> str:
    return (
        f"PARTIAL: interrupted; these are the {len(result.task_info)} of {result.tasks} "
        "tasks that finished"
    )


def print_summary(result: RunResult, table: Table, out: IO[str]) -> None:
    out.write(summary_text(result, table) + "\n")


# ---------------------------------------------------------------- HTML


def _bars(rows: list[ApiRow]) -> str:
    """Two horizontal bar charts side by side, one row per API: throughput and failures."""
    row_h, label_w, bar_w, gap = 16, 230, 300, 40
    height = row_h * len(rows) + 40
    width = label_w + 2 * bar_w + gap + 80
    top_rate = max((r.rate for r in rows), default=0.0) or 1.0
    top_fail = max((r.failures for r in rows), default=0) or 1
    x2 = label_w + bar_w + gap
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11" role="img" '
        f'aria-label="throughput and failures per API">',
        f'<text x="{label_w}" y="14" font-weight="bold">messages/s per core</text>',
        f'<text x="{x2}" y="14" font-weight="bold">failures</text>',
    ]
    for i, r in enumerate(rows):
        y = 28 + i * row_h
        w1 = bar_w * r.rate / top_rate
        w2 = bar_w * r.failures / top_fail
        label = html.escape(f"{r.api} {r.name}")
        parts.append(f'<text x="{label_w - 6}" y="{y + 11}" text-anchor="end">{label}</text>')
        parts.append(
            f'<rect x="{label_w}" y="{y + 2}" width="{w1:.1f}" height="{row_h - 4}" '
            f'fill="#4a7fb5"><title>{r.rate:,.0f} msg/s</title></rect>'
        )
        parts.append(f'<text x="{label_w + w1 + 4:.1f}" y="{y + 11}">{r.rate:,.0f}</text>')
        if r.failures:
            parts.append(
                f'<rect x="{x2}" y="{y + 2}" width="{max(w2, 1):.1f}" '
                f'height="{row_h - 4}" fill="#c0392b"/>'
            )
        parts.append(f'<text x="{x2 + w2 + 4:.1f}" y="{y + 11}">{r.failures or ""}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def esc_text(text: str) -> str:
    return html.escape(text, quote=False)


@dataclass
class Cell:
    """Checks of one (API, version), both kinds, by one judge (kafkagen's checks or an
    oracle): ``checks`` asked, ``failed`` of them, ``skipped`` (a version the judge
    lacks: not passed, not failed)."""

    checks: int = 0
    failed: int = 0
    skipped: int = 0
    detail: str = ""

    @property
    def passed(self) -> int:
        return self.checks - self.failed

    @property
    def agreement(self) -> float | None:
        return self.passed / self.checks if self.checks else None


#: Counters that are kafkagen's own checks (round trip and JSON form once per message).
OWN_CHECKS = ("cross_checks", "forward_checks", "mutations", "native_checks")


def judges(stats: Sequence[dict[str, Any]]) -> list[str]:
    """Oracles that judged this run, by their counters in the results: ``X_skipped`` with
    ``X_checks`` (Kafka's classes: questions answered, failures in ``by_X``) or with
    ``X_agree`` and ``X_disagree`` (a peer codec), and counting something (the columns
    exist whether or not the oracle ran). Kafka first."""
    fields = set().union(*(s.keys() for s in stats)) if stats else set()
    ran = []
    for name in fields:
        oracle = name.removesuffix("_skipped")
        counters = [f"{oracle}_{what}" for what in ("checks", "agree", "disagree", "skipped")]
        if oracle != name and fields & set(counters[:2]):
            if any(s.get(c) for s in stats for c in counters):
                ran.append(oracle)
    return sorted(ran, key=lambda o: (o != "kafka", o))


def _own(s: dict[str, Any], oracles: Sequence[str]) -> Cell:
    failed = int(s["failures"]) - sum(int(s.get(f"by_{o}") or 0) for o in oracles)
    checks = 2 * int(s["messages"]) + sum(int(s.get(n) or 0) for n in OWN_CHECKS)
    return Cell(checks, failed, 0)


def _oracle(s: dict[str, Any], oracle: str) -> Cell:
    skipped = int(s.get(f"{oracle}_skipped") or 0)
    if f"{oracle}_agree" in s:  # a peer: its disagreements are the cell's failures
        disagree = int(s.get(f"{oracle}_disagree") or 0)
        return Cell(int(s[f"{oracle}_agree"] or 0) + disagree, disagree, skipped)
    return Cell(int(s.get(f"{oracle}_checks") or 0), int(s.get(f"by_{oracle}") or 0), skipped)


def heat_cells(result: RunResult, judge: str | None) -> dict[tuple[int, int], Cell]:
    """(API, version) -> the cell of ``judge`` (None: kafkagen's own checks), request
    and response summed, each kind's counts kept for the tooltip."""
    oracles = judges(result.stats)
    cells: dict[tuple[int, int], Cell] = {}
    for s in result.stats:
        one = _own(s, oracles) if judge is None else _oracle(s, judge)
        cell = cells.setdefault((int(s["api"]), int(s["version"])), Cell())
        cell.checks += one.checks
        cell.failed += one.failed
        cell.skipped += one.skipped
        cell.detail += (
            f"\n{s['kind']}: {int(s['messages']):,} messages, {one.passed:,} passed, "
            f"{one.failed:,} failed, {one.skipped:,} skipped"
        )
    return cells


#: Agreement colours: every check passed, some failed (shading to all failed), and a
#: cell whose checks were all skipped.
GREEN, ORANGE, RED, SKIPPED = (46, 157, 79), (243, 156, 18), (192, 57, 43), "#c8c8c8"


def cell_colour(cell: Cell) -> str:
    agreement = cell.agreement
    if agreement is None:
        return SKIPPED
    if cell.failed == 0:
        return _hex(GREEN)
    # Any failure is at least orange: failures are rare, so a linear scale would hide them.
    t = 0.35 + 0.65 * (1 - agreement)
    return _hex(tuple(round(a + (b - a) * t) for a, b in zip(ORANGE, RED, strict=True)))


def _hex(rgb: Sequence[int]) -> str:
    return "#" + "".join(f"{c:02x}" for c in rgb)


def heat_map(result: RunResult, table: Table, judge: str | None, title: str) -> str:
    """One heat map of API (rows) x version (columns) as inline SVG; each cell is
    coloured by agreement, says its failures (or a tick), and its tooltip gives the
    counts per kind."""
    cells = heat_cells(result, judge)
    if not cells:
        return ""
    apis = sorted({a for a, _ in cells})
    top = max(v for _, v in cells)
    row_h, col_w, label_w, head = 16, 30, 230, 32
    width, height = label_w + col_w * (top + 1) + 10, head + row_h * len(apis) + 4
    esc = html.escape
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" width="{width}" '
        f'height="{height}" font-family="sans-serif" font-size="10" role="img" '
        f'aria-label="{esc(title)}" data-judge="{esc(judge or "kafkagen")}">',
        f'<text x="{label_w}" y="12" font-weight="bold">version</text>',
    ]
    for v in range(top + 1):
        x = label_w + v * col_w + col_w / 2
        parts.append(f'<text x="{x:.0f}" y="{head - 6}" text-anchor="middle">{v}</text>')
    for i, api in enumerate(apis):
        y = head + i * row_h
        label = esc(f"{api} {api_name(table, api)}")
        parts.append(f'<text x="{label_w - 6}" y="{y + 11}" text-anchor="end">{label}</text>')
        for v in range(top + 1):
            cell = cells.get((api, v))
            if cell is None:
                continue
            x = label_w + v * col_w
            text = "skip" if cell.agreement is None else (f"{cell.failed}" if cell.failed else "✓")
            tip = esc(
                f"{api_name(table, api)} v{v}: {cell.passed:,} passed, {cell.failed:,} "
                f"failed, {cell.skipped:,} skipped{cell.detail}"
            )
            parts.append(
                f'<g class="cell" data-api="{api}" data-version="{v}" '
                f'data-passed="{cell.passed}" data-failed="{cell.failed}" '
                f'data-skipped="{cell.skipped}"><title>{tip}</title>'
                f'<rect x="{x + 1}" y="{y + 1}" width="{col_w - 2}" height="{row_h - 2}" '
                f'fill="{cell_colour(cell)}"/>'
                f'<text x="{x + col_w / 2:.0f}" y="{y + 11}" text-anchor="middle" '
                f'fill="{"#333" if cell.agreement is None else "#fff"}">{text}</text></g>'
            )
    parts.append("</svg>")
    return "\n".join(parts)


LEGEND = (
    f'<p class="legend"><span style="background:{_hex(GREEN)}"></span> every check passed '
    f'<span style="background:{_hex(ORANGE)}"></span><span style="background:{_hex(RED)}">'
    "</span> some failed (the cell gives how many; redder: a larger share) "
    f'<span style="background:{SKIPPED}"></span> skipped: a version the judge does not '
    "have. Hover a cell for its counts per kind.</p>"
)


def heat_maps(result: RunResult, table: Table) -> str:
    """kafkagen's own checks, then one map per oracle that judged the run."""
    parts = [
        "<h2>Agreement per API and version</h2>",
        LEGEND,
        "<h3>kafkagen's checks (round trip, JSON form, other versions, unknown tagged "
        "fields, mutations)</h3>",
        heat_map(result, table, None, "kafkagen's checks per API and version"),
    ]
    for oracle in judges(result.stats):
        name = "Kafka's own classes" if oracle == "kafka" else oracle.replace("_", "-")
        parts.append(f"<h3>{esc_text(name)}: agreement with kafkagen</h3>")
        parts.append(heat_map(result, table, oracle, f"{name} per API and version"))
    return "\n".join(parts)


#: Columns of the peers' findings shown first, when present; any others follow.
PEER_COLUMNS = (
    "oracle", "peer", "api", "api_name", "kind", "version", "check", "difference", "count",
    "findings", "unjudged",
)  # fmt: skip


def peer_findings(result: RunResult) -> str:
    """The findings of peer oracles (other codecs judged against Kafka), read by field
    name from the results; a run without peers says so."""
    found = getattr(result, "peer_groups", None) or getattr(result, "peer_findings", None)
    items: list[dict[str, Any]] = list(found or [])
    if not items:
        return "<h2>Peers' findings</h2>\n<p>no peer oracle ran</p>"
    keys: list[str] = [k for k in PEER_COLUMNS if any(k in f for f in items)]
    keys += sorted({k for f in items for k in f} - set(keys))
    head = "".join(f"<th>{esc_text(k)}</th>" for k in keys)

    def cell(value: Any) -> str:
        text = esc_text(str(value if value is not None else ""))
        if len(text) > 40:  # hex and JSON forms
            return f'<td><code class="hex">{text[:200]}</code></td>'
        return f"<td>{text}</td>"

    body = "\n".join("<tr>" + "".join(cell(f.get(k)) for k in keys) + "</tr>" for f in items)
    return f'<h2>Peers\' findings</h2>\n<table class="peers"><tr>{head}</tr>\n{body}</table>'


def write_html(result: RunResult, table: Table, path: Path, limit: int = 200) -> Path:
    rows = per_api(result, table)
    esc = html.escape
    status = (
        f'<p class="bad">{result.failure_count} failure(s)</p>'
        if result.failure_count
        else '<p class="ok">no failures</p>'
    )
    if result.interrupted:
        status = f'<p class="bad">{esc(partial_text(result))}.</p>\n{status}'
    title = "kafkagen fuzz (partial)" if result.interrupted else "kafkagen fuzz"
    table_rows = "\n".join(
        f"<tr><td>{r.api}</td><td>{esc(r.name)}</td><td>{r.low}-{r.high}</td>"
        f"<td>{r.messages:,}</td><td>{r.bytes:,}</td><td>{r.rate:,.0f}</td>"
        f"<td>{r.failures}</td><td>{r.disagreements}</td></tr>"
        for r in rows
    )
    names = {r.api: r.name for r in rows}

    def findings(items: list[dict[str, Any]], title: str, css: str, empty: str | None) -> str:
        if not items:
            return f"<h2>{title}</h2>\n<p>{empty}</p>" if empty else ""
        body = "\n".join(
            f"<tr><td><code>{esc(f['id'])}</code></td><td>{esc(names.get(f['api'], ''))}</td>"
            f"<td>{esc(f['kind'])}</td><td>{f['version']}</td><td>{esc(f['check'])}</td>"
            f"<td>{esc(f['error'])}</td>"
            f"<td><code class='hex'>{esc(f['hex'][:64])}</code></td></tr>"
            for f in items[:limit]
        )
        more = (
            f"<p>{len(items) - limit} more in the Parquet file.</p>" if len(items) > limit else ""
        )
        return (
            f"<h2>{title}</h2><p>Reproduce one with <code>kafkagen fuzz --replay ID</code>."
            f'</p><table class="{css}"><tr><th>replay id</th><th>API</th><th>kind</th>'
            f"<th>version</th><th>check</th><th>error</th><th>bytes</th></tr>"
            f"{body}</table>{more}"
        )

    rate = result.messages / result.wall_seconds if result.wall_seconds else 0.0
    doc = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title} report</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; font-size: 13px; }}
td, th {{ border-bottom: 1px solid #ddd; padding: 2px 8px; text-align: right; }}
td:nth-child(2), th:nth-child(2) {{ text-align: left; }}
.bad {{ color: #c0392b; font-weight: bold; }} .ok {{ color: #27ae60; font-weight: bold; }}
.legend span {{ display: inline-block; width: 1em; height: 1em; vertical-align: middle; }}
.heatmap .cell:hover rect {{ stroke: #222; stroke-width: 2; }}
.failures td, .peers td, .failures th, .peers th
  {{ text-align: left; vertical-align: top; }}
code.hex {{ word-break: break-all; }} td:first-child code {{ white-space: nowrap; }}
</style></head><body>
<h1>{title}</h1>
{status}
<p>{result.messages:,} messages over {len(result.combos)} (API, kind, version) combinations,
seed {result.options.seed}, in {result.wall_seconds:.1f} s on <code>{esc(result.master)}</code>
({result.tasks} tasks, {rate:,.0f} msg/s).</p>
<p>{esc(checks_text(result))}.</p>
{heat_maps(result, table)}
{findings(result.failures, "Disagreements: failures", "failures", "no failures")}
{peer_findings(result)}
<h2>Throughput and failures per API</h2>
{_bars(rows)}
<h2>Per API</h2>
<table class="per-api"><tr><th>key</th><th>API</th><th>versions</th><th>messages</th>
<th>bytes</th><th>msg/s/core</th><th>failures</th><th>disagreements</th></tr>
{table_rows}
</table>
</body></html>
"""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc, encoding="utf-8")
    return path


# ---------------------------------------------------------------- oracles


#: What ``oracles.parquet`` counts per oracle and (API, kind, version): questions the
#: oracle agreed on with kafkagen, disagreed on, skipped (versions it lacks); for Kafka,
#: of the disagreements those that are failures and those documented; for a peer, those
#: that are its findings (Kafka agreed with kafkagen) and those unjudged.
ORACLE_COUNTS = ("agree", "disagree", "skipped", "failures", "documented", "findings", "unjudged")


def oracle_rows(result: RunResult) -> list[dict[str, Any]]:
    """One row per oracle of the run and (API, kind, version) it was asked about."""
    rows = []
    for s in result.stats:
        for o in (o for o in ORACLES if o in result.options.oracles):
            row: dict[str, Any] = {k: s[k] for k in ("api", "kind", "version")}
            row["oracle"] = o
            row["seconds"] = float(s.get(column(o, "seconds")) or 0.0)
            counts = dict.fromkeys(ORACLE_COUNTS, 0)
            if o == "kafka":
                failed, known = int(s["by_kafka"]), int(s["kafka_known"])
                counts.update(
                    agree=int(s["kafka_checks"]) - failed - known,
                    disagree=failed + known,
                    skipped=int(s["kafka_skipped"]),
                    failures=failed,
                    documented=known,
                )
            else:
                for what in ("agree", "disagree", "skipped", "findings", "unjudged"):
                    counts[what] = int(s[column(o, what)])
            rows.append({**row, **counts})
    return rows


__all__ = [
    "ORACLE_COUNTS",
    "ApiRow",
    "Cell",
    "heat_cells",
    "judges",
    "checks_text",
    "oracle_rows",
    "peers_text",
    "partial_text",
    "per_api",
    "print_summary",
    "summary_text",
    "write_html",
    "write_parquet",
]
