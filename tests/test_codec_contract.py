"""The generated package's contract (message_type, header_type, the codec methods and class
attributes users and the runtime rely on), checked against the specs.

Where a rule covers every API, the expectation is computed from the spec files in
``message_specs/`` (read here as plain JSON, independently of the generator) and compared
with what the generated classes do. Hand-built byte strings pin the wire details.
"""

from __future__ import annotations

import json
import re
import struct
import uuid
from functools import cache
from pathlib import Path
from typing import Any, Literal

import pytest
from kafkagen.generated import APIS, header_type, header_version, message_type
from kafkagen.generated.api_versions import ApiVersionsResponse
from kafkagen.generated.controlled_shutdown import ControlledShutdownResponse
from kafkagen.generated.delete_topics import DeleteTopicsResponse
from kafkagen.generated.fetch import FetchRequest, FetchResponse
from kafkagen.generated.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafkagen.generated.headers import RequestHeader
from kafkagen.generated.metadata import MetadataRequest, MetadataResponse
from kafkagen.generated.produce import ProduceRequest
from kafkagen.runtime.errors import DecodeError, UnsupportedVersionError
from kafkagen.runtime.message import KeyedList, Message

SPECS = Path(__file__).resolve().parents[1] / "message_specs"
INTS = {"int8", "int16", "uint16", "int32", "uint32", "int64"}


# --------------------------------------------------------------------------- spec helpers


def versions(text: str | None, lowest: int, highest: int) -> set[int]:
    """Kafka's version range (``N``, ``N-M``, ``N+``, ``none``) within lowest..highest."""
    if text is None or text == "none":
        return set()
    if text.endswith("+"):
        first, last = int(text[:-1]), highest
    elif "-" in text:
        first, last = (int(p) for p in text.split("-"))
    else:
        first = last = int(text)
    return set(range(max(first, lowest), min(last, highest) + 1))


def valid_range(spec: dict[str, Any]) -> tuple[int, int]:
    text = spec["validVersions"]
    if "-" in text:
        lo, hi = text.split("-")
        return int(lo), int(hi)
    return int(text), int(text)


@cache
def api_specs() -> dict[tuple[int, str], dict[str, Any]]:
    """(api key, "request" | "response") -> the spec document."""
    found = {}
    for path in sorted(SPECS.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("type") in ("request", "response"):
            found[(doc["apiKey"], doc["type"])] = doc
    return found


def spec_of(cls: type[Message]) -> dict[str, Any]:
    assert cls.API_KEY is not None
    return api_specs()[(cls.API_KEY, cls.KIND)]


API_KEYS = sorted({key for key, _ in api_specs()})
KINDS: tuple[Literal["request", "response"], ...] = ("request", "response")


def all_classes() -> list[type[Message]]:
    return [message_type(key, kind) for key in API_KEYS for kind in KINDS]


def non_default_value(field: dict[str, Any]) -> Any:
    """A value different from the field's default, for scalar and primitive-array fields."""
    t, default = field["type"], field.get("default")
    if t in INTS:
        return 2 if default == "1" else 1
    if t == "bool":
        return default != "true"
    if t == "string":
        return "x"
    if t == "float64":
        return 1.5
    if t == "uuid":
        return uuid.UUID(int=1)
    if t in ("bytes", "records"):
        return b"x"
    if t.startswith("[]") and t[2:] in INTS:
        return [1]
    if t == "[]string":
        return ["x"]
    return None


# --------------------------------------------------------------------------- lookup


def test_specs_define_kafka_4_4s_95_apis() -> None:
    assert API_KEYS == list(range(95))
    assert sorted(APIS) == API_KEYS


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("api_key", API_KEYS)
def test_message_type_returns_the_class_of_the_spec(
    api_key: int, kind: Literal["request", "response"]
) -> None:
    cls = message_type(api_key, kind)
    assert issubclass(cls, Message)
    assert cls.__name__ == api_specs()[(api_key, kind)]["name"]
    assert cls.API_KEY == api_key
    assert cls.KIND == kind


def test_message_type_rejects_an_unknown_api_key() -> None:
    with pytest.raises(UnsupportedVersionError, match="unknown API key 1000"):
        message_type(1000, "request")


def test_message_type_rejects_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="kind"):
        message_type(3, "header")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- class attributes


