"""Exact with Kafka 4.4.0's own classes, on messages made fresh for every run.

Kafka's generated ``*Data`` classes run in a JVM (:mod:`kafkagen.oracle`). For every API,
kind and version both Kafka and kafkagen have, seeded random messages (unknown tagged
fields included) are written by kafkagen and read by Kafka, which must give kafkagen's
JSON form and write the same bytes back; written by Kafka from kafkagen's JSON form and
read by kafkagen, which must find the same message; and corrupted, where both must refuse
the bytes, or both read them to the same JSON form and bytes. Headers too. Each test
prints its counts (``pytest -rP`` shows them).
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from kafkagen import oracle
from kafkagen.fuzz.builders import random_message
from kafkagen.fuzz.checks import mutate, without_unknown_tags
from kafkagen.fuzz.randomgen import RandomGen
from kafkagen.generated import header_version, message_type
from kafkagen.generated.api_versions import ApiVersionsRequest
from kafkagen.generated.consumer_group_member_metadata_value import (
    ConsumerGroupMemberMetadataValue,
)
from kafkagen.generated.metadata import MetadataRequest, MetadataResponse
from kafkagen.oracle import (
    KafkaOracle,
    OracleError,
    as_kafka_renders,
    compare,
    explain,
    first_byte_difference,
    kafkagen_class,
    kafkagen_read,
)
from kafkagen.runtime.errors import UnsupportedVersionError
from kafkagen.runtime.message import Message, Struct

#: Random messages per (API, kind, version), per header version, and corrupted copies of
#: each: sized so the module runs in a minute or two.
MESSAGES = 32
HEADER_MESSAGES = 400
MUTANTS = 4
#: Problems shown in a failure message.
SHOWN = 15


@dataclass(frozen=True)
class Sample:
    api: int
    kind: str
    version: int
    index: int
    cls: type[Message]
    message: Message
    data: bytes

    def __str__(self) -> str:
        return f"{self.cls.__name__} v{self.version} #{self.index} ({self.data[:40].hex()})"


@dataclass(frozen=True)
class Plan:
    """What both sides have, and the versions only one side has (counted, not tested)."""

    combos: list[tuple[int, str, int]]
    kafka_only: list[str]
    kafkagen_only: list[str]


def seed_of(api: int, kind: str, version: int) -> int:
    """A stable seed per (API, kind, version): the same messages on every run."""
    return (api * 8 + oracle.KINDS.index(kind)) * 1000 + version


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaOracle]:
    with KafkaOracle() as k:
        print(f"kafka oracle: JVM answering after {k.started_in:.2f} s")
        yield k


def plan_of(kafka: KafkaOracle) -> Plan:
    combos: list[tuple[int, str, int]] = []
    kafka_only: list[str] = []
    kafkagen_only: list[str] = []
    for api in kafka.versions().values():
        for kind in ("request", "response"):
            try:
                cls = message_type(api.api_key, kind)
            except UnsupportedVersionError:
                kafka_only.append(f"{api.name} {kind} (the whole API)")
                continue
            ours = range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1)
            for v in api.versions:
                if v in ours:
                    combos.append((api.api_key, kind, v))
                else:
                    kafka_only.append(f"{api.name} {kind} v{v}")
            kafkagen_only += [f"{api.name} {kind} v{v}" for v in ours if v not in api.versions]
    for kind in ("request", "response"):
        cls = kafkagen_class(0, f"{kind}_header")
        theirs = kafka.header_versions(kind)
        for v in sorted({*theirs, *range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1)}):
            if v not in theirs:
                kafkagen_only.append(f"{cls.__name__} v{v}")
            elif not cls.LOWEST_VERSION <= v <= cls.HIGHEST_VERSION:
                kafka_only.append(f"{cls.__name__} v{v}")
            else:
                combos.append((0, f"{kind}_header", v))
    return Plan(combos, kafka_only, kafkagen_only)


@pytest.fixture(scope="module")
def plan(kafka: KafkaOracle) -> Plan:
    p = plan_of(kafka)
    print(
        f"kafka oracle: Kafka {kafka.version}: {len(p.combos)} (API, kind, version) both "
        f"have; skipped {len(p.kafkagen_only)} only kafkagen has, {len(p.kafka_only)} only "
        f"Kafka has"
    )
    return p


@pytest.fixture(scope="module")
def records() -> oracle.RecordsPaths:
    return oracle.records_paths()


@pytest.fixture(scope="module")
def samples(plan: Plan) -> list[Sample]:
    out = []
    for api, kind, version in plan.combos:
        cls = kafkagen_class(api, kind)
        gen = RandomGen(seed_of(api, kind, version))
        count = HEADER_MESSAGES if kind.endswith("_header") else MESSAGES
        for i in range(count):
            gen.reset()
            m = random_message(cls, version, gen)
            out.append(Sample(api, kind, version, i, cls, m, m.encode(version)))
    return out


def report(problems: list[str], what: str) -> str:
    shown = "\n".join(problems[:SHOWN])
    return f"{len(problems)} {what}:\n{shown}"


# --------------------------------------------------------------------------- versions


@pytest.mark.slow
def test_kafkagen_has_every_api_and_version_kafka_has(kafka: KafkaOracle, plan: Plan) -> None:
    """Every API and version Kafka 4.4.0 has is there, with Kafka's header versions."""
    missing = list(plan.kafka_only)
    for api in kafka.versions().values():
        for v, request_hv, response_hv in zip(
            api.versions, api.request_header_versions, api.response_header_versions, strict=True
        ):
            try:
                ours = (
                    header_version(api.api_key, v, "request"),
                    header_version(api.api_key, v, "response"),
                )
            except UnsupportedVersionError:
                continue  # the whole API is missing: in plan.kafka_only
            if ours != (request_hv, response_hv):
                missing.append(
                    f"{api.name} v{v}: header versions {ours}, "
                    f"Kafka's ({request_hv}, {response_hv})"
                )
    assert missing == [], report(missing, f"differences from Kafka {kafka.version}")


