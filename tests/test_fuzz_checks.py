"""The fuzz checks without Spark: the spec oracle, mutations, determinism, and that each
check catches the codec bug it exists for."""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest
from kafkagen.fuzz import checks, run_fuzz
from kafkagen.fuzz.checks import (
    CHUNK,
    INJECT_ENV,
    ComboStats,
    Fuzzer,
    FuzzOptions,
    chunk_seed,
    clear_injection,
    failure_id,
    mutate,
    parse_failure_id,
    sampled,
)
from kafkagen.fuzz.plan import plan_combos, select_apis, task_slices
from kafkagen.fuzz.replay import replay, replay_findings
from kafkagen.fuzz.rules import Oracle, Table, build_table
from kafkagen.generated import APIS, message_type
from kafkagen.runtime.errors import DecodeError, UnsupportedVersionError
from kafkagen.runtime.message import Message

# APIs whose codecs pass every check today: the checks must stay quiet on them.
CLEAN_APIS = ["Produce", "Fetch", "ApiVersions", "FindCoordinator", "DescribeCluster"]


@pytest.fixture(scope="module")
def table() -> Table:
    return build_table()


def run(table: Table, api: int, kind: str, version: int, n: int = 60, **options: Any) -> ComboStats:
    fz = Fuzzer(table, FuzzOptions(seed=11, **options))
    try:
        return fz.run_range(api, kind, version, 0, n)
    finally:
        fz.close()


def checks_failed(stats: ComboStats) -> set[str]:
    return {f.check for f in stats.findings}


# ---------------------------------------------------------------- the spec table and oracle


def test_table_covers_every_generated_message_and_version(table: Table) -> None:
    assert {api for api, _ in table} == set(APIS)
    for (api, kind), rules in table.items():
        cls = message_type(api, kind)  # type: ignore[arg-type]
        assert (rules.lowest, rules.highest) == (cls.LOWEST_VERSION, cls.HIGHEST_VERSION)
        first_flexible = rules.flex_low if rules.flex_low is not None else None
        if first_flexible is not None:
            first_flexible = max(first_flexible, rules.lowest)
        assert first_flexible == cls.FIRST_FLEXIBLE_VERSION, rules.name


def test_oracle_non_ignorable_field_with_a_value_cannot_go_back(table: Table) -> None:
    cls = message_type(3, "request")
    oracle = Oracle(table[(3, "request")])
    m = cls(allow_auto_topic_creation=False)
    why = oracle.violation(m, 4, 3)
    assert why is not None and "allow_auto_topic_creation" in why
    with pytest.raises(UnsupportedVersionError):
        m.encode(3)  # the codec agrees
    assert oracle.violation(cls(allow_auto_topic_creation=True), 4, 3) is None


def test_oracle_ignorable_field_is_dropped(table: Table) -> None:
    cls = message_type(1, "request")
    m = cls(max_bytes=5)
    assert Oracle(table[(1, "request")]).violation(m, 3, 2) is None
    assert cls.decode(m.encode(2), 2).max_bytes == 2147483647  # back to its default


def test_oracle_struct_field_is_default_only_when_all_its_fields_are(table: Table) -> None:
    cls: Any = message_type(1, "request")
    oracle = Oracle(table[(1, "request")])
    assert oracle.violation(cls(replica_state=cls.ReplicaState()), 15, 14) is None
    why = oracle.violation(cls(replica_state=cls.ReplicaState(replica_id=5)), 15, 14)
    assert why is not None and "replica_state" in why


def test_oracle_null_where_the_version_does_not_allow_null(table: Table) -> None:
    cls = message_type(3, "request")
    why = Oracle(table[(3, "request")]).violation(cls(topics=None), 1, 0)
    assert why is not None and "null" in why


def test_oracle_unknown_tagged_fields_need_a_flexible_version(table: Table) -> None:
    cls = message_type(3, "request")
    oracle = Oracle(table[(3, "request")])
    m = cls(unknown_tagged_fields=((7, b"x"),))
    assert oracle.violation(m, 9, 10) is None
    why = oracle.violation(m, 9, 8)
    assert why is not None and "tagged" in why


def test_oracle_looks_into_nested_structs(table: Table) -> None:
    cls: Any = message_type(3, "response")
    topic = cls.MetadataResponseTopic(topic_authorized_operations=5)
    why = Oracle(table[(3, "response")]).violation(cls(topics=[topic]), 8, 7)
    assert why is not None and "MetadataResponseTopic.topic_authorized_operations" in why