@pytest.mark.parametrize("cls", all_classes(), ids=lambda c: c.__name__)
def test_class_attributes_state_the_spec_versions(cls: type[Message]) -> None:
    spec = spec_of(cls)
    lo, hi = valid_range(spec)
    flexible = versions(spec.get("flexibleVersions"), lo, hi)
    assert (cls.LOWEST_VERSION, cls.HIGHEST_VERSION) == (lo, hi)
    assert cls.FIRST_FLEXIBLE_VERSION == (min(flexible) if flexible else None)
    assert cls.LATEST_VERSION_UNSTABLE is spec.get("latestVersionUnstable", False)


def test_unstable_latest_versions_are_flagged_on_the_request() -> None:
    unstable = {cls.__name__ for cls in all_classes() if cls.LATEST_VERSION_UNSTABLE}
    # Kafka 4.4.0's own unstable versions, and the 13 pagination versions of seed 001.
    assert {"InitProducerIdRequest", "MetadataRequest", "ConsumerGroupDescribeRequest"} <= unstable
    assert all(name.endswith("Request") for name in unstable)


def test_metadata_request_attributes() -> None:
    assert MetadataRequest.API_KEY == 3
    assert MetadataRequest.LOWEST_VERSION == 0
    assert MetadataRequest.HIGHEST_VERSION == 14
    assert MetadataRequest.FIRST_FLEXIBLE_VERSION == 9
    assert MetadataRequest.LATEST_VERSION_UNSTABLE is True


def test_a_never_flexible_api_has_no_first_flexible_version() -> None:
    assert message_type(17, "request").FIRST_FLEXIBLE_VERSION is None  # SaslHandshake
    assert message_type(47, "response").FIRST_FLEXIBLE_VERSION is None  # OffsetDelete


# --------------------------------------------------------------------------- headers


def test_header_types() -> None:
    request, response = header_type("request"), header_type("response")
    assert (request.__name__, request.LOWEST_VERSION, request.HIGHEST_VERSION) == (
        "RequestHeader",
        0,
        2,
    )
    assert (response.__name__, response.LOWEST_VERSION, response.HIGHEST_VERSION) == (
        "ResponseHeader",
        0,
        1,
    )


def test_header_type_rejects_an_unknown_kind() -> None:
    with pytest.raises(ValueError):
        header_type("header")  # type: ignore[arg-type]


def test_controlled_shutdown_v0_requests_use_request_header_v0() -> None:
    assert header_version(7, 0, "request") == 0
    assert header_version(7, 1, "request") == 1
    assert header_version(7, 3, "request") == 2


def test_api_versions_responses_always_use_response_header_v0() -> None:
    for version in range(5):
        assert header_version(18, version, "response") == 0
    assert header_version(18, 3, "request") == 2


@pytest.mark.parametrize("api_key", API_KEYS)
def test_header_version_follows_flexibility(api_key: int) -> None:
    """Flexible versions use request header v2 / response header v1; others v1 / v0."""
    headers: dict[Literal["request", "response"], tuple[int, int]] = {
        "request": (2, 1),
        "response": (1, 0),
    }
    for kind, (flexible_header, old_header) in headers.items():
        spec = api_specs()[(api_key, kind)]
        lo, hi = valid_range(spec)
        flexible = versions(spec.get("flexibleVersions"), lo, hi)
        for version in range(lo, hi + 1):
            if (api_key, version, kind) == (7, 0, "request") or (api_key, kind) == (18, "response"):
                continue  # the two exceptions, tested above
            want = flexible_header if version in flexible else old_header
            assert header_version(api_key, version, kind) == want, (version, kind)


def test_header_version_rejects_an_unknown_api_key() -> None:
    with pytest.raises(UnsupportedVersionError):
        header_version(1000, 0, "request")