# --------------------------------------------------------------------------- round trips


@pytest.mark.slow
def test_kafka_reads_what_kafkagen_writes(
    kafka: KafkaOracle, samples: list[Sample], records: oracle.RecordsPaths
) -> None:
    """Kafka reads kafkagen's bytes to kafkagen's JSON form and writes the same bytes."""
    got = kafka.read((s.api, s.kind, s.version, s.data) for s in samples)
    problems = []
    for s, k in zip(samples, got, strict=True):
        json_form = as_kafka_renders(s.message.to_json(s.version), records.get((s.api, s.kind), ()))
        ours = oracle.Outcome("ok", json_form, s.data)
        why = compare(ours, k)
        if why is not None:
            problems.append(f"{s}: {why}")
    tagged = sum(bool(_unknown_tags(s.message)) for s in samples)
    print(
        f"kafka oracle: {len(samples):,} kafkagen -> Kafka reads ({tagged:,} with unknown "
        f"tagged fields), {len(problems)} disagreements"
    )
    assert tagged > 0, "no message carried unknown tagged fields: that path went untested"
    assert problems == [], report(problems, "messages Kafka reads differently")


@pytest.mark.slow
def test_kafkagen_reads_what_kafka_writes(kafka: KafkaOracle, samples: list[Sample]) -> None:
    """Kafka writes kafkagen's JSON form to the bytes kafkagen writes, and kafkagen reads
    them back to the same message (JSON carries no unknown tagged fields)."""
    got = kafka.write((s.api, s.kind, s.version, s.message.to_json(s.version)) for s in samples)
    problems = []
    for s, k in zip(samples, got, strict=True):
        if not k.ok:
            problems.append(f"{s}: Kafka cannot write kafkagen's JSON: {k.reason}")
            continue
        want = without_unknown_tags(s.message)
        ours = want.encode(s.version)
        if k.data != ours:
            at = first_byte_difference(ours, k.data)
            problems.append(
                f"{s}: Kafka writes other bytes from byte {at}: {k.data[at : at + 16].hex()}"
            )
            continue
        decoded = s.cls.decode(k.data, s.version)
        if decoded != want:
            problems.append(f"{s}: kafkagen reads Kafka's bytes to another message")
    print(
        f"kafka oracle: {len(samples):,} kafkagen JSON -> Kafka writes -> kafkagen reads, "
        f"{len(problems)} disagreements"
    )
    assert problems == [], report(problems, "messages Kafka writes differently")


