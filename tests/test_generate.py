"""``kafkagen generate``: deterministic output, ``--check``, all-or-nothing on bad specs,
self-contained packages from user specs, and generated code that black and mypy --strict
accept as it is.

The command line runs as a subprocess, the way users and CI run it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import black
import pytest
from kafkagen.generator import output
from kafkagen.generator.generate import BLACK_MODE

REPO = Path(__file__).resolve().parents[1]
GENERATED = REPO / "generated"
_SCRIPT = Path(sys.executable).with_name("kafkagen")
KAFKAGEN = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "kafkagen"]


def kafkagen(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KAFKAGEN, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def write_spec(folder: Path, doc: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{doc['name']}.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")


def error_code_response(folder: Path, key: int, name: str, valid: str, flexible: str) -> None:
    """A response spec holding only an error code."""
    write_spec(
        folder,
        {
            "apiKey": key,
            "type": "response",
            "name": name,
            "validVersions": valid,
            "flexibleVersions": flexible,
            "fields": [{"name": "ErrorCode", "type": "int16", "versions": "0+"}],
        },
    )


def demo_specs(folder: Path) -> Path:
    """A small valid spec set: one API (key 99) with a mapKey array, a nullable tagged field
    and a nullable field that appears at v2."""
    write_spec(
        folder,
        {
            "apiKey": 99,
            "type": "request",
            "name": "DemoRequest",
            "validVersions": "0-2",
            "flexibleVersions": "1+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {
                    "name": "Items",
                    "type": "[]Item",
                    "versions": "0+",
                    "fields": [
                        {"name": "Id", "type": "int32", "versions": "0+", "mapKey": True},
                        {
                            "name": "Label",
                            "type": "string",
                            "versions": "2+",
                            "nullableVersions": "2+",
                            "default": "null",
                            "ignorable": True,
                        },
                    ],
                },
                {
                    "name": "Note",
                    "type": "string",
                    "versions": "1+",
                    "taggedVersions": "1+",
                    "tag": 0,
                    "nullableVersions": "1+",
                    "default": "null",
                    "ignorable": True,
                },
            ],
        },
    )
    error_code_response(folder, 99, "DemoResponse", "0-2", "1+")
    return folder


def bad_specs(folder: Path) -> Path:
    """Two spec files with one error each."""
    demo_specs(folder)
    request = json.loads((folder / "DemoRequest.json").read_text())
    request["fields"][0]["type"] = "int33"
    write_spec(folder, request)
    response = json.loads((folder / "DemoResponse.json").read_text())
    response["fields"][0]["versions"] = "1-0"
    write_spec(folder, response)
    return folder


# --------------------------------------------------------------------------- the built-in specs


def test_check_passes_on_the_committed_tree() -> None:
    result = kafkagen("generate", "--check")
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stdout


@pytest.mark.slow
def test_generation_is_deterministic(tmp_path: Path) -> None:
    first, second = tmp_path / "first" / "generated", tmp_path / "second" / "generated"
    for out in (first, second):
        result = kafkagen("generate", "--out", out)
        assert result.returncode == 0, result.stderr
    assert tree(first) == tree(second)
    assert tree(first) == tree(GENERATED)


# --------------------------------------------------------------------------- --check on drift


def test_check_reports_a_changed_file_and_writes_nothing(tmp_path: Path) -> None:
    specs, out = demo_specs(tmp_path / "specs"), tmp_path / "mypkg"
    assert kafkagen("generate", "--specs", specs, "--out", out).returncode == 0
    assert kafkagen("generate", "--specs", specs, "--out", out, "--check").returncode == 0
    edited = (out / "demo.py").read_text() + "# edited\n"
    (out / "demo.py").write_text(edited)
    result = kafkagen("generate", "--specs", specs, "--out", out, "--check")
    assert result.returncode == 1
    assert f"{out / 'demo.py'}: differs" in result.stderr
    assert (out / "demo.py").read_text() == edited


def test_check_reports_an_extra_file(tmp_path: Path) -> None:
    specs, out = demo_specs(tmp_path / "specs"), tmp_path / "mypkg"
    assert kafkagen("generate", "--specs", specs, "--out", out).returncode == 0
    (out / "stale.py").write_text("")
    result = kafkagen("generate", "--specs", specs, "--out", out, "--check")
    assert result.returncode == 1
    assert "stale.py" in result.stderr


# --------------------------------------------------------------------------- bad specs


def test_bad_specs_exit_1_with_one_line_per_error(tmp_path: Path) -> None:
    result = kafkagen("generate", "--specs", bad_specs(tmp_path / "specs"), "--out", tmp_path / "o")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[:-1] == [
        "DemoRequest.json: DemoRequest.Name: type must be a primitive type, a capitalised "
        "struct name, or [] followed by one of those (got 'int33')",
        "DemoResponse.json: DemoResponse.ErrorCode: versions must run from a lower to a higher "
        "version, both at most 32767 (got '1-0')",
    ]
    assert "2 spec error(s)" in lines[-1]
    assert result.stdout == ""


def test_bad_specs_do_not_create_the_output_folder(tmp_path: Path) -> None:
    out = tmp_path / "never"
    result = kafkagen("generate", "--specs", bad_specs(tmp_path / "specs"), "--out", out)
    assert result.returncode == 1
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["specs"]  # no temporary leftovers


def test_bad_specs_leave_an_existing_output_folder_intact(tmp_path: Path) -> None:
    specs, out = tmp_path / "specs", tmp_path / "mypkg"
    assert kafkagen("generate", "--specs", demo_specs(specs), "--out", out).returncode == 0
    before = tree(out)
    bad_specs(specs)
    assert kafkagen("generate", "--specs", specs, "--out", out).returncode == 1
    assert tree(out) == before


def test_a_missing_spec_folder_is_an_error(tmp_path: Path) -> None:
    result = kafkagen("generate", "--specs", tmp_path / "nope", "--out", tmp_path / "out")
    assert result.returncode == 1
    assert "nope" in result.stderr and "does not exist" in result.stderr
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- user spec sets


def test_user_specs_make_a_self_contained_importable_package(tmp_path: Path) -> None:
    out = tmp_path / "site" / "mypkg"
    result = kafkagen("generate", "--specs", demo_specs(tmp_path / "specs"), "--out", out)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "GENERATED_BY_KAFKAGEN",
        "__init__.py",
        "demo.py",
        "py.typed",
    ]
    for module in out.glob("*.py"):
        assert "kafkagen.generated" not in module.read_text(), module.name
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(out.parent)!r})
        import mypkg
        request = mypkg.message_type(99, "request")
        assert request.__module__ == "mypkg.demo", request.__module__
        m = request(name="n", items=[request.Item(id=1), request.Item(id=2)], note="hi")
        for version in (1, 2):
            again = request.decode(m.encode(version), version)
            assert again == m, (version, again)
            assert again.items.find(2) == m.items[1]
        assert request.decode(request(name="n").encode(0), 0) == request(name="n")
        assert "kafkagen.generated" not in sys.modules
        print("ok", mypkg.header_version(99, 1, "request"))
        """)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=elsewhere, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["ok", "2"]


