"""``kafkagen fuzz --oracle kafka-python,kio``: the peer codecs as oracles.

The peers read kafkagen's bytes, write them back and read the corrupted copies; their
disagreements are never kafkagen failures: the peer's findings where Kafka answered the
same question as kafkagen, unjudged without Kafka. A planted peer bug shows up as such,
with a shrunk reproducer.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafkagen.fuzz import main, run_fuzz
from kafkagen.fuzz.checks import ComboStats, Fuzzer, FuzzOptions
from kafkagen.fuzz.peers import (
    PEER_COUNTS,
    Killed,
    Refused,
    Sandbox,
    column,
    load_peer,
    parse_oracles,
)
from kafkagen.fuzz.replay import replay
from kafkagen.fuzz.report import write_html, write_parquet
from kafkagen.fuzz.rules import Table, build_table
from kafkagen.generated import message_type

pytest.importorskip("kafka")
pytest.importorskip("kio")

PEERS = ("kafka-python", "kio")
#: Checked against Kafka too in the slow tests: a small mix of both kinds, flexible and
#: not, versions every oracle has and versions some lack.
APIS = ["Heartbeat", "FindCoordinator", "Metadata"]


@pytest.fixture(scope="module")
def table() -> Table:
    return build_table()


def run(table: Table, api: int, kind: str, version: int, n: int, **options: Any) -> ComboStats:
    fz = Fuzzer(table, FuzzOptions(seed=11, oracles=PEERS, **options))
    try:
        return fz.run_range(api, kind, version, 0, n)
    finally:
        fz.close()


def counts(stats: ComboStats, peer: str) -> dict[str, int]:
    return {w: int(stats.oracle.get(column(peer, w), 0)) for w in PEER_COUNTS}


# ---------------------------------------------------------------- the option


def test_oracles_are_a_comma_list_in_any_order() -> None:
    assert parse_oracles("kio,kafka") == ("kafka", "kio")
    assert parse_oracles(" kafka-python , kafka ") == ("kafka", "kafka-python")
    assert parse_oracles(None) == ()
    with pytest.raises(ValueError, match="'kio' is named twice"):
        parse_oracles("kio,kafka,kio")
    with pytest.raises(ValueError, match="unknown oracle 'franz'.*kafka, kafka-python, kio"):
        parse_oracles("franz")


def test_the_command_line_refuses_a_repeated_oracle(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--oracle", "kafka,kio,kio", "--messages", "10"])
    assert stopped.value.code == 2
    assert "'kio' is named twice" in capsys.readouterr().err


def test_the_differential_option_is_gone(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--differential", "kafka-python"])
    assert "unrecognized arguments: --differential" in capsys.readouterr().err


# ---------------------------------------------------------------- questions and counts


@pytest.mark.parametrize("version", [0, 3])
def test_both_peers_read_and_write_a_plain_message_as_kafkagen(table: Table, version: int) -> None:
    """Heartbeat requests without tagged fields: both peers read kafkagen's bytes to the
    same message and write them back unchanged."""
    stats = run(table, 12, "request", version, n=60, mutations=0)
    for peer in PEERS:
        assert counts(stats, peer) == {**dict.fromkeys(PEER_COUNTS, 0), "agree": 2 * 60}
    assert stats.failures == 0 and stats.disagreements == 0


def test_corrupted_copies_are_asked_too(table: Table) -> None:
    """One question per corrupted copy: kafka-python reads some that kafkagen refuses
    (it does not check that the message ends where the bytes do)."""
    stats = run(table, 12, "request", 0, n=60, mutations=2)
    for peer in PEERS:
        c = counts(stats, peer)
        assert c["agree"] + c["disagree"] == 4 * 60 and c["skipped"] == 0
    key = ("kafka-python", "mutant", "reads what kafkagen refuses")
    assert stats.peer_groups[key][1] == counts(stats, "kafka-python")["disagree"] > 0
    repro = stats.peer_repros[key]
    assert repro.json is None and repro.hex  # kafkagen refuses it: no JSON form


def test_a_version_a_peer_lacks_is_skipped_not_passed(table: Table) -> None:
    stats = run(table, 3, "request", 14, n=20, mutations=2)  # Metadata v14: neither has it
    for peer in PEERS:
        assert counts(stats, peer) == {**dict.fromkeys(PEER_COUNTS, 0), "skipped": 4 * 20}


def test_known_peer_differences_are_counted_not_failed(table: Table) -> None:
    """kio refuses error codes it has no name for, and kafka-python drops unknown tagged
    fields when it writes a message back: disagreements, unjudged without Kafka."""
    responses = run(table, 12, "response", 0, n=60, mutations=0)
    kio = counts(responses, "kio")
    assert kio["disagree"] > 0 and kio["unjudged"] == kio["disagree"] and kio["findings"] == 0
    # A refused read leaves nothing to write back: that write is skipped.
    assert kio["agree"] + kio["disagree"] + kio["skipped"] == 2 * 60
    assert kio["skipped"] == kio["disagree"]
    key = ("kio", "read", "refuses: ValueError: N is not a valid ErrorCode")
    assert responses.peer_groups[key] == [0, kio["disagree"]]
    assert responses.failures == 0

    tagged = run(table, 12, "request", 4, n=60, mutations=0)
    kp = counts(tagged, "kafka-python")
    assert tagged.peer_groups[("kafka-python", "write", "writes other bytes")] == [
        0,
        kp["disagree"],
    ]
    repro = tagged.peer_repros[("kafka-python", "write", "writes other bytes")]
    small = message_type(12, "request").decode(bytes.fromhex(repro.hex), 4)
    assert small.unknown_tagged_fields  # what kafka-python drops, kept by the shrinking
    assert tagged.failures == 0


# ---------------------------------------------------------------- a planted peer bug


@pytest.fixture()
def shouting_kafka_python(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """kafka-python writes Heartbeat's group id in capitals: a serializer bug of the
    peer, which reads kafkagen's bytes right."""
    cls = load_peer("kafka-python").message_class(12, "request", 0)
    original = cls.encode

    def shouting(self: Any, *args: Any, **kwargs: Any) -> Any:
        saved = self.group_id
        self.group_id = saved.upper()
        try:
            return original(self, *args, **kwargs)
        finally:
            self.group_id = saved

    monkeypatch.setattr(cls, "encode", shouting)
    yield


