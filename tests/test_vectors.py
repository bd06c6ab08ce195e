"""Kafka's golden vectors: our codecs agree with Kafka's own generated classes, byte for byte.

Each of the 5,270 vectors in ``tests/data/kafka-4.0.0-SNAPSHOT/vectors.jsonl.gz`` is a
message Kafka encoded (``hex``) together with Kafka's JSON converter form of it (``json``).
For every vector: decoding then encoding gives the same bytes, ``to_json`` gives Kafka's
JSON, and ``from_json`` of Kafka's JSON encodes to the same bytes. There is one test per
(API, kind, version) group, so a failure names its group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kafka_since import DROPPED, REDEFINED, kafka_json, still_defined
from kafkagen.generated import header_type, header_version, message_type
from kafkagen.oracle import first_json_difference
from kafkagen.runtime.errors import DecodeError
from kafkagen.runtime.message import Message

Vector = dict[str, Any]


def codec_of(v: Vector) -> tuple[type[Message], int]:
    """The class and version a vector's bytes are encoded with."""
    kind = v["kind"]
    if kind in ("request", "response"):
        return message_type(v["api_key"], kind), v["version"]
    return header_type(kind.removesuffix("_header")), v["header_version"]


def describe(v: Vector) -> str:
    return f"{v['api_name']} {v['kind']} v{v['version']} hex={v['hex'][:80]}"


# --------------------------------------------------------------------------- per group


def test_vector_group(vector_group: list[Vector]) -> None:
    """Every vector of one (API, kind, version): bytes -> message -> the same bytes; the
    message's JSON is Kafka's; Kafka's JSON -> the same message and the same bytes."""
    for v in vector_group:
        cls, version = codec_of(v)
        wire = bytes.fromhex(v["hex"])
        decoded = cls.decode(wire, version)
        assert decoded.encode(version) == wire, f"re-encoding differs: {describe(v)}"
        want = kafka_json(v)
        mismatch = first_json_difference(decoded.to_json(version), want)
        assert mismatch is None, f"to_json differs at {mismatch}: {describe(v)}"
        from_json = cls.from_json(want, version)
        assert from_json == decoded, f"from_json differs from decode: {describe(v)}"
        assert from_json.encode(version) == wire, f"from_json encodes differently: {describe(v)}"


def test_versions_kafka_dropped_or_redefined_are_not_the_snapshots(
    vectors: tuple[Vector, ...],
) -> None:
    dropped = [v for v in vectors if (v["api_key"], v["version"]) in DROPPED]
    assert {v["kind"] for v in dropped} >= {"request", "response"}
    for v in dropped:
        cls = message_type(v["api_key"], v["kind"].removesuffix("_header"))
        assert v["version"] < cls.LOWEST_VERSION, describe(v)
    redefined = [v for v in vectors if (v["api_key"], v["version"]) in REDEFINED]
    assert redefined
    differ = 0
    for v in redefined:
        if v["kind"] not in ("request", "response"):
            continue
        cls, version = codec_of(v)
        wire = bytes.fromhex(v["hex"])
        try:
            decoded = cls.decode(wire, version).to_json(version)
            same = first_json_difference(decoded, v["json"]) is None
        except DecodeError:
            same = False
        differ += not same
    assert differ > 0, "4.4.0's version reads the snapshot's vectors: drop it from REDEFINED"


def test_header_vectors_use_the_header_version_of_their_api_version(
    vectors: tuple[Vector, ...],
) -> None:
    headers = [v for v in vectors if v["kind"] in ("request_header", "response_header")]
    assert len(headers) == 100
    for v in filter(still_defined, headers):
        kind = v["kind"].removesuffix("_header")
        assert header_version(v["api_key"], v["version"], kind) == v["header_version"], describe(v)


# --------------------------------------------------------------------------- input types


def in_larger_buffer(wire: bytes) -> memoryview:
    """A view of ``wire`` in the middle of a bigger buffer: decoders must use the view's
    own indices and length, not the underlying object's."""
    return memoryview(b"\xee" * 7 + wire + b"\xdd" * 5)[7 : 7 + len(wire)]


WRAPPERS: dict[str, Callable[[bytes], Any]] = {
    "bytearray": bytearray,
    "memoryview": memoryview,
    "memoryview-slice": in_larger_buffer,
}


@pytest.mark.parametrize("wrap", WRAPPERS.values(), ids=list(WRAPPERS))
def test_every_vector_decodes_the_same_from_other_buffer_types(
    wrap: Callable[[bytes], Any], vectors: tuple[Vector, ...]
) -> None:
    wrong = []
    for v in filter(still_defined, vectors):
        cls, version = codec_of(v)
        wire = bytes.fromhex(v["hex"])
        m = cls.decode(wrap(wire), version)
        if m != cls.decode(wire, version) or m.encode(version) != wire:
            wrong.append(describe(v))
    assert wrong == []


def test_vector_file_holds_every_group_the_readme_promises(vectors: tuple[Vector, ...]) -> None:
    kinds: dict[str, int] = {}
    for v in vectors:
        kinds[v["kind"]] = kinds.get(v["kind"], 0) + 1
    assert len(vectors) == 5270
    assert kinds == {"request": 2554, "response": 2616, "request_header": 60, "response_header": 40}
    assert {v["api_key"] for v in vectors if v["kind"] == "request"} == set(range(88))
