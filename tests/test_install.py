"""What users install works as documented: the command line, the compiled accelerator's
freshness check, and a wheel built from the repository in a fresh virtual environment."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest
from kafkagen.runtime import message
from test_docs import of_kind
from test_generate import demo_specs

REPO = Path(__file__).resolve().parents[1]
_SCRIPT = Path(sys.executable).with_name("kafkagen")
KAFKAGEN = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "kafkagen"]
PURE = os.environ.get("KAFKAGEN_PURE_PYTHON", "") not in ("", "0")


def run(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*map(str, args)], capture_output=True, text=True, timeout=600, cwd=cwd, env=env
    )


# --------------------------------------------------------------------------- the command line


def test_version_is_the_installed_distributions() -> None:
    result = run(*KAFKAGEN, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"kafkagen {importlib.metadata.version('kafkagen')}\n"


def test_every_user_command_is_a_kafkagen_subcommand() -> None:
    listing = run(*KAFKAGEN, "--help").stdout
    commands = ("generate", "check-compat", "roundtrip", "fuzz", "serve", "import-specs")
    for command in (*commands, "conformance", "control"):
        assert f"\n    {command}" in listing, command
        result = run(*KAFKAGEN, command, "--help")
        assert result.returncode == 0 and f"usage: kafkagen {command}" in result.stdout
    for bench in ("codecs", "purgatory", "fuzz", "kafka"):
        result = run(*KAFKAGEN, "bench", bench, "--help")
        assert result.returncode == 0 and f"usage: kafkagen bench {bench}" in result.stdout
    result = run(*KAFKAGEN, "bench")
    assert result.returncode == 2 and "codecs" in result.stderr
    result = run(*KAFKAGEN, "bench", "--help")
    assert result.returncode == 0 and "usage: kafkagen bench NAME" in result.stdout


def test_generate_loads_neither_the_fuzz_nor_the_benchmarks_nor_the_broker(
    tmp_path: Path,
) -> None:
    specs = demo_specs(tmp_path / "specs")
    result = run(
        sys.executable, "-X", "importtime", "-m", "kafkagen", "generate",
        "--specs", specs, "--out", tmp_path / "mypkg",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines()}
    assert "kafkagen.generator.generate" in imported  # the trace is real
    loaded = sorted(
        name
        for name in imported
        if name.split(".")[0] == "pyspark"
        or name.startswith(("kafkagen.fuzz", "kafkagen.bench", "kafkagen.runtime.broker"))
        or name in ("kafkagen.cli.serve", "kafkagen.cli.import_specs")
    )
    assert loaded == []


# --------------------------------------------------------------------------- the accelerator


def package_copy(root: Path, native_source_edit: str) -> Path:
    """The installed layout of kafkagen under ``root``, with a copy of runtime/ (and its
    compiled accelerator) whose ``_native.c`` has ``native_source_edit`` appended."""
    package = root / "kafkagen"
    package.mkdir(parents=True)
    for entry in (REPO / "tools").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name in ("generated", "generator", "templates", "message_specs"):
        (package / name).symlink_to(REPO / name, target_is_directory=True)
    shutil.copytree(
        REPO / "runtime", package / "runtime", ignore=shutil.ignore_patterns("__pycache__")
    )
    with (package / "runtime" / "_native.c").open("a") as f:
        f.write(native_source_edit)
    return root


ACCELERATOR_IN_USE = textwrap.dedent("""
    from kafkagen.runtime import message
    from kafkagen.generated import message_type
    cls = message_type(3, "request")
    m = cls(topics=[cls.MetadataRequestTopic(name="orders")])
    assert cls.decode(m.encode(12), 12) == m
    print(message.native is not None, message.__file__)
    """)


@pytest.mark.skipif(PURE or message.native is None, reason="needs the compiled accelerator")
@pytest.mark.parametrize("edit", ["", "/* changed */\n"], ids=["same-source", "changed-source"])
def test_an_accelerator_built_from_other_sources_is_refused(tmp_path: Path, edit: str) -> None:
    root = package_copy(tmp_path / "site", edit)
    result = run(
        sys.executable, "-c", ACCELERATOR_IN_USE,
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    in_use, path = result.stdout.split()
    assert path.startswith(str(root))  # the copy was imported, not the repository
    if edit:
        assert in_use == "False"
        assert "was built from another version of" in result.stderr
        assert "using the pure-Python codecs" in result.stderr
    else:
        assert in_use == "True" and result.stderr == ""


# --------------------------------------------------------------------------- the wheel


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def needs_only_kafkagen(code: str) -> bool:
    """Whether ``code`` imports nothing but kafkagen and the standard library."""
    roots = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module.split(".")[0])
    return roots <= set(sys.stdlib_module_names) | {"kafkagen"}


def wheel_entries(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as z:
        return set(z.namelist())


@pytest.mark.slow
def test_the_wheel_installs_and_runs_every_documented_command(
    tmp_path: Path, kafkagen_dist: Path
) -> None:
    (wheel,) = kafkagen_dist.glob("kafkagen-*.whl")
    entries = wheel_entries(wheel)
    assert "kafkagen/cli/spec_extensions.json" in entries and "kafkagen/py.typed" in entries
    assert "kafkagen/bench/codecs.py" in entries
    # Every runtime module, in every room of the broker: a sub-package pyproject.toml does
    # not list would be left out of the wheel without a word.
    runtime = REPO / "runtime"
    modules = {f"kafkagen/runtime/{p.relative_to(runtime)}" for p in runtime.rglob("*.py")}
    assert modules <= entries, sorted(modules - entries)
    assert "kafkagen/runtime/broker/release_presets.json" in entries
    assert not [e for e in entries if e.startswith("kafkagen/bench_")]
    assert any(e.startswith("kafkagen/runtime/_native.") and e.endswith(".so") for e in entries)
    assert any(e.startswith("kafkagen/fuzz/_builders.") and e.endswith(".so") for e in entries)

    venv = tmp_path / "venv"
    assert run(sys.executable, "-m", "venv", venv).returncode == 0
    py, cli = venv / "bin" / "python", venv / "bin" / "kafkagen"
    installed = run(py, "-m", "pip", "install", "--quiet", wheel)
    assert installed.returncode == 0, installed.stderr[-3000:]
    work = tmp_path / "work"
    work.mkdir()

    def ok(*args: str | Path) -> str:
        result = run(*args, cwd=work)
        assert result.returncode == 0, (args, result.stdout[-2000:], result.stderr[-2000:])
        return result.stdout

    assert ok(cli, "--version") == "kafkagen 0.1.0\n"
    demo_specs(work / "specs")
    assert "(2 specs, 3 files)" in ok(cli, "generate", "--specs", "specs", "--out", "mypkg")
    ok(cli, "generate", "--specs", "specs", "--out", "mypkg", "--check")
    assert ok(py, "-c", "import mypkg; print(mypkg.message_type(99, 'request').__name__)") == (
        "DemoRequest\n"
    )
    assert "0 failed" in ok(cli, "roundtrip")
    ok(cli, "check-compat", "specs", "specs")
    # The spec import tool runs, and finds its extensions in the installed package.
    assert "wrote 2 specs" in ok(cli, "import-specs", "--no-extensions", "specs", "imported")
    has_extensions = (
        "from kafkagen.cli import import_specs as t; print(t.DEFAULT_EXTENSIONS.is_file())"
    )
    assert ok(py, "-c", has_extensions) == "True\n"
    assert "kafkagen.generated" in ok(py, "-c", "import kafkagen.generated as g; print(g.__name__)")
    native = ok(py, "-c", "from kafkagen.runtime import message; print(message.native is not None)")
    assert native == "True\n"
    for bench in ("codecs", "purgatory", "fuzz"):
        ok(cli, "bench", bench, "--help")
    # Without kio and kafka-python the codec benchmark still runs, showing them as n/a.
    assert "n/a" in ok(cli, "bench", "codecs", "--quick", "--workload", "api_versions_request")
    # The README's Python examples run against the installed package; those that also need
    # a peer client (confluent-kafka, ...) are run by test_docs in the dev environment.
    for block in of_kind("python"):
        if needs_only_kafkagen(block.text):
            ok(py, "-c", block.text)
    # Without the spark extra, the fuzz says what to install instead of failing obscurely.
    fuzz = run(cli, "fuzz", "--messages", "10", cwd=work)
    assert fuzz.returncode == 2 and "pip install 'kafkagen[spark]'" in fuzz.stderr
    # mypy (from the dev environment) finds the installed package's types.
    checked = run(
        sys.executable, "-m", "mypy", "--strict", "--python-executable", py,
        "--cache-dir", tmp_path / "mypy-cache", "mypkg", cwd=work,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    serve = subprocess.Popen(
        [cli, "serve", "--port", str(free_port())],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stdout is not None and serve.stderr is not None
        line = serve.stdout.readline()
        assert "bootstrap servers: 127.0.0.1:" in line, line + serve.stderr.read()
    finally:
        serve.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 20
        while serve.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if serve.poll() is None:
            serve.kill()
        serve.wait(timeout=10)
    assert serve.returncode == 0
