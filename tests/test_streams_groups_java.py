"""Kafka Streams 4.4.0 on the streams group protocol (KIP-1071, ``group.protocol=streams``),
two instances of one application, against three kafkagen brokers and three Apache Kafka
4.4.0 nodes; then Kafka's ``kafka-streams-groups --describe`` on the running group.

The application (``tools/client_programs/java/src/StreamsScenario.java``) counts words at
least once: input records are regrouped by word through a repartition topic and counted
in a store with a changelog. Both instances start before the
input is written; once each runs with tasks of its own, N records go in, and the output's
last count of every word must be exactly N / WORDS. The coordinator creates the repartition
and changelog topics itself, as Kafka's does.
"""

from __future__ import annotations

import json
import struct
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_helpers import BrokerProcess
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_tools import Side
from kafkagen.client_programs import java_program
from kafkagen.reference import KafkaReference

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

N = 4000
WORDS = 20
PARTITIONS = 4
#: How long both instances may take to run with tasks, and the output to settle.
START_S = 120
SETTLE_S = 120


@pytest.fixture(scope="module", params=["kafkagen", "kafka"])
def bootstrap(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "kafkagen":
        with BrokerProcess(brokers=3) as b:
            yield b.bootstrap
            assert b.alive(), b.stderr_text()
    else:
        with KafkaReference(nodes=3) as kafka:
            yield kafka.bootstrap
            assert kafka.running, kafka.log_tail()


class Instance:
    """One JVM of the application; its JSON lines are collected as they come."""

    def __init__(self, cmd: list[str], name: str) -> None:
        self.name = name
        self.lines: list[dict[str, Any]] = []
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.lines.append(json.loads(line))

    def latest(self) -> dict[str, Any]:
        states = [ln for ln in self.lines if "state" in ln]
        return states[-1] if states else {}

    def errors(self) -> list[str]:
        return [ln["error"] for ln in self.lines if "error" in ln]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


def _counts(bootstrap: str, topic: str) -> dict[str, int]:
    """The last count of every word in ``topic``, read until they are final or time is up."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    last: dict[str, int] = {}
    deadline = time.monotonic() + SETTLE_S
    try:
        while time.monotonic() < deadline:
            if len(last) == WORDS and set(last.values()) == {N // WORDS}:
                break
            m = consumer.poll(1.0)
            if m is None or m.error():
                continue
            last[m.key().decode()] = struct.unpack(">q", m.value())[0]
    finally:
        consumer.close()
    return last


def test_two_streams_instances_count_exactly(bootstrap: str, tmp_path: Path) -> None:
    app = f"wc-{uuid.uuid4().hex[:8]}"
    source, sink = f"{app}-in", f"{app}-out"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics(
        [NewTopic(source, PARTITIONS, 3), NewTopic(sink, PARTITIONS, 3)]
    ).values():
        f.result(30)
    cmd = java_program("StreamsScenario") + ["streams", "at_least_once"]
    instances = [
        Instance(cmd + [bootstrap, app, source, sink, str(tmp_path / n), n], n) for n in ("a", "b")
    ]
    try:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            states = [i.latest() for i in instances]
            if all(s.get("state") == "RUNNING" and s["active"] for s in states):
                break
            assert not any(i.errors() for i in instances), [i.errors() for i in instances]
            time.sleep(0.5)
        states = [i.latest() for i in instances]
        assert all(s.get("state") == "RUNNING" and s["active"] for s in states), states
        # Two subtopologies of PARTITIONS tasks each, split between the instances.
        active = [set(s["active"]) for s in states]
        assert active[0].isdisjoint(active[1])
        assert len(active[0] | active[1]) == 2 * PARTITIONS
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(N):
            producer.produce(source, key=str(i), value=f"w{i % WORDS}")
            if i % 500 == 0:
                producer.poll(0)
        assert producer.flush(30) == 0
        counts = _counts(bootstrap, sink)
        assert counts == {f"w{i}": N // WORDS for i in range(WORDS)}

        side = Side(bootstrap, app, tmp_path)
        described = side.run(
            "kafka-streams-groups",
            "--bootstrap-server",
            "{bootstrap}",
            "--describe",
            "--group",
            app,
            "--members",
        )
        assert described.exit == 0, described.describe()
        # The group's name is the side's prefix, which the normalisation turns into <p>.
        rows = [ln for ln in described.stdout if ln.startswith("<p> ")]
        assert len(rows) == 2, described.describe()
        assert all("ACTIVE:" in r for r in rows), described.describe()
        state = side.run(
            "kafka-streams-groups",
            "--bootstrap-server",
            "{bootstrap}",
            "--describe",
            "--group",
            app,
            "--state",
        )
        assert state.exit == 0 and any("Stable" in ln for ln in state.stdout), state.describe()
        listed = side.run("kafka-streams-groups", "--bootstrap-server", "{bootstrap}", "--list")
        assert listed.stdout == ("<p>",), listed.describe()  # the one group, named as the app
        print(described.describe())
        print(state.describe())
    finally:
        for i in instances:
            i.stop()
    assert not any(i.errors() for i in instances), [i.errors() for i in instances]
    assert all(any(ln.get("closed") for ln in i.lines) for i in instances)
