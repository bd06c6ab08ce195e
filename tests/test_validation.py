"""Spec validation: the format, each of Kafka's semantic rules, and cross-file rules.

Each rule gets a small bad spec and the exact one-line rejection it must produce.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped, unused-ignore]
import pytest
from kafka_data import KAFKA_4_0_SNAPSHOT_SPECS
from kafkagen.generator.errors import SpecError, SpecErrors, SpecWarning
from kafkagen.generator.loader import load_spec, parse_spec_text, spec_files
from kafkagen.generator.model import build_message
from kafkagen.generator.validate import spec_schema, validate_directory, validate_document
from kafkagen.generator.versions import NONE

KAFKA_SPECS = KAFKA_4_0_SNAPSHOT_SPECS
FILE = "DemoRequest.json"


def kafka_spec_paths() -> list[Path]:
    # A missing folder is a broken checkout, not a skip.
    assert KAFKA_SPECS.is_dir(), f"Kafka's spec files are missing: {KAFKA_SPECS}"
    return spec_files(KAFKA_SPECS)


def spec(*fields: Any, **top: Any) -> dict[str, Any]:
    """A valid request spec with the given fields; keyword arguments override top-level keys."""
    doc: dict[str, Any] = {
        "apiKey": 99,
        "type": "request",
        "name": "DemoRequest",
        "validVersions": "0-3",
        "flexibleVersions": "2+",
        "fields": list(fields),
    }
    doc.update(top)
    return {k: v for k, v in doc.items() if v is not None}


def fld(
    name: str = "Value", type: str = "int32", versions: str = "0+", **extra: Any
) -> dict[str, Any]:
    return {"name": name, "type": type, "versions": versions, **extra}


def rejections(doc: dict[str, Any], file: str = FILE) -> list[str]:
    with pytest.raises(SpecErrors) as info:
        validate_document(doc, file)
    return [e.line() for e in info.value.errors]


def rejection(doc: dict[str, Any], file: str = FILE) -> str:
    lines = rejections(doc, file)
    assert len(lines) == 1, lines
    return lines[0]


# ----------------------------------------------------------------------------- real specs


def test_kafka_ships_186_spec_files() -> None:
    assert len(kafka_spec_paths()) == 186


@pytest.mark.parametrize("path", kafka_spec_paths(), ids=lambda p: p.name)
def test_every_kafka_spec_validates_unchanged(path: Path) -> None:
    doc = validate_document(load_spec(path), path.name)
    assert doc["name"] == path.stem


def test_kafka_spec_directory_passes_cross_file_rules() -> None:
    docs = {p.name: validate_document(load_spec(p), p.name) for p in kafka_spec_paths()}
    validate_directory(docs)


# ----------------------------------------------------------------------------- format (schema)


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = spec_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_unknown_message_key_is_rejected() -> None:
    assert rejection(spec(fld(), requestScope="x")) == (
        "DemoRequest.json: DemoRequest: unknown key (got 'requestScope')"
    )


def test_unknown_field_key_is_rejected() -> None:
    assert rejection(spec(fld(nullable=True))) == (
        "DemoRequest.json: DemoRequest.Value: unknown key (got 'nullable')"
    )


def test_missing_valid_versions_is_rejected() -> None:
    assert rejection(spec(fld(), validVersions=None)) == (
        "DemoRequest.json: DemoRequest: missing required key 'validVersions'"
    )


def test_field_without_versions_or_tagged_versions_is_rejected() -> None:
    assert rejection(spec({"name": "Value", "type": "int32"})) == (
        "DemoRequest.json: DemoRequest.Value: a field needs versions "
        "(or taggedVersions, which versions then defaults to)"
    )


def test_version_range_must_follow_the_grammar() -> None:
    assert rejection(spec(fld(versions="1..3"))) == (
        "DemoRequest.json: DemoRequest.Value: versions must be a version range: "
        "N, N-M, N+ or none (got '1..3')"
    )


def test_unknown_primitive_type_is_rejected() -> None:
    assert rejection(spec(fld(type="int33"))) == (
        "DemoRequest.json: DemoRequest.Value: type must be a primitive type, a capitalised "
        "struct name, or [] followed by one of those (got 'int33')"
    )


def test_array_of_arrays_is_rejected() -> None:
    assert rejection(spec(fld(type="[][]int32"))) == (
        "DemoRequest.json: DemoRequest.Value: type must be a primitive type, a capitalised "
        "struct name, or [] followed by one of those (got '[][]int32')"
    )


def test_struct_type_names_are_capitalised() -> None:
    assert rejection(spec(fld(type="[]topic", fields=[fld()]))) == (
        "DemoRequest.json: DemoRequest.Value: type must be a primitive type, a capitalised "
        "struct name, or [] followed by one of those (got '[]topic')"
    )


def test_field_name_must_be_letters_and_digits() -> None:
    assert rejection(spec(fld(name="Error_Code"))) == (
        "DemoRequest.json: DemoRequest.Error_Code: name must be a letter followed by "
        "letters or digits (got 'Error_Code')"
    )


def test_message_type_must_be_a_known_kind() -> None:
    assert rejection(spec(fld(), type="event")) == (
        "DemoRequest.json: DemoRequest: type must be one of request, response, header, data, "
        "metadata (got 'event')"
    )


def test_listener_names_must_be_known() -> None:
    assert rejection(spec(fld(), listeners=["broker", "zookeeper"])) == (
        "DemoRequest.json: DemoRequest: listeners[1] must be one of zkBroker, broker, "
        "controller (got 'zookeeper')"
    )


def test_boolean_strings_other_than_true_and_false_are_rejected() -> None:
    assert rejection(spec(fld(ignorable="yes"))) == (
        "DemoRequest.json: DemoRequest.Value: ignorable must be true or false (a JSON boolean "
        'or the string "true"/"false") (got \'yes\')'
    )


def test_api_key_must_be_an_integer() -> None:
    assert rejection(spec(fld(), apiKey="12a")) == (
        "DemoRequest.json: DemoRequest: apiKey must be an integer (a JSON number or a decimal "
        "string) (got '12a')"
    )


def test_default_must_be_a_scalar() -> None:
    assert rejection(spec(fld(default=[1]))) == (
        "DemoRequest.json: DemoRequest.Value: default must be a string, number, boolean or null "
        "(got [1])"
    )


def test_entity_type_must_be_known() -> None:
    assert rejection(spec(fld(type="string", entityType="clusterId"))) == (
        "DemoRequest.json: DemoRequest.Value: entityType must be one of unknown, "
        "transactionalId, producerId, groupId, topicName, brokerId (got 'clusterId')"
    )


def test_each_field_must_be_an_object() -> None:
    assert rejection(spec(fld(), "Value2")) == (
        "DemoRequest.json: DemoRequest.fields[1]: a field must be a JSON object (got 'Value2')"
    )


def test_schema_errors_name_the_nested_field_path() -> None:
    topics = fld(
        "Topics",
        "[]Topic",
        fields=[fld("Partitions", "[]Partition", fields=[fld("ErrorCode", "int16", "0-x")])],
    )
    assert rejection(spec(topics)) == (
        "DemoRequest.json: DemoRequest.Topics.Partitions.ErrorCode: versions must be a version "
        "range: N, N-M, N+ or none (got '0-x')"
    )


# ----------------------------------------------------------------------------- message rules


def test_valid_versions_must_not_be_open_ended() -> None:
    assert rejection(spec(fld(), validVersions="0+")) == (
        "DemoRequest.json: DemoRequest: validVersions must end at a highest version, "
        "not be open-ended (got '0+')"
    )


def test_version_range_must_not_run_backwards() -> None:
    assert rejection(spec(fld(versions="3-1"))) == (
        "DemoRequest.json: DemoRequest.Value: versions must run from a lower to a higher "
        "version, both at most 32767 (got '3-1')"
    )


def test_missing_flexible_versions_reads_as_none_with_a_warning() -> None:
    # Kafka's generators up to 2.8 accepted it (2.4's OffsetDelete, 2.8's SaslHandshake).
    with pytest.warns(SpecWarning) as caught:
        doc = validate_document(spec(fld(), flexibleVersions=None), FILE)
    assert [str(w.message) for w in caught] == [
        "DemoRequest.json: DemoRequest: flexibleVersions is missing: read as none, as Kafka "
        "up to 2.8 did (Kafka 3.0+ requires none, or N+ for the first flexible version)"
    ]
    assert build_message(doc, FILE).flexible == NONE


def test_a_spec_without_versions_needs_no_fields() -> None:
    # Kafka 4.x keeps the files of retired APIs (LeaderAndIsr) as name, key and "none".
    doc = spec(validVersions="none", flexibleVersions=None)
    del doc["fields"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert validate_document(doc, FILE)["validVersions"] == "none"


def test_flexible_versions_must_be_open_ended() -> None:
    assert rejection(spec(fld(), flexibleVersions="2-3")) == (
        "DemoRequest.json: DemoRequest: flexibleVersions must be none or open-ended (N+) "
        "(got '2-3')"
    )


def test_flexible_versions_none_is_accepted() -> None:
    assert validate_document(spec(fld(), flexibleVersions="none"), FILE)["flexibleVersions"] == (
        "none"
    )


def test_request_name_must_end_in_request() -> None:
    assert rejection(spec(fld(), name="DemoCall")) == (
        "DemoRequest.json: DemoCall: the name of a request must end in Request (got 'DemoCall')"
    )


def test_response_name_must_end_in_response() -> None:
    assert rejection(spec(fld(), type="response", name="DemoReply")) == (
        "DemoRequest.json: DemoReply: the name of a response must end in Response (got 'DemoReply')"
    )


def test_request_needs_an_api_key() -> None:
    assert rejection(spec(fld(), apiKey=None)) == (
        "DemoRequest.json: DemoRequest: a request spec needs an apiKey"
    )


def test_api_key_is_not_allowed_on_data_specs() -> None:
    assert rejection(spec(fld(), type="data", name="DemoData")) == (
        "DemoRequest.json: DemoData: apiKey is only allowed on request, response, metadata "
        "and record specs (got 99)"
    )


def test_metadata_record_carries_an_api_key() -> None:
    doc = spec(fld(), type="metadata", name="DemoRecord", flexibleVersions="0+")
    assert validate_document(doc, FILE)["apiKey"] == 99


def test_api_key_must_fit_a_16_bit_signed_short() -> None:
    assert rejection(spec(fld(), apiKey=40000)) == (
        "DemoRequest.json: DemoRequest: apiKey must be between 0 and 32767 (got 40000)"
    )


def test_listeners_are_only_allowed_on_requests() -> None:
    doc = spec(fld(), type="response", name="DemoResponse", listeners=["broker"])
    assert rejection(doc) == (
        "DemoRequest.json: DemoResponse: listeners are only allowed on requests (got ['broker'])"
    )


def test_latest_version_unstable_is_only_allowed_on_requests() -> None:
    doc = spec(fld(), type="response", name="DemoResponse", latestVersionUnstable="true")
    assert rejection(doc) == (
        "DemoRequest.json: DemoResponse: latestVersionUnstable is only allowed on requests "
        "(got True)"
    )


def test_deprecated_versions_must_lie_inside_valid_versions() -> None:
    assert rejection(spec(fld(), deprecatedVersions="2-5")) == (
        "DemoRequest.json: DemoRequest: deprecatedVersions must lie inside validVersions 0-3 "
        "(got '2-5')"
    )


def test_every_problem_is_reported_not_just_the_first() -> None:
    doc = spec(fld(versions="5+"), fld("Flag", "bool", nullableVersions="0+"), validVersions="0+")
    assert rejections(doc) == [
        "DemoRequest.json: DemoRequest: validVersions must end at a highest version, "
        "not be open-ended (got '0+')",
        "DemoRequest.json: DemoRequest.Flag: nullableVersions is not allowed on type bool "
        "(got '0+')",
    ]


# ----------------------------------------------------------------------------- struct rules


def test_field_names_are_unique_within_a_struct() -> None:
    assert rejection(spec(fld(), fld(type="int64"))) == (
        "DemoRequest.json: DemoRequest.Value: field name used twice in the same struct "
        "(got 'Value')"
    )


def test_tags_are_unique_within_a_struct() -> None:
    doc = spec(
        fld("A", versions="2+", tag=0, taggedVersions="2+"),
        fld("B", versions="2+", tag=0, taggedVersions="2+"),
    )
    assert rejection(doc) == (
        "DemoRequest.json: DemoRequest.B: tag already used by A in the same struct (got 0)"
    )


def test_tags_are_contiguous_from_zero() -> None:
    doc = spec(
        fld("A", versions="2+", tag=0, taggedVersions="2+"),
        fld("B", versions="2+", tag=2, taggedVersions="2+"),
    )
    assert rejection(doc) == (
        "DemoRequest.json: DemoRequest: tags must be contiguous from 0, but 1 is unused "
        "(got [0, 2])"
    )


def test_struct_field_without_fields_must_name_a_common_struct() -> None:
    assert rejection(spec(fld("Topics", "[]Topic"))) == (
        "DemoRequest.json: DemoRequest.Topics: struct type Topic has no fields here and is not "
        "a common struct (got 'Topic')"
    )


def test_common_struct_cannot_be_redefined_inline() -> None:
    common = {"name": "Topic", "versions": "0+", "fields": [fld("Name", "string")]}
    doc = spec(fld("Topics", "[]Topic", fields=[fld("Name", "string")]), commonStructs=[common])
    assert rejection(doc) == (
        "DemoRequest.json: DemoRequest.Topics: common struct Topic cannot be redefined inline "
        "(got 'Topic')"
    )


def test_a_field_of_a_common_struct_type_needs_no_fields() -> None:
    common = {"name": "Topic", "versions": "0+", "fields": [fld("Name", "string")]}
    doc = validate_document(spec(fld("Topics", "[]Topic"), commonStructs=[common]), FILE)
    assert doc["commonStructs"][0]["name"] == "Topic"


def test_inline_struct_is_defined_once_per_message() -> None:
    doc = spec(
        fld("Topics", "[]Topic", fields=[fld("Name", "string")]),
        fld("MoreTopics", "[]Topic", fields=[fld("Name", "string")]),
    )
    assert rejection(doc) == (
        "DemoRequest.json: DemoRequest.MoreTopics: struct Topic is already defined at "
        "DemoRequest.Topics (got 'Topic')"
    )


def test_inline_struct_cannot_take_the_message_name() -> None:
    assert rejection(spec(fld("Self", "DemoRequest", fields=[fld()]))) == (
        "DemoRequest.json: DemoRequest.Self: struct DemoRequest is already defined at "
        "DemoRequest (got 'DemoRequest')"
    )


def test_common_struct_is_defined_once() -> None:
    common = {"name": "Topic", "versions": "0+", "fields": [fld("Name", "string")]}
    assert rejection(spec(fld(), commonStructs=[common, common])) == (
        "DemoRequest.json: DemoRequest.Topic: common struct defined twice (got 'Topic')"
    )


def test_common_struct_names_are_capitalised() -> None:
    common = {"name": "topic", "versions": "0+", "fields": [fld("Name", "string")]}
    assert rejection(spec(fld(), commonStructs=[common])) == (
        "DemoRequest.json: DemoRequest.topic: name must be a capital letter followed by "
        "letters or digits (got 'topic')"
    )


def test_only_struct_fields_can_have_fields() -> None:
    assert rejection(spec(fld("Ids", "[]int32", fields=[fld()]))) == (
        "DemoRequest.json: DemoRequest.Ids: only struct and struct-array fields can have "
        "fields (got '[]int32')"
    )


def test_a_field_outside_its_parents_versions_loads_and_is_never_on_the_wire() -> None:
    # Kafka 4.x's ListOffsetsResponse keeps OldStyleOffsets ("0") under Partitions after
    # validVersions became 1-11; Kafka's generator never compares the two ranges.
    topics = fld("Topics", "[]Topic", "1+", fields=[fld("Name", "string", "0"), fld("Id")])
    doc = validate_document(spec(topics, fld("Old", versions="0"), validVersions="1-3"), FILE)
    message = build_message(doc, FILE)
    assert list(message.versions) == [1, 2, 3]
    for version in message.versions:
        top = [f.name for f in message.root.fields if version in f.versions]
        assert top == ["Topics"]
        nested = message.root.fields[0].struct
        assert nested is not None
        assert [f.name for f in nested.fields if version in f.versions] == ["Id"]


# ----------------------------------------------------------------------------- tagged fields


def test_tag_must_not_be_negative() -> None:
    assert rejection(spec(fld(versions="2+", tag=-1, taggedVersions="2+"))) == (
        "DemoRequest.json: DemoRequest.Value: tag must not be negative (got -1)"
    )


def test_tag_needs_tagged_versions() -> None:
    assert rejection(spec(fld(versions="2+", tag=0))) == (
        "DemoRequest.json: DemoRequest.Value: a tagged field needs taggedVersions (got 0)"
    )


def test_tagged_versions_need_a_tag() -> None:
    assert rejection(spec(fld(versions="2+", taggedVersions="2+"))) == (
        "DemoRequest.json: DemoRequest.Value: taggedVersions needs a tag (got '2+')"
    )


def test_tagged_versions_must_be_open_ended() -> None:
    assert rejection(spec(fld(versions="2-3", tag=0, taggedVersions="2-3"))) == (
        "DemoRequest.json: DemoRequest.Value: taggedVersions must be open-ended (N+) (got '2-3')"
    )


def test_tagged_versions_must_equal_versions() -> None:
    assert rejection(spec(fld(versions="2+", tag=0, taggedVersions="3+"))) == (
        "DemoRequest.json: DemoRequest.Value: taggedVersions must equal versions 2+ (got '3+')"
    )


def test_tagged_versions_must_lie_inside_flexible_versions() -> None:
    assert rejection(spec(fld(versions="1+", tag=0, taggedVersions="1+"))) == (
        "DemoRequest.json: DemoRequest.Value: taggedVersions must lie inside the message's "
        "flexibleVersions 2+ (got '1+')"
    )


def test_tagged_field_is_nullable_in_all_tagged_versions_or_none() -> None:
    doc = spec(fld(type="string", versions="2+", tag=0, taggedVersions="2+", nullableVersions="3+"))
    assert rejection(doc) == (
        "DemoRequest.json: DemoRequest.Value: nullableVersions must cover all of "
        "taggedVersions 2+ or none of them (got '3+')"
    )


def test_records_are_never_tagged() -> None:
    assert rejection(spec(fld(type="records", versions="2+", tag=0, taggedVersions="2+"))) == (
        "DemoRequest.json: DemoRequest.Value: records fields cannot be tagged (got 0)"
    )


def test_tagged_field_cannot_be_a_map_key() -> None:
    topics = fld(
        "Topics",
        "[]Topic",
        fields=[fld("Name", "string", "2+", mapKey=True, tag=0, taggedVersions="2+")],
    )
    assert rejection(spec(topics)) == (
        "DemoRequest.json: DemoRequest.Topics.Name: a tagged field cannot be a mapKey (got True)"
    )


def test_versions_default_to_tagged_versions() -> None:
    doc = spec({"name": "Value", "type": "int32", "tag": 0, "taggedVersions": "2+"})
    assert validate_document(doc, FILE)["fields"][0]["versions"] == "2+"


# ----------------------------------------------------------------------------- field rules


def test_map_key_is_not_allowed_on_top_level_fields() -> None:
    assert rejection(spec(fld(type="string", mapKey=True))) == (
        "DemoRequest.json: DemoRequest.Value: mapKey is not allowed on a message's top-level "
        "fields (got True)"
    )


def test_nullable_versions_only_on_nullable_types() -> None:
    assert rejection(spec(fld(nullableVersions="0+"))) == (
        "DemoRequest.json: DemoRequest.Value: nullableVersions is not allowed on type int32 "
        "(got '0+')"
    )


def test_nullable_versions_must_overlap_versions() -> None:
    assert rejection(spec(fld(type="string", versions="0-1", nullableVersions="2+"))) == (
        "DemoRequest.json: DemoRequest.Value: nullableVersions share no version with versions "
        "0-1 (got '2+')"
    )


def test_zero_copy_only_on_bytes() -> None:
    assert rejection(spec(fld(type="string", zeroCopy=True))) == (
        "DemoRequest.json: DemoRequest.Value: zeroCopy is only allowed on bytes fields "
        "(got 'string')"
    )


def test_field_flexible_versions_only_on_string_and_bytes() -> None:
    assert rejection(spec(fld(flexibleVersions="none"))) == (
        "DemoRequest.json: DemoRequest.Value: flexibleVersions is only allowed on string and "
        "bytes fields (got 'int32')"
    )


def test_entity_type_must_match_the_field_type() -> None:
    assert rejection(spec(fld(type="int32", entityType="topicName"))) == (
        "DemoRequest.json: DemoRequest.Value: entityType topicName needs type string or "
        "[]string (got 'int32')"
    )


def test_broker_id_entity_is_int32_not_int64() -> None:
    assert rejection(spec(fld(type="int64", entityType="brokerId"))) == (
        "DemoRequest.json: DemoRequest.Value: entityType brokerId needs type int32 or []int32 "
        "(got 'int64')"
    )


def test_entity_type_fits_arrays_of_its_type() -> None:
    doc = spec(fld(type="[]int64", entityType="producerId"))
    assert validate_document(doc, FILE)["fields"][0]["entityType"] == "producerId"


# ----------------------------------------------------------------------------- defaults


def test_integer_default_must_fit_its_type() -> None:
    assert rejection(spec(fld(type="int8", default="128"))) == (
        "DemoRequest.json: DemoRequest.Value: the default does not fit int8 (-128 to 127) "
        "(got '128')"
    )


def test_hex_default_is_accepted_within_range() -> None:
    doc = validate_document(spec(fld(default="0x7fffffff")), FILE)
    assert doc["fields"][0]["default"] == "0x7fffffff"


def test_hex_default_beyond_int32_is_rejected() -> None:
    assert rejection(spec(fld(default="0x80000000"))) == (
        "DemoRequest.json: DemoRequest.Value: the default does not fit int32 "
        "(-2147483648 to 2147483647) (got '0x80000000')"
    )


def test_integer_default_must_be_a_number() -> None:
    assert rejection(spec(fld(type="int64", default="ten"))) == (
        "DemoRequest.json: DemoRequest.Value: the default of an int64 field must be a decimal "
        "or 0x hex integer (got 'ten')"
    )


def test_bool_default_must_be_true_or_false() -> None:
    assert rejection(spec(fld(type="bool", default="yes"))) == (
        "DemoRequest.json: DemoRequest.Value: the default of a bool field must be true or false "
        "(got 'yes')"
    )


def test_json_boolean_default_is_accepted_for_bool() -> None:
    doc = validate_document(spec(fld(type="bool", default=False)), FILE)
    assert doc["fields"][0]["default"] == "false"


def test_float_default_must_be_a_number() -> None:
    assert rejection(spec(fld(type="float64", default="fast"))) == (
        "DemoRequest.json: DemoRequest.Value: the default of a float64 field must be a decimal "
        "number (got 'fast')"
    )


def test_uuid_default_must_be_base64url_of_16_bytes() -> None:
    assert rejection(spec(fld(type="uuid", default="not-a-uuid"))) == (
        "DemoRequest.json: DemoRequest.Value: the default of a uuid field must be 22 characters "
        "of URL-safe base64 (got 'not-a-uuid')"
    )


def test_uuid_default_in_base64url_is_accepted() -> None:
    doc = validate_document(spec(fld(type="uuid", default="AAAAAAAAAAAAAAAAAAAAAQ")), FILE)
    assert doc["fields"][0]["default"] == "AAAAAAAAAAAAAAAAAAAAAQ"


def test_array_default_is_only_empty_or_null() -> None:
    assert rejection(spec(fld(type="[]int32", default="[1]"))) == (
        "DemoRequest.json: DemoRequest.Value: the default of an array field can only be empty "
        "or null (got '[1]')"
    )


def test_bytes_default_is_only_empty_or_null() -> None:
    assert rejection(spec(fld(type="bytes", default="abc"))) == (
        "DemoRequest.json: DemoRequest.Value: the default of a bytes field can only be empty "
        "or null (got 'abc')"
    )


def test_null_default_needs_the_field_nullable_in_every_version() -> None:
    assert rejection(spec(fld(type="string", nullableVersions="1+", default="null"))) == (
        "DemoRequest.json: DemoRequest.Value: a null default needs the field nullable in all "
        "its versions 0+ (got 'null')"
    )


def test_null_default_on_an_always_nullable_field_is_accepted() -> None:
    doc = spec(fld(type="string", versions="1+", nullableVersions="0+", default="null"))
    assert validate_document(doc, FILE)["fields"][0]["default"] == "null"


# ----------------------------------------------------------------------------- loader dialect


DIALECT_TEXT = """
// A line comment before the spec.
{
  "apiKey": "99", /* a block comment
                     spanning lines */
  "type": "request",
  "name": "DemoRequest",
  "name": "DemoRequest",
  "validVersions": "0-3",
  "flexibleVersions": "2+",
  "fields": [
    { "name": "Limit", "type": "int32", "versions": "0+", "default": "0x7fffffff" },
    { "name": "Hint", "type": "string", "versions": "0+", "default": null,
      "ignorable": "false" },
    { "name": "Extra", "type": "int32", "tag": "0", "taggedVersions": "2+" }
  ]
}
"""


@pytest.fixture(scope="module")
def dialect_doc() -> dict[str, Any]:
    return validate_document(parse_spec_text(DIALECT_TEXT, FILE), FILE)


def test_comments_and_a_repeated_equal_key_are_accepted(dialect_doc: dict[str, Any]) -> None:
    assert dialect_doc["name"] == "DemoRequest"


def test_repeated_key_with_a_different_value_is_rejected() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec_text('{"name": "A", "name": "B"}', FILE)
    assert info.value.line() == (
        "DemoRequest.json: invalid JSON (got \"key 'name' repeated with a different value\")"
    )


def test_text_after_the_closing_brace_is_ignored_with_a_warning() -> None:
    # Kafka reads the first JSON value only; 2.8's DescribeProducersRequest.json has a
    # stray "]}" after it.
    with pytest.warns(SpecWarning) as caught:
        doc = parse_spec_text('{"name": "A",\n "type": "data"\n}\n  ]}\n', FILE)
    assert doc == {"name": "A", "type": "data"}
    assert [str(w.message) for w in caught] == [
        "DemoRequest.json: line 3: text after the spec's closing brace is ignored, as Kafka does"
    ]


def test_string_api_key_becomes_an_int(dialect_doc: dict[str, Any]) -> None:
    assert dialect_doc["apiKey"] == 99


def test_string_tag_becomes_an_int(dialect_doc: dict[str, Any]) -> None:
    assert dialect_doc["fields"][2]["tag"] == 0


def test_hex_default_is_kept_as_written(dialect_doc: dict[str, Any]) -> None:
    assert dialect_doc["fields"][0]["default"] == "0x7fffffff"


def test_null_default_means_no_default(dialect_doc: dict[str, Any]) -> None:
    assert "default" not in dialect_doc["fields"][1]


def test_string_false_becomes_a_bool(dialect_doc: dict[str, Any]) -> None:
    assert dialect_doc["fields"][1]["ignorable"] is False


def test_omitted_versions_equal_tagged_versions(dialect_doc: dict[str, Any]) -> None:
    assert dialect_doc["fields"][2]["versions"] == "2+"


def test_string_map_key_becomes_a_bool() -> None:
    topics = fld("Topics", "[]Topic", fields=[fld("Name", "string", mapKey="true")])
    doc = validate_document(spec(topics), FILE)
    assert doc["fields"][0]["fields"][0]["mapKey"] is True


# ----------------------------------------------------------------------------- directory rules


def api(name: str, kind: str, key: int | None = 99, valid: str = "0-3") -> dict[str, Any]:
    return validate_document(
        spec(fld(), name=name, type=kind, apiKey=key, validVersions=valid), f"{name}.json"
    )


def directory_rejections(*docs: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecErrors) as info:
        validate_directory({f"{d['name']}.json": d for d in docs})
    return [e.line() for e in info.value.errors]


def test_request_and_response_pair_passes() -> None:
    request, response = api("DemoRequest", "request"), api("DemoResponse", "response")
    validate_directory({"DemoRequest.json": request, "DemoResponse.json": response})


def test_two_requests_cannot_share_an_api_key() -> None:
    assert directory_rejections(
        api("DemoRequest", "request"),
        api("DemoResponse", "response"),
        api("OtherRequest", "request"),
    ) == [
        "OtherRequest.json: OtherRequest: apiKey already used by the request in "
        "DemoRequest.json (got 99)"
    ]


def test_request_needs_a_response() -> None:
    assert directory_rejections(api("DemoRequest", "request")) == [
        "DemoRequest.json: DemoRequest: no response spec has this apiKey (got 99)"
    ]


def test_response_is_named_after_its_request() -> None:
    assert directory_rejections(
        api("DemoRequest", "request"),
        api("OtherResponse", "response"),
    ) == [
        "OtherResponse.json: OtherResponse: the response to DemoRequest must be named "
        "DemoResponse (got 'OtherResponse')"
    ]


def test_request_and_response_share_valid_versions() -> None:
    assert directory_rejections(
        api("DemoRequest", "request"),
        api("DemoResponse", "response", valid="0-4"),
    ) == ["DemoResponse.json: DemoResponse: validVersions must equal the request's 0-3 (got '0-4')"]


def test_api_key_only_on_request_and_response_across_files() -> None:
    header = {
        "type": "header",
        "name": "DemoHeader",
        "apiKey": 5,
        "validVersions": "0",
        "flexibleVersions": "none",
        "fields": [],
    }
    assert directory_rejections(header) == [
        "DemoHeader.json: DemoHeader: apiKey is only allowed on request, response, metadata "
        "and record specs (got 5)"
    ]


def test_coordinator_records_pair_a_key_with_a_value_by_record_type() -> None:
    key = api("DemoKey", "coordinator-key", key=3, valid="0")
    value = api("DemoValue", "coordinator-value", key=3, valid="0-1")
    validate_directory({"DemoKey.json": key, "DemoValue.json": value})
    lone = api("LoneKey", "coordinator-key", key=4, valid="0")
    assert directory_rejections(key, value, lone) == [
        "LoneKey.json: LoneKey: no coordinator-value spec has this apiKey (got 4)"
    ]


def test_coordinators_number_their_record_types_apart() -> None:
    # The transaction log and the share coordinator both have a record type 0.
    ours = [api(n, k, key=0, valid="0") for n, k in
            (("LogKey", "coordinator-key"), ("LogValue", "coordinator-value"),
             ("SnapKey", "coordinator-key"), ("SnapValue", "coordinator-value"))]  # fmt: skip
    validate_directory({f"{d['name']}.json": d for d in ours})
    mismatched = api("OtherValue", "coordinator-value", key=0, valid="0")
    assert directory_rejections(ours[0], mismatched) == [
        "LogKey.json: LogKey: no coordinator-value spec has this apiKey (got 0)",
        "OtherValue.json: OtherValue: no coordinator-key spec has this apiKey (got 0)",
    ]


def test_message_names_are_unique_across_files() -> None:
    data = api("DemoData", "data", key=None)
    with pytest.raises(SpecErrors) as info:
        validate_directory({"A.json": data, "B.json": data})
    assert [e.line() for e in info.value.errors] == [
        "B.json: DemoData: message name already used in A.json (got 'DemoData')"
    ]