def test_request_header_v2_keeps_a_non_compact_client_id() -> None:
    assert header_type("request") is RequestHeader
    header = RequestHeader(
        request_api_key=18, request_api_version=3, correlation_id=7, client_id="ab"
    )
    assert header.encode(2) == bytes.fromhex("00120003000000070002616200")
    assert header.encode(1) == bytes.fromhex("001200030000000700026162")


# --------------------------------------------------------------------------- construction


def test_defaults_come_from_the_spec() -> None:
    topic = MetadataResponse.MetadataResponseTopic()
    assert topic.topic_authorized_operations == -2147483648
    assert topic.is_internal is False
    assert topic.topic_id == uuid.UUID(int=0)
    assert MetadataResponse().controller_id == -1
    assert MetadataRequest().allow_auto_topic_creation is True
    assert FetchRequest().max_bytes == 0x7FFFFFFF
    assert FetchRequest.ReplicaState().replica_epoch == -1


def test_nullable_fields_with_a_null_default_default_to_none() -> None:
    assert MetadataResponse().cluster_id is None
    assert MetadataResponse.MetadataResponseBroker().rack is None
    assert ProduceRequest().transactional_id is None
    assert MetadataRequest().cursor is None


def test_array_defaults_are_empty_and_not_shared_between_instances() -> None:
    first, second = MetadataRequest(), MetadataRequest()
    assert first.topics == []
    first.topics.append(MetadataRequest.MetadataRequestTopic(name="t"))
    assert second.topics == []
    assert MetadataRequest().topics == []


def test_struct_defaults_are_not_shared_between_instances() -> None:
    first, second = FetchRequest(), FetchRequest()
    first.replica_state.replica_id = 5
    assert second.replica_state.replica_id == -1


def test_keyword_arguments_set_fields() -> None:
    m = FindCoordinatorRequest(key="group", key_type=1)
    assert (m.key, m.key_type, m.coordinator_keys) == ("group", 1, [])
    assert m.encode(1) == bytes.fromhex("0005") + b"group" + b"\x01"


def test_an_unknown_keyword_argument_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        FindCoordinatorRequest(no_such_field=1)  # type: ignore[call-arg]


@pytest.mark.parametrize("cls", all_classes(), ids=lambda c: c.__name__)
def test_defaults_encode_and_decode_at_every_version(cls: type[Message]) -> None:
    for version in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
        wire = cls().encode(version)
        assert cls.decode(wire, version) == cls(), version
        assert cls.from_json(cls().to_json(version), version) == cls(), version


@pytest.mark.parametrize("version", [0, 3])  # int16 length, compact length
def test_a_string_longer_than_32767_bytes_cannot_be_encoded(version: int) -> None:
    # Kafka refuses to write such a string at any version ("field is too long to be
    # serialized"), and its readers reject one.
    assert len(FindCoordinatorRequest(key="a" * 32767).encode(version)) > 32767
    with pytest.raises(ValueError, match="32767"):
        FindCoordinatorRequest(key="a" * 32768).encode(version)


def test_an_out_of_range_integer_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="FindCoordinatorRequest v1"):
        FindCoordinatorRequest(key_type=128).encode(1)


def test_messages_compare_by_value() -> None:
    assert FindCoordinatorRequest(key="a") == FindCoordinatorRequest(key="a")
    assert FindCoordinatorRequest(key="a") != FindCoordinatorRequest(key="b")
    assert FindCoordinatorRequest(key="a") != FindCoordinatorResponse()


# --------------------------------------------------------------------------- versions


@pytest.mark.parametrize("version", [-1, 7, 100])
def test_encoding_at_a_version_the_message_lacks_is_unsupported(version: int) -> None:
    with pytest.raises(UnsupportedVersionError, match=f"no version {version}"):
        FindCoordinatorRequest().encode(version)


def test_decoding_at_a_version_the_message_lacks_is_unsupported() -> None:
    with pytest.raises(UnsupportedVersionError, match="no version 15"):
        MetadataRequest.decode(MetadataRequest().encode(14), 15)


# --------------------------------------------------------------------------- down-conversion


