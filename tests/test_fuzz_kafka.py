"""``kafkagen fuzz --oracle kafka``: Kafka's own classes judge every fuzzed message.

Runs without Spark (a Kafka oracle JVM in this process) and on Spark (an oracle JVM
beside each Python worker, from the jars the driver shipped) must count the same; a codec
bug kafkagen's own checks cannot see, because its encoder and decoder agree on it, is
caught by Kafka and replays.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from kafkagen.fuzz import run_fuzz
from kafkagen.fuzz.checks import Fuzzer, FuzzOptions, failure_id
from kafkagen.fuzz.replay import replay
from kafkagen.fuzz.rules import build_table
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
    """The same seed on Spark with two executors of their own (local-cluster), whose
    Python workers get the oracle's jars from the driver and each start a JVM of them."""
    on_spark, _ = run_fuzz(
        MESSAGES,
        master="local-cluster[2,1,1024]",
        apis=APIS,
        oracle="kafka",
        progress=None,
        tasks=4,
    )
    assert per_version(on_spark) == per_version(plain)


def test_a_process_keeps_one_oracle_jvm_for_all_its_judging() -> None:
    """Asked again with the same jars, the process's oracle is the same running JVM (a
    Spark worker's later tasks reuse it); once closed, the next ask starts another."""
    from kafkagen.fuzz.kafka import close_process_oracles, process_oracle
    from kafkagen.oracle import build

    jars = [str(p) for p in build()]
    first = process_oracle(jars)
    assert process_oracle(jars) is first
    assert first.versions()[18].name == "ApiVersions"
    close_process_oracles()
    second = process_oracle(jars)
    assert second is not first
    assert second.versions()[18].name == "ApiVersions"
    close_process_oracles()


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


#: What the planted bug XORs into HeartbeatRequest v4's generationId on the wire.
SKEW = 0x5A5A


@pytest.fixture()
def skewed_generation_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """HeartbeatRequest v4's codec writes generationId XORed with SKEW and reads it back
    the same way: kafkagen agrees with itself, on the wire Kafka sees another value."""
    encode, decode = HeartbeatRequest._encoders[4], HeartbeatRequest._decoders[4]

    def skewed_encode(m: Any, write: Any) -> None:
        real = m.generation_id
        m.generation_id = real ^ SKEW
        try:
            encode(m, write)
        finally:
            m.generation_id = real

    def skewed_decode(data: Any, pos: int, end: int) -> Any:
        obj, pos = decode(data, pos, end)
        obj.generation_id ^= SKEW
        return obj, pos

    monkeypatch.setitem(HeartbeatRequest._encoders, 4, skewed_encode)
    monkeypatch.setitem(HeartbeatRequest._decoders, 4, skewed_decode)


def test_a_planted_disagreement_is_a_failure_row_naming_both_sides(
    skewed_generation_id: None,
) -> None:
    """Kafka judges in its JVM; what it does not agree on comes back and becomes a
    failure row: api, kind, version, seed index and id, and for each question the first
    differing field (reading the bytes) or byte (writing the JSON form), both sides'
    values in it."""
    result, _ = run_fuzz(
        200, apis=["Heartbeat"], spark=False, oracle="kafka", progress=None, mutations=0
    )
    failures = result.failures
    assert failures, "Kafka did not notice the skewed generationId"
    assert {(f["check"], f["api"], f["kind"], f["version"]) for f in failures} == {
        ("kafka", 12, "request", 4)
    }
    fuzzer = Fuzzer(build_table(), FuzzOptions())
    reads = [f for f in failures if f["error"].startswith("Kafka reads kafkagen's bytes")]
    writes = [f for f in failures if f["error"].startswith("Kafka writes kafkagen's JSON")]
    assert reads and writes and len(reads) + len(writes) == len(failures)
    for f in failures:
        assert f["id"] == failure_id(1, 12, "request", 4, f["index"])
        [(_, m, _)] = fuzzer.messages(12, "request", 4, f["index"], f["index"] + 1)
        assert isinstance(m, HeartbeatRequest)
        ours, kafkas = m.generation_id, m.generation_id ^ SKEW
        if f in reads:
            assert f"json differs at $.generationId: {ours} (int) != Kafka's {kafkas} (int)" in (
                f["error"]
            )
            assert bytes.fromhex(f["hex"]) == m.encode(4)
        else:
            # Kafka writes the real value where kafkagen wrote the skewed one, right after
            # the group id (a compact string: its length + 1 as a varint, then it); SKEW
            # leaves the value's first two bytes alone.
            n = len(m.group_id.encode())
            field = ((n + 1).bit_length() + 6) // 7 + n
            skewed = m.encode(4)
            real = skewed[:field] + ours.to_bytes(4, "big", signed=True) + skewed[field + 4 :]
            assert bytes.fromhex(f["hex"]) == real  # what Kafka wrote
            at = field + 2
            assert (
                f"bytes differs at byte {at}: kafkagen {len(skewed)} bytes, "
                f"{skewed[at : at + 16].hex()} from there; Kafka {len(real)} bytes, "
                f"{real[at : at + 16].hex()} from there"
            ) in f["error"]
