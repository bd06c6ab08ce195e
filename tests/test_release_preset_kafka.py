"""The 4.4 release preset against the release itself: what a new three-node Apache Kafka
4.4.0 cluster advertises in ApiVersions (its APIs with their ranges, its supported and
finalized features) is what the preset says Kafka 4.4 advertised. That a broker playing a
preset advertises the preset's ranges is tests/test_release_presets.py's part."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from broker_helpers import WireClient
from kafkagen.generated.api_versions import ApiVersionsRequest
from kafkagen.runtime.broker.api import TELEMETRY_APIS
from kafkagen.runtime.broker.metadata.features import release_levels
from kafkagen.runtime.broker.release_presets import preset_listed_floors, preset_ranges

if TYPE_CHECKING:
    from kafkagen.reference import KafkaReference

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def api_versions(bootstrap: str) -> Any:
    with WireClient(bootstrap) as w:
        r = w.call(18, 4, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    assert r.error_code == 0, r
    return r


def ranges(r: Any) -> dict[int, tuple[int, int]]:
    return {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}


def finalized(r: Any) -> dict[str, int]:
    return {f.name: f.max_version_level for f in r.finalized_features}


def test_the_4_4_preset_advertises_what_kafka_4_4_does(kafka_reference: KafkaReference) -> None:
    kafka = api_versions(kafka_reference.bootstrap)
    preset = preset_ranges("4.4")
    listed = preset_listed_floors("4.4")
    assert listed == {0: 0}  # Produce: listed from v0, served from v3
    preset.update({k: (low, preset[k][1]) for k, low in listed.items()})
    # A Kafka broker advertises the client telemetry APIs only with a metrics reporter.
    assert ranges(kafka) == {k: v for k, v in preset.items() if k not in TELEMETRY_APIS}
    # Every feature a new 4.4 cluster finalizes, at the preset's level (kraft.version is 0
    # on a static quorum and not listed as finalized).
    levels = release_levels("4.4")
    assert levels is not None
    assert finalized(kafka) == {f: v for f, v in levels.items() if v}
    assert {f.name for f in kafka.supported_features} == set(levels)