def test_oracle_expectation_names_the_first_difference_by_path(table: Table) -> None:
    cls: Any = message_type(3, "response")
    oracle = Oracle(table[(3, "response")])
    part = cls.MetadataResponsePartition
    partitions = [part(partition_index=0, leader_epoch=3), part(partition_index=1, leader_id=4)]
    m = cls(topics=[cls.MetadataResponseTopic(name="t", partitions=partitions)])
    plan = oracle.expectation(12, 6)  # v6 has no leader epochs (an ignorable field)
    assert plan is not None
    d = cls.decode(m.encode(6), 6)
    assert d != m and oracle.mismatch(d, m, plan) is None  # dropped: read back as default
    d.topics[0].partitions[1].leader_id = 5
    assert oracle.mismatch(d, m, plan) == (
        "MetadataResponse.topics[0].partitions[1].leader_id: 5 != 4"
    )
    d.topics[0].partitions[1].leader_id = 4
    d.topics[0].partitions[0].leader_epoch = 3
    assert oracle.mismatch(d, m, plan) == (
        "MetadataResponse.topics[0].partitions[0].leader_epoch does not exist here but "
        "decoded to a non-default value"
    )
    d.topics[0].partitions.pop()
    assert oracle.mismatch(d, m, plan) == "MetadataResponse.topics[0].partitions: 1 items != 2"


# ---------------------------------------------------------------- ids, seeds, mutations


def test_failure_ids_round_trip() -> None:
    fid = failure_id(5, 3, "response", 12, 777)
    assert parse_failure_id(fid) == (5, 3, "response", 12, 777)
    assert parse_failure_id(fid + ":json") == (5, 3, "response", 12, 777)
    with pytest.raises(ValueError):
        parse_failure_id("5:3:reply:12:777")


def test_chunk_seeds_are_stable_and_distinct() -> None:
    assert chunk_seed(1, 3, "request", 4, 0) == chunk_seed(1, 3, "request", 4, 0)
    seeds = {
        chunk_seed(s, a, k, v, c)
        for s in (1, 2)
        for a in (0, 3)
        for k in ("request", "response")
        for v in (0, 1)
        for c in (0, 1)
    }
    assert len(seeds) == 32


def test_mutations_change_the_bytes_in_each_way() -> None:
    data = bytes(range(40))
    flipped, cut, grown, length = (
        mutate(data, kind | (9 << 2) | (12345 << 18)) for kind in range(4)
    )
    assert len(flipped) == len(data) and flipped != data
    assert cut == data[:9]
    assert len(grown) > len(data) and grown[:9] == data[:9]
    assert length != data
    assert mutate(data, 0xABCDEF12345) == mutate(data, 0xABCDEF12345)
    assert mutate(b"", 0xFFFF) != b""


# ---------------------------------------------------------------- determinism


def test_a_sub_range_regenerates_the_same_messages(table: Table) -> None:
    fz = Fuzzer(table, FuzzOptions(seed=3))
    try:
        whole = list(fz.messages(3, "response", 9, 0, CHUNK + 10))
        part = list(fz.messages(3, "response", 9, CHUNK + 3, CHUNK + 5))
    finally:
        fz.close()
    assert [i for i, _, _ in part] == [CHUNK + 3, CHUNK + 4]
    for (i, m, bits), (j, m2, bits2) in zip(whole[CHUNK + 3 : CHUNK + 5], part, strict=True):
        assert (i, bits) == (j, bits2)
        assert m == m2


def test_the_split_into_tasks_does_not_change_the_messages(table: Table) -> None:
    one, _ = run_fuzz(1500, seed=4, apis=["Metadata", "Produce"], table=table, spark=False)
    three, _ = run_fuzz(
        1500, seed=4, apis=["Metadata", "Produce"], table=table, spark=False, tasks=3
    )
    strip = [{k: v for k, v in s.items() if k != "seconds"} for s in one.stats]
    assert strip == [{k: v for k, v in s.items() if k != "seconds"} for s in three.stats]
    assert one.messages == 1500


def test_tasks_cover_every_message_exactly_once(table: Table) -> None:
    combos = plan_combos(table, select_apis(table, ["Fetch"]), 10_000)
    for tasks in (1, 4, 7):
        seen = [
            (i, x)
            for t in range(tasks)
            for i, a, b in task_slices(combos, tasks, t)
            for x in range(a, b)
        ]
        assert len(seen) == len(set(seen)) == 10_000


def test_select_apis_by_name_or_key(table: Table) -> None:
    assert select_apis(table, ["Metadata", "0", "find_coordinator,fetch"]) == [0, 1, 3, 10]
    with pytest.raises(ValueError, match="unknown API"):
        select_apis(table, ["NoSuchApi"])


