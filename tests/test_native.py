"""The native accelerator (runtime/_native.c) against the generated Python codecs.

Every decoder and encoder the accelerator installs must give the Python codec's result
exactly: the same bytes, objects of the same types holding the same values, the same
errors at the same offsets. Each native codec keeps the Python pair of its layout
(``python_decoder`` / ``python_encoder``), so both run here in one process on the same
input. Under ``KAFKAGEN_PURE_PYTHON=1`` only the test that the switch works runs.
"""

from __future__ import annotations

import gc
import math
import os
import random
import struct
import subprocess
import sys
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from kafkagen.fuzz.builders import random_message
from kafkagen.fuzz.checks import mutate
from kafkagen.generated import APIS, OTHER_TYPES, header_type, message_type, other_type
from kafkagen.generated.api_versions import ApiVersionsResponse
from kafkagen.generated.broker_heartbeat import BrokerHeartbeatRequest
from kafkagen.generated.delete_topics import DeleteTopicsResponse
from kafkagen.generated.fetch import FetchRequest, FetchResponse
from kafkagen.generated.fetch_snapshot import FetchSnapshotRequest
from kafkagen.generated.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafkagen.generated.metadata import MetadataRequest, MetadataResponse
from kafkagen.generated.produce import ProduceRequest
from kafkagen.runtime import message as runtime
from kafkagen.runtime.errors import DecodeError, UnsupportedVersionError
from kafkagen.runtime.message import KeyedList, Message, Struct, uses_native
from memory import growth

REPO = Path(__file__).resolve().parents[1]
PURE = os.environ.get("KAFKAGEN_PURE_PYTHON", "") not in ("", "0")
native_only = pytest.mark.skipif(PURE, reason="KAFKAGEN_PURE_PYTHON=1 turns the accelerator off")


def codec_classes() -> list[type[Message]]:
    classes = [message_type(key, kind) for key in sorted(APIS) for kind in ("request", "response")]
    classes += [header_type("request"), header_type("response")]
    return classes + [other_type(name) for name in sorted(OTHER_TYPES)]


CLASSES = codec_classes()
IDS = [cls.__name__ for cls in CLASSES]


def versions(cls: type[Message]) -> range:
    return range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1)


def python_codec(method: Any, name: str) -> Any:
    """The generated Python function behind a native codec's bound method."""
    return getattr(method.__self__, name)


@contextmanager
def pure_python(cls: type[Message]) -> Iterator[None]:
    """Within the block, ``cls`` decodes and encodes with its generated Python codecs."""
    saved = cls._decoders, cls._encoders
    cls._decoders = {v: python_codec(d, "python_decoder") for v, d in saved[0].items()}
    cls._encoders = {v: python_codec(e, "python_encoder") for v, e in saved[1].items()}
    try:
        yield
    finally:
        cls._decoders, cls._encoders = saved


def outcome(run: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", value), or ("error", what a caller can see of the exception)."""
    try:
        return "ok", run()
    except DecodeError as e:
        return "error", (type(e), e.reason, e.message, e.version, e.offset)
    except Exception as e:  # noqa: BLE001 - the type and text are what is compared
        return "error", (type(e), str(e))


def both(cls: type[Message], run: Callable[[], Any]) -> tuple[tuple[str, Any], tuple[str, Any]]:
    native = outcome(run)
    with pure_python(cls):
        python = outcome(run)
    return native, python


def difference(a: Any, b: Any, path: str = "$") -> str | None:
    """Where two decoded values differ in type or value (stricter than ``==``)."""
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, Struct):
        for slot in type(a).__slots__:
            found = difference(getattr(a, slot), getattr(b, slot), f"{path}.{slot}")
            if found:
                return found
        return None
    if isinstance(a, list | tuple):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(a, memoryview):
        same = (a.tobytes(), a.format, a.ndim, a.readonly, a.obj) == (
            b.tobytes(),
            b.format,
            b.ndim,
            b.readonly,
            b.obj,
        )
        return None if same else f"{path}: memoryviews differ"
    if isinstance(a, float):
        same = struct.pack(">d", a) == struct.pack(">d", b) or (math.isnan(a) and math.isnan(b))
        return None if same else f"{path}: {a!r} != {b!r}"
    if isinstance(a, uuid.UUID):
        return None if (a.int, a.is_safe) == (b.int, b.is_safe) else f"{path}: {a} != {b}"
    return None if a == b else f"{path}: {a!r} != {b!r}"


def assert_same(native: tuple[str, Any], python: tuple[str, Any], what: str) -> None:
    assert native[0] == python[0], f"{what}: native {native} but Python {python}"
    if native[0] == "error":
        assert native[1] == python[1], f"{what}: native {native[1]} but Python {python[1]}"
    else:
        found = difference(native[1], python[1])
        assert found is None, f"{what}: {found}"