def every_kind_specs(folder: Path) -> Path:
    """One API (key 97) whose fields use every kind of code the templates write, the kinds
    the built-in specs lack included: arrays of bool, float64, bytes and uuid, bytes that
    are nullable before flexible versions, records, a uuid with a non-zero default, tagged
    structs, uuids and keyed arrays, fields that appear and disappear, and a name long
    enough to make black split the statements that use it."""
    uuid_default = "AAAAAAAAAAAAAAAAAAAAAQ"  # base64 of uuid 00000000-...-0001
    write_spec(
        folder,
        {
            "apiKey": 97,
            "type": "request",
            "name": "EveryRequest",
            "validVersions": "0-3",
            "flexibleVersions": "2+",
            "fields": [
                {"name": "Flags", "type": "[]bool", "versions": "0+"},
                {"name": "Ratios", "type": "[]float64", "versions": "1+"},
                {"name": "Blobs", "type": "[]bytes", "versions": "0+"},
                {"name": "Ids", "type": "[]uuid", "versions": "0+", "nullableVersions": "1+"},
                {"name": "Maybe", "type": "bytes", "versions": "0+", "nullableVersions": "0+"},
                {"name": "Batch", "type": "records", "versions": "0+"},
                {"name": "Owner", "type": "uuid", "versions": "1-2", "default": uuid_default},
                {"name": "Note", "type": "string", "versions": "0-1", "ignorable": True},
                {  # a name that makes most statements about it longer than a line
                    "name": "PartitionsWhoseLeaderEpochMustBeCheckedBeforeTheOffsetMayMoveOn",
                    "type": "[]int64",
                    "versions": "1+",
                    "nullableVersions": "3+",
                },
                {
                    "name": "Extra",
                    "type": "Extra",
                    "versions": "2+",
                    "taggedVersions": "2+",
                    "tag": 0,
                },
                {
                    "name": "Others",
                    "type": "[]Extra",
                    "versions": "2+",
                    "taggedVersions": "2+",
                    "tag": 1,
                },
                {
                    "name": "Origin",
                    "type": "uuid",
                    "versions": "3+",
                    "taggedVersions": "3+",
                    "tag": 2,
                    "default": uuid_default,
                },
            ],
            "commonStructs": [
                {
                    "name": "Extra",
                    "versions": "2+",
                    "fields": [
                        {"name": "Key", "type": "string", "versions": "2+", "mapKey": True},
                        {"name": "Weight", "type": "float64", "versions": "2+"},
                    ],
                }
            ],
        },
    )
    error_code_response(folder, 97, "EveryResponse", "0-3", "2+")
    return folder


