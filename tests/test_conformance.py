"""The conformance suite: its normalisation and comparison, its command, and kafkagen's
broker against Apache Kafka 4.4.0, where every difference must be documented."""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_helpers import BrokerProcess
from kafkagen.conformance import (
    all_scenarios,
    exit_status,
    load_documented,
    run_suite,
    summary,
)
from kafkagen.conformance.command import add_arguments
from kafkagen.conformance.command import run as run_command
from kafkagen.conformance.core import Result, Step, compare_runs
from kafkagen.conformance.every_api import SERVED_APIS
from kafkagen.conformance.normalise import Normaliser, first_difference
from kafkagen.conformance.random_sample import coordinator_key, error_codes, run_sample
from kafkagen.reference import KafkaReference
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.handlers import load_handlers
from kafkagen.runtime.records import Record, build_batch

DOC = Path(__file__).resolve().parents[1] / "docs" / "conformance.md"
#: The configs both brokers run with (the reference's defaults, made explicit here).
CONFIGS = ("group.initial.rebalance.delay.ms=0", "auto.create.topics.enable=false")


# ---------------------------------------------------------------------- normalisation


def test_node_ids_hosts_and_throttle_times_are_normalised_but_none_stays() -> None:
    n = Normaliser()
    got = n(
        {
            "throttleTimeMs": 30,
            "brokers": [{"nodeId": 2, "host": "10.0.0.1", "port": 9093, "rack": None}],
            "leaderId": -1,
            "replicaNodes": [2, 0],
        }
    )
    assert got == {
        "throttleTimeMs": 0,
        "brokers": [{"nodeId": "<node>", "host": "<host>", "port": "<port>", "rack": None}],
        "leaderId": -1,
        "replicaNodes": ["<node>", "<node>"],
    }


