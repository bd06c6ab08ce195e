"""Kafka's own kafka-reassign-partitions on `kafkagen serve --brokers 3` and on Kafka 4.4.

One script of moves runs against both clusters with Kafka 4.4.0's ReassignPartitionsCommand
and ConfigCommand: --generate, a throttled --execute that is still copying while --list,
--verify and the throttle configs are looked at, a second --execute refused without
--additional, --additional raising the throttle, --verify once the move is done (exit 0,
throttles cleared), a throttled move cancelled, an unthrottled one, and the cluster-wide
throttle set and deleted with kafka-configs. What the tools print (and their exit status)
must be the same on both, once log directories and the random --generate proposal are put
aside.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_helpers import BrokerProcess
from kafkagen.reference import KafkaReference

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

KAFKA = "4.4.0"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
CONFIGS = "org.apache.kafka.tools.ConfigCommand"
#: Bytes per partition: six of Kafka's 1 MiB follower fetches. Throttled to a few kB/s, a
#: follower takes one such fetch per partition each time the quota's 11 s of samples
#: empty, so the move lasts about a minute.
DATA_BYTES = 6 * 1024 * 1024
RECORD_BYTES = 1000
#: The JSON's log directories differ between the clusters.
_LOG_DIRS = re.compile(r'"log_dirs":\[[^\]]*\]')
#: The cluster-wide min.insync.replicas Kafka 4.4 sets for eligible leader replicas: not
#: a throttle, and not what this script compares.
_ELR_DEFAULT = re.compile(r"^  min\.insync\.replicas=.*\n?", re.M)


@pytest.fixture(scope="module")
def kafka_classpath() -> str:
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    from kafkagen.maven import classpath

    jars = classpath(
        [f"org.apache.kafka:kafka-tools:{KAFKA}", f"org.apache.kafka:kafka_2.13:{KAFKA}"]
    )
    return os.pathsep.join(map(str, jars))


@pytest.fixture(scope="module")
def kafkagen_three() -> Iterator[BrokerProcess]:
    broker = BrokerProcess(brokers=3)
    try:
        yield broker
    finally:
        broker.stop()


class Tools:
    """Kafka's command-line tools pointed at one cluster; every run goes into `transcript`."""

    def __init__(self, classpath: str, bootstrap: str, workdir: Path) -> None:
        self.classpath = classpath
        self.bootstrap = bootstrap
        self.workdir = workdir
        self.transcript: list[tuple[str, int, str]] = []

    def run(self, step: str, main: str, *args: str) -> str:
        done = subprocess.run(
            ["java", "-cp", self.classpath, main, "--bootstrap-server", self.bootstrap, *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = (done.stdout + done.stderr).splitlines()
        text = "\n".join(line for line in lines if not line.startswith("SLF4J"))
        seen = _ELR_DEFAULT.sub("", _LOG_DIRS.sub('"log_dirs":[..]', text)).rstrip()
        self.transcript.append((step, done.returncode, seen))
        return text

    def reassign(self, step: str, *args: str) -> str:
        return self.run(step, REASSIGN, *args)

    def configs(self, step: str, *args: str) -> str:
        return self.run(step, CONFIGS, *args)

    def plan(self, name: str, moves: dict[tuple[str, int], list[int]]) -> str:
        path = self.workdir / f"{name}.json"
        partitions = [{"topic": t, "partition": p, "replicas": r} for (t, p), r in moves.items()]
        path.write_text(json.dumps({"version": 1, "partitions": partitions}))
        return str(path)

    # -- through a Python client: creating, filling and watching topics ---------------

    def create(self, topic: str, assignment: list[list[int]]) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        new = NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)
        admin.create_topics([new])[topic].result(30)
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all"})
        value = bytes(RECORD_BYTES)
        for partition in range(len(assignment)):
            for _ in range(DATA_BYTES // RECORD_BYTES):
                while True:
                    try:
                        producer.produce(topic, value, partition=partition)
                        break
                    except BufferError:
                        producer.poll(0.1)
        assert producer.flush(60) == 0

    def replicas(self, topic: str) -> dict[int, list[int]]:
        from confluent_kafka import TopicCollection
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        (described,) = admin.describe_topics(TopicCollection([topic])).values()
        return {p.id: [n.id for n in p.replicas] for p in described.result(30).partitions}

    def wait_replicas(self, topic: str, target: dict[int, list[int]]) -> None:
        deadline = time.monotonic() + 120
        while self.replicas(topic) != target:
            assert time.monotonic() < deadline, f"{topic} never reached {target}"
            time.sleep(0.5)


def script(tools: Tools) -> None:
    """What an operator types, the same on either cluster."""
    a, b = "reassign-tool-a", "reassign-tool-b"
    tools.create(a, [[0], [1]])
    topics = tools.workdir / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": a}]}))
    out = tools.reassign(
        "generate", "--generate", "--topics-to-move-json-file", str(topics),
        "--broker-list", "0,1,2",
    )  # fmt: skip
    # Kafka proposes from a random start broker: check the proposal, compare the rest.
    current, proposed = out.split("Proposed partition reassignment configuration")
    proposal = json.loads(proposed.strip())["partitions"]
    assert sorted(p["partition"] for p in proposal) == [0, 1]
    assert all(len(p["replicas"]) == 1 and p["replicas"][0] in (0, 1, 2) for p in proposal)
    step, rc, _ = tools.transcript[-1]
    tools.transcript[-1] = (step, rc, _LOG_DIRS.sub('"log_dirs":[..]', current))

    move = tools.plan("move", {(a, 0): [1, 2], (a, 1): [2]})
    tools.reassign("execute throttled", "--execute", "--reassignment-json-file", move,
                   "--throttle", "5000")  # fmt: skip
    # Few tool runs until --additional: each starts a JVM, and the move must outlast them.
    tools.reassign("list while copying", "--list")
    tools.reassign("verify while copying", "--verify", "--reassignment-json-file", move)
    tools.reassign("execute again", "--execute", "--reassignment-json-file", move)
    tools.reassign("additional", "--execute", "--additional", "--reassignment-json-file", move,
                   "--throttle", "100000000")  # fmt: skip
    tools.configs("broker throttle", "--describe", "--entity-type", "brokers",
                  "--entity-name", "2")  # fmt: skip
    tools.configs("topic throttle", "--describe", "--entity-type", "topics", "--entity-name", a)
    tools.wait_replicas(a, {0: [1, 2], 1: [2]})
    tools.reassign("verify done", "--verify", "--reassignment-json-file", move)
    tools.configs("broker throttle cleared", "--describe", "--entity-type", "brokers",
                  "--entity-name", "2")  # fmt: skip
    tools.configs("topic throttle cleared", "--describe", "--entity-type", "topics",
                  "--entity-name", a)  # fmt: skip

    tools.create(b, [[0]])
    slow = tools.plan("slow", {(b, 0): [1]})
    tools.reassign("execute to cancel", "--execute", "--reassignment-json-file", slow,
                   "--throttle", "5000", "--replica-alter-log-dirs-throttle", "1000")  # fmt: skip
    tools.reassign("list before cancel", "--list")
    tools.reassign("cancel", "--cancel", "--reassignment-json-file", slow)
    tools.reassign("list after cancel", "--list")
    tools.configs("topic throttle after cancel", "--describe", "--entity-type", "topics",
                  "--entity-name", b)  # fmt: skip
    assert tools.replicas(b) == {0: [0]}
    tools.reassign("execute unthrottled", "--execute", "--reassignment-json-file", slow)
    tools.wait_replicas(b, {0: [1]})
    tools.reassign("verify unthrottled", "--verify", "--reassignment-json-file", slow)

    rates = "leader.replication.throttled.rate", "follower.replication.throttled.rate"
    tools.configs("set cluster throttle", "--alter", "--entity-type", "brokers",
                  "--entity-default",
                  "--add-config", f"{rates[0]}=1000,{rates[1]}=2000")  # fmt: skip
    tools.configs("cluster throttle", "--describe", "--entity-type", "brokers",
                  "--entity-default")  # fmt: skip
    tools.configs("delete cluster throttle", "--alter", "--entity-type", "brokers",
                  "--entity-default", "--delete-config", ",".join(rates))  # fmt: skip
    tools.configs("cluster throttle deleted", "--describe", "--entity-type", "brokers",
                  "--entity-default")  # fmt: skip


def test_kafka_reassign_partitions_prints_what_it_prints_on_kafka(
    kafka_classpath: str,
    kafkagen_three: BrokerProcess,
    kafka_reference: KafkaReference,
    tmp_path: Path,
) -> None:
    ours = Tools(kafka_classpath, kafkagen_three.bootstrap, tmp_path / "kafkagen")
    theirs = Tools(kafka_classpath, kafka_reference.bootstrap, tmp_path / "kafka")
    for tools in (ours, theirs):
        tools.workdir.mkdir()
        script(tools)
    (tmp_path / "transcripts.json").write_text(
        json.dumps({"kafkagen": ours.transcript, "kafka": theirs.transcript}, indent=1)
    )
    by_step = {step: (rc, text) for step, rc, text in theirs.transcript}
    differ = [
        f"--- {step}\nkafkagen (exit {rc}):\n{text}\nKafka (exit {by_step[step][0]}):\n"
        f"{by_step[step][1]}"
        for step, rc, text in ours.transcript
        if (rc, text) != by_step[step]
    ]
    assert not differ, "kafkagen and Kafka 4.4 differ:\n" + "\n".join(differ)
    # What the script is there to show, on kafkagen as on Kafka.
    printed = {step: text for step, _, text in ours.transcript}
    assert "is still in progress" in printed["verify while copying"]
    assert "Clearing broker-level throttles on brokers 0,1,2" in printed["verify done"]
    assert "leader.replication.throttled.rate=100000000" in printed["broker throttle"]
    followers = re.search(r"follower\.[a-z.]+\.replicas=(\S+)", printed["topic throttle"])
    assert followers is not None and set(followers[1].split(",")) == {"0:1", "0:2", "1:2"}
    assert "replicas: 1,2,0. adding: 1,2. removing: 0." in printed["list while copying"]
    assert printed["broker throttle cleared"].strip() == "Dynamic configs for broker 2 are:"
    assert [rc for step, rc, _ in ours.transcript if step == "execute again"] == [1]
