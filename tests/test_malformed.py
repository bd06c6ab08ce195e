"""Malformed input: every way bytes can be wrong gives a DecodeError naming the message, the
version and the byte offset, and never costs more memory than the input itself.

Each case is a hand-built byte string whose layout is spelled out next to it; each is
decoded from bytes, bytearray and memoryview alike.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from kafkagen.generated import header_type, message_type
from kafkagen.generated.api_versions import ApiVersionsResponse
from kafkagen.generated.find_coordinator import FindCoordinatorRequest
from kafkagen.generated.metadata import MetadataRequest, MetadataResponse
from kafkagen.generated.produce import ProduceRequest, ProduceResponse
from kafkagen.runtime.errors import DecodeError
from kafkagen.runtime.message import Message
from kafkagen.runtime.wire import RawTags

Vector = dict[str, Any]

WRAPPERS: dict[str, Callable[[bytes], Any]] = {
    "bytes": bytes,
    "bytearray": bytearray,
    "memoryview": memoryview,
}


@pytest.fixture(params=list(WRAPPERS.values()), ids=list(WRAPPERS))
def wrap(request: pytest.FixtureRequest) -> Callable[[bytes], Any]:
    wrapper: Callable[[bytes], Any] = request.param
    return wrapper


def decode_error(cls: type[Message], data: Any, version: int) -> DecodeError:
    """The DecodeError that decoding ``data`` raises (any other outcome fails the test)."""
    with pytest.raises(DecodeError) as info:
        cls.decode(data, version)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.message == cls.__name__
    assert err.version == version
    assert 0 <= err.offset <= len(data)
    assert f"{cls.__name__} v{version}" in str(err)
    assert f"at byte {err.offset}" in str(err)
    return err


# --------------------------------------------------------------------------- truncation


def codec_of(v: Vector) -> tuple[type[Message], int]:
    if v["kind"] in ("request", "response"):
        return message_type(v["api_key"], v["kind"]), v["version"]
    return header_type(v["kind"].removesuffix("_header")), v["header_version"]


def truncation_subject(group: list[Vector]) -> Vector:
    """The group's longest vector of at most 200 bytes (its shortest if none is that short):
    long enough to reach nested structs, short enough to cut at every byte."""
    short = [v for v in group if len(v["hex"]) <= 400]
    if not short:
        return min(group, key=lambda v: len(v["hex"]))
    return max(short, key=lambda v: len(v["hex"]))


def test_every_truncation_of_a_vector_is_a_decode_error(vector_group: list[Vector]) -> None:
    v = truncation_subject(vector_group)
    cls, version = codec_of(v)
    wire = bytes.fromhex(v["hex"])
    wrong = []
    for cut in range(len(wire)):  # a plain loop: pytest.raises per cut would triple the cost
        try:
            cls.decode(wire[:cut], version)
        except DecodeError as err:
            if (err.message, err.version) != (cls.__name__, version) or not 0 <= err.offset <= cut:
                wrong.append(f"cut at {cut}: {err} (offset {err.offset})")
        else:
            wrong.append(f"cut at {cut}: decoded without error")
    assert wrong == [], v["hex"]


def test_truncated_input_of_any_buffer_type(wrap: Callable[[bytes], Any]) -> None:
    wire = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="topic")]).encode(4)
    err = decode_error(MetadataRequest, wrap(wire[:-3]), 4)
    assert err.offset <= len(wire) - 3


def test_a_truncated_fixed_width_field_is_reported_where_it_starts(
    wrap: Callable[[bytes], Any],
) -> None:
    # FindCoordinatorResponse v0: ErrorCode int16, then NodeId int32 with only 2 of 4 bytes.
    cls = message_type(10, "response")
    err = decode_error(cls, wrap(bytes.fromhex("00000000")), 0)
    assert err.offset == 2
    # the project's own words, not struct.error's (which vary between Python versions)
    assert err.reason == "truncated: fixed-width fields run past the end (2 bytes left)"


def test_empty_input_is_a_decode_error_at_byte_0(wrap: Callable[[bytes], Any]) -> None:
    assert decode_error(FindCoordinatorRequest, wrap(b""), 0).offset == 0


# --------------------------------------------------------------------------- negative lengths


def test_string_length_minus_2_is_rejected(wrap: Callable[[bytes], Any]) -> None:
    # FindCoordinatorRequest v0: Key string (int16 length -2).
    err = decode_error(FindCoordinatorRequest, wrap(bytes.fromhex("fffe")), 0)
    assert err.offset == 0


def test_nullable_string_length_minus_2_is_rejected(wrap: Callable[[bytes], Any]) -> None:
    # ProduceRequest v3: TransactionalId nullable string -2, Acks, TimeoutMs, TopicData [].
    wire = bytes.fromhex("fffe00010000000000000000")
    err = decode_error(ProduceRequest, wrap(wire), 3)
    assert err.offset == 0
    assert "-2" in err.reason


def test_nullable_string_length_minus_1_is_null() -> None:
    wire = bytes.fromhex("ffff00010000000000000000")
    assert ProduceRequest.decode(wire, 3).transactional_id is None


def test_array_length_minus_5_is_rejected(wrap: Callable[[bytes], Any]) -> None:
    # MetadataRequest v4: Topics nullable array (-5), AllowAutoTopicCreation.
    err = decode_error(MetadataRequest, wrap(bytes.fromhex("fffffffb01")), 4)
    assert err.offset == 0
    assert "-5" in err.reason


def test_null_array_where_the_version_is_not_nullable_is_rejected(
    wrap: Callable[[bytes], Any],
) -> None:
    # MetadataRequest v0: Topics is not nullable yet.
    err = decode_error(MetadataRequest, wrap(bytes.fromhex("ffffffff")), 0)
    assert err.offset == 0


def test_bytes_length_minus_2_is_rejected(wrap: Callable[[bytes], Any]) -> None:
    # SaslAuthenticateRequest v0: AuthBytes (int32 length -2).
    cls = message_type(36, "request")
    assert decode_error(cls, wrap(bytes.fromhex("fffffffe")), 0).offset == 0


def test_records_length_minus_2_is_rejected(wrap: Callable[[bytes], Any]) -> None:
    # ProduceRequest v3: null TransactionalId, Acks, TimeoutMs, one topic "t" with one
    # partition 0 whose nullable Records length is -2.
    wire = bytes.fromhex("ffff000100000000000000010001740000000100000000fffffffe")
    err = decode_error(ProduceRequest, wrap(wire), 3)
    assert err.offset == len(wire) - 4


def test_compact_length_zero_for_a_non_nullable_string_is_rejected(
    wrap: Callable[[bytes], Any],
) -> None:
    # FindCoordinatorRequest v3: Key compact string whose length varint 0 means null.
    err = decode_error(FindCoordinatorRequest, wrap(bytes.fromhex("000000")), 3)
    assert err.offset == 0


# --------------------------------------------------------------------------- oversized lengths

# Each input claims far more than it holds, with a few bytes left after the length.
OVERSIZED: dict[str, tuple[type[Message], int, bytes]] = {
    # MetadataRequest v4: Topics array of 2^31-1 structs, then 3 bytes.
    "array-2^31-1": (MetadataRequest, 4, bytes.fromhex("7fffffff000174")),
    # MetadataRequest v9: compact Topics array, varint 2^32-1 (count 2^32-2), then 4 bytes.
    "compact-array-2^32-2": (MetadataRequest, 9, bytes.fromhex("ffffffff0f00010000")),
    # MetadataResponse v0: one topic, one partition, ReplicaNodes []int32 of 2^31-1.
    "int32-array-2^31-1": (
        MetadataResponse,
        0,
        bytes.fromhex(
            "0000000000000001000000017400000001000000000000000000007fffffff0102030400000000"
        ),
    ),
    # FindCoordinatorRequest v0: Key string of 32767 bytes, then 2 bytes.
    "string-32767": (FindCoordinatorRequest, 0, bytes.fromhex("7fff6162")),
    # SaslAuthenticateRequest v0: AuthBytes of 2^31-1 bytes, then 4 bytes.
    "bytes-2^31-1": (message_type(36, "request"), 0, bytes.fromhex("7fffffff01020304")),
    # ProduceRequest v3: Records of 2^31-1 bytes in topic "t", partition 0.
    "records-2^31-1": (
        ProduceRequest,
        3,
        bytes.fromhex("ffff0001000000000000000100017400000001000000007fffffff0102"),
    ),
    # ApiVersionsResponse v3: a tagged-field section claiming 2^32-2 fields.
    "tag-count-2^32-1": (
        ApiVersionsResponse,
        3,
        bytes.fromhex("00000100000000ffffffff0f0100"),
    ),
    # ApiVersionsResponse v3: one tagged field (tag 9) of 2^31 bytes.
    "tag-size-2^31": (
        ApiVersionsResponse,
        3,
        bytes.fromhex("000001000000000109808080800800"),
    ),
}


@pytest.mark.parametrize("case", OVERSIZED.values(), ids=list(OVERSIZED))
def test_an_oversized_length_fails_fast_without_allocating(
    case: tuple[type[Message], int, bytes], wrap: Callable[[bytes], Any]
) -> None:
    cls, version, wire = case
    data = wrap(wire)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(DecodeError) as info:
            cls.decode(data, version)
        took = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (info.value.message, info.value.version) == (cls.__name__, version)
    assert peak < 64 * 1024, f"decoding {len(wire)} bytes allocated {peak} bytes"
    assert took < 1.0


def test_an_oversized_length_names_where_it_starts() -> None:
    err = decode_error(MetadataRequest, bytes.fromhex("7fffffff000174"), 4)
    assert err.offset in (0, 4)  # the length prefix, or the first byte it claims
    assert "2147483647" in err.reason


# --------------------------------------------------------------------------- strings


@pytest.mark.parametrize(
    "bad",
    [
        "fffe",  # never valid in UTF-8
        "c0af",  # overlong encoding of "/"
        "eda080",  # a UTF-16 surrogate
        "f4908080",  # past U+10FFFF
        "e282",  # a 3-byte sequence cut short
    ],
)
def test_invalid_utf8_is_rejected_at_the_bad_byte(bad: str, wrap: Callable[[bytes], Any]) -> None:
    raw = bytes.fromhex(bad)
    # FindCoordinatorRequest v0: Key string; the text starts at byte 2.
    wire = len(raw).to_bytes(2, "big") + raw
    err = decode_error(FindCoordinatorRequest, wrap(wire), 0)
    assert err.offset == 2
    assert "UTF-8" in err.reason


def test_invalid_utf8_in_a_compact_string_is_rejected(wrap: Callable[[bytes], Any]) -> None:
    # FindCoordinatorRequest v3: Key compact string "a\xff", KeyType, no tags.
    err = decode_error(FindCoordinatorRequest, wrap(bytes.fromhex("0361ff0000")), 3)
    assert err.offset == 2


def test_a_compact_string_longer_than_32767_bytes_is_rejected(wrap: Callable[[bytes], Any]) -> None:
    # Kafka's readers reject any string over 0x7fff bytes, compact ones included ("string
    # field key had invalid length"). FindCoordinatorRequest v3: Key of 32768 bytes (varint
    # 32769), KeyType, no tags; every byte is present.
    wire = bytes.fromhex("818002") + b"a" * 32768 + bytes.fromhex("0000")
    err = decode_error(FindCoordinatorRequest, wrap(wire), 3)
    assert err.offset == 0


def test_a_compact_string_of_32767_bytes_is_accepted() -> None:
    wire = bytes.fromhex("808002") + b"a" * 32767 + bytes.fromhex("0000")
    assert len(FindCoordinatorRequest.decode(wire, 3).key) == 32767


def test_nul_and_4_byte_characters_are_valid_text() -> None:
    text = "a\x00😀"
    wire = FindCoordinatorRequest(key=text).encode(0)
    assert FindCoordinatorRequest.decode(wire, 0).key == text


# --------------------------------------------------------------------------- varints


def test_a_varint_longer_than_5_bytes_is_rejected(wrap: Callable[[bytes], Any]) -> None:
    # FindCoordinatorRequest v3: Key length as a 6-byte varint (value 1 << 35).
    wire = bytes.fromhex("808080808001610000")
    err = decode_error(FindCoordinatorRequest, wrap(wire), 3)
    assert err.offset == 0
    assert "5 bytes" in err.reason


def test_a_5_byte_varint_past_32_bits_is_rejected(wrap: Callable[[bytes], Any]) -> None:
    wire = bytes.fromhex("ffffffff7f610000")
    err = decode_error(FindCoordinatorRequest, wrap(wire), 3)
    assert err.offset == 0


def test_a_non_minimal_varint_is_accepted() -> None:
    # Kafka accepts padded varints: length 2 ("k" + 1) written as 82 00.
    m = FindCoordinatorRequest.decode(bytes.fromhex("82006b0000"), 3)
    assert m.key == "k"


def test_a_varint_cut_short_is_rejected(wrap: Callable[[bytes], Any]) -> None:
    err = decode_error(FindCoordinatorRequest, wrap(bytes.fromhex("8080")), 3)
    assert err.offset == 0


# --------------------------------------------------------------------------- tagged fields


def test_a_known_tagged_field_with_spare_bytes_is_rejected(wrap: Callable[[bytes], Any]) -> None:
    # ApiVersionsResponse v3: tag 1 (FinalizedFeaturesEpoch, an int64) sized 9 bytes.
    wire = bytes.fromhex("00000100000000010109000000000000000500")
    decode_error(ApiVersionsResponse, wrap(wire), 3)


def test_a_known_tagged_field_too_short_for_its_value_is_rejected(
    wrap: Callable[[bytes], Any],
) -> None:
    # ApiVersionsResponse v3: tag 1 sized 4 bytes, but an int64 needs 8; 8 bytes follow.
    wire = bytes.fromhex("000001000000000101040000000000000005")
    decode_error(ApiVersionsResponse, wrap(wire), 3)


def test_a_tagged_field_running_past_the_end_is_rejected(wrap: Callable[[bytes], Any]) -> None:
    # ApiVersionsResponse v3: an unknown tag 9 claiming 5 bytes, 2 present.
    wire = bytes.fromhex("000001000000000109050102")
    err = decode_error(ApiVersionsResponse, wrap(wire), 3)
    assert err.offset >= 9


# --------------------------------------------------------------------------- tags of other versions
#
# ProduceResponse v9 is flexible, but knows no tagged field: NodeEndpoints (tag 0 of the
# message) and CurrentLeader (tag 0 of each partition) come with v10. Kafka refuses either
# tag at v9; a tag no version has (1 here) is an unknown tagged field, kept.


def produce_response_v9(root_tags: RawTags = (), partition_tags: RawTags = ()) -> bytes:
    partition = ProduceResponse.PartitionProduceResponse(
        index=2, unknown_tagged_fields=partition_tags
    )
    topic = ProduceResponse.TopicProduceResponse(name="t", partition_responses=[partition])
    return ProduceResponse(responses=[topic], unknown_tagged_fields=root_tags).encode(9)


OTHER_VERSION_TAGS = {
    "of the message": ({"root_tags": ((0, b"\x01"),)}, "ProduceResponse.NodeEndpoints"),
    "of a nested struct": (
        {"partition_tags": ((0, b"\x01"),)},
        "ProduceResponse.PartitionProduceResponse.CurrentLeader",
    ),
}


@pytest.mark.parametrize("tags, field", OTHER_VERSION_TAGS.values(), ids=list(OTHER_VERSION_TAGS))
def test_a_tag_a_field_has_only_at_other_versions_is_refused_at_the_tag(
    tags: dict[str, RawTags], field: str, wrap: Callable[[bytes], Any]
) -> None:
    wire = produce_response_v9(**tags)
    # The same message with tag 1 instead of 0: the bytes differ only at the tag.
    never_known = {where: ((1, value),) for where, ((_, value),) in tags.items()}
    other = produce_response_v9(**never_known)
    at = next(i for i, (a, b) in enumerate(zip(wire, other, strict=True)) if a != b)
    reason = f"tagged field 0 ({field}) exists only at versions 10+"
    err = decode_error(ProduceResponse, wrap(wire), 9)
    assert (err.reason, err.offset) == (reason, at)
    with pytest.raises(DecodeError) as prefix:
        ProduceResponse.decode_prefix(wrap(wire), 9)
    assert (prefix.value.reason, prefix.value.offset) == (reason, at)


def test_a_tag_no_version_has_is_kept_and_written_back(wrap: Callable[[bytes], Any]) -> None:
    wire = produce_response_v9(root_tags=((1, b"\x01"),), partition_tags=((7, b"xyz"),))
    m = ProduceResponse.decode(wrap(wire), 9)
    assert m.unknown_tagged_fields == ((1, b"\x01"),)
    assert m.responses[0].partition_responses[0].unknown_tagged_fields == ((7, b"xyz"),)
    assert m.encode(9) == wire
    assert ProduceResponse.decode_prefix(wrap(wire), 9)[0] == m


def test_a_tag_known_at_the_version_is_read_as_its_field() -> None:
    endpoint = ProduceResponse.NodeEndpoint(node_id=4, host="h", port=9092)
    wire = ProduceResponse(node_endpoints=[endpoint]).encode(10)
    assert ProduceResponse.decode(wire, 10).node_endpoints == [endpoint]


# --------------------------------------------------------------------------- trailing bytes


@pytest.mark.parametrize("extra", ["00", "ff", "000000"])
def test_trailing_bytes_are_rejected_at_the_end_of_the_message(
    extra: str, wrap: Callable[[bytes], Any]
) -> None:
    wire = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")]).encode(12)
    err = decode_error(MetadataRequest, wrap(wire + bytes.fromhex(extra)), 12)
    assert err.offset == len(wire)
    assert "trailing" in err.reason


def test_trailing_bytes_after_an_empty_body_are_rejected() -> None:
    # ApiVersions request v0 has no fields at all.
    err = decode_error(message_type(18, "request"), b"\x00", 0)
    assert err.offset == 0


# --------------------------------------------------------------------------- errors


def test_decode_error_text_names_message_version_and_offset() -> None:
    err = decode_error(FindCoordinatorRequest, bytes.fromhex("00056162"), 0)
    assert str(err).startswith("cannot decode FindCoordinatorRequest v0 at byte 2: ")
    assert err.offset == 2