def test_ids_keep_their_identity_within_a_scenario() -> None:
    n = Normaliser({"AAAAAAAAAAAAAAAAAAAAAQ": "orders"})
    first = n({"producerId": 4000, "memberId": "m-x", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ"})
    again = n({"producerId": 4000, "memberId": "m-y", "topicId": "BBBBBBBBBBBBBBBBBBBBBB"})
    assert first == {
        "producerId": "<producer 1>",
        "memberId": "<member 1>",
        "topicId": "<id of orders>",
    }
    assert again == {
        "producerId": "<producer 1>",
        "memberId": "<member 2>",
        "topicId": "<topic-id>",
    }


def test_error_text_is_compared_only_for_presence() -> None:
    n = Normaliser()
    assert n({"errorMessage": "The topic x is unknown"}) == {"errorMessage": "<message>"}
    assert n({"errorMessage": None}) == {"errorMessage": None}
    assert n({"errorMessage": ""}) == {"errorMessage": ""}


def test_struct_arrays_compare_as_sets() -> None:
    n = Normaliser()
    a = n({"topics": [{"name": "b"}, {"name": "a"}]})
    b = n({"topics": [{"name": "a"}, {"name": "b"}]})
    assert first_difference(a, b) is None


def test_record_batches_compare_field_by_field_without_the_producer_id() -> None:
    def batch(pid: int) -> str:
        records = [Record(timestamp=1000, key=b"k", value=b"v")]
        raw = build_batch(records, producer_id=pid, producer_epoch=0, base_sequence=0)
        return base64.b64encode(raw).decode()

    a, b = Normaliser()({"records": batch(7)}), Normaliser()({"records": batch(9000)})
    assert first_difference(a, b) is None
    assert a["records"][0]["crcValid"] is True
    c = Normaliser()({"records": base64.b64encode(b"\x00" * 5).decode()})
    assert "unreadable" in c["records"][0]


def test_first_difference_names_the_path_and_the_error() -> None:
    a = {"topics": [{"name": "t", "errorCode": 0}]}
    b = {"topics": [{"name": "t", "errorCode": 3}]}
    assert first_difference(a, b) == "topics[0].errorCode: 0 NONE != 3 UNKNOWN_TOPIC_OR_PARTITION"
    assert first_difference({"x": 1}, {}) == "x: only in the broker's answer"
    assert first_difference([1], [1, 2]) == ": 1 items != 2 items"


def test_a_closed_connection_against_an_answer_is_a_difference() -> None:
    sc = all_scenarios()[0]
    got = compare_runs(
        sc, [Step("X v1", {"a": 1})], [Step("X v1", {"outcome": "connection closed"})]
    )
    assert got.status == "differ" and got.detail == "step 1 X v1: an answer != connection closed"
    same = compare_runs(sc, [Step("X v1", {"a": 1})], [Step("X v1", {"a": 1})])
    assert same.status == "agree"


# ---------------------------------------------------------------------- the exit status


def test_the_exit_status_is_1_only_for_open_differences_and_stopped_scenarios() -> None:
    a, b = all_scenarios()[:2]
    documented = {a.name: "a known difference"}
    answer, other = Step("X v1", {"errorCode": 0}), Step("X v1", {"errorCode": 3})
    stop = Step("scenario", {"stopped": "SetupError: creating topic t: error 41"})
    agree = compare_runs(a, [answer], [answer])
    known = compare_runs(a, [answer], [other])
    unknown = compare_runs(b, [answer], [other])
    known_but_stopped = compare_runs(a, [answer, stop], [answer])
    stopped_alike = compare_runs(b, [stop], [stop])
    skipped = Result(b, "skipped", "needs 3 brokers")
    assert stopped_alike.status == "agree"  # equal steps, yet the scenario never ran
    assert exit_status([agree, known, skipped], documented) == 0
    assert exit_status([agree, known, unknown], documented) == 1
    assert exit_status([known_but_stopped], documented) == 1
    assert exit_status([stopped_alike], documented) == 1
    assert summary([agree, known, stopped_alike, skipped], documented).splitlines() == [
        "1 agree, 1 documented, 0 open, 1 stopped with an error, 1 skipped",
        "conformance: 1/3 scenarios agree with the reference",
    ]


def test_the_command_exits_0_when_its_differences_are_documented(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two brokers in this process, one refusing batches over 60 bytes: Produce/ordinary
    differs, and the exit status follows whether the file given to --documented names it."""
    known = tmp_path / "known.md"
    known.write_text("| `Produce/ordinary` | one broker takes smaller batches |\n")
    unknown = tmp_path / "none.md"
    unknown.write_text("nothing documented\n")
    configs = {"auto.create.topics.enable": "false"}
    small = {**configs, "message.max.bytes": "60"}
    with BackgroundCluster(configs=small) as a, BackgroundCluster(configs=configs) as b:

        def command(documented: Path) -> tuple[int, list[str]]:
            parser = argparse.ArgumentParser()
            add_arguments(parser)
            args = parser.parse_args(
                ["--bootstrap", a.bootstrap, "--reference", b.bootstrap]
                + ["--only", "Produce/ordinary", "--only", "Metadata/one-topic"]
                + ["--documented", str(documented)]
            )
            status = run_command(args)
            return status, capsys.readouterr().out.strip().splitlines()

        open_status, open_out = command(unknown)
        documented_status, documented_out = command(known)
    assert open_out[-2:] == [
        "1 agree, 0 documented, 1 open",
        "conformance: 1/2 scenarios agree with the reference",
    ]
    assert open_status == 1
    assert any(
        line.startswith("Produce/ordinary ") and " open " in line and "MESSAGE_TOO_LARGE" in line
        for line in open_out
    ), open_out
    assert documented_out[-2] == "1 agree, 1 documented, 0 open"
    assert documented_status == 0


# ---------------------------------------------------------------------- the scenario set


def test_there_are_scenarios_for_every_api_kafkagen_serves() -> None:
    scenarios = all_scenarios()
    assert len(scenarios) >= 150
    assert sorted(SERVED_APIS) == sorted(load_handlers())
    by_api: dict[str, int] = {}
    for sc in scenarios:
        by_api[sc.api] = by_api.get(sc.api, 0) + 1
    assert len(by_api) == len(SERVED_APIS)
    assert all(count >= 3 for count in by_api.values())


def test_every_documented_difference_names_a_scenario() -> None:
    from kafka_tool_scenarios import SCENARIOS as TOOL_SCENARIOS

    documented = load_documented(DOC)
    # The protocol scenarios, and those of Kafka's tools (their own section of the page).
    names = {sc.name for sc in all_scenarios()} | {sc.name for sc in TOOL_SCENARIOS}
    assert documented, f"{DOC} lists no differences"
    assert sorted(set(documented) - names) == []


@pytest.mark.slow
def test_kafkagen_agrees_with_itself() -> None:
    """Two kafkagen clusters answer the produce, fetch and group scenarios alike: the
    suite's own variation (names, ids, timing) is normalised away."""
    with BrokerProcess(*CONFIGS, brokers=2) as a, BrokerProcess(*CONFIGS, brokers=2) as b:
        results = asyncio.run(
            asyncio.wait_for(
                run_suite(a.bootstrap, b.bootstrap, only=["Produce/", "Fetch/", "JoinGroup/"]),
                300,
            )
        )
    assert len(results) > 30
    differ = [f"{r.scenario.name}: {r.detail}" for r in results if r.status == "differ"]
    assert differ == []


@pytest.mark.slow
def test_the_command_prints_the_table_and_the_summary() -> None:
    with BrokerProcess(*CONFIGS) as a, BrokerProcess(*CONFIGS) as b:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "kafkagen",
                "conformance",
                "--bootstrap",
                a.bootstrap,
                "--reference",
                b.bootstrap,
                "--only",
                "Metadata/",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert any(line.startswith("Metadata/one-topic ") and " agree " in line for line in lines)
    assert any(" skipped " in line for line in lines)  # Metadata/replicated-topic needs 3
    assert lines[-1].startswith("conformance: ") and lines[-1].endswith(
        "scenarios agree with the reference"
    )
    n, m = lines[-1].split()[1].split("/")
    assert n == m and int(m) >= 8


# ---------------------------------------------------------------------- against Kafka 4.4


def _kafka_pids() -> set[int]:
    """Reference Kafka JVMs on this machine (their config lives in a kafkagen-kafka- dir)."""
    pids = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if b"kafka.Kafka" in cmd and b"kafkagen-kafka-" in cmd:
                pids.add(int(proc.name))
    return pids


@pytest.mark.slow
def test_the_command_starts_and_stops_its_own_reference(tmp_path: Path) -> None:
    before = _kafka_pids()
    with BrokerProcess(*CONFIGS) as broker:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "kafkagen",
                "conformance",
                "--bootstrap",
                broker.bootstrap,
                "--only",
                "Metadata/one-topic",
                "--only",
                "Produce/ordinary",
                "--api-version",
                "Produce=9",
                "--json",
                str(tmp_path / "results.json"),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "starting Apache Kafka with 1 node(s)" in done.stdout
    assert done.stdout.strip().endswith("conformance: 2/2 scenarios agree with the reference")
    assert _kafka_pids() <= before
    results = json.loads((tmp_path / "results.json").read_text())
    labels = {step["label"] for r in results for side in r["steps"] for step in side}
    assert "ProduceRequest v9" in labels  # the pinned version, on both sides


@pytest.fixture(scope="module")
def kafkagen_three() -> Iterator[BrokerProcess]:
    with BrokerProcess(*CONFIGS, brokers=3) as broker:
        yield broker


@pytest.mark.slow
def test_kafkagen_agrees_with_kafka_or_the_difference_is_documented(
    kafka_reference: KafkaReference, kafkagen_three: BrokerProcess
) -> None:
    results: list[Result] = asyncio.run(
        asyncio.wait_for(run_suite(kafkagen_three.bootstrap, kafka_reference.bootstrap), 900)
    )
    documented = load_documented(DOC)
    print(summary(results, documented))
    assert all(r.status != "skipped" for r in results)
    undocumented = [
        f"{r.scenario.name}: {r.detail}"
        for r in results
        if r.status == "differ" and r.scenario.name not in documented
    ]
    assert undocumented == [], "differences not in docs/conformance.md:\n" + "\n".join(undocumented)
    # A row whose reason starts "varies between runs" (Kafka's answer depends on timing or
    # placement) may agree; any other documented row that agrees is stale.
    stale = sorted(
        r.scenario.name
        for r in results
        if r.status == "agree"
        and r.scenario.name in documented
        and not documented[r.scenario.name].startswith("varies between runs")
    )
    assert stale == [], f"documented in docs/conformance.md but now agreeing: {stale}"


# ---------------------------------------------------------------------- random requests


def test_random_requests_go_to_the_coordinator_of_their_first_group_or_transaction() -> None:
    from kafkagen.generated.add_offsets_to_txn import AddOffsetsToTxnRequest
    from kafkagen.generated.describe_groups import DescribeGroupsRequest
    from kafkagen.generated.offset_fetch import OffsetFetchRequest
    from kafkagen.generated.produce import ProduceRequest
    from kafkagen.generated.txn_offset_commit import TxnOffsetCommitRequest

    assert coordinator_key(DescribeGroupsRequest(groups=["g1", "g2"])) == ("g1", 0)
    group = OffsetFetchRequest.OffsetFetchRequestGroup(group_id="g3")
    assert coordinator_key(OffsetFetchRequest(groups=[group])) == ("g3", 0)
    txn = TxnOffsetCommitRequest(transactional_id="t1", group_id="g4")
    assert coordinator_key(txn) == ("g4", 0)  # offsets belong to the group's coordinator
    assert coordinator_key(ProduceRequest(transactional_id="t2")) is None  # to the leader
    adding = AddOffsetsToTxnRequest(transactional_id="t3", group_id="g5")
    assert coordinator_key(adding) == ("t3", 1)
    assert coordinator_key(DescribeGroupsRequest(groups=[])) is None


def test_random_answers_compare_by_which_error_codes_came_back() -> None:
    answer = {"errorCode": 0, "topics": [{"errorCode": 3}, {"errorCode": 3}, {"name": "x"}]}
    assert error_codes(answer) == [0, 3]
    assert error_codes({"topics": []}) == []


@pytest.mark.slow
def test_random_requests_are_answered_as_kafka_answers_them() -> None:
    # A reference of its own: random requests change cluster-wide state (quotas on the
    # default client, feature levels, cluster default configs) that the shared one keeps.
    # Both enforce ACLs (the clients a super user), so the ACL APIs answer rather than
    # say SECURITY_DISABLED; with one partition per internal topic every group and
    # transaction has one coordinator, so a request naming several reaches theirs.
    configs = (
        *CONFIGS,
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users=User:ANONYMOUS",
        "offsets.topic.num.partitions=1",
        "transaction.state.log.num.partitions=1",
    )
    with (
        KafkaReference(nodes=3, configs=dict(c.split("=", 1) for c in configs)) as kafka,
        BrokerProcess(*configs, brokers=3) as broker,
    ):
        sample = asyncio.run(
            run_sample(broker.bootstrap, kafka.bootstrap, count=400, seconds=600, seed=11)
        )
        log = broker.stderr_text()
    print(sample.render())
    # No handler failed on the way (a failure still answers, so only the log shows it).
    assert "Traceback" not in log, log[-3000:]
    assert sample.sent == 400
    assert len(sample.by_api) >= 50  # every API both serve, nearly
    assert sample.unanswered == 0, sample.render()
    assert sample.agree >= 0.85 * sample.sent, sample.render()
