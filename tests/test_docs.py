"""The README and docs/ tell the truth: every code block in them is run or checked.

The convention, by a fenced block's info string:

- ``python``: a complete script; it runs in a fresh interpreter and must exit 0.
- ``python pytest``: a complete pytest test module; it runs with pytest (and so with
  kafkagen's pytest plugin) in a scratch folder, and every test in it must pass.
- ``python not-run``: a fragment that needs what a script cannot bring (a Kafka broker, a
  JVM) or names values it does not define. It must compile as a module (so no top-level
  ``await``), and every name it imports from kafkagen must exist.
- ``sh``: each command runs with bash, in order, in a scratch folder that holds the
  example inputs the docs name: ``my_specs/``, ``old_specs/`` and ``new_specs/`` (a small
  valid spec set each). Every command must exit 0.
- ``sh not-run``: commands that serve until stopped or run for minutes (``kafkagen
  serve``, a full fuzz, the benchmarks). They are not run; each must name a real command,
  and every ``--option`` it uses must be one that command's ``--help`` lists.
- Any other block (``text``, ``json``, none) is not code and is left alone.

A block a new README section adds is judged by the same rules.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_generate import demo_specs

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
BIN = Path(sys.executable).parent
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    info: list[str]
    text: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            found.append(Block(path, line, m.group(1).split(), m.group(2)))
    return found


def of_kind(*info: str) -> list[Block]:
    return [b for b in blocks() if b.info == list(info)]


def commands(block: Block) -> list[str]:
    """The block's commands: continuation lines joined, comments and blank lines dropped."""
    text = block.text.replace("\\\n", " ")
    lines = [re.sub(r"\s+#\s.*$", "", line).strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


KINDS = (["python"], ["python", "pytest"], ["python", "not-run"], ["sh"], ["sh", "not-run"])
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_every_relative_link_names_a_file_in_the_repository() -> None:
    broken = []
    for path in DOCS:
        for target in LINK.findall(path.read_text(encoding="utf-8")):
            if "://" not in target and not (path.parent / target).exists():
                broken.append(f"{path.relative_to(REPO)}: {target}")
    assert broken == []


def test_every_code_block_is_of_a_known_kind() -> None:
    """A python or shell block with any other info string (a typo such as ``sh no-run``,
    ``bash``, ``console``) would escape the checks below: it is refused."""
    code = {"python", "py", "sh", "bash", "shell", "console", "shell-session", "zsh"}
    odd = [
        f"{b.id}: {' '.join(b.info)}"
        for b in blocks()
        if b.info[:1] and b.info[0] in code and b.info not in KINDS
    ]
    assert odd == []
    used = {tuple(b.info) for b in blocks()}
    assert {("python",), ("sh",), ("sh", "not-run")} <= used, used


@pytest.mark.parametrize("block", of_kind("python"), ids=lambda b: b.id)
def test_python_block_runs(block: Block, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", block.text],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env(),
        timeout=120,
    )
    assert result.returncode == 0, f"{block.id}\n{block.text}\n{result.stderr[-3000:]}"


@pytest.mark.slow
@pytest.mark.parametrize("block", of_kind("python", "pytest"), ids=lambda b: b.id)
def test_pytest_block_passes(block: Block, tmp_path: Path) -> None:
    (tmp_path / "test_from_docs.py").write_text(block.text, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_from_docs.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env(),
        timeout=300,
    )
    assert result.returncode == 0, f"{block.id}\n{result.stdout[-3000:]}{result.stderr[-2000:]}"
    assert " passed" in result.stdout and "failed" not in result.stdout


def check_fragment(text: str, where: str) -> None:
    """A ``python not-run`` block: compiles as a module, imports only real kafkagen names."""
    tree = ast.parse(text, filename=where)
    compile(tree, where, "exec")  # a top-level await or async with fails here
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kafkagen"):
            module = importlib.import_module(node.module or "")
            for alias in node.names:
                # A name the module lacks may still be a submodule, if the module is a
                # package (asking a plain module for a submodule raises).
                found = hasattr(module, alias.name) or (
                    hasattr(module, "__path__")
                    and importlib.util.find_spec(f"{node.module}.{alias.name}") is not None
                )
                assert found, f"{where}: {node.module} has no {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("kafkagen"):
                    importlib.import_module(alias.name)


def test_python_fragments_compile_and_import_real_names() -> None:
    for block in of_kind("python", "not-run"):
        check_fragment(block.text, block.id)


def test_the_fragment_check_catches_a_script_that_cannot_run() -> None:
    top_level_async_with = (
        "from kafkagen.runtime.client import connect\n\n"
        'async with await connect("127.0.0.1", 9092) as client:\n'
        '    coordinators = await client.find_coordinators(["group-a"])\n'
    )
    with pytest.raises(SyntaxError):
        check_fragment(top_level_async_with, "old README")
    with pytest.raises(AssertionError, match="kafkagen.runtime.client has no conect"):
        check_fragment("from kafkagen.runtime.client import conect\n", "typo")


def scratch(root: Path) -> Path:
    """The folder sh blocks run in, with the example inputs the docs refer to."""
    specs = demo_specs(root / "my_specs")
    shutil.copytree(specs, root / "old_specs")
    shutil.copytree(specs, root / "new_specs")
    return root


@pytest.mark.slow
@pytest.mark.parametrize("block", of_kind("sh"), ids=lambda b: b.id)
def test_sh_block_runs(block: Block, tmp_path: Path) -> None:
    folder = scratch(tmp_path / "work")
    for command in commands(block):
        result = subprocess.run(
            ["bash", "-c", command],
            capture_output=True,
            text=True,
            cwd=folder,
            env=env(),
            timeout=600,
        )
        assert result.returncode == 0, f"{block.id}: {command}\n{result.stderr[-3000:]}"


def help_command(argv: list[str]) -> list[str]:
    """The ``--help`` invocation of the command a doc line runs."""
    if argv[:2] == ["bash", "tools/dev.sh"]:
        assert argv[2:3] in (["job"], ["test"]), argv
        if argv[2] == "test":
            return [sys.executable, "-m", "pytest", "--help"]
        return [str(BIN / "kafkagen"), "fuzz", "--help"]
    if argv[0] == "kafkagen":
        depth = 3 if argv[1:2] in (["bench"], ["control"]) else 2
        return [str(BIN / "kafkagen"), *argv[1:depth], "--help"]
    if argv[:3] == ["python", "-m", "mkdocs"]:  # its options are per subcommand
        return [sys.executable, "-m", "mkdocs", *argv[3:4], "--help"]
    if argv[:2] == ["python", "-m"]:
        return [sys.executable, "-m", argv[2], "--help"]
    raise AssertionError(f"not a command the docs may name: {argv}")


@pytest.mark.parametrize("block", of_kind("sh", "not-run"), ids=lambda b: b.id)
def test_not_run_block_names_real_commands_and_options(block: Block) -> None:
    for command in commands(block):
        argv = shlex.split(command)
        result = subprocess.run(
            help_command(argv), capture_output=True, text=True, env=env(), timeout=120
        )
        assert result.returncode == 0, f"{block.id}: {command}\n{result.stderr[-2000:]}"
        for option in (a.split("=")[0] for a in argv if a.startswith("--")):
            assert re.search(
                rf"(^|\s|\[){re.escape(option)}\b", result.stdout
            ), f"{block.id}: {command}: {option} is not an option of {' '.join(argv[:3])}"
