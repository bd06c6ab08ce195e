"""The control API's faults on the newer APIs, met by Kafka's Java clients 4.4.0 on three
kafkagen brokers (Kafka has no such API: there is nothing to compare with).

- Share groups: ShareGroupHeartbeat answered COORDINATOR_NOT_AVAILABLE, then NOT_COORDINATOR;
  ShareFetch answered SHARE_SESSION_NOT_FOUND, then delayed by two seconds, while a
  KafkaShareConsumer works through a topic. The consumer asks again, finds the coordinator,
  opens a new share session, and every record is still delivered and accepted.
- Transactions v2: the Java producer's EndTxn answered CONCURRENT_TRANSACTIONS and then
  NOT_COORDINATOR, and one transactional Produce CONCURRENT_TRANSACTIONS (what a broker
  answers when it cannot add the partition to the transaction yet), in a
  consume-transform-produce loop with aborts: the producer retries each and the output is
  still exactly once. At transaction version 2 the producer sends no AddPartitionsToTxn
  (its Produce adds the partition), so a rule on that API has nothing to act on.
"""

from __future__ import annotations

import collections
import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_helpers import BrokerProcess
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafkagen.cli.control import ControlClient
from kafkagen.client_programs import java_program, run_scenario
from kafkagen.runtime.errors import ErrorCode

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

N = 200
CONFIGS = [
    "group.share.record.lock.duration.ms=5000",
    "group.share.min.record.lock.duration.ms=1000",
    "group.initial.rebalance.delay.ms=0",
]


@pytest.fixture(scope="module")
def broker() -> Iterator[tuple[str, ControlClient]]:
    with BrokerProcess(*CONFIGS, brokers=3, control=True) as b:
        yield b.bootstrap, ControlClient(b.control_url)
        assert b.alive(), b.stderr_text()


def _rule(control: ControlClient, api: str, **action: Any) -> int:
    rule: dict[str, Any] = control.call("POST", "/rules", {"match": {"api": api}, **action})
    return int(rule["id"])


def _outcomes(control: ControlClient, api: str) -> list[tuple[str, int | None, int]]:
    """(outcome, rule id, top-level error code) of each recorded request of ``api``."""
    return [
        (r["outcome"], r["rule"], (r["response"] or {}).get("errorCode", -1))
        for r in control.call("GET", f"/records?api={api}")
    ]


def _wait_for(what: str, check: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.2)


def test_share_consumer_recovers_from_heartbeat_and_fetch_faults(
    broker: tuple[str, ControlClient], tmp_path: Path
) -> None:
    bootstrap, control = broker
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"share-faults-{suffix}", f"share-faults-group-{suffix}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    control.call("POST", "/reset")
    control.call("POST", "/records/start")
    heartbeat_rules = [
        _rule(control, "ShareGroupHeartbeat", error="COORDINATOR_NOT_AVAILABLE"),
        _rule(control, "ShareGroupHeartbeat", error="NOT_COORDINATOR"),
    ]
    proc = subprocess.Popen(
        java_program("ShareFaultScenario") + [bootstrap, topic, group, str(N)],
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "share.log").open("w"),
        text=True,
    )
    lines: list[dict[str, Any]] = []

    def read() -> None:
        assert proc.stdout is not None
        lines.extend(json.loads(line) for line in proc.stdout)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})

    def produce(keys: range) -> None:
        for i in keys:
            producer.produce(topic, key=str(i), value=f"v{i}", partition=0)
        assert producer.flush(30) == 0

    try:
        # A share group starts at the partition's end: write once a fetch was answered.
        _wait_for(
            "an answered ShareFetch",
            lambda: any(o == "answered" for o, _, _ in _outcomes(control, "ShareFetch")),
        )
        produce(range(N // 2))
        _wait_for("half the records polled", lambda: sum("polled" in x for x in lines) > 0)
        fetch_rules = [
            _rule(control, "ShareFetch", error="SHARE_SESSION_NOT_FOUND"),
            _rule(control, "ShareFetch", delay_ms=2000),
        ]
        # Both act on the consumer's next fetches, before the rest of the records exist.
        _wait_for(
            "the ShareFetch rules to act",
            lambda: not {r["id"] for r in control.call("GET", "/rules")} & set(fetch_rules),
        )
        produce(range(N // 2, N))
        proc.wait(180)
        reader.join(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    summary = lines[-1]
    print(f"share consumer: {summary}, {sum('failed' in x for x in lines)} failed acknowledgements")
    assert summary == {"accepted": N, "error": ""}, (summary, lines[-5:])
    heartbeats = _outcomes(control, "ShareGroupHeartbeat")
    fetches = _outcomes(control, "ShareFetch")
    # Each rule acted once, on the first request it met, and the client asked again.
    for rule, code in zip(heartbeat_rules, (15, 16), strict=True):
        assert [(o, e) for o, r, e in heartbeats if r == rule] == [("error", code)], heartbeats
    assert [(o, e) for o, r, e in fetches if r == fetch_rules[0]] == [
        ("error", ErrorCode.SHARE_SESSION_NOT_FOUND)
    ], fetches
    assert [(o, e) for o, r, e in fetches if r == fetch_rules[1]] == [("answered", 0)], fetches
    assert heartbeats[-1][2] == 0 and fetches[-1][2] == 0
    # Every key came, some more than once only if an acknowledgement was lost to a fault.
    seen = collections.Counter(k for x in lines for k, _ in x.get("polled", []))
    assert sorted(seen) == list(range(N))


def test_transactional_producer_recovers_from_end_txn_and_produce_faults(
    broker: tuple[str, ControlClient],
) -> None:
    bootstrap, control = broker
    control.call("POST", "/reset")
    control.call("POST", "/records/start")
    topic = f"ctp-faults-{uuid.uuid4().hex[:8]}"
    end_rules = [
        _rule(control, "EndTxn", error="CONCURRENT_TRANSACTIONS"),
        _rule(control, "EndTxn", error="NOT_COORDINATOR"),
    ]
    # The transform's output topic: its first transactional batch meets a busy coordinator.
    produce_rule = control.call(
        "POST",
        "/rules",
        {"match": {"api": "Produce", "topic": f"{topic}-out"}, "error": "CONCURRENT_TRANSACTIONS"},
    )["id"]
    add_rule = _rule(control, "AddPartitionsToTxn", error="COORDINATOR_NOT_AVAILABLE")
    s = run_scenario(
        java_program("TransactionScenario") + ["transform", bootstrap, topic, "300", "4"]
    )
    committed = collections.Counter(s["read_committed"])
    assert committed == collections.Counter(f"out-in-{i}" for i in range(300)), s
    assert s["transaction"]["producer_epoch"] == s["committed"] + s["aborted"], s
    ends = _outcomes(control, "EndTxn")
    for rule, code in zip(end_rules, (ErrorCode.CONCURRENT_TRANSACTIONS, 16), strict=True):
        assert [(o, e) for o, r, e in ends if r == rule] == [("error", code)], ends
    assert ends[-1][2] == 0
    produced = [
        (r["outcome"], p["errorCode"])
        for r in control.call("GET", "/records?api=Produce")
        if r["rule"] == produce_rule
        for t in r["response"]["responses"]
        for p in t["partitionResponses"]
    ]
    assert produced == [("error", ErrorCode.CONCURRENT_TRANSACTIONS)], produced
    # Transaction version 2: no AddPartitionsToTxn from the producer, the rule never fired.
    assert _outcomes(control, "AddPartitionsToTxn") == []
    rules = {r["id"]: r["fired"] for r in control.call("GET", "/rules")}
    assert rules == {add_rule: 0}, rules
