"""The release presets are what each release's own spec files say (re-derived from Maven)."""

from __future__ import annotations

import pytest
from kafkagen.presets_from_jars import TABLE, render, table
from kafkagen.runtime.broker.release_presets import preset_ranges
from kafkagen.runtime.handlers import supported_versions


@pytest.mark.slow
def test_committed_presets_match_a_fresh_derivation() -> None:
    assert TABLE.read_text("utf-8") == render(table())


#: APIs kafkagen serves below Kafka 4.4.0's top, and why (none now).
NOT_YET_AT_KAFKAS_TOP: dict[int, tuple[tuple[int, int], tuple[int, int]]] = {}


def test_stable_versions_reach_every_version_kafka_4_4_serves() -> None:
    """With unstable versions off, each API kafkagen implements goes as high as Kafka
    4.4.0's broker (its release preset) and no lower than it, but for the known gaps (an
    API that reaches Kafka's top must leave that list)."""
    served = supported_versions(unstable=False)
    kafka = preset_ranges("4.4")
    short = {
        key: (served[key], kafka[key])
        for key in served
        if key in kafka and (served[key][1] < kafka[key][1] or served[key][0] > kafka[key][0])
    }
    assert short == NOT_YET_AT_KAFKAS_TOP
