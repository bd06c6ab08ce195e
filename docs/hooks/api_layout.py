"""Lets mkdocstrings find kafkagen's modules.

The package maps ``kafkagen`` onto ``tools/`` and its subpackages onto the other top-level
folders; an editable install does it with an import hook that griffe, which finds modules
by walking folders, cannot follow. So the build gets the installed layout as a tree of
links (the one the import checks use) and hands it to the Python handler as its path.
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

REPO = Path(__file__).resolve().parents[2]
_trees: list[Path] = []


def installed_layout(root: Path) -> Path:
    spec = importlib.util.spec_from_file_location(
        "package_layout", REPO / "tests" / "package_layout.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    layout: Path = module.installed_layout(root)
    return layout


# Before mkdocstrings' own on_config, which creates the handler with its paths.
@event_priority(100)
def on_config(config: Any, **kwargs: object) -> Any:
    tree = Path(tempfile.mkdtemp(prefix="kafkagen-api-"))
    _trees.append(tree)
    python = config.plugins["mkdocstrings"].config.handlers.setdefault("python", {})
    python["paths"] = [str(installed_layout(tree))]
    return config


def on_shutdown(**kwargs: object) -> None:
    while _trees:
        shutil.rmtree(_trees.pop(), ignore_errors=True)