def test_a_non_ignorable_field_missing_at_a_version_must_hold_its_default() -> None:
    batched = FindCoordinatorRequest(key_type=0, coordinator_keys=["g1", "g2"])
    assert FindCoordinatorRequest.decode(batched.encode(4), 4) == batched
    with pytest.raises(UnsupportedVersionError) as info:
        batched.encode(3)
    assert "FindCoordinatorRequest.CoordinatorKeys" in str(info.value)
    assert "version 3" in str(info.value)


def test_a_field_that_was_removed_is_checked_too() -> None:
    with pytest.raises(UnsupportedVersionError, match=r"FindCoordinatorRequest\.Key at version 4"):
        FindCoordinatorRequest(key="g").encode(4)


def test_allow_auto_topic_creation_false_cannot_be_sent_at_v3() -> None:
    assert MetadataRequest(allow_auto_topic_creation=True).encode(3) == MetadataRequest().encode(3)
    with pytest.raises(
        UnsupportedVersionError, match=r"MetadataRequest\.AllowAutoTopicCreation at version 3"
    ):
        MetadataRequest(allow_auto_topic_creation=False).encode(3)


def test_an_ignorable_field_is_dropped_silently() -> None:
    assert FindCoordinatorResponse(throttle_time_ms=250).encode(0) == (
        FindCoordinatorResponse().encode(0)
    )


def test_a_non_ignorable_field_in_a_nested_struct_must_hold_its_default() -> None:
    partition = FetchRequest.FetchPartition(partition=0, fetch_offset=5, last_fetched_epoch=3)
    request = FetchRequest(topics=[FetchRequest.FetchTopic(topic="t", partitions=[partition])])
    with pytest.raises(UnsupportedVersionError, match=r"LastFetchedEpoch at version 11"):
        request.encode(11)


def test_a_null_string_where_the_version_is_not_nullable_is_unsupported() -> None:
    result = DeleteTopicsResponse.DeletableTopicResult(name=None)
    response = DeleteTopicsResponse(responses=KeyedList([result]))
    assert response.encode(6)  # nullable from v6
    with pytest.raises(UnsupportedVersionError, match=r"DeletableTopicResult\.Name at version 5"):
        response.encode(5)


def test_a_null_array_where_the_version_is_not_nullable_is_unsupported() -> None:
    # Null topics ("all topics") exist from v1; v0 says the same with an empty array. Like a
    # null string, a null array is a value the version cannot carry.
    assert MetadataRequest(topics=None).encode(1) == bytes.fromhex("ffffffff")
    with pytest.raises(UnsupportedVersionError, match=r"MetadataRequest\.Topics.*version 0"):
        MetadataRequest(topics=None).encode(0)


def test_unknown_tagged_fields_cannot_be_sent_at_a_non_flexible_version() -> None:
    m = FindCoordinatorRequest(key="g", unknown_tagged_fields=((5, b"x"),))
    assert m.encode(3)
    with pytest.raises(UnsupportedVersionError, match="version 2"):
        m.encode(2)


@pytest.mark.parametrize("cls", all_classes(), ids=lambda c: c.__name__)
def test_down_conversion_rule_for_every_top_level_field(cls: type[Message]) -> None:
    """Each top-level scalar field set to a non-default value and written at a version that
    lacks it: dropped when ignorable, else UnsupportedVersionError naming field and version."""
    spec = spec_of(cls)
    lo, hi = valid_range(spec)
    fields = spec["fields"]
    attrs = cls._fields  # spec order
    assert len(attrs) == len(fields)
    for field, attr in zip(fields, attrs, strict=True):
        value = non_default_value(field)
        absent = set(range(lo, hi + 1)) - versions(field["versions"], lo, hi)
        if value is None or not absent:
            continue
        message = cls(**{attr: value})
        for version in sorted(absent):
            if field.get("ignorable"):
                assert message.encode(version) == cls().encode(version), (field["name"], version)
            else:
                with pytest.raises(UnsupportedVersionError) as info:
                    message.encode(version)
                assert f"{spec['name']}.{field['name']} at version {version}" in str(info.value)


