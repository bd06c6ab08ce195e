"""The fuzz on a package other than the built-in one: named with --package or generated
from --specs, its rules read from the package, shipped to Spark, replayed, judged by Kafka
only where its schema is Kafka's, and bad input refused in one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kafkagen.fuzz import packages
from kafkagen.fuzz.rules import Oracle, build_table
from kafkagen.generator.generate import BUILTIN_SPECS
from user_specs import add_field, narrow_field, small_specs


def kafkagen(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkagen", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def test_rules_read_from_a_package_are_the_rules_its_specs_give() -> None:
    """The oracle plans (what must fail, what must decode to what) of every version pair
    are the same whether the rules come from the specs or from the generated classes."""
    from_specs = build_table()
    from_package = packages.table_of(packages.builtin().module)
    assert from_package.keys() == from_specs.keys()
    for key, rules in from_specs.items():
        ours, theirs = Oracle(rules), Oracle(from_package[key])
        assert list(from_package[key].versions) == list(rules.versions), key
        for v in rules.versions:
            assert from_package[key].flexible(v) == rules.flexible(v), (key, v)
            for w in rules.versions:
                assert theirs._plan(0, v, w) == ours._plan(0, v, w), (key, v, w)
                assert theirs._expectation(0, v, w) == ours._expectation(0, v, w), (key, v, w)


def test_a_package_from_the_builtin_specs_has_the_builtin_digest_and_kafka_judges_it_all(
    tmp_path: Path,
) -> None:
    with packages.opened([str(small_specs(tmp_path / "specs"))]) as package:
        builtin = packages.builtin()
        assert package.name.startswith("kafkagen_pkg_")
        for key, rules in package.table.items():
            assert rules.kafka_versions == tuple(rules.versions), key
            for v in rules.versions:
                assert package.layouts[(*key, v)] == builtin.layouts[(*key, v)]
        scratch = list(package.scratch)
    assert scratch and not any(p.exists() for p in scratch)  # removed when closed


def test_a_changed_version_is_left_to_kafkagen_alone(tmp_path: Path) -> None:
    specs = small_specs(tmp_path / "specs")
    narrow_field(specs / "FindCoordinatorRequest.json", "KeyType", "int16")
    with packages.opened([str(specs)]) as package:
        request = package.table[(10, "request")]
        # KeyType exists from v1: v0 keeps Kafka's schema, every later version changed.
        assert request.kafka_versions == (0,)
        assert package.table[(10, "response")].kafka_versions == tuple(range(0, 7))
        assert package.digest != packages.builtin().digest


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--package", "./nowhere"], "./nowhere: no such folder"),
        (["--package", "no_such_module"], "no_such_module: no such package"),
        (
            ["--package", "plain"],
            "plain: not a kafkagen-generated package (no GENERATED_BY_KAFKAGEN",
        ),
        (["--specs", "missing"], "missing: spec folder does not exist"),
        (["--specs", "broken"], "FindCoordinatorRequest.json"),
        (["--package", "x", "--specs", "broken"], "give --package or --specs, not both"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path, args: list[str], line: str
) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "__init__.py").write_text("")
    broken = small_specs(tmp_path / "broken")
    doc = json.loads((broken / "FindCoordinatorRequest.json").read_text())
    doc["fields"][0]["type"] = "int33"
    (broken / "FindCoordinatorRequest.json").write_text(json.dumps(doc))
    proc = kafkagen("fuzz", *args, "--messages", "10", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and line in lines[0], proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_fuzz_on_user_specs_runs_every_check_reports_and_replays(tmp_path: Path) -> None:
    specs = small_specs(tmp_path / "specs")
    proc = kafkagen(
        "fuzz",
        "--specs",
        str(specs),
        "--messages",
        "3000",
        "--master",
        "local[2]",
        "--out",
        "out",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "out"
    for name in ("report.html", "stats.parquet", "failures.parquet", "tasks.parquet"):
        assert (out / name).is_file(), name
    run = json.loads((out / "run.json").read_text())
    assert run["messages"] == 3000 and run["failures"] == 0
    assert run["package"]["specs"] == [str(specs)]
    assert run["package"]["argument"] == f"--specs {specs}"
    with packages.opened([str(specs)]) as again:  # the digest is the specs' own
        assert run["package"]["spec_digest"] == again.digest != packages.builtin().digest
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    stats = pq.read_table(out / "stats.parquet").to_pylist()
    assert {s["api"] for s in stats} == {10, 18}
    for check in ("cross_checks", "forward_checks", "mutations"):
        assert sum(s[check] for s in stats) > 0, check
    origins = [t["origin"] for t in pq.read_table(out / "tasks.parquet").to_pylist()]
    assert all(f"{run['package']['import_name']}.zip" in o for o in origins), origins
    # The generated package is gone with the run.
    assert run["package"]["import_name"] not in proc.stdout

    digest = run["package"]["spec_digest"][:12]
    wanted = f"1:10:request:3:5@{digest}"
    replay = kafkagen("fuzz", "--specs", str(specs), "--replay", wanted, cwd=tmp_path)
    assert replay.returncode == 0, replay.stderr
    assert "no failure: the checks pass on this message now" in replay.stdout
    other = kafkagen("fuzz", "--replay", wanted, cwd=tmp_path)
    assert other.returncode == 2
    assert f"was found on a package of spec digest {digest}, not on kafkagen.generated" in (
        other.stderr
    )


@pytest.mark.slow
def test_a_planted_bug_in_a_user_package_is_found_and_replayed(tmp_path: Path) -> None:
    proc = kafkagen(
        "generate",
        "--specs",
        str(small_specs(tmp_path / "specs")),
        "--out",
        "mine",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    module = tmp_path / "mine" / "find_coordinator.py"
    source = module.read_text()
    good = "    o.key_type = _S_b.unpack_from(buf, pos)[0]\n"
    assert good in source
    module.write_text(source.replace(good, good.replace("[0]", "[0] & 0x7F"), 1))
    pure = {"KAFKAGEN_PURE_PYTHON": "1"}  # the Python decoder is the one planted
    proc = kafkagen(
        "fuzz",
        "--package",
        "mine",
        "--messages",
        "2000",
        "--master",
        "local[1]",
        "--out",
        "out",
        cwd=tmp_path,
        env=pure,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    failures = [
        line.split()[0] for line in proc.stdout.splitlines() if line.startswith("  1:10:request:")
    ]
    assert failures, proc.stdout
    assert all(f.split(":")[3] in ("1", "2") for f in failures), failures  # the planted layout
    assert "--package mine" in proc.stdout  # how to reproduce one
    replay = kafkagen("fuzz", "--package", "mine", "--replay", failures[0], cwd=tmp_path, env=pure)
    assert replay.returncode == 1, replay.stderr
    assert "FAILURE in roundtrip" in replay.stdout


@pytest.mark.slow
def test_kafka_judges_only_the_versions_whose_schema_is_kafkas(tmp_path: Path) -> None:
    from kafkagen.fuzz import run_fuzz

    specs = small_specs(tmp_path / "specs")
    narrow_field(specs / "FindCoordinatorRequest.json", "KeyType", "int16")
    with packages.opened([str(specs)]) as package:
        result, _ = run_fuzz(
            600, apis=["FindCoordinator"], spark=False, oracle="kafka", package=package
        )
    assert result.failure_count == 0, result.failures[:3]
    by = {(s["kind"], s["version"]): s for s in result.stats}
    assert by[("request", 0)]["kafka_checks"] > 0 and by[("request", 0)]["kafka_skipped"] == 0
    for v in range(1, 7):
        assert by[("request", v)]["kafka_checks"] == 0, v
        assert by[("request", v)]["kafka_skipped"] == 3 * by[("request", v)]["messages"], v
    assert all(by[("response", v)]["kafka_checks"] > 0 for v in range(0, 7))


# --------------------------------------------------------------------------- --against


def against(
    tmp_path: Path, new: Path, old: Path
) -> tuple[subprocess.CompletedProcess[str], dict[str, object], list[dict[str, object]]]:
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    proc = kafkagen(
        "fuzz",
        "--specs",
        str(new),
        "--against",
        str(old),
        "--messages",
        "3000",
        "--master",
        "local[2]",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    if not (out / "run.json").exists():
        return proc, {}, []
    run = json.loads((out / "run.json").read_text())
    return proc, run, pq.read_table(out / "differences.parquet").to_pylist()


@pytest.mark.slow
def test_a_narrowed_field_is_a_failure_with_a_reproducer_and_a_rename_a_note(
    tmp_path: Path,
) -> None:
    old = small_specs(tmp_path / "old")
    new = small_specs(tmp_path / "new")
    doc = json.loads((new / "FindCoordinatorResponse.json").read_text())
    for f in doc["fields"]:
        if f["name"] == "Port":
            f["type"] = "int16"
        if f["name"] == "ThrottleTimeMs":
            f["name"] = "ThrottleMs"
    (new / "FindCoordinatorResponse.json").write_text(json.dumps(doc))
    proc, run, differences = against(tmp_path, new, old)
    assert proc.returncode == 1, proc.stderr[-2000:]
    failing = [d for d in differences if d["what"] == "failure"]
    # Port is a top-level field of v0-3 (v4+ moved it into the Coordinators array).
    assert {(d["kind"], d["version"]) for d in failing} == {("response", v) for v in range(4)}
    for d in failing:
        assert d["api"] == 10 and d["field"] == "FindCoordinatorResponse.port"
        assert "type int16 in new, int32 in old" in d["detail"]
        assert bytes.fromhex(d["hex"]) and json.loads(d["writer_json"]), d
        assert json.loads(d["reader_json"]), d
    assert (
        "INCOMPATIBLE" in proc.stdout
        and "10:response:v0 FindCoordinatorResponse.port" in proc.stdout
    )
    renames = [d for d in differences if d["what"] == "rename"]
    assert {d["version"] for d in renames} == set(range(1, 7))
    assert all("new throttle_ms is old throttle_time_ms" == d["detail"] for d in renames)
    assert run["failures"] > 0 and run["renames"] == 6

    # A difference replays from its id, with the same two sides, in this process.
    shown = failing[0]
    assert shown["id"].startswith(f"{shown['writer']}:1:10:response:{shown['version']}:")
    replay = kafkagen(
        "fuzz", "--specs", str(new), "--against", str(old), "--replay", shown["id"], cwd=tmp_path
    )
    assert replay.returncode == 1, replay.stderr
    assert f"bytes {shown['hex']}\n" in replay.stdout
    assert f"'s JSON: {shown['writer_json']}\n" in replay.stdout
    assert "layout failure: FindCoordinatorResponse.port: type int16" in replay.stdout
    assert "INCOMPATIBLE: the reader refuses the bytes" in replay.stdout
    swapped = kafkagen(
        "fuzz", "--specs", str(old), "--against", str(new), "--replay", shown["id"], cwd=tmp_path
    )
    assert swapped.returncode == 2
    [line] = swapped.stderr.strip().splitlines()
    assert f"difference {shown['id']} was found on sides of spec digests" in line


@pytest.mark.slow
def test_a_new_tagged_field_travels_as_an_unknown_tag_and_is_compatible(tmp_path: Path) -> None:
    old = small_specs(tmp_path / "old")
    new = small_specs(tmp_path / "new")
    add_field(
        new / "FindCoordinatorRequest.json",
        {"name": "Hint", "type": "string", "versions": "3+", "taggedVersions": "3+", "tag": 0},
    )
    proc, run, differences = against(tmp_path, new, old)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "compatible: every message read alike by both sides" in proc.stdout
    assert not [d for d in differences if d["what"] == "failure"]
    tags = [d for d in differences if d["what"] == "unknown-tag"]
    assert {d["version"] for d in tags} == set(range(3, 7))
    assert all(d["field"] == "FindCoordinatorRequest.hint" for d in tags)
    assert run["unknown_tag_round_trips"] > 0


def test_two_generations_with_no_api_in_common_is_one_line_exit_2(tmp_path: Path) -> None:
    one = tmp_path / "one"
    other = tmp_path / "other"
    one.mkdir()
    other.mkdir()
    for kind in ("Request", "Response"):
        shutil.copy(BUILTIN_SPECS / f"FindCoordinator{kind}.json", one)
        shutil.copy(BUILTIN_SPECS / f"ApiVersions{kind}.json", other)
    proc = kafkagen("fuzz", "--specs", "one", "--against", "other", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "kafkagen fuzz: one and other have no API in common"
    ]
    assert not (tmp_path / "out").exists()