# --------------------------------------------------------------------------- in use


@native_only
def test_the_accelerator_serves_every_message_at_every_version() -> None:
    assert runtime.native is not None, "the compiled accelerator did not load"
    assert Path(runtime.native.__file__).suffix in (".so", ".pyd")
    missing = [
        f"{cls.__name__} v{v}" for cls in CLASSES for v in versions(cls) if not uses_native(cls, v)
    ]
    assert not missing, f"pure Python codecs still in use: {missing}"


@native_only
def test_a_message_encodes_in_one_compiled_call_at_every_size() -> None:
    """``encode(version)`` and ``decode(data, version)`` are compiled methods; across the
    sizes where the output moves from the stack buffer to a grown bytes object, and grows
    again, and where decoding pauses the collector, the results are the Python codecs',
    and the collector runs again after every decode, failed or not. Sizes rise, then fall:
    a message starts with the room its type's last encoding took, more or less than it needs."""
    assert all(type(vars(cls)["encode"]).__name__ == "method_descriptor" for cls in CLASSES)
    # of the class itself: the interpreter's specialised call of a C method takes only that
    assert all(vars(cls)["encode"].__objclass__ is cls for cls in CLASSES)
    assert all(getattr(vars(cls)["decode"], "__self__", None) is cls for cls in CLASSES)
    request = ProduceRequest(
        acks=-1,
        timeout_ms=100,
        topic_data=[ProduceRequest.TopicProduceData(name="t", partition_data=[])],
    )
    partition = ProduceRequest.PartitionProduceData(index=0, records=b"")
    request.topic_data[0].partition_data.append(partition)
    for size in (0, 990, 1000, 1010, 1024, 2048, 16_300, 16_400, 40_000, 100_000, 30_000, 1000, 0):
        partition.records = bytes(random.Random(size).getrandbits(8) for _ in range(size))
        for version in (3, 9, 12):
            wire = request.encode(version)
            with pure_python(ProduceRequest):
                assert request.encode(version) == wire, f"{size} bytes at v{version}"
            for data in (wire, bytearray(wire), memoryview(wire)):
                assert ProduceRequest.decode(data, version) == request
            for cut in (wire[:-1], wire + b"\x00"):
                native = outcome(partial(ProduceRequest.decode, cut, version))
                with pure_python(ProduceRequest):
                    python = outcome(partial(ProduceRequest.decode, cut, version))
                assert_same(native, python, f"{size} bytes at v{version}, {len(cut)} given")
                assert gc.isenabled()


