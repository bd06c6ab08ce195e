"""The pytest plugin: session clusters, topics, client configs, xdist, clean shutdown."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

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


def _run_suite(
    tmp_path: Path, brokers: int, conftest: str, test: str, out: Path, *args: str
) -> str:
    """Run a user's suite (its conftest and one test module) in a pytest process of its
    own, which writes what it noted to ``out`` (SUITE_OUT); pytest's output."""
    (tmp_path / "pytest.ini").write_text(f"[pytest]\nkafka_brokers = {brokers}\n")
    (tmp_path / "conftest.py").write_text(textwrap.dedent(conftest))
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(test))
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *args, "-p", "no:cacheprovider", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SUITE_OUT": str(out)},
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout


def test_one_cluster_per_xdist_worker_and_nothing_left_behind(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    stdout = _run_suite(tmp_path, 2, SUITE_CONFTEST, SUITE_TEST, out, "-n", "2")
    assert "6 passed" in stdout
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
    import kafkagen.runtime.broker.cluster  # noqa: F401  # once per process, at collection

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


# A user's first test in a fresh process: when its fixture is set up, what has been
# imported, and how long until a client has its first Metadata answer (Metadata v1 for all
# topics, written by hand so that the client side loads no codec).
FIRST_START_CONFTEST = """
import json, os, sys, time
import pytest

MARKS = {}

def mark(name):
    MARKS[name] = (time.perf_counter(), time.process_time())

def kafkagen_modules():
    return sorted(m for m in sys.modules if m.startswith("kafkagen"))

def pytest_sessionstart(session):
    MARKS["plugin_modules"] = kafkagen_modules()
    mark("session")

def pytest_collection_finish(session):
    mark("collected")

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    mark("setup")

def pytest_sessionfinish(session):
    MARKS["foreign"] = sorted(
        m for m in sys.modules if m.split(".")[0] in ("pyspark", "hypothesis", "confluent_kafka")
    )
    with open(os.environ["SUITE_OUT"], "w") as f:
        json.dump(MARKS, f)
"""

FIRST_START_TEST = """
import socket, struct
from conftest import MARKS, kafkagen_modules, mark

def test_first_metadata(kafka_cluster):
    mark("fixture")
    MARKS["before_request"] = kafkagen_modules()
    host, port = kafka_cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    body = struct.pack(">hhih", 3, 1, 7, 1) + b"m" + struct.pack(">i", -1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        answer = b""
        while len(answer) < 4 or len(answer) < 4 + struct.unpack(">i", answer[:4])[0]:
            chunk = s.recv(65536)
            assert chunk, "the broker closed the connection"
            answer += chunk
    mark("answered")
    MARKS["after_request"] = kafkagen_modules()
    assert struct.unpack(">i", answer[4:8])[0] == 7  # our correlation id
"""


def test_first_start_in_a_process_loads_only_what_it_uses(tmp_path: Path) -> None:
    out = tmp_path / "marks.json"
    _run_suite(tmp_path, 3, FIRST_START_CONFTEST, FIRST_START_TEST, out)
    marks: dict[str, Any] = json.loads(out.read_text())
    # The plugin alone brings nothing of the broker, the fuzz job or the benchmarks.
    assert marks["plugin_modules"] == ["kafkagen", "kafkagen.pytest_plugin"]
    # A test will use a cluster: collection loaded the broker, but no request handler or
    # request codec, and nothing of Spark, Hypothesis or a client library.
    before = marks["before_request"]
    assert "kafkagen.runtime.broker.cluster" in before
    assert not [m for m in before if m.startswith("kafkagen.runtime.handlers.api_")], before
    assert not [m for m in before if m.split(".")[1:2] in (["fuzz"], ["bench"], ["oracle"])]
    assert marks["foreign"] == []
    # The first Metadata request loads the Metadata handler, and no other.
    loaded = [m for m in marks["after_request"] if m.startswith("kafkagen.runtime.handlers.api_")]
    assert loaded == ["kafkagen.runtime.handlers.api_03_metadata"]

    def span(a: str, b: str) -> str:
        (wall_a, cpu_a), (wall_b, cpu_b) = marks[a], marks[b]
        return f"{(wall_b - wall_a) * 1000:.0f} ms ({(cpu_b - cpu_a) * 1000:.0f} ms CPU)"

    print(
        "first kafka_cluster in a fresh process (3 brokers):"
        f" collection with the broker's import {span('session', 'collected')};"
        f" fixture set-up {span('setup', 'fixture')};"
        f" fixture request to the first Metadata answer {span('setup', 'answered')}"
    )


def test_control_over_http_from_an_in_process_cluster() -> None:
    from kafkagen.cli.control import ControlClient

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


@pytest.mark.kafka_cluster(brokers=3, configs={"broker.session.timeout.ms": 300})
def test_faults_from_the_test_thread(kafka_cluster: KafkaCluster, kafka_control: Any) -> None:
    faults = kafka_control.faults
    faults.cut([2], clients=False)
    assert faults.to_json()["unreachable_by_clients"] == [2]
    for _ in range(100):  # fenced after broker.session.timeout.ms
        if faults.fenced == {2}:
            break
        time.sleep(0.05)
    assert faults.fenced == {2}
    assert kafka_cluster.call(lambda: kafka_cluster.cluster.metadata.brokers[2].alive) is False


def test_client_configs(
    kafka_cluster: KafkaCluster,
    confluent_kafka_config: dict[str, object],
    kafka_python_config: dict[str, object],
    aiokafka_config: dict[str, object],
) -> None:
    assert confluent_kafka_config == {"bootstrap.servers": kafka_cluster.bootstrap_servers}
    assert kafka_python_config == {"bootstrap_servers": kafka_cluster.bootstrap_servers.split(",")}
    assert aiokafka_config == {"bootstrap_servers": kafka_cluster.bootstrap_servers}
