"""Evolution checks between two revisions of a spec directory."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from kafka_data import KAFKA_4_0_SNAPSHOT_SPECS
from kafkagen.generator.compat import check_compat, run_check_compat

KAFKA_SPECS = KAFKA_4_0_SNAPSHOT_SPECS
FILE = "DemoRequest.json"


def base_spec() -> dict[str, Any]:
    """A request with a plain field, a nested struct array and a tagged field."""
    return {
        "apiKey": 99,
        "type": "request",
        "name": "DemoRequest",
        "validVersions": "0-3",
        "flexibleVersions": "2+",
        "fields": [
            {"name": "TimeoutMs", "type": "int32", "versions": "0+", "default": "60000"},
            {
                "name": "Topics",
                "type": "[]Topic",
                "versions": "0+",
                "fields": [
                    {"name": "Name", "type": "string", "versions": "0+"},
                    {"name": "Partitions", "type": "[]int32", "versions": "1+"},
                ],
            },
            {"name": "Note", "type": "string", "versions": "1+", "nullableVersions": "1+"},
            {"name": "Hint", "type": "string", "versions": "2+", "tag": 0, "taggedVersions": "2+"},
        ],
    }


def write(directory: Path, *docs: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for doc in docs:
        (directory / f"{doc['name']}.json").write_text(json.dumps(doc), encoding="utf-8")
    return directory


def field(doc: dict[str, Any], *names: str) -> dict[str, Any]:
    """The field at a name path, for editing a copy of the base spec."""
    fields: list[dict[str, Any]] = doc["fields"]
    found: dict[str, Any] = {}
    for name in names:
        found = next(f for f in fields if f["name"] == name)
        fields = found.get("fields", [])
    return found


def compat_lines(tmp_path: Path, new: dict[str, Any]) -> list[str]:
    old_dir = write(tmp_path / "old", base_spec())
    new_dir = write(tmp_path / "new", new)
    return [e.line() for e in check_compat(old_dir, new_dir)]


def evolved() -> dict[str, Any]:
    return copy.deepcopy(base_spec())


# ----------------------------------------------------------------------------- compatible


def test_clean_copy_of_kafka_specs_is_compatible(tmp_path: Path) -> None:
    assert KAFKA_SPECS.is_dir(), f"Kafka's spec files are missing: {KAFKA_SPECS}"
    shutil.copytree(KAFKA_SPECS, tmp_path / "copy")
    assert check_compat(KAFKA_SPECS, tmp_path / "copy") == []


def test_unchanged_spec_is_compatible(tmp_path: Path) -> None:
    assert compat_lines(tmp_path, evolved()) == []


def test_new_top_version_with_a_new_field_is_compatible(tmp_path: Path) -> None:
    new = evolved()
    new["validVersions"] = "0-4"
    new["fields"].insert(1, {"name": "Mode", "type": "int8", "versions": "4+"})
    assert compat_lines(tmp_path, new) == []


def test_field_dropped_from_a_new_version_only_is_compatible(tmp_path: Path) -> None:
    new = evolved()
    new["validVersions"] = "0-4"
    field(new, "TimeoutMs")["versions"] = "0-3"
    assert compat_lines(tmp_path, new) == []


def test_new_tagged_field_in_existing_flexible_versions_is_compatible(tmp_path: Path) -> None:
    new = evolved()
    new["fields"].append(
        {"name": "Trace", "type": "string", "versions": "2+", "tag": 1, "taggedVersions": "2+"}
    )
    assert compat_lines(tmp_path, new) == []


def test_added_spec_is_compatible(tmp_path: Path) -> None:
    other = base_spec() | {"name": "OtherRequest", "apiKey": 98}
    old_dir = write(tmp_path / "old", base_spec())
    new_dir = write(tmp_path / "new", base_spec(), other)
    assert check_compat(old_dir, new_dir) == []


def test_unstable_latest_version_may_still_change(tmp_path: Path) -> None:
    old = base_spec() | {"latestVersionUnstable": True}
    old["fields"].append({"name": "Draft", "type": "int32", "versions": "3+"})
    new = base_spec() | {"latestVersionUnstable": True}
    new["fields"].append({"name": "Draft", "type": "int64", "versions": "3+"})
    old_dir, new_dir = write(tmp_path / "old", old), write(tmp_path / "new", new)
    assert check_compat(old_dir, new_dir) == []


# ----------------------------------------------------------------------------- incompatible


def test_removed_spec_is_detected(tmp_path: Path) -> None:
    other = base_spec() | {"name": "OtherRequest", "apiKey": 98}
    old_dir = write(tmp_path / "old", base_spec(), other)
    new_dir = write(tmp_path / "new", base_spec())
    assert [e.line() for e in check_compat(old_dir, new_dir)] == ["OtherRequest.json: spec removed"]


def test_changed_api_key_is_detected(tmp_path: Path) -> None:
    assert compat_lines(tmp_path, evolved() | {"apiKey": 100}) == [
        "DemoRequest.json: DemoRequest: apiKey changed (was 99) (got 100)"
    ]


def test_changed_message_type_is_detected(tmp_path: Path) -> None:
    new = evolved() | {"type": "data"}
    del new["apiKey"]
    assert compat_lines(tmp_path, new) == [
        "DemoRequest.json: DemoRequest: apiKey changed (was 99)",
        "DemoRequest.json: DemoRequest: type changed (was 'request') (got 'data')",
    ]


def test_changed_flexible_versions_is_detected(tmp_path: Path) -> None:
    assert compat_lines(tmp_path, evolved() | {"flexibleVersions": "1+"}) == [
        "DemoRequest.json: DemoRequest: flexibleVersions changed for existing versions "
        "(was '2+') (got '1+')"
    ]


def test_removed_top_version_is_detected(tmp_path: Path) -> None:
    assert compat_lines(tmp_path, evolved() | {"validVersions": "0-2"}) == [
        "DemoRequest.json: DemoRequest: validVersions may only be extended at the top "
        "(was '0-3') (got '0-2')"
    ]


def test_removed_lowest_version_is_detected(tmp_path: Path) -> None:
    new = evolved() | {"validVersions": "1-3"}
    assert compat_lines(tmp_path, new) == [
        "DemoRequest.json: DemoRequest: validVersions may only be extended at the top "
        "(was '0-3') (got '1-3')"
    ]


def test_changed_field_type_is_detected(tmp_path: Path) -> None:
    new = evolved()
    field(new, "TimeoutMs")["type"] = "int64"
    assert compat_lines(tmp_path, new) == [
        "DemoRequest.json: DemoRequest.TimeoutMs: type changed (was 'int32') (got 'int64')"
    ]


def test_changed_type_deep_in_a_struct_names_the_path(tmp_path: Path) -> None:
    new = evolved()
    field(new, "Topics", "Partitions")["type"] = "[]int64"
    assert compat_lines(tmp_path, new) == [
        "DemoRequest.json: DemoRequest.Topics.Partitions: type changed (was '[]int32') "
        "(got '[]int64')"
    ]


def test_changed_field_versions_is_detected(tmp_path: Path) -> None:
    new = evolved()
    field(new, "Note")["versions"] = "2+"
    field(new, "Note")["nullableVersions"] = "2+"
    assert compat_lines(tmp_path, new) == [
        "DemoRequest.json: DemoRequest.Note: versions changed for existing versions "
        "(was '1+') (got '2+')"
    ]


def test_changed_tag_is_detected(tmp_path: Path) -> None:
    new = evolved()
    new["fields"].append(
        {"name": "Trace", "type": "string", "versions": "2+", "tag": 0, "taggedVersions": "2+"}
    )
    field(new, "Hint")["tag"] = 1
    assert compat_lines(tmp_path, new) == [
        "DemoRequest.json: DemoRequest.Hint: tag changed (was 0) (got 1)"
    ]


def test_changed_nullable_versions_is_detected(tmp_path: Path) -> None:
    new = evolved()
    field(new, "Note")["nullableVersions"] = "3+"
    assert compat_lines(tmp_path, new) == [
        "DemoRequest.json: DemoRequest.Note: nullableVersions changed for existing versions "
        "(was '1+') (got '3+')"
    ]


def test_changed_default_is_detected(tmp_path: Path) -> None:
    new = evolved()
    field(new, "TimeoutMs")["default"] = "30000"
    assert compat_lines(tmp_path, new) == [
        "DemoRequest.json: DemoRequest.TimeoutMs: default changed (was '60000') (got '30000')"
    ]


def test_removed_field_is_detected(tmp_path: Path) -> None:
    new = evolved()
    new["fields"] = [f for f in new["fields"] if f["name"] != "Note"]
    assert compat_lines(tmp_path, new) == [
        "DemoRequest.json: DemoRequest.Note: field removed, but existing versions 1-3 have it"
    ]


def test_new_untagged_field_in_existing_versions_is_detected(tmp_path: Path) -> None:
    new = evolved()
    field(new, "Topics")["fields"].append({"name": "Weight", "type": "int32", "versions": "0+"})
    assert compat_lines(tmp_path, new) == [
        "DemoRequest.json: DemoRequest.Topics.Weight: a field added to existing versions 0-3 "
        "must be tagged (got '0+')"
    ]


def test_reordered_fields_are_detected(tmp_path: Path) -> None:
    new = evolved()
    new["fields"][0], new["fields"][1] = new["fields"][1], new["fields"][0]
    assert compat_lines(tmp_path, new) == [
        "DemoRequest.json: DemoRequest: fields reordered in existing version 0 "
        "(was ['TimeoutMs', 'Topics']) (got ['Topics', 'TimeoutMs'])"
    ]


# ----------------------------------------------------------------------------- exit status


def test_exit_status_is_0_with_a_summary_when_compatible(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old_dir = write(tmp_path / "old", base_spec())
    new_dir = write(tmp_path / "new", base_spec())
    assert run_check_compat(old_dir, new_dir) == 0
    out, err = capsys.readouterr()
    assert out == f"OK: 1 specs compatible with {old_dir}, 0 added in {new_dir}\n"
    assert err == ""


def test_exit_status_is_1_with_each_error_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old_dir = write(tmp_path / "old", base_spec())
    new_dir = write(tmp_path / "new", evolved() | {"apiKey": 100, "flexibleVersions": "1+"})
    assert run_check_compat(old_dir, new_dir) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "DemoRequest.json: DemoRequest: apiKey changed (was 99) (got 100)",
        "DemoRequest.json: DemoRequest: flexibleVersions changed for existing versions "
        "(was '2+') (got '1+')",
    ]


def test_exit_status_is_2_when_a_directory_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new_dir = write(tmp_path / "new", base_spec())
    missing = tmp_path / "missing"
    assert run_check_compat(missing, new_dir) == 2
    assert capsys.readouterr().err == (
        f"{missing}: cannot read spec directory (got 'No such file or directory')\n"
    )


def test_exit_status_is_2_when_a_spec_is_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old_dir = write(tmp_path / "old", base_spec())
    new_dir = write(tmp_path / "new", evolved() | {"validVersions": "0+"})
    assert run_check_compat(old_dir, new_dir) == 2
    assert capsys.readouterr().err == (
        "DemoRequest.json: DemoRequest: validVersions must end at a highest version, "
        "not be open-ended (got '0+')\n"
    )


def test_exit_status_is_2_when_a_spec_is_not_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old_dir = write(tmp_path / "old", base_spec())
    new_dir = tmp_path / "new"
    new_dir.mkdir()
    (new_dir / FILE).write_text('{"name": ', encoding="utf-8")
    assert run_check_compat(old_dir, new_dir) == 2
    assert capsys.readouterr().err == (
        "DemoRequest.json: line 1 column 10: invalid JSON (got 'Expecting value')\n"
    )