@native_only
def test_encode_follows_a_class_whose_encoders_are_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The compiled encode remembers the layouts it found by the class's encoders dict: a
    dict put in its place (as bind_native, the fuzz's checks and the tests do) is used from
    the next call, and the first one is again once it is back."""
    cls = message_type(3, "request")
    msg = MetadataRequest(topics=None)
    own = cls._encoders
    at_1, at_4 = msg.encode(1), msg.encode(4)

    def refusing(o: Any, w: Any) -> None:
        raise UnsupportedVersionError("refused here")

    monkeypatch.setattr(cls, "_encoders", {**own, 4: refusing})
    assert msg.encode(1) == at_1
    with pytest.raises(UnsupportedVersionError, match="refused here"):
        msg.encode(4)
    monkeypatch.setattr(cls, "_encoders", {**own, 4: own[1]})  # v1's layout at v4
    assert msg.encode(4) == at_1 != at_4
    monkeypatch.setattr(cls, "_encoders", own)
    assert (msg.encode(1), msg.encode(4)) == (at_1, at_4)


@pytest.mark.skipif(not PURE, reason="checks the KAFKAGEN_PURE_PYTHON=1 mode")
def test_the_environment_switch_keeps_every_codec_in_pure_python() -> None:
    assert runtime.native is None
    assert not any(uses_native(cls, v) for cls in CLASSES for v in versions(cls))


@pytest.mark.slow
@native_only
def test_the_pure_python_switch_works_in_a_fresh_process() -> None:
    code = (
        "from kafkagen.runtime import message; from kafkagen.generated.fetch import "
        "FetchResponse as F; print(message.native is None, message.uses_native(F, 12))"
    )
    env = {**os.environ, "KAFKAGEN_PURE_PYTHON": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["True", "False"]


def tiny_class(name: str) -> type[Message]:
    """A one-field message bound to hand-written Python codecs, for plan tests."""

    def dec(buf: Any, pos: int, end: int) -> tuple[Any, int]:
        o = runtime.new_instance(cls)
        o.a = struct.unpack_from(">i", buf, pos)[0]
        o.unknown_tagged_fields = ()
        return o, pos + 4

    def enc(o: Any, w: Callable[[bytes], Any]) -> None:
        w(struct.pack(">i", o.a))

    cls = type(name, (Message,), {"__slots__": ("a", "unknown_tagged_fields")})
    runtime.bind_codecs(cls, dec, dec, (0, 0, dec, enc))
    return cls


@native_only
def test_a_plan_the_accelerator_cannot_run_keeps_that_struct_on_python_codecs() -> None:
    good, odd, parent, unslotted = (tiny_class(n) for n in ("Good", "Odd", "Parent", "NoSlot"))
    good_plan = (good, False, (("int32", "a", 4),), (), "Good", ())
    odd_plan = (odd, False, (("complex128", "a"),), (), "Odd", ())  # a kind the C side lacks
    runtime.bind_native(good, None, (0, 0, good_plan))
    runtime.bind_native(odd, None, (0, 0, odd_plan))
    struct_op = ("struct", "a", False, odd_plan, "A", False)
    runtime.bind_native(parent, None, (0, 0, (parent, False, (struct_op,), (), "Parent", ())))
    unslotted_plan = (unslotted, False, (("int32", "b", 4),), (), "NoSlot", ())
    runtime.bind_native(unslotted, None, (0, 0, unslotted_plan))
    assert uses_native(good, 0)
    assert not uses_native(odd, 0) and not uses_native(parent, 0)
    assert not uses_native(unslotted, 0)
    for cls in (good, odd):
        m = runtime.new_instance(cls)
        m.a, m.unknown_tagged_fields = 7, ()
        assert m.encode(0) == b"\x00\x00\x00\x07"
        assert cls.decode(b"\x00\x00\x00\x07", 0).a == 7


# --------------------------------------------------------------------------- agreement


@native_only
def test_kafka_vectors_decode_and_encode_alike(vector_group: list[dict[str, Any]]) -> None:
    for v in vector_group:
        if v["kind"] in ("request", "response"):
            cls, version = message_type(v["api_key"], v["kind"]), v["version"]
        else:
            cls, version = header_type(v["kind"].removesuffix("_header")), v["header_version"]
        wire = bytes.fromhex(v["hex"])
        native, python = both(cls, partial(cls.decode, wire, version))
        assert_same(native, python, f"{cls.__name__} v{version} decode")
        assert native[0] == "ok"
        assert native[1].encode(version) == wire
        with pure_python(cls):
            assert native[1].encode(version) == wire


@native_only
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_random_messages_agree_at_every_version(cls: type[Message]) -> None:
    """Random messages (unknown tagged fields included at flexible versions) encode to the
    same bytes and decode to the same objects, with no call handed back to Python."""
    assert runtime.native is not None
    for version in versions(cls):
        for seed in range(4):
            m = random_message(cls, version, seed)
            before = runtime.native.fallbacks()
            wire = m.encode(version)
            decoded = cls.decode(wire, version)
            assert runtime.native.fallbacks() == before, "a valid message fell back to Python"
            with pure_python(cls):
                assert m.encode(version) == wire, f"v{version} seed {seed}: bytes differ"
                found = difference(decoded, cls.decode(wire, version))
            assert found is None, f"v{version} seed {seed}: {found}"
            assert decoded == m


@native_only
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_writing_at_another_version_gives_the_same_bytes_or_error(cls: type[Message]) -> None:
    """Down- and up-conversion: the same bytes, or the same UnsupportedVersionError text."""
    assert runtime.native is not None
    for version in versions(cls):
        m = random_message(cls, version, 7)
        for other in versions(cls):
            before = runtime.native.fallbacks()
            native = outcome(partial(m.encode, other))
            # A refusal is raised by the compiled encoder, not by the Python one run again.
            assert runtime.native.fallbacks() == before, f"v{version} at v{other} fell back"
            with pure_python(cls):
                python = outcome(partial(m.encode, other))
            assert_same(native, python, f"v{version} written at v{other}")


@native_only
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_mutated_encodings_fail_or_decode_alike(cls: type[Message]) -> None:
    """Truncated, flipped and extended encodings: the same DecodeError (reason, offset)
    or the same decoded objects, from bytes, bytearray and memoryview alike."""
    rng = random.Random(cls.__name__)
    for version in versions(cls):
        wire = random_message(cls, version, 3).encode(version)
        mutants = [wire[:cut] for cut in sorted({0, 1, len(wire) // 2, len(wire) - 1})]
        mutants.append(wire + b"\x00")
        for _ in range(6):
            if wire:
                at = rng.randrange(len(wire))
                flipped = bytearray(wire)
                flipped[at] = rng.choice((0x00, 0x7F, 0x80, 0xFF, flipped[at] ^ 0x01))
                mutants.append(bytes(flipped))
        for data in mutants:
            for wrap in (bytes, bytearray, memoryview):
                buf = wrap(data)
                native, python = both(cls, partial(cls.decode, buf, version))
                assert_same(native, python, f"v{version} decode of {data.hex()}")


def native_decode(cls: type[Message], data: Any, version: int) -> tuple[str, Any]:
    """The outcome of decoding with the accelerator, which must not hand the call back."""
    assert runtime.native is not None
    before = runtime.native.fallbacks()
    result = outcome(partial(cls.decode, data, version))
    assert runtime.native.fallbacks() == before, f"{cls.__name__} v{version}: fell back"
    return result


@pytest.mark.slow
@native_only
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_every_truncation_and_many_mutations_fail_alike_without_python(
    cls: type[Message],
) -> None:
    """Every prefix of an encoding and 50 of the fuzz job's mutations per version: the
    compiled decoder raises the pure-Python decoder's error itself (type, reason, message,
    version, offset), or decodes the same objects."""
    rng = random.Random(f"mutations of {cls.__name__}")
    for version in versions(cls):
        wire = random_message(cls, version, 3).encode(version)
        mutants = [wire[:cut] for cut in range(len(wire))]
        mutants += [mutate(wire, rng.getrandbits(48)) for _ in range(50)]
        for data in mutants:
            native = native_decode(cls, data, version)
            with pure_python(cls):
                python = outcome(partial(cls.decode, data, version))
            assert_same(native, python, f"v{version} decode of {data.hex()}")


#: One input per kind of failure, with the reason and offset both modes give.
FAILURES: list[tuple[type[Message], int, str, str, int]] = [
    # FindCoordinatorResponse v1: ThrottleTimeMs and ErrorCode, one 6-byte run, in 4 bytes
    (
        FindCoordinatorResponse,
        1,
        "00000000",
        "truncated: fixed-width fields run past the end (4 bytes left)",
        0,
    ),
    # FindCoordinatorRequest v0: Key "a\xffb", v3: compact Key "ab\xff"
    (FindCoordinatorRequest, 0, "000361ff62", "invalid UTF-8 in a string: invalid start byte", 3),
    (FindCoordinatorRequest, 3, "046162ff0000", "invalid UTF-8 in a string: invalid start byte", 3),
    (FindCoordinatorRequest, 3, "8080808080800000", "varint longer than 5 bytes", 0),
    (FindCoordinatorRequest, 3, "ffffffff1f", "varint exceeds 32 bits", 0),
    (FindCoordinatorRequest, 3, "80", "varint runs past the end", 0),
    (FindCoordinatorRequest, 0, "fffe", "negative string length -2", 0),
    (FindCoordinatorRequest, 3, "000000", "string is null but not nullable at this version", 0),
    (FindCoordinatorRequest, 0, "00056162", "string of length 5 exceeds the 2 bytes left", 2),
    (FindCoordinatorRequest, 0, "00", "truncated length", 0),
    (MetadataRequest, 0, "ffffffff", "array Topics is null but not nullable at this version", 0),
    (MetadataRequest, 4, "fffffffb01", "array Topics is of length -5", 0),
    (
        MetadataRequest,
        4,
        "7fffffff000174",
        "array Topics of length 2147483647 exceeds the 3 bytes left",
        4,
    ),
    # MetadataRequest v10: one topic whose TopicId has 5 of 16 bytes
    (MetadataRequest, 10, "020000000000", "truncated uuid", 1),
    # ProduceRequest v3: the Records of topic "t" partition 0 have length -2
    (
        ProduceRequest,
        3,
        "ffff000100000000000000010001740000000100000000fffffffe",
        "negative records length -2",
        23,
    ),
    # ApiVersionsResponse v3: ErrorCode, no ApiKeys, ThrottleTimeMs, then tagged fields
    (
        ApiVersionsResponse,
        3,
        "00000100000000ffffffff0f0100",
        "tagged fields of length 4294967295 exceeds the 2 bytes left",
        12,
    ),
    (
        ApiVersionsResponse,
        3,
        "000001000000000109808080800800",
        "tagged field of length 2147483648 exceeds the 1 bytes left",
        14,
    ),
    # tag 1 (FinalizedFeaturesEpoch, int64) in 9 bytes, then in 4 bytes: the int64 is read
    # from the whole input, past its tagged field, as the Python decoder's struct does
    (
        ApiVersionsResponse,
        3,
        "000001000000000101090000000000000000ff",
        "tagged field 1 has 1 bytes its value did not use",
        18,
    ),
    (
        ApiVersionsResponse,
        3,
        "00000100000000010104000000000000000000",
        "tagged field 1 has -4 bytes its value did not use",
        18,
    ),
    (
        ApiVersionsResponse,
        3,
        "0000010000000001010400000000",
        "truncated: fixed-width fields run past the end (4 bytes left)",
        10,
    ),
    # BrokerHeartbeatRequest v0 and v1: the fixed fields, then one tagged field a later
    # version has (tag 0 from v1, tag 1 from v2), refused at the tag
    (
        BrokerHeartbeatRequest,
        0,
        "00000001ffffffffffffffff0000000000000000000001000101",
        "tagged field 0 (BrokerHeartbeatRequest.OfflineLogDirs) exists only at versions 1+",
        23,
    ),
    (
        BrokerHeartbeatRequest,
        1,
        "00000001ffffffffffffffff0000000000000000000001010100",
        "tagged field 1 (BrokerHeartbeatRequest.CordonedLogDirs) exists only at versions 2+",
        23,
    ),
    # FetchSnapshotRequest v0: topic "t", partition 0 carrying tag 0 of v1+ (a struct that
    # knows no tag at v0)
    (
        FetchSnapshotRequest,
        0,
        "ffffffff7fffffff020274020000000000000000000000000000000000000000000000000000000000"
        "010001000000",
        "tagged field 0 (FetchSnapshotRequest.PartitionSnapshot.ReplicaDirectoryId) exists "
        "only at versions 1+",
        42,
    ),
]


@native_only
@pytest.mark.parametrize("cls, version, hex_data, reason, offset", FAILURES)
def test_each_kind_of_invalid_input_raises_from_the_compiled_decoder(
    cls: type[Message], version: int, hex_data: str, reason: str, offset: int
) -> None:
    data = bytes.fromhex(hex_data)
    expected = ("error", (DecodeError, reason, cls.__name__, version, offset))
    for wrap in (bytes, bytearray, memoryview):
        assert native_decode(cls, wrap(data), version) == expected
        with pure_python(cls):
            assert outcome(partial(cls.decode, wrap(data), version)) == expected


REFUSALS: list[tuple[str, Callable[[], Message], int, str]] = [
    (
        "a non-default value in a field absent at the version",
        lambda: FindCoordinatorRequest(key_type=1),
        0,
        "cannot write FindCoordinatorRequest.KeyType at version 0: it holds a non-default "
        "value and the field does not exist there",
    ),
    (
        "the same, in a nested struct",
        lambda: FindCoordinatorResponse(coordinators=[FindCoordinatorResponse.Coordinator()]),
        3,
        "cannot write FindCoordinatorResponse.Coordinators at version 3: it holds a "
        "non-default value and the field does not exist there",
    ),
    (
        "null in an array not nullable at the version",
        lambda: MetadataRequest(topics=None),
        0,
        "cannot write MetadataRequest.Topics at version 0: it is null and the field is not "
        "nullable there",
    ),
    (
        "null in a nested string not nullable at the version",
        lambda: DeleteTopicsResponse(
            responses=[DeleteTopicsResponse.DeletableTopicResult(name=None)]
        ),
        5,
        "cannot write DeleteTopicsResponse.DeletableTopicResult.Name at version 5: it is "
        "null and the field is not nullable there",
    ),
    (
        "unknown tagged fields at a version that is not flexible",
        lambda: FindCoordinatorRequest(key="k", unknown_tagged_fields=((1, b"x"),)),
        2,
        "cannot write FindCoordinatorRequest at version 2: it carries tagged fields and that "
        "version is not flexible",
    ),
]


@native_only
@pytest.mark.parametrize(
    "make, version, text", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_each_kind_of_refusal_raises_from_the_compiled_encoder(
    make: Callable[[], Message], version: int, text: str
) -> None:
    assert runtime.native is not None
    m = make()
    before = runtime.native.fallbacks()
    native = outcome(partial(m.encode, version))
    assert runtime.native.fallbacks() == before
    assert native == ("error", (UnsupportedVersionError, f"UNSUPPORTED_VERSION (35): {text}"))
    with pure_python(type(m)):
        assert outcome(partial(m.encode, version)) == native


# --------------------------------------------------------------------------- values


def wrong_values() -> list[Any]:
    return [None, "text", b"raw", 2**70, -(2**70), 1.5, float("nan"), object(), [], True]


@native_only
@pytest.mark.parametrize(
    "cls, version",
    [
        (MetadataResponse, 12),
        (MetadataRequest, 3),
        (FetchResponse, 12),
        (FetchResponse, 16),
        (ProduceRequest, 9),
        (FindCoordinatorResponse, 0),
        (FindCoordinatorResponse, 4),
    ],
)
def test_wrong_values_raise_the_python_codecs_errors(cls: type[Message], version: int) -> None:
    for slot in cls.__slots__:
        for value in wrong_values():
            m = random_message(cls, version, 1)
            setattr(m, slot, value)
            native, python = both(cls, partial(m.encode, version))
            assert_same(native, python, f"{cls.__name__}.{slot} = {value!r} at v{version}")


def struct_fields_equal(a: Any, b: Any) -> bool:
    """What a generated __eq__ computes, spelled out field by field in Python."""
    if isinstance(a, Struct):
        return type(a) is type(b) and all(
            struct_fields_equal(getattr(a, s), getattr(b, s)) for s in type(a).__slots__
        )
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) == len(b)
            and all(struct_fields_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    return bool(a == b)


@native_only
def test_compiled_equality_agrees_with_a_field_by_field_comparison() -> None:
    assert vars(MetadataResponse)["__eq__"] is runtime.native.eq_method  # type: ignore[union-attr]
    rng = random.Random(7)
    checked = unequal = 0
    for cls in (MetadataResponse, FetchResponse, ProduceRequest, FindCoordinatorResponse):
        for version in versions(cls):
            for seed in range(12):
                m = random_message(cls, version, seed)
                d = cls.decode(m.encode(version), version)
                assert d == m and not d != m
                other = random_message(cls, version, rng.randrange(10**6))
                assert (other == m) is struct_fields_equal(other, m)
                unequal += other != m
                checked += 1
    assert checked > 300 and unequal > checked // 2
    m = random_message(MetadataResponse, 12, 3)
    while not m.topics:
        m = random_message(MetadataResponse, 12, rng.randrange(10**6))
    d = MetadataResponse.decode(m.encode(12), 12)
    d.topics[-1].topic_authorized_operations ^= 1  # one nested field
    assert d != m
    assert m.__eq__(5) is NotImplemented and m != 5
    nan = random_message(FetchResponse, 16, 1)
    assert (nan == nan) is True  # identical objects, no NaN inside
    broken = object.__new__(MetadataResponse)
    with pytest.raises(AttributeError, match="has no attribute"):
        _ = broken == m


def oversized_uuid() -> uuid.UUID:
    """A UUID whose int does not fit 128 bits. A fresh one: the field may hold the shared
    default UUID, which must stay intact for later tests."""
    u = uuid.UUID(int=1)
    object.__setattr__(u, "int", 2**130)
    return u


@native_only
def test_wrong_values_in_nested_structs_and_arrays_raise_alike() -> None:
    cls = MetadataResponse
    cases: list[tuple[str, Callable[[Any], None]]] = [
        ("topic name int", lambda m: setattr(m.topics[0], "name", 5)),
        ("partition id str", lambda m: setattr(m.topics[0].partitions[0], "partition_index", "x")),
        ("replica out of range", lambda m: m.topics[0].partitions[0].replica_nodes.append(2**31)),
        ("replica none", lambda m: m.topics[0].partitions[0].replica_nodes.append(None)),
        ("topics tuple", lambda m: setattr(m, "topics", tuple(m.topics))),
        ("topics generator", lambda m: setattr(m, "topics", iter(m.topics))),
        ("item of another class", lambda m: m.topics.append(m.brokers[0])),
        ("unknown tags not tuples", lambda m: setattr(m, "unknown_tagged_fields", [[9, b"x"]])),
        ("unknown tag negative", lambda m: setattr(m, "unknown_tagged_fields", ((-1, b"x"),))),
        ("unknown tag huge", lambda m: setattr(m, "unknown_tagged_fields", ((2**40, b"x"),))),
        ("unknown tag str value", lambda m: setattr(m, "unknown_tagged_fields", ((9, "x"),))),
        ("topic id not uuid", lambda m: setattr(m.topics[0], "topic_id", "not-a-uuid")),
        ("surrogate in a string", lambda m: setattr(m.topics[0], "name", "\ud800")),
        ("uuid over 128 bits", lambda m: setattr(m.topics[0], "topic_id", oversized_uuid())),
    ]
    for what, change in cases:
        for version in (1, 9, 12):
            m = random_message(cls, version, 2)
            while not m.topics or not m.topics[0].partitions or not m.brokers:
                m = random_message(cls, version, random.randrange(10**6))
            change(m)
            native, python = both(cls, partial(m.encode, version))
            assert_same(native, python, f"{what} at v{version}")


@native_only
def test_unknown_tags_merge_with_known_ones_in_tag_order() -> None:
    m = random_message(FetchResponse, 16, 4)
    m.node_endpoints = KeyedList([FetchResponse.NodeEndpoint(node_id=1, host="h", port=9)])
    m.unknown_tagged_fields = ((5, b"e"), (1, b"z"), (3, b"c"), (1, b"a"))
    native, python = both(FetchResponse, partial(m.encode, 16))
    assert_same(native, python, "merged tags")
    assert native[0] == "ok"
    again = FetchResponse.decode(native[1], 16)
    assert again.node_endpoints == m.node_endpoints
    assert again.unknown_tagged_fields == ((1, b"z"), (1, b"a"), (3, b"c"), (5, b"e"))


@native_only
@pytest.mark.parametrize("tag, kept", [(0, False), (1, False), (2, True), (9, True)])
def test_a_tag_of_another_version_is_refused_and_a_never_known_one_kept_alike(
    tag: int, kept: bool
) -> None:
    # At v12 FetchPartition knows no tag; it has tag 0 from v17 and tag 1 from v18.
    value = b"\x07" * 16
    part = FetchRequest.FetchPartition(partition=3, unknown_tagged_fields=((tag, value),))
    wire = FetchRequest(topics=[FetchRequest.FetchTopic(topic="t", partitions=[part])]).encode(12)
    native = native_decode(FetchRequest, wire, 12)
    with pure_python(FetchRequest):
        python = outcome(partial(FetchRequest.decode, wire, 12))
    assert_same(native, python, f"tag {tag}")
    assert_same(*both(FetchRequest, partial(FetchRequest.decode_prefix, wire, 12)), "prefix")
    if kept:
        assert native[0] == "ok"
        assert native[1].topics[0].partitions[0].unknown_tagged_fields == ((tag, value),)
        assert native[1].encode(12) == wire
    else:
        assert native[0] == "error" and "exists only at versions" in native[1][1]


@native_only
def test_many_unknown_tags_in_any_order_encode_alike() -> None:
    m = FindCoordinatorRequest(key="k")
    m.unknown_tagged_fields = tuple((t % 37, bytes([t % 251])) for t in range(200, 0, -1))
    native, python = both(FindCoordinatorRequest, partial(m.encode, 3))
    assert_same(native, python, "200 unknown tags")
    assert native[0] == "ok"
    tags = FindCoordinatorRequest.decode(native[1], 3).unknown_tagged_fields
    assert tags == tuple(sorted(m.unknown_tagged_fields, key=lambda t: t[0]))


# --------------------------------------------------------------------------- objects


@native_only
def test_decoded_objects_are_built_like_the_python_decoder_builds_them() -> None:
    m = random_message(FetchResponse, 12, 5)
    while not m.responses or not m.responses[0].partitions:
        m = random_message(FetchResponse, 12, random.randrange(10**6))
    m.responses[0].partitions[0].records = b"\x01" * 40
    wire = bytearray(m.encode(12))
    a = FetchResponse.decode(wire, 12)
    b = FetchResponse.decode(wire, 12)
    p, q = a.responses[0].partitions[0], b.responses[0].partitions[0]
    assert isinstance(p.records, memoryview) and p.records.obj is wire
    assert p.records.tobytes() == b"\x01" * 40
    # struct defaults of absent tagged fields: equal, fresh per object, never the shared one
    assert p.diverging_epoch == q.diverging_epoch
    assert p.diverging_epoch is not q.diverging_epoch
    assert p.diverging_epoch is not FetchResponse.PartitionData().diverging_epoch
    # arrays absent at a version: a fresh KeyedList per object
    assert type(a.node_endpoints) is KeyedList and a.node_endpoints == []
    assert a.node_endpoints is not b.node_endpoints
    meta = random_message(MetadataResponse, 12, 3)
    decoded = MetadataResponse.decode(meta.encode(12), 12)
    assert type(decoded.topics) is KeyedList and type(decoded.brokers) is KeyedList
    for t in decoded.topics:
        assert type(t.topic_id) is uuid.UUID and t.topic_id.is_safe is uuid.SafeUUID.unknown
        assert t.topic_id == uuid.UUID(int=t.topic_id.int)


def reference_counts(value: Any) -> list[tuple[str, int]]:
    """The reference count of every struct, list, view and uuid in a decoded tree."""
    counts: list[tuple[str, int]] = []

    def walk(v: Any) -> None:
        if isinstance(v, Struct | list | memoryview | uuid.UUID):
            counts.append((type(v).__name__, sys.getrefcount(v)))
        if isinstance(v, Struct):
            for slot in type(v).__slots__:
                walk(getattr(v, slot))
        elif isinstance(v, list):
            for item in v:
                walk(item)

    walk(value)
    return counts


@native_only
@pytest.mark.parametrize("cls, version", [(MetadataResponse, 12), (FetchResponse, 12)])
def test_decoded_objects_hold_exactly_the_python_decoders_references(
    cls: type[Message], version: int
) -> None:
    wire = random_message(cls, version, 3).encode(version)
    native = cls.decode(wire, version)
    with pure_python(cls):
        python = cls.decode(wire, version)
    native_counts, python_counts = reference_counts(native), reference_counts(python)
    assert len(native_counts) > 3
    assert native_counts == python_counts


@native_only
def test_repeated_failing_and_succeeding_decodes_do_not_grow_memory() -> None:
    meta = random_message(MetadataResponse, 12, 3)
    wire = meta.encode(12)
    cuts = [wire[:n] for n in range(0, len(wire), max(1, len(wire) // 50))]

    def run() -> None:
        for data in cuts:
            try:
                MetadataResponse.decode(data, 12)
            except DecodeError:
                pass
        for cls, version, hex_data, _, _ in FAILURES:  # each kind of DecodeError from C
            try:
                cls.decode(bytes.fromhex(hex_data), version)
            except DecodeError:
                pass
        MetadataResponse.decode(wire, 12).encode(12)
        FindCoordinatorRequest(key="k").encode(1)
        for _, make, version, _ in REFUSALS:  # each kind of refusal from C
            try:
                make().encode(version)
            except UnsupportedVersionError:
                pass
        try:  # an encode the native side hands back to Python, which raises
            FindCoordinatorRequest(key=None).encode(0)  # type: ignore[arg-type]
        except ValueError:
            pass

    grown = growth(run, 20)
    assert grown < 64 * 1024, f"memory grew by {grown} bytes over 20 rounds"


@native_only
def test_failing_decodes_and_refusals_keep_no_reference() -> None:
    """Errors raised by the compiled codecs hold no reference to the input, the message or
    its values, and release the input's buffer (a bytearray can be resized again)."""
    refused = [(make(), version) for _, make, version, _ in REFUSALS]
    # their lists and structs: shared values (None, 0, "") are referenced from everywhere
    values = [getattr(m, slot) for m, _ in refused for slot in type(m).__slots__]
    values = [v for v in values if isinstance(v, list | Struct)]
    assert values
    inputs = [(cls, version, bytearray.fromhex(h)) for cls, version, h, _, _ in FAILURES]
    wire = bytearray(random_message(FetchResponse, 12, 5).encode(12))
    inputs += [(FetchResponse, 12, wire[:cut]) for cut in range(0, len(wire), 7)]

    def counts() -> list[int]:
        objects: list[Any] = [m for m, _ in refused] + values + [buf for _, _, buf in inputs]
        return [sys.getrefcount(o) for o in objects]

    def fail_all() -> None:
        for cls, version, buf in inputs:
            for data in (buf, memoryview(buf)):
                with pytest.raises(DecodeError):
                    cls.decode(data, version)
        for m, version in refused:
            with pytest.raises(UnsupportedVersionError):
                m.encode(version)

    fail_all()
    before = counts()
    for _ in range(3):
        fail_all()
    assert counts() == before
    for _, _, buf in inputs:
        buf.append(0)  # BufferError if a failed decode kept the buffer exported
        del buf[-1]


