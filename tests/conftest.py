"""Shared fixtures: Kafka's golden vectors (see ``kafka_data``), Hypothesis profiles and
seeds (``hypothesis_seed``), and the reference Apache Kafka."""

from __future__ import annotations

from collections.abc import Iterator
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