def test_a_planted_peer_bug_is_a_peer_disagreement_with_a_minimal_reproducer(
    table: Table, shouting_kafka_python: None
) -> None:
    result, _ = run_fuzz(
        300, apis=["Heartbeat"], spark=False, oracle="kafka-python", progress=None, table=table
    )
    assert result.failure_count == 0 and result.failures == []
    # Versions 4 and up also show kafka-python dropping unknown tagged fields.
    groups = [
        g
        for g in result.peer_groups
        if g["difference"] == "writes other bytes" and g["version"] < 4
    ]
    assert groups and {(g["peer"], g["api"], g["kind"], g["check"]) for g in groups} == {
        ("kafka-python", 12, "request", "write")
    }
    for g in groups:
        assert g["unjudged"] > 0 and g["findings"] == 0  # nobody asked Kafka
        v = g["version"]
        cls = message_type(12, "request")
        small = cls.from_json(json.loads(g["json"]), v)
        assert small.encode(v).hex() == g["hex"]
        # Shrunk: every field at its default but the group id, the one the bug needs.
        default = cls().to_json(v)
        changed = {k for k, x in json.loads(g["json"]).items() if default.get(k) != x}
        assert changed == {"groupId"}, g
        assert small.group_id != small.group_id.upper()
    total = sum(g["findings"] + g["unjudged"] for g in result.peer_groups)
    assert total == result.disagreement_count
    assert sum(int(s["kafka_python_disagree"]) for s in result.stats) == total


def test_the_results_keep_per_oracle_agreement_and_the_reproducers(
    table: Table, shouting_kafka_python: None, tmp_path: Path
) -> None:
    import pyarrow.parquet as pq

    result, _ = run_fuzz(
        120, apis=["Heartbeat"], spark=False, oracle="kafka-python,kio", progress=None, table=table
    )
    write_parquet(result, table, tmp_path)
    write_html(result, table, tmp_path / "report.html")
    rows = pq.read_table(tmp_path / "oracles.parquet").to_pylist()
    assert {r["oracle"] for r in rows} == set(PEERS)
    assert len(rows) == 2 * len(result.stats)  # one per oracle and (API, kind, version)
    for r in rows:
        assert r["agree"] + r["disagree"] + r["skipped"] > 0
        assert r["disagree"] == r["findings"] + r["unjudged"]
    groups = pq.read_table(tmp_path / "peer_findings.parquet").to_pylist()
    assert len(groups) == len(result.peer_groups) > 0
    planted = next(
        g for g in groups if (g["peer"], g["version"], g["check"]) == ("kafka-python", 0, "write")
    )
    assert planted["api_name"] == "Heartbeat" and planted["difference"] == "writes other bytes"
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["options"]["oracles"] == list(PEERS)
    assert set(run["oracle_seconds"]) == set(PEERS) and run["peer_unjudged"] > 0
    page = (tmp_path / "report.html").read_text()
    # A heat map per peer (from its counters) and the groups with their reproducers.
    assert 'data-judge="kafka_python"' in page and 'data-judge="kio"' in page
    assert "Peers' findings" in page and planted["hex"][:160] in page


def test_replay_shows_the_peer_disagreement(
    table: Table, shouting_kafka_python: None, capsys: pytest.CaptureFixture[str]
) -> None:
    result, _ = run_fuzz(
        60, apis=["Heartbeat"], spark=False, oracle="kafka-python", progress=None, table=table
    )
    first = next(
        g
        for g in result.peer_groups
        if g["difference"] == "writes other bytes" and g["version"] < 4
    )
    out = io.StringIO()
    assert replay(first["id"], out=out, table=table, oracle="kafka-python") == 0
    text = out.getvalue()
    assert "kafka-python disagrees, unjudged: write: writes other bytes" in text
    assert "minimal reproducer: " in text and "no failure" in text


