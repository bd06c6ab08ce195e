"""Kafka 4.4.0's own command-line tools against ``kafkagen serve --brokers 3`` and a
three-node Kafka 4.4.0, side by side: every scenario in ``kafka_tool_scenarios`` must
print the same (after `kafka_tools`' normalisation) or be a documented difference in
docs/conformance.md ("Kafka's tools")."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from broker_helpers import BrokerProcess
from kafka_tool_scenarios import SCENARIOS, ToolScenario
from kafka_tools import Output, Side
from kafkagen.conformance import load_documented
from kafkagen.reference import KafkaReference

DOC = Path(__file__).resolve().parents[1] / "docs" / "conformance.md"
#: The reference's configs, made explicit for kafkagen.
CONFIGS = ("group.initial.rebalance.delay.ms=0", "auto.create.topics.enable=false")
#: Scenarios at a time (each runs on both clusters at once): JVM starts are CPU-bound.
PARALLEL = 3


# ---------------------------------------------------------------------- normalisation


def side(prefix: str = "kt1") -> Side:
    return Side("127.0.0.1:1", prefix, Path("."))


def test_what_each_cluster_chooses_is_normalised() -> None:
    kafkagen = side().output(
        0,
        "Topic: kt1-a\tTopicId: 3mt04XWsTj2_US07HDL0ZQ\tPartitionCount: 1\n"
        "\tTopic: kt1-a\tPartition: 0\tLeader: 0\tReplicas: 0,1,2\tIsr: 0,1,2\n",
        "SLF4J: Failed to load class\n",
    )
    kafka = side().output(
        0,
        "Topic: kt1-a\tTopicId: aCnNiEhySmGYBYVaARxWGQ\tPartitionCount: 1\n"
        "\tTopic: kt1-a\tPartition: 0\tLeader: 2\tReplicas: 2,0,1\tIsr: 2,0,1\n",
        "",
    )
    assert kafkagen == kafka
    assert kafkagen.stdout[0] == (
        "Topic: <p>-a Partition: 0 Leader: <node> Replicas: <3 nodes> Isr: <3 nodes>"
    )


def test_the_replica_set_a_verify_reports_is_counted_not_named() -> None:
    line = (
        "There is no active reassignment of partition kt1-a-0, but replica set is %s rather "
        "than 0,1,2."
    )
    assert side().normalise(line % "0") == side().normalise(line % "2")
    assert side().normalise(line % "0") != side().normalise(line % "0,1")


def test_a_real_difference_stays() -> None:
    fewer = side().output(0, "\tTopic: kt1-a\tPartition: 0\tLeader: 0\tReplicas: 0,1\n", "")
    more = side().output(0, "\tTopic: kt1-a\tPartition: 0\tLeader: 0\tReplicas: 0,1,2\n", "")
    assert fewer != more
    assert side().output(1, "", "") != side().output(0, "", "")


def test_table_columns_a_broker_chooses_are_masked_and_the_rest_kept() -> None:
    header = "CoordinatorId\tTransactionalId\tProducerId\tTransactionState\n"
    a = side().output(0, header + "1\tkt1-tx\t1000\tOngoing\n", "")
    b = side().output(0, header + "2\tkt1-tx\t0\tOngoing\n", "")
    c = side().output(0, header + "2\tkt1-tx\t0\tCompleteCommit\n", "")
    assert a == b != c
    assert "<chosen> <p>-tx <chosen> Ongoing" in a.stdout


def test_json_plans_compare_without_placement_and_order() -> None:
    a = side().output(0, '{"partitions":[{"partition":1,"replicas":[2,0]},'
                         '{"partition":0,"replicas":[0,1]}],"version":1}\n', "")  # fmt: skip
    b = side().output(0, '{"version":1,"partitions":[{"partition":0,"replicas":[1,2]},'
                         '{"partition":1,"replicas":[0,1]}]}\n', "")  # fmt: skip
    assert a == b
    c = side().output(0, '{"version":1,"partitions":[{"partition":0,"replicas":[1]}]}\n', "")
    assert c != a


# ---------------------------------------------------------------------- against Kafka 4.4


@pytest.fixture(scope="module")
def kafkagen_three() -> Iterator[BrokerProcess]:
    with BrokerProcess(*CONFIGS, brokers=3) as broker:
        yield broker


def run_both(
    sc: ToolScenario, bootstraps: dict[str, str], root: Path, prefix: str
) -> dict[str, list[Output] | str]:
    """``sc`` on each cluster at once; a side that fails in its set-up gives its error."""

    def one(label: str) -> list[Output] | str:
        folder = root / sc.name.replace("/", "_") / label
        folder.mkdir(parents=True)
        try:
            return sc.run(Side(bootstraps[label], prefix, folder))
        except Exception as e:  # noqa: BLE001 - reported as the scenario's error
            return f"{type(e).__name__}: {e}"

    with ThreadPoolExecutor(2) as pool:
        return dict(zip(bootstraps, pool.map(one, bootstraps), strict=True))


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_kafkas_tools_agree_with_kafka_or_the_difference_is_documented(
    kafka_reference: KafkaReference, kafkagen_three: BrokerProcess, tmp_path: Path
) -> None:
    from kafka_tools import classpath

    classpath()  # resolved once, before the threads need it
    bootstraps = {"kafkagen": kafkagen_three.bootstrap, "kafka": kafka_reference.bootstrap}
    run = "kt" + secrets.token_hex(3)
    started = time.monotonic()
    with ThreadPoolExecutor(PARALLEL) as pool:
        results = list(pool.map(
            lambda i_sc: run_both(i_sc[1], bootstraps, tmp_path, f"{run}{i_sc[0]}"),
            enumerate(SCENARIOS),
        ))  # fmt: skip
    documented = load_documented(DOC)
    errors, differ, agree = [], [], []
    for sc, got in zip(SCENARIOS, results, strict=True):
        if any(isinstance(v, str) for v in got.values()):
            errors.append(f"{sc.name}: {got}")
        elif got["kafkagen"] == got["kafka"]:
            agree.append(sc.name)
        else:
            differ.append(sc.name)
            if sc.name not in documented:
                print(f"--- {sc.name}")
                for a, b in zip(got["kafkagen"], got["kafka"], strict=False):  # type: ignore[arg-type]
                    if a != b:
                        print(f"kafkagen: {a.describe()}\nkafka:    {b.describe()}")
    open_ = [n for n in differ if n not in documented]
    print(
        f"Kafka's tools: {len(SCENARIOS)} scenarios, {len(agree)} agree, "
        f"{len(differ) - len(open_)} documented, {len(open_)} open, {len(errors)} errors "
        f"({time.monotonic() - started:.0f} s)"
    )
    stale = [
        n for n in agree if n in documented and not documented[n].startswith("varies between runs")
    ]
    if stale:
        print(f"documented but agreeing: {stale}")
    assert len(SCENARIOS) >= 60
    assert errors == [], "scenarios that stopped:\n" + "\n".join(errors)
    assert open_ == [], f"differences not in docs/conformance.md: {open_}"
    assert stale == [], f"documented in docs/conformance.md but now agreeing: {stale}"
