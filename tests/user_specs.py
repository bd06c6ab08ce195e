"""Small user spec folders for the fuzz's tests: two APIs copied from the built-in specs,
changed where a test plants a difference (another type, a new field)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kafkagen.generator.generate import BUILTIN_SPECS

#: A spec folder of two APIs keeps every run on it to seconds.
APIS = ("FindCoordinator", "ApiVersions")


def small_specs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for api in APIS:
        for kind in ("Request", "Response"):
            shutil.copy(BUILTIN_SPECS / f"{api}{kind}.json", folder)
    return folder


def narrow_field(spec: Path, name: str, new_type: str) -> None:
    """Give the top-level field ``name`` of a spec file another type, in every version."""
    doc = json.loads(spec.read_text())
    for f in doc["fields"]:
        if f["name"] == name:
            f["type"] = new_type
    spec.write_text(json.dumps(doc, indent=2))


def add_field(spec: Path, field: dict[str, object]) -> None:
    doc = json.loads(spec.read_text())
    doc["fields"].append(field)
    spec.write_text(json.dumps(doc, indent=2))