# ---------------------------------------------------------------- the sandbox


def _reader(cls: Any, version: int, data: bytes) -> Any:
    if data == b"abort":
        os.abort()
    if data == b"refuse":
        raise KeyError("no such tag")
    return (cls, version, data.upper())


def test_the_sandbox_survives_a_reader_that_kills_its_process() -> None:
    sandbox = Sandbox(_reader)
    try:
        questions = [(str, 1, b"a"), (str, 1, b"abort"), (str, 2, b"refuse"), (str, 3, b"b")]
        assert sandbox.read_all(questions) == [
            ("ok", (str, 1, b"A")),
            ("killed", "killed by signal 6 (SIGABRT)"),
            ("refused", "KeyError", "'no such tag'"),
            ("ok", (str, 3, b"B")),
        ]
        assert sandbox.read_all([(int, 0, b"c")]) == [("ok", (int, 0, b"C"))]  # a new child
    finally:
        sandbox.close()


def test_kio_aborting_on_a_corrupted_length_is_a_disagreement_not_a_crash() -> None:
    """A corrupted FindCoordinator v4 request whose array length kio allocates for before
    checking the bytes: its compiled reader aborts the process."""
    kio = load_peer("kio")
    try:
        cls = kio.message_class(10, "request", 4)
        bad = bytes.fromhex("e3ffffffff6975770dc3b8c39fc39fc3b8c3a9c39f00")
        kio.read_ahead([(cls, 4, bad), (cls, 4, b"\x00")])
        with pytest.raises(Killed, match="SIGABRT"):
            kio.read(cls, 4, bad)
        with pytest.raises(Refused):
            kio.read(cls, 4, b"\x00")
    finally:
        kio.close()


# ---------------------------------------------------------------- with Kafka, and on Spark


@pytest.mark.slow
def test_with_kafka_a_planted_peer_bug_is_the_peers_finding(
    table: Table, shouting_kafka_python: None
) -> None:
    result, _ = run_fuzz(
        200,
        apis=["Heartbeat"],
        spark=False,
        oracle="kafka,kafka-python",
        progress=None,
        table=table,
        mutations=0,
    )
    assert result.failure_count == 0
    groups = [g for g in result.peer_groups if g["difference"] == "writes other bytes"]
    assert groups and all(g["findings"] > 0 for g in groups)
    # Kafka 4.4.0 has every Heartbeat version: nothing is left unjudged.
    assert all(g["unjudged"] == 0 for g in groups)


def per_version(result: Any) -> dict[tuple[int, str, int], tuple[int, ...]]:
    names = (
        "messages",
        "failures",
        "disagreements",
        "kafka_checks",
        "kafka_skipped",
        *(column(p, w) for p in PEERS for w in PEER_COUNTS),
    )
    return {(s["api"], s["kind"], s["version"]): tuple(s[k] for k in names) for s in result.stats}


@pytest.mark.slow
def test_all_three_oracles_on_spark_count_what_the_plain_run_counts(table: Table) -> None:
    """``--oracle kafka,kafka-python,kio`` on local Spark: the peers ask in the Python
    workers, Kafka answers in the executor's JVM, and the peers' disagreements are judged
    in the second Python stage; every count matches the same seed run in this process."""
    messages = 900
    on_spark, _ = run_fuzz(
        messages,
        master="local[2]",
        apis=APIS,
        oracle="kafka,kafka-python,kio",
        progress=None,
        table=table,
        tasks=3,
    )
    plain, _ = run_fuzz(
        messages, apis=APIS, spark=False, oracle="kafka,kio,kafka-python", table=table
    )
    assert per_version(on_spark) == per_version(plain)
    assert on_spark.failure_count == 0, on_spark.failures[:5]
    questions = 2 + FuzzOptions().mutations
    for s in on_spark.stats:
        assert s["kafka_checks"] + s["kafka_skipped"] == 3 * s["messages"]
        for p in PEERS:
            c = {w: int(s[column(p, w)]) for w in PEER_COUNTS}
            assert c["agree"] + c["disagree"] + c["skipped"] == questions * s["messages"], s
            assert c["disagree"] == c["findings"] + c["unjudged"]
    for p in PEERS:
        for w in ("agree", "disagree", "findings"):
            assert sum(int(s[column(p, w)]) for s in on_spark.stats) > 0, (p, w)
        assert sum(float(s[column(p, "seconds")]) for s in on_spark.stats) > 0
    assert sum(float(s["kafka_seconds"]) for s in on_spark.stats) > 0
    assert on_spark.peer_groups and all(g["hex"] is not None for g in on_spark.peer_groups)
    assert sum(g["findings"] + g["unjudged"] for g in on_spark.peer_groups) == sum(
        int(s["disagreements"]) for s in on_spark.stats
    )
