"""Kafka's data the tests judge against, kept in the repository under tests/data (see its
README): a missing file is a broken checkout and fails loudly; it is never a skip."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

#: Kafka 4.0.0-SNAPSHOT (commit 1eb7644349cb): its spec files' wire facts and the golden
#: vectors its generated classes encoded.
KAFKA_4_0_SNAPSHOT = Path(__file__).resolve().parent / "data" / "kafka-4.0.0-SNAPSHOT"
KAFKA_4_0_SNAPSHOT_SPECS = KAFKA_4_0_SNAPSHOT / "specs"
VECTORS_FILE = KAFKA_4_0_SNAPSHOT / "vectors.jsonl.gz"


def require_data(path: Path) -> Path:
    """``path`` under tests/data, or a loud failure naming what is missing."""
    if not path.exists():
        pytest.fail(f"test data is missing from the checkout: {path}", pytrace=False)
    return path


@cache
def load_vectors() -> tuple[dict[str, Any], ...]:
    """Every line of ``vectors.jsonl.gz``, in file order."""
    if not VECTORS_FILE.is_file():
        raise FileNotFoundError(f"Kafka's golden vectors are missing: {VECTORS_FILE}")
    with gzip.open(VECTORS_FILE, "rt", encoding="ascii") as f:
        return tuple(json.loads(line) for line in f)


def vector_groups() -> dict[str, list[dict[str, Any]]]:
    """Vectors by (API, kind, version), named like ``Metadata-response-v12`` (headers:
    ``RequestHeader-v2`` for the header version)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for v in load_vectors():
        if v["kind"] in ("request", "response"):
            name = f"{v['api_name']}-{v['kind']}-v{v['version']}"
        else:
            header = "RequestHeader" if v["kind"] == "request_header" else "ResponseHeader"
            name = f"{header}-v{v['header_version']}"
        groups.setdefault(name, []).append(v)
    return groups
