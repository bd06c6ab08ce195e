"""Kafka's own Java client (kafka-clients 4.4.0) against ``kafkagen serve --brokers 3``.

``tests/java/JavaClientCheck.java`` is compiled against the client's jars from Maven
Central and run once per consumer group protocol: the admin client creates a topic of
three partitions with three replicas, an idempotent producer writes with acks=all, a
consumer reads everything in a group and commits, and the admin client lists and
describes the group, its offsets and the topic. A transactional producer commits one
transaction and aborts another, and the read_committed consumer must see exactly the
committed records.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_helpers import BrokerProcess
from kafkagen.maven import classpath

pytestmark = pytest.mark.slow

SOURCE = Path(__file__).parent / "java" / "JavaClientCheck.java"
RECORDS = 2000


@pytest.fixture(scope="module")
def java_check(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The command that runs the compiled check (its arguments follow)."""
    javac = shutil.which("javac")
    assert javac is not None, "the Java client check needs a JDK (javac) on PATH"
    jars = os.pathsep.join(str(p) for p in classpath(["org.apache.kafka:kafka-clients:4.4.0"]))
    out = tmp_path_factory.mktemp("java")
    done = subprocess.run(
        [javac, "-d", str(out), "-cp", jars, str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return ["java", "-Xmx256m", "-cp", f"{out}{os.pathsep}{jars}", "JavaClientCheck"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[BrokerProcess]:
    with BrokerProcess("group.initial.rebalance.delay.ms=0", brokers=3) as broker:
        yield broker


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_java_client_produces_consumes_and_administers(
    java_check: list[str], cluster: BrokerProcess, protocol: str
) -> None:
    done = subprocess.run(
        [*java_check, cluster.bootstrap, f"java-{protocol}", f"java-{protocol}-group",
         protocol, str(RECORDS)],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    checks = [line for line in done.stdout.splitlines() if line.startswith("check: ")]
    assert done.returncode == 0, "\n".join(checks) + done.stderr[-3000:]
    assert checks == [
        f"check: created java-{protocol}",
        f"check: produced {RECORDS}",
        "check: committed one transaction, aborted one",
        f"check: consumed {2 * RECORDS} duplicates 0 aborted 0",
        "check: listed group true",
        "check: group members 1 state Stable",
        "check: committed offsets at the log ends true",
        "check: partitions 3 replicas 3",
    ]