@pytest.mark.slow
def test_kafka_and_kafkagen_agree_on_corrupted_bytes(
    kafka: KafkaOracle, samples: list[Sample], records: oracle.RecordsPaths
) -> None:
    """Bit flips, truncations, insertions and bad lengths: both sides refuse the bytes, or
    both read them to the same JSON form and write the same bytes back."""
    mutants = []
    for s in samples:
        rng = random.Random(seed_of(s.api, s.kind, s.version) * 100 + s.index)
        for _ in range(MUTANTS):
            mutants.append((s, mutate(s.data, rng.getrandbits(48))))
    got = kafka.read((s.api, s.kind, s.version, bad) for s, bad in mutants)
    problems = []
    counts = {"read alike": 0, "refused by both": 0}
    for (s, bad), k in zip(mutants, got, strict=True):
        paths = records.get((s.api, s.kind), ())
        ours = kafkagen_read(s.cls, s.version, bad, paths)
        why = compare(ours, k)
        if why is None:
            counts["read alike" if k.ok else "refused by both"] += 1
            continue
        known = explain(s.cls, s.version, bad, ours, k, paths)
        if known is None:
            problems.append(f"{s} corrupted to {bad[:48].hex()}: {why}")
        else:
            counts[known] = counts.get(known, 0) + 1
    print(f"kafka oracle: {len(mutants):,} mutants: {counts}; {len(problems)} disagreements")
    assert problems == [], report(problems, "mutants judged differently")


# --------------------------------------------------------------------------- tags of other versions


@dataclass(frozen=True)
class TagCase:
    """A message at a flexible version with one raw tagged field in one of its structs:
    a tag that a field of that struct has only at other versions, or one no version has."""

    api: int
    kind: str
    version: int
    cls: type[Message]
    where: str
    tag: int
    other_version: bool
    data: bytes

    def __str__(self) -> str:
        what = "of other versions" if self.other_version else "no version has"
        return f"{self.cls.__name__} v{self.version} {self.where} tag {self.tag} ({what})"


def _instance(obj: object, qualname: str) -> Struct | None:
    """The first struct of the class ``qualname`` in a message, depth first."""
    if not isinstance(obj, Struct):
        return None
    if type(obj).__qualname__ == qualname:
        return obj
    for attr in type(obj).__slots__:
        value = getattr(obj, attr)
        for item in value if isinstance(value, list) else [value]:
            found = _instance(item, qualname)
            if found is not None:
                return found
    return None


def _with_raw_tag(cls: type[Message], version: int, qualname: str, tag: int) -> bytes | None:
    """A random message whose struct ``qualname`` carries ``tag`` as a raw tagged field,
    written at ``version``; None when no seed tried builds that struct."""
    for seed in range(64):
        m = random_message(cls, version, RandomGen(seed))
        target = _instance(m, qualname)
        if target is not None:
            target.unknown_tagged_fields = ((tag, b"\x00\x01"),)
            return m.encode(version)
    return None