def unused_and_undefined_names(package: Path) -> list[str]:
    """pyflakes' findings (through ruff) on a generated package: an import it never uses
    (F401) or a name it uses but neither defines nor imports (F821)."""
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--output-format", "concise"]
        + ["--select", "F401,F811,F821", "--target-version", "py311", str(package)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode in (0, 1), result.stderr
    return [line for line in result.stdout.splitlines() if ": F" in line]


def test_the_generated_package_imports_exactly_the_names_it_uses() -> None:
    assert unused_and_undefined_names(GENERATED) == []


def test_code_of_every_kind_is_black_formatted_and_imports_exactly_what_it_uses(
    tmp_path: Path,
) -> None:
    """Every runtime name a template writes is recorded for the module's imports (a name
    written without ``rt(...)`` is undefined here, one recorded but not written unused),
    and the code the templates write, with black laying out only the statements longer
    than a line, is what black makes of the whole module."""
    out = tmp_path / "everypkg"
    result = kafkagen("generate", "--specs", every_kind_specs(tmp_path / "specs"), "--out", out)
    assert result.returncode == 0, result.stderr
    assert unused_and_undefined_names(out) == []
    for module in out.glob("*.py"):
        text = module.read_text(encoding="utf-8")
        assert black.format_str(text, mode=BLACK_MODE) == text, module.name
    script = textwrap.dedent(f"""
        import sys, uuid
        sys.path.insert(0, {str(tmp_path)!r})
        from everypkg.every import EveryRequest
        extra = EveryRequest.Extra(key="k", weight=0.5)
        m = EveryRequest(flags=[True], blobs=[b"x"], ids=[uuid.uuid4()], maybe=None,
                         batch=b"r", extra=extra, others=[extra])
        assert m.owner == m.origin == uuid.UUID(int=1), m.owner
        for version in (2, 3):
            assert EveryRequest.decode(m.encode(version), version) == m, version
            assert EveryRequest.from_json(m.to_json(version), version) == m, version
        print("ok")
        """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["ok"]


# --------------------------------------------------------------------------- the output folder


def other_spec(folder: Path) -> Path:
    """A second API (key 98) beside the demo, so removing it drops a module."""
    write_spec(
        folder,
        {
            "apiKey": 98,
            "type": "request",
            "name": "OtherRequest",
            "validVersions": "0",
            "flexibleVersions": "none",
            "fields": [{"name": "Id", "type": "int32", "versions": "0+"}],
        },
    )
    error_code_response(folder, 98, "OtherResponse", "0", "none")
    return folder


def user_folder(root: Path) -> Path:
    """A folder of someone's own things: docs, hidden files, a nested git repository."""
    root.mkdir(parents=True)
    (root / "README.md").write_text("# my project\n")
    (root / ".hidden").write_text("secret\n")
    (root / "sub" / ".git").mkdir(parents=True)
    (root / "sub" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "my_notes.txt").write_text("notes\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('app')\n")
    root.chmod(0o750)
    return root


def full_tree(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every entry under ``root`` with its mode, hidden ones included."""
    found = {}
    for p in sorted(root.rglob("*")):
        data = p.read_bytes() if p.is_file() else b""
        found[str(p.relative_to(root))] = (p.stat().st_mode, data)
    return found


def test_a_folder_of_user_files_is_refused_and_left_untouched(tmp_path: Path) -> None:
    out = user_folder(tmp_path / "project")
    before, mode = full_tree(out), out.stat().st_mode
    result = kafkagen("generate", "--specs", demo_specs(tmp_path / "specs"), "--out", out)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"kafkagen generate: {out}: holds files kafkagen did not write (.hidden, README.md, "
        "my_notes.txt, src/, sub/); nothing written. Give --out a new or empty folder, or "
        "move those files out of it\n"
    )
    assert full_tree(out) == before and out.stat().st_mode == mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["project", "specs"]


def test_out_dot_in_a_project_is_refused_and_the_project_kept(tmp_path: Path) -> None:
    project = user_folder(tmp_path / "project")
    demo_specs(project / "my_specs")
    before = full_tree(project)
    result = kafkagen("generate", "--specs", "my_specs", "--out", ".", cwd=project)
    assert result.returncode == 1
    assert "is the current folder" in result.stderr and "--out mypkg" in result.stderr
    assert "nothing written" in result.stderr and "wrote" not in result.stdout
    assert full_tree(project) == before


def test_an_empty_folder_becomes_the_package_and_keeps_its_mode(tmp_path: Path) -> None:
    out = tmp_path / "mypkg"
    out.mkdir(mode=0o700)
    out.chmod(0o751)
    result = kafkagen("generate", "--specs", demo_specs(tmp_path / "specs"), "--out", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"wrote {out} (2 specs, 3 files)")
    assert (out / "demo.py").is_file() and (out / "GENERATED_BY_KAFKAGEN").is_file()
    assert out.stat().st_mode & 0o7777 == 0o751


def test_a_new_folder_gets_the_same_mode_as_mkdir_gives(tmp_path: Path) -> None:
    out = tmp_path / "mypkg"
    (tmp_path / "by-mkdir").mkdir()
    result = kafkagen("generate", "--specs", demo_specs(tmp_path / "specs"), "--out", out)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_mode == (tmp_path / "by-mkdir").stat().st_mode


def test_regenerating_replaces_a_generated_package_whole(tmp_path: Path) -> None:
    specs, out = other_spec(demo_specs(tmp_path / "specs")), tmp_path / "mypkg"
    assert kafkagen("generate", "--specs", specs, "--out", out).returncode == 0
    assert (out / "other.py").is_file()
    (out / "__pycache__").mkdir()
    (out / "__pycache__" / "demo.cpython-311.pyc").write_bytes(b"\0")
    out.chmod(0o705)
    (specs / "OtherRequest.json").unlink()
    (specs / "OtherResponse.json").unlink()
    result = kafkagen("generate", "--specs", specs, "--out", out)
    assert result.returncode == 0, result.stderr
    assert sorted(tree(out)) == ["GENERATED_BY_KAFKAGEN", "__init__.py", "demo.py", "py.typed"]
    assert not (out / "__pycache__").exists()
    assert out.stat().st_mode & 0o7777 == 0o705
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mypkg", "specs"]


def test_a_file_added_to_a_generated_package_is_refused(tmp_path: Path) -> None:
    specs, out = demo_specs(tmp_path / "specs"), tmp_path / "mypkg"
    assert kafkagen("generate", "--specs", specs, "--out", out).returncode == 0
    (out / "helpers.py").write_text("def helper() -> int:\n    return 1\n")
    before = full_tree(out)
    result = kafkagen("generate", "--specs", specs, "--out", out)
    assert result.returncode == 1
    assert "did not write (helpers.py)" in result.stderr
    assert full_tree(out) == before


def test_a_failure_while_writing_leaves_the_old_package(tmp_path: Path) -> None:
    specs, out = demo_specs(tmp_path / "specs"), tmp_path / "mypkg"
    assert kafkagen("generate", "--specs", specs, "--out", out).returncode == 0
    before = full_tree(out)
    # The second file cannot be encoded: the write fails after the first file is written.
    files = {"a.py": "A = 1\n", "b.py": "B = '\ud800'\n", "c.py": "C = 3\n"}
    with pytest.raises(UnicodeEncodeError):
        output.write_package(files, out)
    assert full_tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mypkg", "specs"]


def test_the_package_folder_never_goes_missing_while_it_is_replaced(tmp_path: Path) -> None:
    """Regenerating swaps the whole folder in one step: a reader polling the path meanwhile
    finds a folder there every time (with two renames it would find nothing in between).
    The old folder is deleted once swapped out, so only the path is checked while it runs."""
    out = tmp_path / "mypkg"
    files = {f"m{i}.py": f'"""x\n\n{output.MODULE_MARK}.\n"""\n' for i in range(40)}
    output.write_package(files, out)
    missing = polls = 0
    stop = threading.Event()

    def poll() -> None:
        nonlocal missing, polls
        while not stop.is_set() and polls < 1_000_000:
            polls += 1
            missing += not os.path.isdir(out)

    reader = threading.Thread(target=poll)
    reader.start()
    try:
        for _ in range(60):
            output.write_package(files, out)
    finally:
        stop.set()
        reader.join(timeout=10)
    assert not reader.is_alive()
    assert polls > 0 and missing == 0, f"missing in {missing} of {polls} polls"
    assert set(os.listdir(out)) == {*files, output.MARKER}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mypkg"]  # nothing left beside it


def test_an_output_path_that_cannot_be_a_folder_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a folder\n")
    out = tmp_path / "afile" / "mypkg"
    result = kafkagen("generate", "--specs", demo_specs(tmp_path / "specs"), "--out", out)
    assert result.returncode == 1
    assert result.stderr == (
        f"kafkagen generate: {out}: {tmp_path / 'afile'} is not a folder; nothing written\n"
    )
    assert (tmp_path / "afile").read_text() == "not a folder\n"


def test_generate_help_says_what_out_does() -> None:
    result = kafkagen("generate", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "replaced as a whole" in text and "GENERATED_BY_KAFKAGEN" in text
    assert "refused and left untouched" in text


# --------------------------------------------------------------------------- black and mypy


def generated_modules() -> list[Path]:
    return sorted(GENERATED.glob("*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("module", generated_modules(), ids=lambda p: p.name)
def test_generated_module_is_black_stable(module: Path) -> None:
    text = module.read_text(encoding="utf-8")
    assert black.format_str(text, mode=BLACK_MODE) == text


def mypy_strict(tmp_path: Path, *targets: str) -> list[str]:
    """``mypy --strict`` over ``targets``, finding kafkagen as the README's set-up installed
    it (tools/dev.sh gives mypy the sources as a stub package); its error lines."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--python-version",
            "3.11",
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            "--no-error-summary",
            *targets,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=900,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert errors or result.returncode == 0, result.stdout + result.stderr
    return errors


def test_mypy_finds_kafkagen_for_a_package_the_user_generated(tmp_path: Path) -> None:
    out = tmp_path / "mypkg"
    specs = demo_specs(tmp_path / "specs")
    assert kafkagen("generate", "--specs", specs, "--out", out).returncode == 0
    (tmp_path / "use.py").write_text(
        "import mypkg\n"
        "from kafkagen.runtime.errors import DecodeError\n"
        "from mypkg.demo import DemoRequest\n"
        "wire: bytes = DemoRequest(name='n').encode(1)\n"
        "error: type[ValueError] = DecodeError\n"
        "wrong: int = DemoRequest.decode(wire, 1)\n"
    )
    errors = mypy_strict(tmp_path, "mypkg", "use.py")
    # Exactly the one planted error: kafkagen's types were found and used.
    assert errors == [
        'use.py:6: error: Incompatible types in assignment (expression has type "DemoRequest", '
        'variable has type "int")  [assignment]'
    ]


@pytest.mark.slow
def test_generated_package_passes_mypy_strict(tmp_path: Path) -> None:
    errors = mypy_strict(tmp_path, "-p", "kafkagen.generated", "-p", "kafkagen.runtime")
    assert errors == [], "\n".join(errors[:50]) + f"\n... {len(errors)} errors in all"


USER_CODE = """\
from kafkagen.generated import header_version, message_type
from kafkagen.generated.metadata import MetadataRequest, MetadataResponse
from kafkagen.runtime.message import Message

topic = MetadataResponse.MetadataResponseTopic(name="a", error_code=3)
broker = MetadataResponse.MetadataResponseBroker(node_id=1, host="h", port=9092)
response = MetadataResponse(throttle_time_ms=5, brokers=[broker], topics=[topic])
wire: bytes = response.encode(12)
decoded = MetadataResponse.decode(wire, 12)
found = decoded.topics.find("a")
code: int = found.error_code if found is not None else 0
request = MetadataRequest(topics=None, allow_auto_topic_creation=False)
cls: type[Message] = message_type(3, "request")
version: int = header_version(3, 12, "request")
"""


@pytest.mark.slow
def test_typical_user_code_type_checks_against_the_generated_package(tmp_path: Path) -> None:
    """Building a message with keyword arguments, plain lists included, decoding it and
    finding an item by key passes mypy --strict."""
    (tmp_path / "user_code.py").write_text(USER_CODE)
    errors = mypy_strict(tmp_path, "user_code.py")
    assert errors == [], "\n".join(errors)
