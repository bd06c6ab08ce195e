"""``kafkagen fuzz --oracle kafka``: Kafka's own classes judge every fuzzed message.

Runs without Spark (a Kafka oracle JVM in this process) and on Spark (the same Java
class in the executors' JVMs) must count the same; a codec bug kafkagen's own checks
cannot see, because its encoder and decoder agree on it, is caught by Kafka and replays.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from kafkagen.fuzz import run_fuzz
from kafkagen.fuzz.replay import replay
from kafkagen.generated.heartbeat import HeartbeatRequest

pytestmark = pytest.mark.slow

#: APIs whose wire format is the same in kafkagen's specs and Kafka 4.4.0 at every
#: version both have; Produce brings records fields and versions Kafka 4 removed.
APIS = ["Produce", "FindCoordinator", "Heartbeat", "SaslHandshake"]
MESSAGES = 2400
COUNTS = ("messages", "kafka_checks", "kafka_known", "kafka_skipped", "failures", "by_kafka")


def totals(result: Any) -> dict[str, int]:
    return {k: sum(int(s[k]) for s in result.stats) for k in COUNTS}


def per_version(result: Any) -> dict[tuple[int, str, int], tuple[int, ...]]:
    return {(s["api"], s["kind"], s["version"]): tuple(s[k] for k in COUNTS) for s in result.stats}


@pytest.fixture(scope="module")
def plain() -> Any:
    result, _ = run_fuzz(MESSAGES, apis=APIS, spark=False, oracle="kafka", progress=None)
    return result


def test_kafka_answers_three_questions_about_every_message(plain: Any) -> None:
    """Its bytes, its JSON form and one corrupted copy; versions Kafka 4 removed are
    skipped, not passed."""
    t = totals(plain)
    print(f"kafka oracle in the fuzz: {t}")
    assert t["failures"] == 0, plain.failures[:5]
    assert t["kafka_checks"] + t["kafka_skipped"] == 3 * t["messages"]
    removed = [v for (api, _, v), c in per_version(plain).items() if api == 0 and v < 3]
    assert sorted(set(removed)) == [0, 1, 2]
    for (api, _, v), c in per_version(plain).items():
        checks, skipped = c[1], c[3]
        if api == 0 and v < 3:
            assert (checks, skipped) == (0, 3 * c[0])
        else:
            assert (checks, skipped) == (3 * c[0], 0)


def test_spark_counts_what_the_plain_run_counts(plain: Any) -> None:
    """The same seed on Spark with two executor JVMs of their own (local-cluster), which
    get Kafka's classes and the oracle shipped as jars and answer there."""
    on_spark, _ = run_fuzz(
        MESSAGES,
        master="local-cluster[2,1,1024]",
        apis=APIS,
        oracle="kafka",
        progress=None,
        tasks=4,
    )
    assert per_version(on_spark) == per_version(plain)


@pytest.fixture()
def misnamed_json(monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSON form kafkagen reads and writes consistently, under a name Kafka does not
    use: invisible to kafkagen's own checks."""
    to_json, from_json = HeartbeatRequest._to_json, HeartbeatRequest._from_json

    def wrong_to_json(o: Any, version: int) -> Any:
        d = to_json(o, version)
        return {("groupID" if k == "groupId" else k): v for k, v in d.items()}

    def wrong_from_json(obj: Any, version: int) -> Any:
        return from_json({("groupId" if k == "groupID" else k): v for k, v in obj.items()}, version)

    monkeypatch.setattr(HeartbeatRequest, "_to_json", staticmethod(wrong_to_json))
    monkeypatch.setattr(HeartbeatRequest, "_from_json", staticmethod(wrong_from_json))


def test_kafka_catches_what_kafkagen_agrees_with_itself_on(misnamed_json: None) -> None:
    result, _ = run_fuzz(
        200, apis=["Heartbeat"], spark=False, oracle="kafka", progress=None, mutations=0
    )
    failures = result.failures
    assert failures, "Kafka did not notice the misnamed JSON field"
    assert {f["check"] for f in failures} == {"kafka"}
    assert all(f["kind"] == "request" for f in failures)
    first = failures[0]
    assert "groupId" in first["error"] and "groupID" in first["error"]

    out = io.StringIO()
    assert replay(first["id"], out=out, oracle="kafka") == 1
    assert "FAILURE in kafka" in out.getvalue()
    assert replay(first["id"], out=io.StringIO()) == 0  # without Kafka, nothing to see
