"""A release preset makes a broker advertise exactly that Kafka release's API versions.

Every preset is played over a real socket: ApiVersions must list, for each API kafkagen
serves, the release's range (and nothing of an API the release lacked), and the versions
the release had that kafkagen cannot serve must be exactly what the broker says it cannot
advertise, in its log and in the control API's answer.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from broker_helpers import BrokerProcess, WireClient, req
from kafkagen.cli.control import ControlClient
from kafkagen.pytest_plugin import KafkaCluster, SyncControl
from kafkagen.runtime.broker.api import TELEMETRY_APIS
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.release_presets import (
    preset_gaps,
    preset_listed_floors,
    preset_names,
    preset_ranges,
)
from kafkagen.runtime.handlers import SERVED

API_VERSIONS, PRODUCE, FETCH = 18, 0, 1
KAFKAGEN = str(Path(sys.executable).parent / "kafkagen")


def advertised(bootstrap: str) -> dict[int, tuple[int, int]]:
    with WireClient(bootstrap) as w:
        got = w.call(
            API_VERSIONS,
            3,
            req(API_VERSIONS, client_software_name="t", client_software_version="1"),
        )
    assert got.error_code == 0
    return {k.api_key: (k.min_version, k.max_version) for k in got.api_keys}


def expected(release: str) -> dict[int, tuple[int, int]]:
    """The release's range of every API kafkagen serves, within what kafkagen serves (the
    client telemetry APIs only with telemetry on, as Kafka does)."""
    out = {}
    listed = preset_listed_floors(release)
    for key, (lo, hi) in preset_ranges(release).items():
        if key in SERVED and key not in TELEMETRY_APIS:
            _, low, high, _ = SERVED[key]
            if max(lo, low) <= min(hi, high):
                out[key] = (min(max(lo, low), listed.get(key, lo)), min(hi, high))
    return out


def test_presets_cover_every_minor_release_from_2_4() -> None:
    minors = [f"2.{m}" for m in range(4, 9)] + [f"3.{m}" for m in range(10)]
    assert preset_names() == minors + [f"4.{m}" for m in range(5)]


@pytest.mark.parametrize("release", preset_names())
def test_preset_advertises_exactly_the_release(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl, release: str
) -> None:
    kafka_control.set_versions(0, preset=release)
    try:
        served = advertised(kafka_cluster.bootstrap_servers)
        assert served == expected(release)
        gaps = kafka_control.played(0)
        assert gaps[0] == release
        # What is not advertised is exactly the release's rest, nothing more or less.
        for key, (lo, hi) in preset_ranges(release).items():
            # (Served from the release's lowest: Produce is listed from v0 by 4.x, not served.)
            have = (
                set(range(max(lo, served[key][0]), served[key][1] + 1)) if key in served else set()
            )
            lacking = {v for a, b in gaps[1].get(key, []) for v in range(a, b + 1)}
            assert have | lacking == set(range(lo, hi + 1)), key
            assert not have & lacking, key
    finally:
        kafka_control.reset()


def test_pre_4_presets_serve_message_format_v0_and_v1_versions() -> None:
    for release in preset_names():
        old = release.startswith(("2.", "3."))
        assert preset_ranges(release)[PRODUCE][0] == (0 if old else 3), release
        assert expected(release)[FETCH][0] == (0 if old else 4), release
        # Kafka 4.x lists Produce from v0 all the same (a request below v3 is refused).
        assert expected(release)[PRODUCE][0] == 0, release


def test_a_request_below_the_preset_floor_closes_the_connection(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl
) -> None:
    kafka_control.set_versions(0, preset="4.0")
    try:
        with WireClient(kafka_cluster.bootstrap_servers) as w:
            w.send(PRODUCE, 2, req(PRODUCE, acks=1, timeout_ms=1000, topic_data=[]))
            assert w.is_closed()
    finally:
        kafka_control.reset()
    # Back to kafkagen's own ranges: Produce v2 is served again.
    with WireClient(kafka_cluster.bootstrap_servers) as w:
        got = w.call(PRODUCE, 2, req(PRODUCE, acks=1, timeout_ms=1000, topic_data=[]))
        assert got.responses == []


def test_preset_config_logs_what_it_cannot_advertise(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kafkagen.broker")
    with BackgroundCluster(configs={"kafkagen.api.version.preset": "3.9"}) as bg:
        served = advertised(bg.bootstrap)
    assert served == expected("3.9")
    lines = [r.getMessage() for r in caplog.records if "cannot advertise" in r.getMessage()]
    assert lines, "no log line names the unadvertised APIs"
    assert lines[0].startswith("broker 0 plays Kafka 3.9 but cannot advertise: ")
    gaps = preset_gaps("3.9", {k: (lo, hi) for k, (_, lo, hi, _) in SERVED.items()})
    for key in gaps:
        assert f"({key}) " in lines[0]
    assert "LeaderAndIsr (4) v0-7" in lines[0]


def test_control_cli_answer_names_the_unadvertised_apis() -> None:
    with BrokerProcess(control=True) as b:
        run = subprocess.run(
            [KAFKAGEN, "control", "--url", b.control_url, "versions", "0", "--preset", "2.8"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, run.stderr
        answer: dict[str, Any] = json.loads(run.stdout)
        assert answer["Produce"] == {"api_key": 0, "min": 0, "max": 9}
        assert answer["preset"]["release"] == "2.8"
        unadvertised = answer["preset"]["unadvertised"]
        assert unadvertised["LeaderAndIsr"] == {"api_key": 4, "versions": [[0, 5]]}
        assert "Produce" not in unadvertised and "Fetch" not in unadvertised
        client = ControlClient(b.control_url)
        assert client.call("GET", "/versions/0") == answer
        client.call("POST", "/reset")
        assert "preset" not in client.call("GET", "/versions/0")


def test_unserved_report_lists_each_presets_gaps() -> None:
    from kafkagen.presets_from_jars import unserved

    lines = dict(line.split(": ", 1) for line in unserved().splitlines())
    assert list(lines) == preset_names()
    assert lines["2.4"].startswith("LeaderAndIsr (4) v0-4, ")
    assert "Produce (0)" not in lines["3.9"] and "DescribeClientQuotas" not in lines["3.9"]
    # Every version of what kafkagen implements reaches Kafka's; what is left it lacks.
    assert "Produce (0)" not in lines["4.4"] and "DescribeQuorum" not in lines["4.4"]
    assert "UnregisterController (94) v0" in lines["4.4"]
    assert "WriteTxnMarkers" not in lines["4.4"] and "PushTelemetry" not in lines["4.4"]