# ---------------------------------------------------------------- the checks pass on good codecs


def test_clean_codecs_pass_every_check(table: Table) -> None:
    result, _ = run_fuzz(3000, seed=9, apis=CLEAN_APIS, table=table, spark=False)
    assert result.messages == 3000
    assert result.failures == [], result.failures[:3]
    totals = {
        k: sum(int(s[k]) for s in result.stats)
        for k in ("cross_checks", "cross_raised", "forward_checks", "mutations", "bytes")
    }
    # Every message is checked against every other version of its message.
    others = sum(
        int(s["messages"]) * (len(table[(s["api"], s["kind"])].versions) - 1) for s in result.stats
    )
    assert totals["cross_checks"] == others > 3000
    assert totals["cross_raised"] > 0  # the oracle's "must raise" side is exercised
    assert totals["forward_checks"] > 0 and totals["mutations"] == FuzzOptions().mutations * 3000


# ---------------------------------------------------------------- each check catches its bug


def test_roundtrip_catches_a_decoder_that_loses_a_value(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls = message_type(18, "response")
    good = cls._decoders[3]

    def lossy(buf: Any, pos: int, end: int) -> tuple[Any, int]:
        obj, pos = good(buf, pos, end)
        obj.throttle_time_ms = 0
        return obj, pos

    monkeypatch.setattr(cls, "_decoders", {**cls._decoders, 3: lossy})
    stats = run(table, 18, "response", 3)
    assert "roundtrip" in checks_failed(stats)
    assert all(f.hex for f in stats.findings if f.check == "roundtrip")


def test_json_catches_a_from_json_that_drops_a_field(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls = message_type(18, "response")
    good = cls._from_json

    def dropping(obj: Any, version: int) -> Any:
        m = good(obj, version)
        m.throttle_time_ms = 0
        return m

    monkeypatch.setattr(cls, "_from_json", staticmethod(dropping))
    assert checks_failed(run(table, 18, "response", 3)) == {"json"}


def test_cross_version_catches_an_encoder_that_writes_what_it_must_refuse(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    # v1's layout at v0 writes a null topic list that v0 cannot carry.
    cls = message_type(3, "request")
    monkeypatch.setattr(cls, "_encoders", {**cls._encoders, 0: cls._encoders[1]})
    stats = run(table, 3, "request", 1, n=200, cross=0)
    errors = [f.error for f in stats.findings if f.check == "cross_version"]
    assert any("must raise UnsupportedVersionError" in e and "null" in e for e in errors)


def test_cross_version_catches_an_encoder_that_refuses_what_it_can_write(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls = message_type(18, "request")

    def refusing(o: Any, w: Any) -> None:
        raise UnsupportedVersionError("refused")

    monkeypatch.setattr(cls, "_encoders", {**cls._encoders, 0: refusing})
    stats = run(table, 18, "request", 1, cross=0)
    errors = [f.error for f in stats.findings if f.check == "cross_version"]
    assert errors and all(e.startswith("v0: raised but must not") for e in errors)


def test_forward_compat_catches_a_decoder_that_drops_unknown_tags(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls = message_type(18, "request")
    good = cls._decoders[3]

    def forgetful(buf: Any, pos: int, end: int) -> tuple[Any, int]:
        obj, pos = good(buf, pos, end)
        obj.unknown_tagged_fields = ()
        return obj, pos

    monkeypatch.setattr(cls, "_decoders", {**cls._decoders, 3: forgetful})
    assert "forward_compat" in checks_failed(run(table, 18, "request", 3))


def test_mutation_catches_a_decoder_that_crashes_on_bad_bytes(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls = message_type(18, "response")
    good = cls._decoders[3]

    def fragile(buf: Any, pos: int, end: int) -> tuple[Any, int]:
        try:
            return good(buf, pos, end)
        except DecodeError:
            raise KeyError("crash") from None  # neither a value nor a DecodeError

    monkeypatch.setattr(cls, "_decoders", {**cls._decoders, 3: fragile})
    stats = run(table, 18, "response", 3, n=100)
    assert checks_failed(stats) == {"mutation"}
    assert all("KeyError" in f.error for f in stats.findings)


def test_mutation_flags_a_slow_decode_and_a_hang(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls = message_type(18, "request")
    good = cls._decoders[0]
    delay = {"seconds": 0.0}

    def sleepy(buf: Any, pos: int, end: int) -> tuple[Any, int]:
        time.sleep(delay["seconds"])
        return good(buf, pos, end)

    monkeypatch.setattr(cls, "_decoders", {**cls._decoders, 0: sleepy})
    monkeypatch.setattr(checks, "SLOW_SECONDS", 0.02)
    monkeypatch.setattr(checks, "HANG_SECONDS", 0.3)
    delay["seconds"] = 0.03
    slow = run(table, 18, "request", 0, n=3)
    assert any(f.check == "mutation" and "took" in f.error for f in slow.findings)
    if signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, None):
        pytest.skip("SIGALRM belongs to someone else here (pytest-timeout?)")
    delay["seconds"] = 5.0  # the alarm stops it long before
    began = time.monotonic()
    hung = run(table, 18, "request", 0, n=2)
    assert time.monotonic() - began < 3
    assert [f.error.split(":")[0] for f in hung.findings] == ["hang", "hang"]


def test_mutation_flags_a_huge_allocation(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    cls = message_type(18, "request")
    good = cls._decoders[0]

    def greedy(buf: Any, pos: int, end: int) -> tuple[Any, int]:
        waste = bytearray(64 << 20)  # a length field trusted without a bound
        del waste
        return good(buf, pos, end)

    monkeypatch.setattr(cls, "_decoders", {**cls._decoders, 0: greedy})
    stats = run(table, 18, "request", 0, n=8, alloc_every=2, mutations=2)
    allocations = [f for f in stats.findings if "allocated" in f.error]
    fz = Fuzzer(table, FuzzOptions(seed=11))
    try:
        chosen = [i for i, _, bits in fz.messages(18, "request", 0, 0, 8) if sampled(bits, 2, 0)]
    finally:
        fz.close()
    assert 0 < len(chosen) < 8  # the sample, not every message
    # two mutations each, on the sampled messages only
    assert [f.index for f in allocations] == [i for i in chosen for _ in range(2)]


def test_findings_are_capped_but_counted(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    cls = message_type(18, "response")

    def broken(buf: Any, pos: int, end: int) -> tuple[Any, int]:
        raise RuntimeError("always")

    monkeypatch.setattr(cls, "_decoders", {**cls._decoders, 3: broken})
    stats = run(table, 18, "response", 3, n=50, keep=5)
    assert stats.failures == 50 and stats.by_check == {"roundtrip": 50}
    assert len(stats.findings) == 5


def test_native_check_catches_compiled_and_pure_codecs_that_disagree(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafkagen.runtime import message

    cls = message_type(18, "request")
    python_codecs = checks._python_codecs
    uses_native = getattr(message, "uses_native", None)
    if python_codecs is None or uses_native is None or not uses_native(cls, 3):
        pytest.skip("the compiled accelerator does not serve ApiVersionsRequest v3 here")

    def tampered(c: Any) -> tuple[dict[int, Any], dict[int, Any]]:
        decoders, encoders = python_codecs(c)
        if c is cls:
            good = encoders[3]

            def different(o: Any, w: Any) -> None:
                good(o, w)
                w(b"\x00")  # the pure codec writes one byte more than the compiled one

            encoders = {**encoders, 3: different}
        return decoders, encoders

    monkeypatch.setattr(checks, "_python_codecs", tampered)
    stats = run(table, 18, "request", 3, n=600)
    assert checks_failed(stats) == {"native"}
    assert 0 < stats.native_checks < 600  # a sample
    assert all("pure-Python encoding differs" in f.error for f in stats.findings)


# ---------------------------------------------------------------- injection and replay


@pytest.fixture
def injected(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(INJECT_ENV, "3:response:5")
    yield monkeypatch
    clear_injection()


def test_an_injected_bug_is_found_and_replays(table: Table, injected: Any) -> None:
    stats = run(table, 3, "response", 5, n=90)
    found = [f for f in stats.findings if f.check == "roundtrip"]
    assert found and all("injected bug" in f.error for f in found)
    assert len(found) < 90  # only inputs whose length the bug dislikes
    # v6 shares v5's layout function but not the injection
    assert "roundtrip" not in checks_failed(run(table, 3, "response", 6, n=30))

    message, data, again = replay_findings(found[0].id, table)
    assert isinstance(message, Message) and len(data) % 3 == 0
    assert [f.check for f in again] == ["roundtrip"]
    assert "Traceback" in again[0].error  # replay shows where it broke

    clear_injection()
    injected.delenv(INJECT_ENV)
    assert replay_findings(found[0].id, table)[2] == []


def test_replay_prints_the_failure_and_exits_1(
    table: Table, injected: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    stats = run(table, 3, "response", 5, n=30)
    fid = stats.findings[0].id
    assert replay(fid, table=table) == 1
    out = capsys.readouterr().out
    assert f"message {fid}" in out and "FAILURE in " in out and "injected bug" in out