@native_only
def test_a_length_prefix_larger_than_the_input_allocates_nothing_large() -> None:
    # MetadataRequest v9: a compact topics array claiming 2**31 items in 5 bytes of input
    data = b"\x80\x80\x80\x80\x08\x00\x00\x00"
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError):
            MetadataRequest.decode(data, 9)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024


@native_only
def test_a_large_corrupt_count_reserves_nothing_for_items_never_read() -> None:
    # FindCoordinatorResponse v4: throttle, then a compact array of 10**6 coordinators
    # whose first item is already invalid (a null key), in about 1 MB of input
    count = 10**6 + 1
    varint = bytes([count & 0x7F | 0x80, count >> 7 & 0x7F | 0x80, count >> 14])
    data = b"\x00\x00\x00\x00" + varint + bytes(10**6)
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError):
            FindCoordinatorResponse.decode(data, 4)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(data) // 4, f"peak {peak} bytes for {len(data)} bytes of input"


# --------------------------------------------------------------------------- both modes

CODEC_TESTS = ["test_vectors.py", "test_codec_contract.py", "test_codec_properties.py"]


@pytest.mark.slow
@native_only
def test_the_codec_suites_pass_in_pure_python_mode_too() -> None:
    """The same suites, run with the accelerator switched off (this run has it on)."""
    env = {**os.environ, "KAFKAGEN_PURE_PYTHON": "1"}
    files = [str(REPO / "tests" / f) for f in [*CODEC_TESTS, "test_malformed.py"]]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *files],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
