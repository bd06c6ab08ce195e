"""Shared fixtures: the shared data folder, Kafka's golden vectors, Hypothesis profiles.

The shared folder sits next to the repository (``<repo>/../shared``). CI always has it, so a
missing folder or vector file is a broken checkout and fails loudly; it is never a skip.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from kafkagen.reference import KafkaReference

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared"
VECTORS_FILE = SHARED / "kafka-vectors" / "vectors.jsonl.gz"

# --------------------------------------------------------------------------- Hypothesis
#
# "dev" explores new examples on every run; "ci" (chosen when the CI environment variable
# is set) is derandomized so a CI run is reproducible, and keeps no example database.
# Tests choose their own max_examples; the profile sets only how examples are found.
_COMMON: dict[str, Any] = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile("dev", **_COMMON)
settings.register_profile("ci", derandomize=True, database=None, **_COMMON)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


# --------------------------------------------------------------------------- shared data


def require_shared(path: Path = SHARED) -> Path:
    """``path`` inside the shared folder, or a loud failure naming what is missing."""
    if not path.exists():
        pytest.fail(
            f"shared test data is missing: {path} (expected the shared folder at {SHARED})",
            pytrace=False,
        )
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


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # One test per vector group: a failure names its group, and the run stays fast.
    if "vector_group" in metafunc.fixturenames:
        groups = vector_groups()
        metafunc.parametrize("vector_group", list(groups.values()), ids=list(groups))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return require_shared(SHARED)


@pytest.fixture(scope="session")
def vectors() -> tuple[dict[str, Any], ...]:
    require_shared(VECTORS_FILE)
    return load_vectors()


@pytest.fixture(scope="session")
def kafka_specs_dir() -> Path:
    return require_shared(SHARED / "kafka-message-specs")


# --------------------------------------------------------------------------- reference Kafka


@pytest.fixture(scope="session")
def kafka_reference() -> Iterator[KafkaReference]:
    """One Apache Kafka cluster of three combined nodes for the whole session (a JVM start
    costs seconds here); tests must leave it as they found it apart from their own topics."""
    from kafkagen.reference import KafkaReference

    with KafkaReference(nodes=3) as kafka:
        yield kafka
