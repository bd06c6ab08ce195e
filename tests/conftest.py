"""Shared fixtures: Kafka's golden vectors (see ``kafka_data``), Hypothesis profiles and
seeds (``hypothesis_seed``), the reference Apache Kafka, and kafkagen's own wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from kafka_data import VECTORS_FILE, load_vectors, require_data, vector_groups

if TYPE_CHECKING:
    from kafkagen.reference import KafkaReference

# Hypothesis' profiles and the run's seed (printed; --hypothesis-seed=N reproduces a run).
pytest_plugins = ["hypothesis_seed"]


# --------------------------------------------------------------------------- Kafka's data


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # One test per vector group: a failure names its group, and the run stays fast.
    if "vector_group" in metafunc.fixturenames:
        from kafka_since import still_defined  # versions Kafka has dropped are not groups

        groups = {name: g for name, g in vector_groups().items() if still_defined(g[0])}
        metafunc.parametrize("vector_group", list(groups.values()), ids=list(groups))


@pytest.fixture(scope="session")
def vectors() -> tuple[dict[str, Any], ...]:
    require_data(VECTORS_FILE)
    return load_vectors()


# --------------------------------------------------------------------------- reference Kafka


@pytest.fixture(scope="session")
def kafka_reference() -> Iterator[KafkaReference]:
    """One Apache Kafka cluster of three combined nodes for the whole session (a JVM start
    costs seconds here); tests must leave it as they found it apart from their own topics."""
    from kafkagen.reference import KafkaReference

    with KafkaReference(nodes=3) as kafka:
        yield kafka


# --------------------------------------------------------------------------- kafkagen's wheel

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def kafkagen_dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding kafkagen's sdist and wheel, built as a release is: from a copy of
    the files git does not ignore (the build writes beside its sources), through the sdist.
    Built once per session: the install test and the build-time tests share it."""
    root = tmp_path_factory.mktemp("kafkagen-dist")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, text=True, cwd=REPO, check=True,
    )  # fmt: skip
    source = root / "source"
    for name in filter(None, listed.stdout.split("\0")):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    dist = root / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(source)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return dist
