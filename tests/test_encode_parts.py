"""`Message.encode_parts`: an encoding in pieces, stored batches passed by reference.

For every message that carries records (Fetch, ShareFetch and FetchSnapshot answers,
Produce requests) at every version, with the accelerator and without: the pieces joined are
the bytes `encode` gives, and each records value of at least `PARTS_MIN` bytes (bytes or a
memoryview) is one of the pieces itself, while smaller ones and bytearrays are copied.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import note
from hypothesis import strategies as st
from kafkagen.fuzz.strategies import message_strategy
from kafkagen.generated import message_type
from kafkagen.runtime import message as message_module
from kafkagen.runtime.errors import UnsupportedVersionError
from kafkagen.runtime.message import PARTS_MIN, Message, Struct
from test_codec_properties import EXAMPLES, all_versions, at_each_version

WITH_RECORDS = [
    message_type(1, "response"),  # Fetch
    message_type(78, "response"),  # ShareFetch
    message_type(59, "response"),  # FetchSnapshot
    message_type(0, "request"),  # Produce
]
RECORD_ATTRS = ("records", "unaligned_records")
SIZES = [0, 1, 100, PARTS_MIN - 1, PARTS_MIN, PARTS_MIN + 1, 5 * PARTS_MIN + 3]
MODES = ["native", "python"]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "native":
        if message_module.native is None:
            pytest.skip("the accelerator is not built")
    else:
        monkeypatch.setattr(message_module, "native", None)
    return str(request.param)


def record_holders(obj: Any) -> list[tuple[Struct, str]]:
    """Every (struct, attribute) under ``obj`` holding a records value that is not null."""
    found: list[tuple[Struct, str]] = []
    if isinstance(obj, Struct):
        for attr in obj._fields:
            value = getattr(obj, attr)
            if attr in RECORD_ATTRS and value is not None:
                found.append((obj, attr))
            elif isinstance(value, (Struct, list)):
                found += record_holders(value)
    elif isinstance(obj, list):
        for item in obj:
            found += record_holders(item)
    return found


@st.composite
def buffers(draw: st.DrawFn) -> bytes | memoryview | bytearray:
    size = draw(st.sampled_from(SIZES))
    data = random.Random(draw(st.integers(0, 2**32))).randbytes(size + 7)
    kind = draw(st.sampled_from(["bytes", "view", "view of part", "bytearray"]))
    if kind == "bytes":
        return data[:size]
    if kind == "view":
        return memoryview(data[:size])
    if kind == "view of part":
        return memoryview(data)[3 : 3 + size]
    return bytearray(data[:size])


@st.composite
def with_stored_batches(draw: st.DrawFn, cls: type[Message], version: int) -> Message:
    m = draw(message_strategy(cls, version))
    for holder, attr in record_holders(m):
        setattr(holder, attr, draw(buffers()))
    return m


def check_parts(m: Message, version: int) -> None:
    wire = m.encode(version)
    parts = m.encode_parts(version)
    note(f"pieces: {[(type(p).__name__, len(p)) for p in parts]}")
    assert all(isinstance(p, (bytes, memoryview)) for p in parts)
    assert b"".join(parts) == wire
    for holder, attr in record_holders(m):
        value = getattr(holder, attr)
        by_reference = any(p is value for p in parts)
        if len(value) >= PARTS_MIN and isinstance(value, (bytes, memoryview)):
            assert by_reference, f"a {len(value)}-byte {type(value).__name__} was copied"
        else:
            assert not by_reference


@pytest.mark.parametrize("cls", WITH_RECORDS, ids=lambda c: c.__name__)
def test_parts_join_to_the_encoding_with_large_batches_by_reference(
    cls: type[Message], mode: str
) -> None:
    at_each_version(
        cls,
        all_versions(cls),
        lambda v: with_stored_batches(cls, v),
        check_parts,
        max(EXAMPLES, 10),
    )


def parts_join(m: Message, version: int) -> None:
    assert b"".join(m.encode_parts(version)) == m.encode(version)


@pytest.mark.parametrize("cls", WITH_RECORDS, ids=lambda c: c.__name__)
def test_parts_of_random_messages_join_to_the_encoding(cls: type[Message], mode: str) -> None:
    at_each_version(cls, all_versions(cls), lambda v: message_strategy(cls, v), parts_join)


def test_a_message_without_records_is_one_piece(mode: str) -> None:
    request = message_type(18, "request")(client_software_name="x", client_software_version="1")
    assert request.encode_parts(3) == [request.encode(3)]


def test_parts_raise_what_encode_raises(mode: str) -> None:
    cls = message_type(1, "response")
    big = bytes(2 * PARTS_MIN)
    partition = cls.PartitionData(records=big)
    m = cls(responses=[cls.FetchableTopicResponse(topic="t", partitions=[partition])])
    partition.unknown_tagged_fields = ((7, b"x"),)  # FetchResponse is flexible from v12
    with pytest.raises(UnsupportedVersionError) as encoding:
        m.encode(11)
    with pytest.raises(UnsupportedVersionError) as parts:
        m.encode_parts(11)
    assert str(parts.value) == str(encoding.value)
    partition.high_watermark = "not a number"
    with pytest.raises(ValueError) as encoding_v:
        m.encode(13)
    with pytest.raises(ValueError) as parts_v:
        m.encode_parts(13)
    assert str(parts_v.value) == str(encoding_v.value)


@pytest.mark.skipif(message_module.native is None, reason="the accelerator is not built")
def test_the_compiled_encoder_makes_the_pieces_at_every_fetch_version() -> None:
    cls = message_type(1, "response")
    batch = memoryview(bytes(range(256)) * (PARTS_MIN // 64))
    m = cls(responses=[cls.FetchableTopicResponse(partitions=[cls.PartitionData(records=batch)])])
    for version in all_versions(cls):
        parts = message_module.native.encode_parts(m, version, PARTS_MIN)
        assert parts is not None, f"v{version} went to the Python encoder"
        # the bytes before the batch, the batch, and any after it (tags, later fields)
        assert len(parts) in (2, 3) and parts[1] is batch
        assert b"".join(parts) == m.encode(version)
