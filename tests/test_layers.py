"""The package's import structure: the broker's declared layers hold (its rooms, and the
modules across them), a `_` module is imported only inside its own package, and nothing
imports in a circle, counting imports under TYPE_CHECKING and inside functions.

The layers are declared once, as import-linter contracts in pyproject.toml; these tests run
`lint-imports` over them and look for cycles in grimp's graph of the whole package (grimp
is import-linter's graph builder: it reads every import statement, wherever it stands).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from package_layout import REPO, installed_layout

LINT_IMPORTS = (
    "import sys; from importlinter.cli import lint_imports_command; "
    "sys.exit(lint_imports_command())"
)

# Prints the import cycles (strongly connected components of two or more modules) of the
# package found on the path, as JSON, after the number of modules it read.
FIND_CYCLES = """
import json, sys
import grimp

graph = grimp.build_graph("kafkagen")
index, low, stack, on_stack, cycles = {}, {}, [], set(), []

def visit(start):
    # Tarjan's algorithm, iterative: the graph is deep enough to matter.
    work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
    index[start] = low[start] = len(index)
    stack.append(start); on_stack.add(start)
    while work:
        node, children = work[-1]
        child = next(children, None)
        if child is not None:
            if child not in index:
                index[child] = low[child] = len(index)
                stack.append(child); on_stack.add(child)
                work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
            continue
        work.pop()
        if work:
            parent = work[-1][0]
            low[parent] = min(low[parent], low[node])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop(); on_stack.discard(member); component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

for module in sorted(graph.modules):
    if module not in index:
        visit(module)
print(len(graph.modules))
print(json.dumps(sorted(cycles)))
"""


def lint_imports(layout: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", LINT_IMPORTS, str(REPO / "pyproject.toml"), "--no-cache"],
        capture_output=True,
        text=True,
        cwd=layout,
        env={**os.environ, "PYTHONPATH": str(layout)},
        timeout=300,
    )


def import_cycles(layout: Path) -> tuple[int, list[list[str]]]:
    """(modules read, the cycles) of the package at ``layout``."""
    result = subprocess.run(
        [sys.executable, "-c", FIND_CYCLES],
        capture_output=True,
        text=True,
        cwd=layout,
        env={**os.environ, "PYTHONPATH": str(layout)},
        timeout=300,
        check=True,
    )
    count, cycles = result.stdout.splitlines()
    return int(count), json.loads(cycles)


def test_the_declared_layers_hold(tmp_path: Path) -> None:
    result = lint_imports(installed_layout(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_no_import_cycle_anywhere_in_the_package(tmp_path: Path) -> None:
    count, cycles = import_cycles(installed_layout(tmp_path))
    assert count > 200, "grimp did not read the whole package"
    assert cycles == []


def test_an_upward_import_breaks_a_layer_even_under_type_checking_or_in_a_function(
    tmp_path: Path,
) -> None:
    """The checks can fail: the leaf module reaching up, in the two hidden ways that used
    to tie the broker's modules together, breaks the layers and makes a cycle."""
    layout = installed_layout(tmp_path, copy=("runtime",))
    types = layout / "kafkagen" / "runtime" / "broker" / "types.py"
    types.write_text(
        types.read_text()
        + "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        + "    from .cluster import Cluster\n\n\n"
        + "def _store() -> object:\n    from .group._offset_store import OffsetStore\n\n"
        + "    return OffsetStore\n"
    )
    result = lint_imports(layout)
    assert result.returncode != 0
    out = " ".join(result.stdout.split())
    broker = "kafkagen.runtime.broker"
    for upper in ("cluster", "group._offset_store"):
        assert f"{broker}.types is not allowed to import {broker}.{upper}" in out
    _, cycles = import_cycles(layout)
    tied = [c for c in cycles if "kafkagen.runtime.broker.types" in c]
    assert len(tied) == 1
    assert {
        "kafkagen.runtime.broker.cluster",
        "kafkagen.runtime.broker.group._offset_store",
    } <= set(tied[0])


def test_a_rooms_internals_and_an_unplaced_module_break_the_contracts(tmp_path: Path) -> None:
    """A room's `_` module imported from outside the room, and a module the rooms' layers
    do not place, each break their contract."""
    layout = installed_layout(tmp_path, copy=("runtime",))
    broker = layout / "kafkagen" / "runtime" / "broker"
    api = broker / "api.py"
    api.write_text(api.read_text() + "\nfrom .storage._log import Log  # noqa: E402\n")
    (broker / "stray.py").write_text('"""A module no layer names."""\n')
    result = lint_imports(layout)
    assert result.returncode != 0
    out = " ".join(result.stdout.split())
    assert "kafkagen.runtime.broker.api -> kafkagen.runtime.broker.storage._log" in out
    assert "not listed as layers: - kafkagen.runtime.broker.stray" in out
    assert "2 broken" in out


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_names_used_across_modules(folder: Path) -> list[str]:
    """Where a module of ``folder`` imports another module's private name, or reads a
    private attribute (not through self or cls) that only other modules define."""
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(folder.rglob("*.py"))}
    defined: dict[Path, set[str]] = {}
    for path, tree in trees.items():
        names = defined[path] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute | ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.attr if isinstance(node, ast.Attribute) else node.id)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value)  # __slots__ entries
    elsewhere = {p: set().union(*(n for q, n in defined.items() if q != p)) for p in trees}
    found = []
    for path, tree in trees.items():
        where = path.relative_to(folder.parent)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                found += [
                    f"{where}:{node.lineno}: imports {a.name} from {node.module}"
                    for a in node.names
                    if _private(a.name) and a.name != "_native"  # the compiled extension
                ]
            elif (
                isinstance(node, ast.Attribute)
                and _private(node.attr)
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                and node.attr not in defined[path]
                and node.attr in elsewhere[path]
            ):
                found.append(f"{where}:{node.lineno}: reads .{node.attr}")
    return found


def test_no_runtime_module_uses_another_modules_private_names() -> None:
    assert private_names_used_across_modules(REPO / "runtime") == []


def test_the_private_name_check_finds_a_reach_into_another_module(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "owner.py").write_text(
        "_LOCK = object()\n\n\nclass Store:\n    def _append(self) -> None:\n        pass\n"
    )
    (package / "user.py").write_text(
        "from .owner import _LOCK, Store\n\n\ndef use(s: Store) -> object:\n"
        "    s._append()\n    return _LOCK\n"
    )
    assert private_names_used_across_modules(package) == [
        "pkg/user.py:1: imports _LOCK from owner",
        "pkg/user.py:5: reads ._append",
    ]
