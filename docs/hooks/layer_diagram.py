"""Draws the package's layers from the import-linter contracts in pyproject.toml.

The contracts are what ``lint-imports`` (tests/test_layers.py) holds the code to, so a
diagram drawn from them matches the import graph by construction. The marker
``<!-- kafkagen: layer-diagram -->`` is replaced by one figure per contract.
"""

from __future__ import annotations

import html
import tomllib
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

MARKER = "<!-- kafkagen: layer-diagram -->"
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def contracts() -> list[dict[str, Any]]:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    found: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return found


def box(module: str) -> str:
    return f'<span class="layer-module"><code>{html.escape(module)}</code></span>'


def layers_figure(contract: dict[str, Any]) -> str:
    """Top layer first; modules sharing a layer ("a | b") side by side."""
    containers = contract.get("containers", [])
    rows = []
    for layer in contract["layers"]:
        modules = [m.strip() for m in layer.split("|")]
        rows.append('<div class="layer">' + "".join(box(m) for m in modules) + "</div>")
    inside = f" inside <code>{html.escape(', '.join(containers))}</code>" if containers else ""
    return (
        f'<figure class="layer-diagram"><figcaption>{html.escape(contract["name"])}'
        f"{inside}: each row imports only rows below it; modules in one row do not "
        "import each other.</figcaption>"
        + '<div class="layer-arrow">▼</div>'.join(rows)
        + "</figure>"
    )


def modules_figure(contract: dict[str, Any], relation: str, *groups: str) -> str:
    cells = "".join(
        f'<div class="layer">{"".join(box(m) for m in contract[group])}</div>' for group in groups
    )
    return (
        f'<figure class="layer-diagram"><figcaption>{html.escape(contract["name"])}: '
        f"{relation}</figcaption>{cells}</figure>"
    )


def figure(contract: dict[str, Any]) -> str:
    kind = contract["type"]
    if kind == "layers":
        return layers_figure(contract)
    if kind == "forbidden":
        return modules_figure(
            contract,
            "the modules of the first row import none of the second row's.",
            "source_modules",
            "forbidden_modules",
        )
    if kind == "independence":
        return modules_figure(contract, "none of these imports another.", "modules")
    if kind == "private_modules":
        return modules_figure(
            contract,
            "inside these, a module named _x is imported only from its own package.",
            "packages_with_private_modules",
        )
    raise PluginError(f"layer_diagram: no drawing for a contract of type {kind!r}")


def on_page_markdown(markdown: str, **kwargs: object) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, "\n\n".join(figure(c) for c in contracts()))
