"""Kafka's Java producer 4.4.0 in transactions v2, against three kafkagen brokers and, for
comparison, three Apache Kafka 4.4.0 nodes; every check holds on both.

- Consume-transform-produce: records read in a group are written, transformed, to another
  topic in transactions that also commit the group's offsets (sendOffsetsToTransaction),
  every K-th transaction aborted and its input read again. read_committed must see each
  input exactly once and nothing aborted.
- Two-phase commit (KIP-939), ``transaction.two.phase.commit.enable`` on both sides with
  InitProducerId v6, which Kafka 4.4 serves only with ``unstable.api.versions.enable``. The
  4.4 producer takes ``transaction.two.phase.commit.enable`` but sends no Enable2Pc and has
  no public prepare or keepPreparedTxn call yet: a producer so configured leaves a
  transaction open and dies, the transaction stays open under the client's ordinary
  timeout, and the next producer of the id aborts it and commits its own. The broker's
  side of v6 (Enable2Pc, KeepPreparedTxn) is checked on the wire against both brokers.
"""

from __future__ import annotations

import collections
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from broker_helpers import BrokerProcess, WireClient, produce_answers, req
from kafkagen.cli.control import ControlClient
from kafkagen.client_programs import java_program, run_scenario
from kafkagen.reference import KafkaReference
from kafkagen.runtime.errors import ErrorCode

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

N = 600
ABORT_EVERY = 4
#: The pause between the two-phase producer's death and its successor.
TWO_PHASE_WAIT_MS = 3000
#: The timeout a two-phase commit transaction is kept under (the int32 maximum).
NEVER = 2**31 - 1
#: The Java producer's default transaction.timeout.ms.
CLIENT_TIMEOUT_MS = 60000

CONFIGS = {
    "unstable.api.versions.enable": "true",
    "transaction.two.phase.commit.enable": "true",
    "group.initial.rebalance.delay.ms": "0",
}


@dataclass(frozen=True)
class Cluster:
    bootstrap: str
    #: kafkagen's control API (None for Kafka).
    control: ControlClient | None = None


@pytest.fixture(scope="module", params=["kafkagen", "kafka"])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    if request.param == "kafkagen":
        configs = (f"{k}={v}" for k, v in CONFIGS.items())
        with BrokerProcess(*configs, brokers=3, control=True) as b:
            yield Cluster(b.bootstrap, ControlClient(b.control_url))
            assert b.alive(), b.stderr_text()
    else:
        with KafkaReference(nodes=3, configs=CONFIGS) as kafka:
            yield Cluster(kafka.bootstrap)
            assert kafka.running, kafka.log_tail()


@pytest.fixture
def bootstrap(cluster: Cluster) -> str:
    return cluster.bootstrap


def test_consume_transform_produce_with_aborts_is_exactly_once(cluster: Cluster) -> None:
    if cluster.control is not None:
        cluster.control.call("DELETE", "/records")
        cluster.control.call("POST", "/records/start")
    s = run_scenario(
        java_program("TransactionScenario")
        + ["transform", cluster.bootstrap, "ctp", str(N), str(ABORT_EVERY)]
    )
    print(f"transactions: {s['committed']} committed, {s['aborted']} aborted")
    assert s["aborted"] >= 1 and s["committed"] >= 1, s
    committed = collections.Counter(s["read_committed"])
    assert committed == collections.Counter(f"out-in-{i}" for i in range(N)), (
        f"missing {sorted(set(f'out-in-{i}' for i in range(N)) - set(committed))[:5]}, "
        f"twice {[v for v, c in committed.items() if c > 1][:5]}"
    )
    # The aborted transactions' records are in the log, only read_uncommitted sees them.
    assert len(s["read_uncommitted"]) > N
    # The group's offsets, committed in the transactions, reach the end of every partition.
    for partition, (offset, end) in s["offsets"].items():
        assert offset == end, (partition, offset, end)
    # Transactions v2: every EndTxn (commit or abort) ended under the next epoch.
    txn = s["transaction"]
    assert txn["state"] == "CompleteCommit", txn
    assert txn["producer_epoch"] == s["committed"] + s["aborted"], (
        txn,
        s["committed"],
        s["aborted"],
    )
    if cluster.control is not None:
        # What the producers were answered: retriable answers are counted (the loaded
        # machine may see CONCURRENT_TRANSACTIONS), NOT_ENOUGH_REPLICAS never (it is for
        # producers before Produce v12).
        answers = produce_answers(cluster.control)
        print(f"Produce answers by error code: {dict(answers)}")
        assert answers[0] > 0 and answers[ErrorCode.NOT_ENOUGH_REPLICAS] == 0, answers