def tag_cases(plan: Plan) -> list[TagCase]:
    """From the specs: for every tagged field and every flexible version of its struct
    outside the field's versions, its tag there, and the struct's first free tag."""
    from kafkagen.generator.generate import BUILTIN_SPECS, load_messages

    both_have = set(plan.combos)
    cases = []
    for msg in load_messages([BUILTIN_SPECS]):
        for s in [msg.root, *msg.structs]:
            qualname = msg.name if s is msg.root else f"{msg.name}.{s.name}"
            tags = [f.tag for f in s.fields if f.tag is not None]
            for f in s.fields:
                if f.tag is None:
                    continue
                for v in msg.versions:
                    if (msg.api_key, msg.kind, v) not in both_have or v not in msg.flexible:
                        continue
                    if v not in s.versions or v in f.tagged:
                        continue
                    cls = message_type(msg.api_key, msg.kind)
                    for tag, other in ((f.tag, True), (max(tags) + 1, False)):
                        data = _with_raw_tag(cls, v, qualname, tag)
                        assert data is not None, f"no {qualname} in random {msg.name} v{v}"
                        cases.append(
                            TagCase(msg.api_key, msg.kind, v, cls, qualname, tag, other, data)
                        )
    return cases


@pytest.mark.slow
def test_kafka_and_kafkagen_refuse_the_same_tags_of_other_versions(
    kafka: KafkaOracle, plan: Plan, records: oracle.RecordsPaths
) -> None:
    """Kafka's readers refuse a tag that a field of the struct has only at other versions
    ("Tag N is not valid for version V") and keep one that no version has; kafkagen must
    decide the same on every such crafted message of every API the specs have one for."""
    cases = tag_cases(plan)
    got = kafka.read((c.api, c.kind, c.version, c.data) for c in cases)
    problems = []
    refused: set[str] = set()
    for c, k in zip(cases, got, strict=True):
        ours = kafkagen_read(c.cls, c.version, c.data, records.get((c.api, c.kind), ()))
        why = compare(ours, k)
        if why is None and c.other_version:
            if f"Tag {c.tag} is not valid for version {c.version}" not in k.reason:
                why = f"Kafka refused it for another reason: {k.summary()}"
            elif f"tagged field {c.tag} (" not in ours.reason:
                why = f"kafkagen refused it for another reason: {ours.summary()}"
            else:
                refused.add(c.cls.__name__)
        elif why is None and (not k.ok or ours.data != c.data):
            why = f"not kept and written back unchanged ({k.summary()})"
        if why is not None:
            problems.append(f"{c}: {why}")
    kept = sum(not c.other_version for c in cases)
    print(
        f"kafka oracle: {len(cases) - kept} tags of other versions refused by both in "
        f"{len(refused)} messages ({', '.join(sorted(refused))}); {kept} never-known tags "
        f"kept by both; {len(problems)} disagreements"
    )
    assert problems == [], report(problems, "tag decisions that differ from Kafka's")
    assert len(refused) >= 5, f"too few messages with tags of other versions: {refused}"


def _unknown_tags(m: object) -> bool:
    from kafkagen.fuzz.checks import has_unknown_tags

    return has_unknown_tags(m)


# --------------------------------------------------------------------------- the oracle itself


@pytest.mark.slow
def test_versions_kafka_lacks_are_unsupported_not_rejected(kafka: KafkaOracle) -> None:
    produce_v2, leader_and_isr = kafka.read([(0, "request", 2, b""), (4, "request", 0, b"")])
    assert produce_v2.status == "unsupported" and "version 2" in produce_v2.reason
    assert leader_and_isr.status == "unsupported" and "API key 4" in leader_and_isr.reason
    assert 4 not in kafka.versions() and kafka.versions()[0].lowest == 3


@pytest.mark.slow
def test_trailing_bytes_are_a_rejection_on_both_sides(kafka: KafkaOracle) -> None:
    cls = MetadataRequest
    wire = MetadataRequest(topics=None).encode(12) + b"\x00"
    [k] = kafka.read([(3, "request", 12, wire)])
    assert k.status == "rejected" and "1 trailing bytes" in k.reason
    assert compare(kafkagen_read(cls, 12, wire), k) is None


