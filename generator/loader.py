"""Read spec files in Kafka's JSON dialect into plain dicts.

Kafka's spec files are JSON with ``//`` and ``/* */`` comments, and its parser tolerates a
few loose forms that real files use: a key repeated with the same value, numbers and
booleans written as strings (``"tag": "0"``, ``"ignorable": "false"``), hex defaults and
``"default": null``. :func:`load_spec` accepts exactly that and nothing looser; the result is
the raw document that the JSON Schema then checks. :func:`normalize` turns a checked raw
document into canonical types for the model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import SpecError, warn


def strip_comments(text: str) -> str:
    """Blank out ``//`` and ``/* */`` comments outside strings, keeping line numbers."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise ValueError("unterminated /* comment")
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i : j + 2]))
            i = j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj and obj[key] != value:
            raise ValueError(f"key {key!r} repeated with a different value")
        obj[key] = value
    return obj


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs_hook)


def parse_spec_text(text: str, file: str) -> dict[str, Any]:
    """Parse one spec's text; raise SpecError naming the file and the JSON problem."""
    clean = strip_comments(text)
    try:
        start = len(clean) - len(clean.lstrip())
        doc, end = _DECODER.raw_decode(clean, start)
    except json.JSONDecodeError as e:
        raise SpecError(file, f"line {e.lineno} column {e.colno}", "invalid JSON", e.msg) from e
    except ValueError as e:
        raise SpecError(file, "", "invalid JSON", str(e)) from e
    if not isinstance(doc, dict):
        raise SpecError(file, "", "a spec must be a JSON object", type(doc).__name__)
    if clean[end:].strip():
        # Kafka's generator reads the first JSON value and never looks further (Jackson's
        # default), so a stray bracket after it shipped unnoticed (2.8's
        # DescribeProducersRequest.json). Read it the same way, but say so.
        line = clean.count("\n", 0, end) + 1
        warn(file, f"line {line}", "text after the spec's closing brace is ignored, as Kafka does")
    return doc


def load_spec(path: Path) -> dict[str, Any]:
    """Read and parse one spec file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(path.name, "", "cannot read spec file", str(e)) from e
    return parse_spec_text(text, path.name)


def spec_files(directory: Path) -> list[Path]:
    """The spec files of a directory, in a stable order."""
    return sorted(p for p in directory.iterdir() if p.suffix == ".json" and p.is_file())


def as_bool(value: Any) -> bool:
    """A boolean written as JSON true/false or as the string "true"/"false"."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"not a boolean: {value!r}")


def as_int(value: Any) -> int:
    """An integer written as a JSON number or a decimal string."""
    if isinstance(value, bool):
        raise ValueError(f"not an integer: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise ValueError(f"not an integer: {value!r}")


def default_text(value: Any) -> str | None:
    """A default as Kafka keeps it: a string, or None when none is given."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return str(value).strip()


_BOOL_KEYS = ("ignorable", "zeroCopy", "latestVersionUnstable", "mapKey")


def normalize(doc: dict[str, Any]) -> dict[str, Any]:
    """Canonical types for a raw (schema-checked) spec document, recursively."""
    out = dict(doc)
    if "apiKey" in out:
        out["apiKey"] = as_int(out["apiKey"])
    for key in _BOOL_KEYS:
        if key in out:
            out[key] = as_bool(out[key])
    if "tag" in out:
        out["tag"] = as_int(out["tag"])
    if "default" in out:
        text = default_text(out["default"])
        if text is None:
            del out["default"]
        else:
            out["default"] = text
    if "versions" not in out and "taggedVersions" in out:
        out["versions"] = out["taggedVersions"]
    for key in ("fields", "commonStructs"):
        if key in out:
            out[key] = [normalize(f) for f in out[key]]
    return out