# --------------------------------------------------------------------------- tagged fields


def test_tagged_fields_at_their_default_are_not_written() -> None:
    untagged = bytes.fromhex("0000010000000000")  # error, api keys, throttle, 0 tags
    assert ApiVersionsResponse().encode(3) == untagged
    explicit_defaults = ApiVersionsResponse(
        supported_features=KeyedList(), finalized_features_epoch=-1, zk_migration_ready=False
    )
    assert explicit_defaults.encode(3) == untagged


def test_a_tagged_field_off_its_default_is_written_with_tag_and_size() -> None:
    m = ApiVersionsResponse(finalized_features_epoch=5)
    assert m.encode(3) == bytes.fromhex("000001000000000101080000000000000005")
    assert ApiVersionsResponse.decode(m.encode(3), 3) == m


def test_a_tagged_struct_whose_fields_hold_their_defaults_is_not_written() -> None:
    default_state = FetchRequest(
        replica_state=FetchRequest.ReplicaState(replica_id=-1, replica_epoch=-1)
    )
    assert default_state.encode(15) == FetchRequest().encode(15)
    follower = FetchRequest(replica_state=FetchRequest.ReplicaState(replica_id=3))
    tail = "01010d00000003ffffffffffffffff00"  # one tag: 1, 13 bytes
    assert follower.encode(15) == FetchRequest().encode(15)[:-1] + bytes.fromhex(tail)


def test_tagged_fields_are_written_in_tag_order() -> None:
    m = ApiVersionsResponse(zk_migration_ready=True, finalized_features_epoch=5)
    assert m.encode(3).endswith(bytes.fromhex("0201080000000000000005030101"))


# --------------------------------------------------------------------------- unknown tags

# FindCoordinatorRequest v3: Key "k", KeyType 0, then the tagged-field section.
FIND_COORDINATOR_V3 = bytes.fromhex("026b00")


def test_unknown_tagged_fields_are_kept_on_decode() -> None:
    wire = FIND_COORDINATOR_V3 + bytes.fromhex("02050261620900")
    m = FindCoordinatorRequest.decode(wire, 3)
    assert m.key == "k"
    assert m.unknown_tagged_fields == ((5, b"ab"), (9, b""))
    assert m.encode(3) == wire


def test_unknown_tagged_fields_are_written_in_tag_order() -> None:
    m = FindCoordinatorRequest(key="k", unknown_tagged_fields=((9, b""), (5, b"ab")))
    assert m.encode(3) == FIND_COORDINATOR_V3 + bytes.fromhex("02050261620900")


def test_out_of_order_unknown_tags_come_back_in_tag_order() -> None:
    wire = FIND_COORDINATOR_V3 + bytes.fromhex("02090005026162")
    m = FindCoordinatorRequest.decode(wire, 3)
    assert m.encode(3) == FIND_COORDINATOR_V3 + bytes.fromhex("02050261620900")


def test_unknown_tagged_fields_interleave_with_known_ones_by_tag() -> None:
    # ApiVersionsResponse v3 knows tags 0-3; 4 and 42 are unknown.
    known = "01080000000000000005030101"  # tags 1 and 3
    wire = bytes.fromhex("0000010000000004" + known + "04002a01ff")
    m = ApiVersionsResponse.decode(wire, 3)
    assert (m.finalized_features_epoch, m.zk_migration_ready) == (5, True)
    assert m.unknown_tagged_fields == ((4, b""), (42, b"\xff"))
    assert m.encode(3) == wire


def test_unknown_tagged_fields_of_nested_structs_survive() -> None:
    coordinator = "026b00000001026800000002000000"  # key, node, host, ...
    wire = bytes.fromhex("0000000002" + coordinator + "010701aa" + "00")
    m = FindCoordinatorResponse.decode(wire, 4)
    assert m.coordinators[0].unknown_tagged_fields == ((7, b"\xaa"),)
    assert m.unknown_tagged_fields == ()
    assert m.encode(4) == wire


# --------------------------------------------------------------------------- mapKey arrays


