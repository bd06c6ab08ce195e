"""The pytest plugin: session clusters, topics, client configs, xdist, clean shutdown."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from kafkagen.pytest_plugin import ClusterSettings, KafkaCluster

# A user's suite: every test notes which cluster it saw; at the end of the session each
# worker notes the threads still running and whether its brokers' ports still accept.
SUITE_CONFTEST = """
import json, os, socket, threading

SEEN = []

def pytest_sessionfinish(session):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    ports = sorted({p for _, p in SEEN})
    still_open = []
    for port in ports:
        with socket.socket() as s:
            s.settimeout(1)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                still_open.append(port)
    threads = [t.name for t in threading.enumerate() if t.name.startswith("kafkagen")]
    out = {"worker": worker, "pid": os.getpid(), "seen": SEEN, "open": still_open,
           "threads": threads}
    with open(os.path.join(os.environ["SUITE_OUT"], f"{worker}.json"), "w") as f:
        json.dump(out, f)
"""

SUITE_TEST = """
import pytest
from conftest import SEEN

@pytest.mark.parametrize("n", range(6))
def test_uses_the_cluster(kafka_cluster, kafka_topic, n):
    assert len(kafka_cluster.bootstrap_servers.split(",")) == 2
    md = kafka_cluster.cluster.metadata
    # A fresh topic per test, and the earlier tests' topics are gone.
    topics = kafka_cluster.call(lambda: [t for t in md.topics if not t.startswith("__")])
    assert topics == [kafka_topic]
    for port in kafka_cluster.ports:
        SEEN.append((kafka_cluster.start_seconds, port))
"""


def test_one_cluster_per_xdist_worker_and_nothing_left_behind(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nkafka_brokers = 2\n")
    (tmp_path / "conftest.py").write_text(textwrap.dedent(SUITE_CONFTEST))
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(SUITE_TEST))
    out = tmp_path / "out"
    out.mkdir()
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SUITE_OUT": str(out)},
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "6 passed" in r.stdout
    reports = [json.loads(p.read_text()) for p in sorted(out.glob("gw*.json"))]
    assert [w["worker"] for w in reports] == ["gw0", "gw1"]
    assert reports[0]["pid"] != reports[1]["pid"]
    ports = [{p for _, p in w["seen"]} for w in reports if w["seen"]]
    for p in ports:
        assert len(p) == 2  # one 2-broker cluster per worker, for all its tests
    if len(ports) == 2:
        assert not ports[0] & ports[1]
    for w in reports:
        assert w["open"] == [] and w["threads"] == [], w
    starts = [s for w in reports for s, _ in w["seen"]]
    print(f"kafka_cluster start under xdist: {max(starts) * 1000:.1f} ms at most")


def test_start_up_is_under_200_ms() -> None:
    from kafkagen.runtime.handlers import load_handlers

    load_handlers()  # once per process; the plugin does it at collection
    cluster = KafkaCluster(ClusterSettings.of(3))
    try:
        print(f"3-broker kafka_cluster started in {cluster.start_seconds * 1000:.1f} ms")
        assert cluster.start_seconds < 0.2
    finally:
        cluster.stop()
    for port in cluster.ports:
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0
    assert not cluster.alive  # its thread has ended


def test_control_over_http_from_an_in_process_cluster() -> None:
    from kafkagen.control import ControlClient

    cluster = KafkaCluster(ClusterSettings.of(1))
    try:
        url = cluster.serve_control()
        rule = ControlClient(url).call(
            "POST", "/rules", {"match": {"api": "Metadata"}, "drop": True}
        )
        assert [r.id for r in cluster.control.rules] == [rule["id"]]
    finally:
        cluster.stop()
    port = int(url.rsplit(":", 1)[1])
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0  # stopped with the cluster


@pytest.mark.kafka_cluster(brokers=2, configs={"num.partitions": 4})
def test_marker_sets_brokers_and_configs(kafka_cluster: KafkaCluster, kafka_topic: str) -> None:
    assert len(kafka_cluster.bootstrap_servers.split(",")) == 2
    md = kafka_cluster.cluster.metadata
    assert kafka_cluster.call(lambda: len(md.topic(kafka_topic).partitions)) == 4


def test_client_configs(
    kafka_cluster: KafkaCluster,
    confluent_kafka_config: dict[str, object],
    kafka_python_config: dict[str, object],
    aiokafka_config: dict[str, object],
) -> None:
    assert confluent_kafka_config == {"bootstrap.servers": kafka_cluster.bootstrap_servers}
    assert kafka_python_config == {"bootstrap_servers": kafka_cluster.bootstrap_servers.split(",")}
    assert aiokafka_config == {"bootstrap_servers": kafka_cluster.bootstrap_servers}