def test_two_phase_commit_transaction_outlives_its_producer(bootstrap: str) -> None:
    topic = "two-phase"
    opened = run_scenario(
        java_program("TransactionScenario") + ["two-phase-open", bootstrap, topic]
    )
    assert opened == {"open": True}
    s = run_scenario(
        java_program("TransactionScenario")
        + ["two-phase-resume", bootstrap, topic, str(TWO_PHASE_WAIT_MS)]
    )
    # Still open after its producer died, under the client's timeout (no Enable2Pc sent).
    assert s["before"]["state"] == "Ongoing", s
    assert s["before"]["timeout_ms"] == CLIENT_TIMEOUT_MS, s
    assert s["before"]["partitions"] == 1, s
    # Committed (Kafka may still be writing the markers when it is described).
    assert s["after"]["state"] in ("PrepareCommit", "CompleteCommit"), s
    assert s["read_committed"] == ["committed"], s
    assert sorted(s["read_uncommitted"]) == ["committed", "left-open"], s


#: Answers a coordinator gives while it loads or finishes something: asked again.
_BUSY = (
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.CONCURRENT_TRANSACTIONS,
)


def _until_settled(ask: Any) -> Any:
    deadline = time.monotonic() + 30
    while (r := ask()).error_code in _BUSY and time.monotonic() < deadline:
        time.sleep(0.1)
    return r


def _coordinator(bootstrap: str, tid: str) -> str:
    with WireClient(bootstrap) as w:
        r = _until_settled(lambda: w.call(10, 3, req(10, key=tid, key_type=1)))
    assert r.error_code == 0, r
    return f"{r.host}:{r.port}"


def test_init_producer_id_v6_is_answered_as_kafka_does(bootstrap: str) -> None:
    tid = "wire-2pc"
    with WireClient(_coordinator(bootstrap, tid)) as w:

        def init(**kw: Any) -> Any:
            fields = {"transactional_id": tid, "transaction_timeout_ms": 5000, **kw}
            return _until_settled(lambda: w.call(22, 6, req(22, **fields)))

        def described() -> Any:
            [s] = w.call(65, 0, req(65, transactional_ids=[tid])).transaction_states
            return s

        r = init(enable2_pc=True)
        assert r.error_code == 0, r
        assert (r.ongoing_txn_producer_id, r.ongoing_txn_producer_epoch) == (-1, -1)
        assert (described().transaction_state, described().transaction_timeout_ms) == (
            "Empty",
            NEVER,
        )
        # Kafka 4.4 keeps no prepared transaction for the next producer yet.
        for flags in ({"enable2_pc": True}, {}):
            kept = init(keep_prepared_txn=True, **flags)
            assert (kept.error_code, kept.producer_id) == (ErrorCode.UNSUPPORTED_VERSION, -1)
        # A two-phase producer's own timeout is not checked; an ordinary one's is.
        assert init(enable2_pc=True, transaction_timeout_ms=0).error_code == 0
        refused = init(transaction_timeout_ms=0)
        assert refused.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
        again = init()
        assert (again.error_code, again.producer_epoch) == (0, r.producer_epoch + 2)
        assert described().transaction_timeout_ms == 5000


def test_java_program_usage_is_one_clear_line() -> None:
    proc = subprocess.run(
        java_program("TransactionScenario"), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and proc.stderr.startswith("usage: TransactionScenario"), proc