def metadata_response_with_topics(*names: str) -> bytes:
    topics = KeyedList(
        MetadataResponse.MetadataResponseTopic(name=name, error_code=i)
        for i, name in enumerate(names)
    )
    return MetadataResponse(topics=topics).encode(12)


def test_map_key_arrays_decode_into_keyed_lists_in_wire_order() -> None:
    m = MetadataResponse.decode(metadata_response_with_topics("b", "a", "c"), 12)
    assert isinstance(m.topics, KeyedList)
    assert [t.name for t in m.topics] == ["b", "a", "c"]


def test_keyed_list_finds_an_item_by_its_key() -> None:
    m = MetadataResponse.decode(metadata_response_with_topics("b", "a", "c"), 12)
    found = m.topics.find("a")
    assert found is not None and found.error_code == 1
    assert m.topics.find("missing") is None


def test_keyed_list_keeps_duplicate_keys_and_finds_the_first() -> None:
    m = MetadataResponse.decode(metadata_response_with_topics("a", "b", "a"), 12)
    assert len(m.topics) == 3
    first = m.topics.find("a")
    assert first is not None and first.error_code == 0
    assert [t.error_code for t in m.topics.find_all("a")] == [0, 2]


def test_keyed_list_finds_by_a_composite_key() -> None:
    part = ControlledShutdownResponse.RemainingPartition
    response = ControlledShutdownResponse(
        remaining_partitions=KeyedList(part(topic_name="t", partition_index=i) for i in (2, 0, 1))
    )
    m = ControlledShutdownResponse.decode(response.encode(3), 3)
    assert m.remaining_partitions.find("t", 0) is m.remaining_partitions[1]
    assert m.remaining_partitions.find("t", 9) is None


def test_a_plain_list_given_for_a_map_key_array_becomes_a_keyed_list() -> None:
    topic = MetadataResponse.MetadataResponseTopic(name="a")
    m = MetadataResponse(topics=[topic])  # type: ignore[arg-type, unused-ignore]
    assert isinstance(m.topics, KeyedList)
    assert m.topics.find("a") is topic


def test_map_key_arrays_from_json_are_keyed_lists() -> None:
    m = MetadataResponse.decode(metadata_response_with_topics("a"), 12)
    again = MetadataResponse.from_json(m.to_json(12), 12)
    assert isinstance(again.topics, KeyedList)
    assert again.topics.find("a") == m.topics[0]


# --------------------------------------------------------------------------- records


def fetch_response_with_records(records: bytes, version: int) -> bytes:
    partition = FetchResponse.PartitionData(partition_index=0, records=records)
    topic = FetchResponse.FetchableTopicResponse(topic="t", partitions=[partition])
    return FetchResponse(responses=[topic]).encode(version)


@pytest.mark.parametrize("version", [4, 12])  # non-compact and compact lengths
def test_records_decode_to_a_view_of_the_input_bytes(version: int) -> None:
    wire = fetch_response_with_records(b"RECORDBATCH", version)
    records = FetchResponse.decode(wire, version).responses[0].partitions[0].records
    assert isinstance(records, memoryview)
    assert records.obj is wire
    assert bytes(records) == b"RECORDBATCH"


def test_records_share_memory_with_a_bytearray_input() -> None:
    buf = bytearray(fetch_response_with_records(b"RECORDBATCH", 12))
    records = FetchResponse.decode(buf, 12).responses[0].partitions[0].records
    assert isinstance(records, memoryview) and records.obj is buf
    start = bytes(buf).index(b"RECORDBATCH")
    buf[start] = ord("X")  # a change to the input shows through the view: no copy was made
    assert bytes(records) == b"XECORDBATCH"


def test_records_of_a_memoryview_input_view_the_same_buffer() -> None:
    backing = b"\x00" * 3 + fetch_response_with_records(b"RECORDBATCH", 12)
    view = memoryview(backing)[3:]
    records = FetchResponse.decode(view, 12).responses[0].partitions[0].records
    assert isinstance(records, memoryview) and records.obj is backing
    assert bytes(records) == b"RECORDBATCH"


