"""report.html of a real fuzz run (Spark local, Kafka's classes judging, one planted codec
bug), opened in headless Chromium: the heat maps' cells carry the run's counts, the tables
have their rows, and the screenshot shows the heat map's colours."""

from __future__ import annotations

import copy
import os
import struct
import subprocess
import sys
import zlib
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from browser import HEADLESS, chromium

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from kafkagen.fuzz.checks import INJECT_ENV  # noqa: E402
from kafkagen.fuzz.report import GREEN  # noqa: E402

APIS = ["Metadata", "Produce", "ApiVersions"]
MESSAGES = 1500
#: A decoder bug in MetadataResponse v5: its cell must show failures.
BUG = "3:response:5"


def browse(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium on a local file, no network needed (the report is
    self-contained); root in CI needs --no-sandbox."""
    profile = page.parent / "chromium-profile"
    command = [chromium(), *HEADLESS, f"--user-data-dir={profile}", *args, page.as_uri()]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


class Dom(HTMLParser):
    """The heat maps' cells and the tables' rows of the DOM Chromium dumped."""

    def __init__(self) -> None:
        super().__init__()
        self.judge = ""
        self.cells: dict[tuple[str, int, int], dict[str, str]] = {}
        self.table = ""
        self.texts: list[str] = []
        self.table_rows: dict[str, list[list[str]]] = {}  # table class -> rows of cell texts
        self._row: list[str] | None = None
        self._in_td = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "svg" and "heatmap" in a.get("class", ""):
            self.judge = a["data-judge"]
        elif tag == "g" and a.get("class") == "cell":
            self.cells[(self.judge, int(a["data-api"]), int(a["data-version"]))] = a
        elif tag == "table":
            self.table = a.get("class", "")
            self.table_rows.setdefault(self.table, [])
        elif tag == "tr":
            self._row = []
        elif tag == "td" and self._row is not None:
            self._row.append("")
            self._in_td = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self._row:
            self.table_rows[self.table].append(self._row)
            self._row = None
        elif tag == "td":
            self._in_td = False

    def handle_data(self, data: str) -> None:
        self.texts.append(data)
        if self._in_td and self._row:
            self._row[-1] += data


def png_pixels(path: Path) -> Counter[tuple[int, int, int]]:
    """Colour counts of an 8-bit RGB or RGBA PNG (Chromium's screenshots), decoded with
    the standard library."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    step = 3 if colour == 2 else 4
    stride = width * step
    raw = zlib.decompress(idat)
    prev = bytearray(stride)
    counts: Counter[tuple[int, int, int]] = Counter()
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up, corner = prev[i], prev[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 0xFF
        counts.update(tuple(line[i : i + 3]) for i in range(0, stride, step))  # type: ignore[misc]
        prev = line
    return counts


# ---------------------------------------------------------------- without a browser


@pytest.fixture(scope="module")
def plain_run() -> Any:
    """A small run in this process, without Spark or oracles."""
    from kafkagen.fuzz import run_fuzz

    return run_fuzz(300, apis=["Heartbeat"], spark=False, progress=None)


def test_a_run_without_oracles_maps_only_kafkagens_checks(plain_run: Any, tmp_path: Path) -> None:
    from kafkagen.fuzz.report import write_html

    result, table = plain_run
    page = write_html(result, table, tmp_path / "report.html").read_text()
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="heatmap"') == 1
    assert 'data-judge="kafkagen"' in page and 'data-judge="kafka"' not in page
    assert "<p>no peer oracle ran</p>" in page and "<p>no failures</p>" in page


def test_peer_findings_are_read_by_field_name(plain_run: Any, tmp_path: Path) -> None:
    from kafkagen.fuzz.report import write_html

    result, table = plain_run
    peer = copy.copy(result)
    peer.peer_groups = [
        {"peer": "kio", "api": 12, "kind": "request", "version": 4, "findings": 3, "extra": "<"}
    ]
    page = write_html(peer, table, tmp_path / "report.html").read_text()
    head = "<tr><th>peer</th><th>api</th><th>kind</th><th>version</th><th>findings</th>"
    assert head + "<th>extra</th></tr>" in page
    assert "<td>kio</td><td>12</td><td>request</td><td>4</td><td>3</td><td>&lt;</td>" in page


def test_a_peer_with_its_counters_gets_a_heat_map(plain_run: Any, tmp_path: Path) -> None:
    from kafkagen.fuzz.report import write_html

    result, table = plain_run
    peer = copy.copy(result)
    peer.stats = [
        {**s, "kio_agree": 2, "kio_disagree": int(s["version"] == 1), "kio_skipped": 0}
        for s in result.stats
    ]
    dom = Dom()
    dom.feed(write_html(peer, table, tmp_path / "report.html").read_text())
    cells = {(a, v): c for (j, a, v), c in dom.cells.items() if j == "kio"}
    assert set(cells) == {(12, v) for v in range(5)}  # Heartbeat v0-4
    # Passed: agreed; failed: disagreed; request and response summed.
    assert [(c["data-passed"], c["data-failed"]) for _, c in sorted(cells.items())] == [
        ("4", "0"),
        ("4", "2"),
        ("4", "0"),
        ("4", "0"),
        ("4", "0"),
    ]
    assert "kio: agreement with kafkagen" in dom.texts


# ---------------------------------------------------------------- a real run in Chromium


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run: ``kafkagen fuzz --oracle kafka`` on local[1] with a planted bug."""
    out = tmp_path_factory.mktemp("report") / "out"
    command = [
        sys.executable, "-m", "kafkagen", "fuzz", "--oracle", "kafka", "--master", "local[1]",
        "--messages", str(MESSAGES), "--apis", *APIS, "--out", str(out),
    ]  # fmt: skip
    env = {**os.environ, INJECT_ENV: BUG}
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 1, proc.stderr[-3000:]  # the planted bug fails checks
    return out


@pytest.fixture(scope="module")
def stats(report: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    rows: list[dict[str, Any]] = pq.read_table(report / "stats.parquet").to_pylist()
    return rows


@pytest.fixture(scope="module")
def dom(report: Path) -> Dom:
    proc = browse(report / "report.html", "--dump-dom")
    parsed = Dom()
    parsed.feed(proc.stdout)
    return parsed


def summed(stats: list[dict[str, Any]], api: int, version: int, *names: str) -> int:
    return sum(
        int(s[n]) for s in stats if (s["api"], s["version"]) == (api, version) for n in names
    )


@pytest.mark.slow
def test_the_report_needs_nothing_from_the_network(report: Path) -> None:
    page = (report / "report.html").read_text()
    assert "<script" not in page and "<link" not in page and "src=" not in page
    assert page.replace('xmlns="http://www.w3.org/2000/svg"', "").count("http") == 0


@pytest.mark.slow
def test_each_api_and_version_is_a_cell_with_its_counts(
    dom: Dom, stats: list[dict[str, Any]]
) -> None:
    combos = {(s["api"], s["version"]) for s in stats}
    assert {(a, v) for j, a, v in dom.cells if j == "kafkagen"} == combos
    assert {(a, v) for j, a, v in dom.cells if j == "kafka"} == combos
    for api, version in combos:
        own = dom.cells[("kafkagen", api, version)]
        failed = summed(stats, api, version, "failures") - summed(stats, api, version, "by_kafka")
        assert int(own["data-failed"]) == failed
        assert int(own["data-skipped"]) == 0
        kafka = dom.cells[("kafka", api, version)]
        judged = summed(stats, api, version, "kafka_checks")
        assert int(kafka["data-passed"]) + int(kafka["data-failed"]) == judged
        assert int(kafka["data-failed"]) == summed(stats, api, version, "by_kafka")
        assert int(kafka["data-skipped"]) == summed(stats, api, version, "kafka_skipped")


def failing(dom: Dom, judge: str) -> set[tuple[int, int]]:
    return {(a, v) for (j, a, v), c in dom.cells.items() if j == judge and c["data-failed"] != "0"}


@pytest.mark.slow
def test_only_cells_the_planted_bug_reaches_fail(dom: Dom) -> None:
    """The broken MetadataResponse v5 decoder fails v5's round trips and every other
    version's messages written at v5; Kafka, reading kafkagen's bytes, sees only v5."""
    assert (3, 5) in failing(dom, "kafkagen")
    assert {api for api, _ in failing(dom, "kafkagen")} == {3}
    assert failing(dom, "kafka") == {(3, 5)}
    cell = dom.cells[("kafkagen", 3, 5)]
    assert int(cell["data-failed"]) > 0 and int(cell["data-passed"]) > 0


@pytest.mark.slow
def test_versions_kafka_lacks_are_skipped_not_passed(dom: Dom, stats: list[dict[str, Any]]) -> None:
    # Kafka 4 removed Produce v0-2: every question about them is skipped.
    for version in (0, 1, 2):
        cell = dom.cells[("kafka", 0, version)]
        messages = summed(stats, 0, version, "messages")
        assert (cell["data-passed"], int(cell["data-skipped"])) == ("0", 3 * messages)
    cell = dom.cells[("kafka", 0, 9)]
    assert cell["data-skipped"] == "0" and int(cell["data-passed"]) > 0


@pytest.mark.slow
def test_the_tables_have_their_rows(dom: Dom, report: Path) -> None:
    import pyarrow.parquet as pq

    failures = pq.read_table(report / "failures.parquet").to_pylist()
    rows = dom.table_rows["failures"]
    assert failures and len(rows) == min(len(failures), 200)
    assert {r[0] for r in rows} <= {f["id"] for f in failures}
    assert all(r[1:3] == ["Metadata", "response"] for r in rows), rows[:3]
    assert all("injected bug in MetadataResponse v5" in r[5] for r in rows), rows[:3]
    assert [r[1] for r in dom.table_rows["per-api"]] == ["Produce", "Metadata", "ApiVersions"]
    assert "no peer oracle ran" in dom.texts


@pytest.mark.slow
def test_the_screenshot_shows_the_heat_map(report: Path) -> None:
    shot = report / "report.png"
    browse(report / "report.html", f"--screenshot={shot}", "--window-size=1200,1000")
    pixels = png_pixels(shot)
    total = sum(pixels.values())
    white = pixels[(255, 255, 255)]
    assert white < 0.97 * total, "the screenshot is (nearly) blank"
    assert pixels[GREEN] > 500, "no passing cell drawn"
    reds = sum(n for (r, g, b), n in pixels.items() if r > 190 and g < 140 and b < 60)
    assert reds > 100, "the failing cell is not drawn"
