"""``[tool.kafkagen]`` in a project's ``pyproject.toml``: read, checked, resolved.

Every mistake is one line naming ``pyproject.toml``, the table and the key, so a failed
build says what to fix without a traceback.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema  # type: ignore[import-untyped, unused-ignore]

PYPROJECT = "pyproject.toml"
TABLE = "[tool.kafkagen]"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "specs": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "minItems": 1,
        },
        "out": {"type": "string", "minLength": 1},
    },
    "required": ["specs", "out"],
    "additionalProperties": False,
}

_JSON_TYPES = {"array": "a list", "string": "a string", "object": "a table"}


class BuildError(Exception):
    """The build cannot generate; ``str(err)`` is one line per problem, nothing else."""


@dataclass(frozen=True)
class Settings:
    """Where a project's specs are and where its package goes, as absolute paths."""

    root: Path
    specs: tuple[Path, ...]
    out: Path

    def shown(self, path: Path) -> str:
        """``path`` as the user wrote it: relative to the project, with forward slashes."""
        return path.relative_to(self.root).as_posix()


def read_table(root: Path) -> dict[str, Any] | None:
    """The ``[tool.kafkagen]`` table of ``root/pyproject.toml``; None when there is none."""
    path = root / PYPROJECT
    if not path.is_file():
        return None
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise BuildError(f"{PYPROJECT}: not valid TOML: {e}") from None
    table = document.get("tool", {}).get("kafkagen")
    if table is not None and not isinstance(table, dict):
        raise BuildError(f"{PYPROJECT}: tool.kafkagen must be a table, not {table!r}")
    return table


def load_settings(root: Path) -> Settings:
    """The project's settings; ``BuildError`` names the first wrong key."""
    table = read_table(root)
    if table is None:
        raise BuildError(f"{PYPROJECT}: no {TABLE} table: it names the spec folders and 'out'")
    errors = list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(table))
    # a misspelt key first: it explains the "missing" one that usually comes with it
    unknown = [e for e in errors if e.validator == "additionalProperties"]
    error = unknown[0] if unknown else jsonschema.exceptions.best_match(errors)
    if error is not None:
        raise BuildError(f"{PYPROJECT}: {TABLE} {_describe(error)}")
    root = root.resolve()
    specs = tuple(_inside(root, text, f"specs[{i}]") for i, text in enumerate(table["specs"]))
    for i, folder in enumerate(specs):
        if not folder.is_dir():
            raise BuildError(
                f"{PYPROJECT}: {TABLE} specs[{i}]: no folder {table['specs'][i]!r} in the project"
            )
    out = _inside(root, table["out"], "out")
    if out == root:
        raise BuildError(f"{PYPROJECT}: {TABLE} out: must name a package folder, not the project")
    if not out.name.isidentifier():
        raise BuildError(
            f"{PYPROJECT}: {TABLE} out: {out.name!r} is not a Python package name "
            f"(got {table['out']!r})"
        )
    for i, folder in enumerate(specs):
        if out == folder or out in folder.parents or folder in out.parents:
            raise BuildError(
                f"{PYPROJECT}: {TABLE} out: {table['out']!r} overlaps the spec folder specs[{i}]"
            )
    return Settings(root, specs, out)


def _inside(root: Path, text: str, key: str) -> Path:
    """``text`` as a path inside the project (relative, no way out through '..')."""
    relative = PurePosixPath(text)
    path = (root / relative).resolve()
    if relative.is_absolute() or not path.is_relative_to(root):
        raise BuildError(
            f"{PYPROJECT}: {TABLE} {key}: must be a path inside the project, relative to "
            f"{PYPROJECT} (got {text!r})"
        )
    return path


def _describe(error: jsonschema.ValidationError) -> str:
    """One schema error in the words of the table: the key, what is wrong, the value."""
    key = "".join(f"[{p}]" if isinstance(p, int) else str(p) for p in error.absolute_path)
    where = f"{key}: " if key else ""
    if error.validator == "additionalProperties":
        unknown = sorted(set(error.instance) - set(SCHEMA["properties"]))
        known = ", ".join(SCHEMA["properties"])
        return f"has no key {unknown[0]!r} (its keys: {known})"
    if error.validator == "required":
        missing = next(k for k in SCHEMA["required"] if k not in error.instance)
        return f"{missing}: missing (it is required)"
    if error.validator == "type":
        wanted = _JSON_TYPES.get(str(error.validator_value), str(error.validator_value))
        return f"{where}must be {wanted} (got {error.instance!r})"
    if error.validator in ("minItems", "minLength"):
        return f"{where}must not be empty"
    return f"{where}{error.message}"