def test_produce_request_records_are_zero_copy() -> None:
    partition = ProduceRequest.PartitionProduceData(index=0, records=b"BATCH")
    request = ProduceRequest(
        topic_data=KeyedList(
            [ProduceRequest.TopicProduceData(name="t", partition_data=[partition])]
        )
    )
    wire = request.encode(9)
    decoded = ProduceRequest.decode(wire, 9)
    records = decoded.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is wire
    assert decoded.encode(9) == wire


def test_null_records_decode_to_none() -> None:
    wire = fetch_response_with_records(b"", 12)
    partition = FetchResponse.PartitionData(partition_index=0, records=None)
    topic = FetchResponse.FetchableTopicResponse(topic="t", partitions=[partition])
    null_wire = FetchResponse(responses=[topic]).encode(12)
    assert null_wire != wire
    assert FetchResponse.decode(null_wire, 12).responses[0].partitions[0].records is None


# --------------------------------------------------------------------------- pagination (seed 001)

_ROW = re.compile(
    r"^\| (?P<api>\w+) \((?P<key>\d+)\) \| [^|]+ \| \*\*(?P<version>\d+)\*\* \| \d+ "
    r"\| `(?P<struct>\w+)` \| (?P<fields>[^|]+) \|$"
)


@cache
def pagination_table() -> list[tuple[int, int, str, list[tuple[str, str]]]]:
    """(api key, new version, cursor struct, [(field, type)]) from message_specs/README.md."""
    rows: list[tuple[int, int, str, list[tuple[str, str]]]] = []
    for line in (SPECS / "README.md").read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if match:
            pairs = [f.split() for f in match["fields"].split(",")]
            fields = [(name, wire_type) for name, wire_type in pairs]
            rows.append((int(match["key"]), int(match["version"]), match["struct"], fields))
    return rows


def test_readme_lists_13_paginated_apis() -> None:
    assert len(pagination_table()) == 13


def cursor_wire(fields: list[tuple[str, str]], values: list[Any]) -> bytes:
    """A present cursor struct at a flexible version: marker, fields, no tags."""
    out = b"\x01"
    for (_, t), value in zip(fields, values, strict=True):
        if t == "string":
            raw = value.encode()
            out += bytes([len(raw) + 1]) + raw
        else:
            out += struct.pack({"int8": ">b", "int32": ">i", "int64": ">q"}[t], value)
    return out + b"\x00"


def cursor_values(fields: list[tuple[str, str]]) -> list[Any]:
    return [f"{name.lower()}-x" if t == "string" else 7 for name, t in fields]


def cursor_kwargs(cursor_cls: type, fields: list[tuple[str, str]]) -> Any:
    attrs = cursor_cls._fields  # type: ignore[attr-defined]
    assert len(attrs) == len(fields)
    return cursor_cls(**dict(zip(attrs, cursor_values(fields), strict=True)))


@pytest.mark.parametrize("row", pagination_table(), ids=lambda r: f"key{r[0]}-v{r[1]}")
def test_paginated_request_version(row: tuple[int, int, str, list[tuple[str, str]]]) -> None:
    api_key, version, struct_name, fields = row
    cls = message_type(api_key, "request")
    assert cls.HIGHEST_VERSION == version
    assert cls.LATEST_VERSION_UNSTABLE is True
    m = cls()
    assert (m.response_pagination_limit, m.cursor) == (2000, None)  # type: ignore[attr-defined]
    base = m.encode(version)
    assert base.endswith(bytes.fromhex("000007d0ff00"))  # limit 2000, null cursor, no tags
    cursor = cursor_kwargs(getattr(cls, struct_name), fields)
    paged = cls(response_pagination_limit=10, cursor=cursor)  # type: ignore[call-arg]
    want = base[:-6] + struct.pack(">i", 10) + cursor_wire(fields, cursor_values(fields)) + b"\x00"
    assert paged.encode(version) == want
    assert cls.decode(want, version) == paged
    json_cursor = paged.to_json(version)["cursor"]
    assert list(json_cursor) == [name[:1].lower() + name[1:] for name, _ in fields]
    # Both new fields are ignorable: an older version drops them.
    assert paged.encode(version - 1) == cls().encode(version - 1)