@pytest.mark.slow
def test_a_rejection_names_kafkas_exception(kafka: KafkaOracle) -> None:
    wire = MetadataResponse(brokers=[], topics=[]).encode(12)
    [k] = kafka.read([(3, "response", 12, wire[:-3])])
    assert k.status == "rejected"
    assert k.reason.split(":")[0].startswith(("java.", "org.apache.kafka."))


@pytest.mark.slow
def test_json_kafka_cannot_read_is_a_rejection(kafka: KafkaOracle) -> None:
    missing, wrong_type = kafka.write(
        [(3, "request", 12, {}), (18, "request", 3, {"clientSoftwareName": 7})]
    )
    assert missing.status == "rejected" and missing.data == b""
    assert wrong_type.status == "rejected"


@pytest.mark.slow
def test_a_large_call_is_split_into_frames_in_order(
    kafka: KafkaOracle, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(oracle, "MAX_BATCH_ITEMS", 7)
    wires = [ApiVersionsRequest(client_software_name=f"c{i}").encode(3) for i in range(30)]
    got = kafka.read([(18, "request", 3, w) for w in wires])
    assert [k.data for k in got] == wires
    assert [k.json["clientSoftwareName"] for k in got] == [f"c{i}" for i in range(30)]


@pytest.mark.slow
def test_a_malformed_batch_is_refused_and_the_oracle_keeps_serving(kafka: KafkaOracle) -> None:
    with pytest.raises(OracleError, match="refused a batch.*unknown op 9"):
        kafka._exchange(b"\x00\x00\x00\x01\x09\x00\x00\x00\x00\x00\x00\x00\x00\x00")
    [k] = kafka.read([(18, "request", 0, b"")])
    assert k.ok and k.json == {}


@pytest.mark.slow
def test_a_jvm_that_dies_is_a_clear_error() -> None:
    k = KafkaOracle()
    k.start()
    try:
        assert k._proc is not None
        k._proc.kill()
        k._proc.wait()
        with pytest.raises(OracleError, match="stopped reading|exited"):
            k.read([(18, "request", 0, b"")])
    finally:
        k.close()
    assert k._proc is None


def test_without_a_jdk_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(OracleError, match="needs a JDK"):
        oracle.build()


@pytest.mark.slow
def test_a_tagged_null_struct_is_written_and_read_as_kafka_does() -> None:
    """ConsumerGroupMemberMetadataValue.ClassicMemberMetadata, a tagged nullable struct,
    judged by Kafka's group coordinator classes. Its spec's ``"default": null`` is no
    default to Kafka: the empty struct is the default, left out of the tagged fields; a
    null is written, marked with the varint 0 (a struct with 1), not the byte -1 a null
    struct has outside tagged fields."""
    value = ConsumerGroupMemberMetadataValue
    protocols = [value.ClassicProtocol(name="range", metadata=b"\x00\x01")]
    members = [
        value(client_id="kip-848", classic_member_metadata=None),
        value(client_id="default"),
        value(
            client_id="classic",
            classic_member_metadata=value.ClassicMemberMetadata(
                session_timeout_ms=45000, supported_protocols=protocols
            ),
        ),
    ]
    wires = [m.encode(0) for m in members]
    assert wires[0].endswith(b"\x01\x00\x01\x00")  # one tagged field: tag 0, 1 byte, null
    assert wires[1].endswith(b"\x00")  # no tagged field
    with KafkaOracle(coordinator_records=True) as kafka:
        read = kafka.read([(5, "coordinator-value", 0, w) for w in wires])
        written = kafka.write([(5, "coordinator-value", 0, m.to_json(0)) for m in members])
    for member, wire, theirs in zip(members, wires, read, strict=True):
        assert compare(kafkagen_read(value, 0, wire), theirs) is None, (member, theirs)
    assert [w.data for w in written] == wires
    assert read[0].json["classicMemberMetadata"] is None
    assert "classicMemberMetadata" not in read[1].json
