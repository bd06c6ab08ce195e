"""The control API from outside the process: ``kafkagen serve --control-port`` and
``kafkagen control``, against a broker in a subprocess, with requests over real sockets."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_helpers import BrokerProcess, WireClient, req
from kafkagen.cli.control import ControlClient, ControlRefused
from kafkagen.generated import message_type

FIND_COORDINATOR, METADATA, API_VERSIONS = 10, 3, 18
KAFKAGEN = str(Path(sys.executable).parent / "kafkagen")


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess(brokers=2, control=True) as b:
        yield b


@pytest.fixture
def api(broker: BrokerProcess) -> Iterator[ControlClient]:
    client = ControlClient(broker.control_url)
    yield client
    client.call("POST", "/reset")


def control(broker: BrokerProcess, *args: str) -> tuple[int, Any, str]:
    """Run ``kafkagen control``; (exit status, its JSON answer or None, stderr)."""
    r = subprocess.run(
        [KAFKAGEN, "control", "--url", broker.control_url, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None, r.stderr


def test_cli_rule_answers_an_error_then_is_used_up(
    broker: BrokerProcess, api: ControlClient
) -> None:
    rc, rule, err = control(broker, "add", "--api", "FindCoordinator", "--error",
                            "COORDINATOR_NOT_AVAILABLE", "--times", "1")  # fmt: skip
    assert rc == 0, err
    assert rule["match"] == {"api_key": FIND_COORDINATOR} and rule["error"] == 15
    assert control(broker, "rules")[1] == [rule]
    find = req(FIND_COORDINATOR, key="g", key_type=0)
    with WireClient(broker.bootstrap) as w:
        assert w.call(FIND_COORDINATOR, 3, find).error_code == 15
        assert w.call(FIND_COORDINATOR, 3, find).error_code == 0
    assert control(broker, "rules")[1] == []


def test_http_records_and_drop(broker: BrokerProcess, api: ControlClient) -> None:
    api.call("POST", "/records/start")
    rule = api.call("POST", "/rules", {"match": {"api": "Metadata"}, "drop": True})
    with WireClient(broker.bootstrap) as w:
        w.send(METADATA, 12, req(METADATA, topics=[]))
        second = w.send(METADATA, 12, req(METADATA, topics=[]))
        assert w.receive(METADATA, 12)[0] == second
    records = api.call("GET", "/records?api=Metadata")
    assert [(r["outcome"], r["rule"]) for r in records] == [
        ("dropped", rule["id"]),
        ("answered", None),
    ]
    assert records[1]["response"]["brokers"][0]["nodeId"] == 0


def test_broker_stop_start_and_versions(broker: BrokerProcess, api: ControlClient) -> None:
    assert control(broker, "stop-broker", "1")[0] == 0
    assert [b["alive"] for b in api.call("GET", "/brokers")] == [True, False]
    assert control(broker, "start-broker", "1")[0] == 0
    assert [b["alive"] for b in api.call("GET", "/brokers")] == [True, True]

    rc, versions, err = control(broker, "versions", "0", "--set", "Metadata:8,Fetch:11")
    assert rc == 0, err
    assert versions["Metadata"]["max"] == 8 and versions["Fetch"]["max"] == 11
    with WireClient(broker.bootstrap) as w:
        got = w.call(API_VERSIONS, 3, req(API_VERSIONS, client_software_name="t",
                                          client_software_version="1"))  # fmt: skip
    assert {k.api_key: k.max_version for k in got.api_keys}[METADATA] == 8
    assert control(broker, "versions", "0", "--set", "none")[1]["Metadata"]["max"] >= 12


def test_refusals_name_what_is_wrong(broker: BrokerProcess, api: ControlClient) -> None:
    with pytest.raises(ControlRefused, match="400 unknown rule field.*'eror'"):
        api.call("POST", "/rules", {"match": {"api": "Produce"}, "eror": 6})
    with pytest.raises(ControlRefused, match="404 there is no rule 999"):
        api.call("DELETE", "/rules/999")
    with pytest.raises(ControlRefused, match="404 no endpoint /nothing"):
        api.call("GET", "/nothing")
    with pytest.raises(ControlRefused, match="lacks partition"):
        api.call("POST", "/leader", {"topic": "t", "broker": 1})
    bad = urllib.request.Request(broker.control_url + "/rules", data=b"{", method="POST")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(bad, timeout=10)
    assert e.value.code == 400 and "not JSON" in json.loads(e.value.read())["error"]
    rc, _, err = control(broker, "add", "--api", "Produse", "--error", "6")
    assert rc == 1 and "unknown API 'Produse'" in err
    assert broker.alive()


def test_network_disk_and_clock_faults_from_the_command_line(
    broker: BrokerProcess, api: ControlClient
) -> None:
    rc, faults, err = control(broker, "isolate", "1", "--no-clients")
    assert rc == 0, err
    assert faults["sides"] == [[0], [1]] and faults["unreachable_by_clients"] == [1]
    assert faults["controller_side"] == []  # neither of two brokers is a majority
    b1 = api.call("GET", "/brokers")[1]
    hello = req(API_VERSIONS, client_software_name="t", client_software_version="1")
    with WireClient(f"{b1['host']}:{b1['port']}", timeout=1.0) as w:
        w.send(API_VERSIONS, 3, hello)
        with pytest.raises(TimeoutError):
            w.read_frame()
    assert control(broker, "slow-disk", "0", "250")[1]["disk_delay_ms"] == {"0": 250}
    assert control(broker, "slow-network", "0", "50")[1]["network_delay_ms"] == {"0": 50}
    assert control(broker, "skew-clock", "0", "-5000")[1]["clock_skew_ms"] == {"0": -5000}
    assert control(broker, "faults")[1] == api.call("GET", "/faults")
    rc, healed, _ = control(broker, "heal")
    assert rc == 0 and healed["sides"] == [[0, 1]] and healed["controller_side"] == [0, 1]
    assert not healed["disk_delay_ms"] and not healed["unreachable_by_clients"]
    with WireClient(f"{b1['host']}:{b1['port']}") as w:
        assert w.call(API_VERSIONS, 3, hello).error_code == 0
    rc, _, err = control(broker, "partition", "0", "1")
    assert rc == 1 and "brokers on both sides" in err
    with pytest.raises(ControlRefused, match="400 there is no broker 7"):
        api.call("POST", "/faults/partition", {"brokers": [7]})
    with pytest.raises(ControlRefused, match="400 unknown field.*'ms'"):
        api.call("POST", "/faults/disk", {"broker": 0, "delay_ms": 5, "ms": 5})
    with pytest.raises(ControlRefused, match="400 a disk delay cannot be negative"):
        api.call("POST", "/faults/disk", {"broker": 0, "delay_ms": -5})


def test_memory_counts_the_servers_live_objects(broker: BrokerProcess, api: ControlClient) -> None:
    """GET /memory counts what the server process holds, by type: a topic's partitions
    show up once it is created, and go with it."""
    partition = "kafkagen.runtime.broker.storage.partition.Partition"
    before = api.call("GET", "/memory?top=100000")["types"].get(partition, 0)
    Create: Any = message_type(19, "request")
    topic = Create.CreatableTopic(name="memory-t", num_partitions=4, replication_factor=2)
    create = req(19, topics=[topic], timeout_ms=5000)
    with WireClient(broker.bootstrap) as w:
        assert w.call(19, 5, create).topics[0].error_code == 0
        got = api.call("GET", "/memory?top=100000")
        # Four partitions, each with a replica on both brokers.
        assert got["types"][partition] == before + 8
        assert got["objects"] > sum(got["types"].values()) // 2 > 0
        assert "lines" not in got  # tracemalloc is not tracing in this server
        # The small-object allocator's own account: its blocks lie in its 1 MiB arenas.
        small = got["small_objects"]
        assert small["arenas"] % 2**20 == 0
        assert 0 < small["in_use"] + small["free"] <= small["arenas"] <= small["highwater"]
        assert small["in_use"] >= got["allocated_blocks"] * 16  # 16 bytes the least a block
        delete = req(20, topic_names=["memory-t"], timeout_ms=5000)
        assert w.call(20, 5, delete).responses[0].error_code == 0
    assert api.call("GET", "/memory?top=100000")["types"].get(partition, 0) == before