@pytest.mark.parametrize("row", pagination_table(), ids=lambda r: f"key{r[0]}-v{r[1]}")
def test_paginated_response_version(row: tuple[int, int, str, list[tuple[str, str]]]) -> None:
    api_key, version, struct_name, fields = row
    cls = message_type(api_key, "response")
    assert cls.HIGHEST_VERSION == version
    assert cls().next_cursor is None  # type: ignore[attr-defined]
    base = cls().encode(version)
    assert base.endswith(bytes.fromhex("ff00"))  # null next cursor, no tags
    cursor = cursor_kwargs(getattr(cls, struct_name), fields)
    paged = cls(next_cursor=cursor)  # type: ignore[call-arg]
    want = base[:-2] + cursor_wire(fields, cursor_values(fields)) + b"\x00"
    assert paged.encode(version) == want
    assert cls.decode(want, version) == paged
    assert paged.encode(version - 1) == cls().encode(version - 1)


def test_metadata_v14_round_trips_a_cursor_through_json() -> None:
    m = MetadataRequest(
        response_pagination_limit=50,
        cursor=MetadataRequest.Cursor(topic_name="t", partition_index=3),
    )
    assert m.to_json(14)["cursor"] == {"topicName": "t", "partitionIndex": 3}
    assert MetadataRequest.from_json(m.to_json(14), 14) == m


def test_decode_error_is_a_value_error_with_position() -> None:
    with pytest.raises(DecodeError) as info:
        MetadataRequest.decode(b"\x00\x00", 1)
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.message, err.version) == ("MetadataRequest", 1)
    assert 0 <= err.offset <= 2


# ------------------------------------------------------------------ from_json: bad input


def _metadata_json() -> dict[str, Any]:
    m = MetadataResponse(
        brokers=KeyedList([MetadataResponse.MetadataResponseBroker(node_id=1, host="h")]),
        topics=KeyedList(
            [
                MetadataResponse.MetadataResponseTopic(
                    name="t",
                    topic_id=uuid.UUID(int=7),
                    partitions=[MetadataResponse.MetadataResponsePartition(replica_nodes=[1])],
                )
            ]
        ),
    )
    return m.to_json(12)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda j: j.pop("controllerId"), "MetadataResponse.controllerId: required field missing"),
        (
            lambda j: j.update(controllerId=True),
            "MetadataResponse.controllerId: expected an integer, got True",
        ),
        (
            lambda j: j.update(controllerId="1"),
            "MetadataResponse.controllerId: expected an integer, got '1'",
        ),
        (lambda j: j.update(brokers=None), "MetadataResponse.brokers: null is not allowed here"),
        (lambda j: j.update(brokers={}), "MetadataResponse.brokers: expected an array, got {}"),
        (
            lambda j: j["brokers"][0].update(host=5),
            "MetadataResponse.MetadataResponseBroker.host: expected a string, got 5",
        ),
        (
            lambda j: j["topics"][0].update(topicId="not-a-uuid"),
            "MetadataResponse.MetadataResponseTopic.topicId: expected a 22-character "
            "base64url uuid, got 'not-a-uuid'",
        ),
        (
            lambda j: j["topics"][0]["partitions"][0].update(replicaNodes=[1, "2"]),
            "MetadataResponse.MetadataResponsePartition: expected an integer, got '2'",
        ),
    ],
)
def test_from_json_names_the_bad_field_and_value(change: Any, message: str) -> None:
    obj = _metadata_json()
    assert MetadataResponse.from_json(obj, 12).to_json(12) == obj
    change(obj)
    with pytest.raises(ValueError) as caught:
        MetadataResponse.from_json(obj, 12)
    assert str(caught.value) == message


def test_from_json_takes_null_where_the_field_is_nullable() -> None:
    obj = _metadata_json()
    obj["clusterId"] = None
    obj["brokers"][0]["rack"] = None
    got = MetadataResponse.from_json(obj, 12)
    assert got.cluster_id is None and got.brokers[0].rack is None
