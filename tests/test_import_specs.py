"""``kafkagen import-specs``: a release from a jar or a folder, older releases merged below it,
every merged version checked against the release it came from."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from kafkagen.cli.import_specs import read_specs
from kafkagen.cli.spec_merge import merge_older, merge_releases
from kafkagen.generator.errors import SpecError
from kafkagen.generator.versions import Versions

_SCRIPT = Path(sys.executable).with_name("kafkagen")
KAFKAGEN = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "kafkagen"]


def kafkagen(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KAFKAGEN, *map(str, args)], capture_output=True, text=True, timeout=120)


def pair(valid: str, fields: list[dict[str, Any]], **top: Any) -> dict[str, dict[str, Any]]:
    """A request and response of API 99 with the same fields."""
    out = {}
    for kind in ("Request", "Response"):
        doc = {
            "apiKey": 99,
            "type": kind.lower(),
            "name": f"Demo{kind}",
            "validVersions": valid,
            "flexibleVersions": "3+",
            "fields": fields,
        }
        if kind == "Request":
            doc.update(top)
        out[f"Demo{kind}.json"] = doc
    return out


# Kafka 3.x-like: versions 0-4, a field that 4.x drops together with versions 0-1.
OLD = pair(
    "0-4",
    [
        {"name": "Topic", "type": "string", "versions": "0+"},
        {"name": "Legacy", "type": "int32", "versions": "0-1"},
        {"name": "Timeout", "type": "int32", "versions": "1+"},
    ],
)
# Kafka 4.x-like: versions 2-5, Legacy gone, a new field from 5.
NEW = pair(
    "2-5",
    [
        {"name": "Topic", "type": "string", "versions": "0+", "ignorable": True},
        {"name": "Timeout", "type": "int32", "versions": "1+"},
        {"name": "Extra", "type": "int64", "versions": "5+"},
    ],
)


def test_older_versions_come_below_the_newer_ones_with_the_fields_they_had() -> None:
    merged, taken = merge_older(
        "DemoRequest.json", NEW["DemoRequest.json"], OLD["DemoRequest.json"]
    )
    assert taken == Versions(0, 1)
    assert merged["validVersions"] == "0-5"
    assert [(f["name"], f["versions"]) for f in merged["fields"]] == [
        ("Topic", "0+"),  # upstream's own text, which says it already
        ("Legacy", "0-1"),  # kept after the field it followed
        ("Timeout", "1+"),
        ("Extra", "5+"),
    ]
    assert merged["fields"][0]["ignorable"] is True  # the newer release's holds


def test_a_retired_api_takes_every_older_version() -> None:
    retired = {"apiKey": 99, "type": "request", "name": "DemoRequest", "validVersions": "none"}
    merged, taken = merge_older("DemoRequest.json", retired, OLD["DemoRequest.json"])
    assert taken == Versions(0, 4) and merged == OLD["DemoRequest.json"]


def test_an_unstable_latest_version_of_the_older_release_is_not_taken() -> None:
    old = pair("0-1", [{"name": "Topic", "type": "string", "versions": "0+"}])
    old["DemoRequest.json"]["latestVersionUnstable"] = True
    new = pair("2-3", [{"name": "Topic", "type": "string", "versions": "0+"}])
    with pytest.raises(SpecError, match="leave a gap"):
        merge_releases(new, [old])
    new = pair("1-3", [{"name": "Topic", "type": "string", "versions": "0+"}])
    docs, added = merge_releases(new, [old])
    assert docs["DemoResponse.json"]["validVersions"] == "0-3"  # v1 was unstable: not taken
    assert added == {
        "DemoRequest.json": "0 from DemoRequest.json",
        "DemoResponse.json": "0 from DemoResponse.json",
    }


def test_a_merge_that_would_change_a_wire_fact_stops_the_import() -> None:
    old = pair("0-2", [{"name": "Topic", "type": "string", "versions": "0+"}])
    new = pair("1-2", [{"name": "Topic", "type": "int32", "versions": "0+"}])  # retyped
    with pytest.raises(SpecError) as info:
        merge_releases(new, [old])
    assert info.value.line() == (
        "DemoRequest.json: version 0: merging releases changed a wire fact "
        "(got \"fields[Topic].type: upstream 'string', output 'int32'\")"
    )


def test_older_versions_keep_their_own_flexibility() -> None:
    old = pair("0-2", [{"name": "Topic", "type": "string", "versions": "0+"}])
    new = pair("1-2", [{"name": "Topic", "type": "string", "versions": "0+"}])
    for doc in old.values():
        doc["flexibleVersions"] = "none"
    for doc in new.values():
        doc["flexibleVersions"] = "0+"  # says nothing about version 0, which it lacks
    docs, _ = merge_releases(new, [old])
    assert docs["DemoRequest.json"]["flexibleVersions"] == "1+"


def test_requests_match_across_a_rename_by_api_key() -> None:
    old = pair("0-1", [{"name": "Topic", "type": "string", "versions": "0+"}])
    new = {
        f"Renamed{k}.json": dict(d, name=f"Renamed{k}")
        for k, d in (
            (kind, pair("1-2", [{"name": "Topic", "type": "string", "versions": "0+"}])[n])
            for kind, n in (("Request", "DemoRequest.json"), ("Response", "DemoResponse.json"))
        )
    }
    docs, _ = merge_releases(new, [old])
    assert sorted(docs) == ["RenamedRequest.json", "RenamedResponse.json"]
    assert docs["RenamedRequest.json"]["validVersions"] == "0-2"


def write_jar(path: Path, specs: dict[str, dict[str, Any]]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        for name, doc in specs.items():
            z.writestr(
                f"common/message/{name}", "// a comment Kafka's files have\n" + json.dumps(doc)
            )
    return path


def write_folder(path: Path, specs: dict[str, dict[str, Any]]) -> Path:
    path.mkdir(parents=True)
    for name, doc in specs.items():
        (path / name).write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_jar_reads_like_a_folder(tmp_path: Path) -> None:
    jar = write_jar(tmp_path / "kafka-clients.jar", NEW)
    folder = write_folder(tmp_path / "folder", NEW)
    assert read_specs(jar) == read_specs(folder) == NEW


def test_the_command_imports_merges_checks_and_prunes(tmp_path: Path) -> None:
    jar = write_jar(tmp_path / "new.jar", NEW)
    old = write_folder(tmp_path / "old", OLD)
    out = tmp_path / "specs"
    stale = write_folder(out, {"StaleRequest.json": {"name": "StaleRequest"}}) / "StaleRequest.json"
    args = ["import-specs", "--from", jar, "--older", old, "--out", out, "--no-extensions"]
    result = kafkagen(*args, "--prune")
    assert result.returncode == 0, result.stderr
    assert "removed" in result.stderr and not stale.exists()
    assert sorted(p.name for p in out.iterdir()) == ["DemoRequest.json", "DemoResponse.json"]
    written = json.loads((out / "DemoRequest.json").read_text())
    assert written["validVersions"] == "0-5"
    assert [f["name"] for f in written["fields"]] == ["Topic", "Legacy", "Timeout", "Extra"]
    for mode in ("--check", "--verify"):
        result = kafkagen(*args, mode)
        assert result.returncode == 0, (mode, result.stdout, result.stderr)
    (out / "DemoRequest.json").write_text(json.dumps(dict(written, validVersions="0-4")))
    result = kafkagen(*args, "--verify")
    assert result.returncode == 1 and "DemoRequest.json: validVersions 0-4" in result.stderr


def test_an_unreadable_source_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "not-a.jar"
    bad.write_bytes(b"PK\x03\x04 truncated")
    out = tmp_path / "specs"
    result = kafkagen("import-specs", "--from", bad, "--out", out)
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {bad}: not a spec folder or a readable jar")
    assert not out.exists()
