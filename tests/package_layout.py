"""kafkagen's installed layout, built from symlinks to the repository's folders.

The build maps ``kafkagen`` onto ``tools/`` and its subpackages onto the other top-level
folders (``[tool.setuptools.package-dir]``); an editable install does it with an import
hook. Tools that find a package by walking its folder (mypy, import-linter's grimp) cannot
follow that hook, so they get this tree on their path instead.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def installed_layout(root: Path, *, copy: tuple[str, ...] = ()) -> Path:
    """Build ``root/kafkagen`` as installed and return ``root`` (the path entry).

    Subpackages named in ``copy`` (e.g. ``"runtime"``) are copied instead of linked, so a
    test may change a file in them without touching the repository.
    """
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    folders: dict[str, str] = pyproject["tool"]["setuptools"]["package-dir"]
    package = root / "kafkagen"
    package.mkdir(parents=True)
    for entry in (REPO / folders["kafkagen"]).iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name, folder in folders.items():
        parts = name.split(".")
        if len(parts) != 2 or (package / parts[1]).exists():
            continue  # the root itself, or nested inside a folder already linked
        if parts[1] in copy:
            shutil.copytree(
                REPO / folder, package / parts[1], ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            (package / parts[1]).symlink_to(REPO / folder, target_is_directory=True)
    return root
