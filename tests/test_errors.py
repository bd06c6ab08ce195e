"""Kafka's error-code table and the runtime's error classes."""

from __future__ import annotations

import pickle
import re

import pytest
from kafkagen.runtime import errors
from kafkagen.runtime.errors import (
    ERRORS,
    CorruptMessageError,
    CorruptRecordError,
    DecodeError,
    ErrorCode,
    InvalidRecordError,
    InvalidRecordSetError,
    KafkaError,
    NotLeaderOrFollowerError,
    RecordSetError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    error_for_code,
    raise_for_code,
)

# (code, Kafka name, retriable): facts of the protocol, spot-checked.
WELL_KNOWN = [
    (-1, "UNKNOWN_SERVER_ERROR", False),
    (0, "NONE", False),
    (1, "OFFSET_OUT_OF_RANGE", False),
    (2, "CORRUPT_MESSAGE", True),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", True),
    (5, "LEADER_NOT_AVAILABLE", True),
    (6, "NOT_LEADER_OR_FOLLOWER", True),
    (7, "REQUEST_TIMED_OUT", True),
    (10, "MESSAGE_TOO_LARGE", False),
    (15, "COORDINATOR_NOT_AVAILABLE", True),
    (16, "NOT_COORDINATOR", True),
    (19, "NOT_ENOUGH_REPLICAS", True),
    (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True),
    (25, "UNKNOWN_MEMBER_ID", False),
    (27, "REBALANCE_IN_PROGRESS", False),
    (29, "TOPIC_AUTHORIZATION_FAILED", False),
    (35, "UNSUPPORTED_VERSION", False),
    (36, "TOPIC_ALREADY_EXISTS", False),
    (41, "NOT_CONTROLLER", True),
    (42, "INVALID_REQUEST", False),
    (43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", False),
    (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False),
    (47, "INVALID_PRODUCER_EPOCH", False),
    (51, "CONCURRENT_TRANSACTIONS", True),
    (56, "KAFKA_STORAGE_ERROR", True),
    (74, "FENCED_LEADER_EPOCH", True),
    (76, "UNSUPPORTED_COMPRESSION_TYPE", False),
    (87, "INVALID_RECORD", False),
    (89, "THROTTLING_QUOTA_EXCEEDED", True),
    (90, "PRODUCER_FENCED", False),
    (100, "UNKNOWN_TOPIC_ID", True),
    (110, "FENCED_MEMBER_EPOCH", False),
    (129, "REBOOTSTRAP_REQUIRED", False),
    (133, "SHARE_SESSION_LIMIT_REACHED", True),
]


def _class_name(kafka_name: str) -> str:
    parts = kafka_name.split("_")
    if parts[-1] == "ERROR":
        parts.pop()
    return "".join(p.capitalize() for p in parts) + "Error"


# ---------------------------------------------------------------- the table


def test_table_covers_every_code_once() -> None:
    codes = list(ERRORS)
    assert len(codes) == len(set(codes))
    # Kafka's codes are dense from -1 to the newest; 133 is the newest known here.
    assert sorted(codes) == list(range(-1, max(codes) + 1))
    assert max(codes) >= 133
    names = [cls.name for cls in ERRORS.values()]
    assert len(names) == len(set(names))
    class_names = [cls.__name__ for cls in ERRORS.values()]
    assert len(class_names) == len(set(class_names))


def test_every_entry_is_consistent() -> None:
    for code, cls in ERRORS.items():
        assert issubclass(cls, KafkaError)
        assert cls.code == code
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", cls.name)
        assert isinstance(cls.retriable, bool)
        assert cls.message and cls.message.strip() == cls.message
        assert cls.__name__ == _class_name(cls.name)
        assert getattr(errors, cls.__name__) is cls


def test_error_code_enum_matches_table() -> None:
    assert {e.value: e.name for e in ErrorCode} == {c: cls.name for c, cls in ERRORS.items()}
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER == 6
    assert ErrorCode(87) is ErrorCode.INVALID_RECORD
    assert ERRORS[ErrorCode.UNKNOWN_TOPIC_OR_PARTITION] is UnknownTopicOrPartitionError


@pytest.mark.parametrize(("code", "name", "retriable"), WELL_KNOWN)
def test_well_known_codes(code: int, name: str, retriable: bool) -> None:
    cls = error_for_code(code)
    assert cls.code == code
    assert cls.name == name
    assert cls.retriable is retriable
    assert ErrorCode[name] == code


def test_not_leader_or_follower() -> None:
    assert NotLeaderOrFollowerError.code == 6
    assert NotLeaderOrFollowerError.retriable is True
    assert error_for_code(6) is NotLeaderOrFollowerError


# ---------------------------------------------------------------- lookups and raising


@pytest.mark.parametrize("code", [134, 9999, -2, -100])
def test_unknown_codes_fall_back_and_keep_the_code(code: int) -> None:
    cls = error_for_code(code)
    assert issubclass(cls, UnknownServerError)
    assert cls.code == code
    assert cls.retriable is False
    assert error_for_code(code) is cls  # one class per code
    assert code not in ERRORS
    with pytest.raises(UnknownServerError) as info:
        raise_for_code(code)
    assert info.value.code == code
    assert str(code) in str(info.value)


def test_raise_for_code_zero_is_a_no_op() -> None:
    assert raise_for_code(0) is None
    assert raise_for_code(ErrorCode.NONE, "ignored") is None


def test_raise_and_catch_by_class_and_by_base() -> None:
    with pytest.raises(NotLeaderOrFollowerError) as info:
        raise_for_code(6)
    assert info.value.message == NotLeaderOrFollowerError.message
    assert "NOT_LEADER_OR_FOLLOWER (6)" in str(info.value)

    with pytest.raises(KafkaError) as base_info:
        raise_for_code(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "no topic 'x'")
    err = base_info.value
    assert isinstance(err, UnknownTopicOrPartitionError)
    assert err.code == 3 and err.retriable
    assert err.message == "no topic 'x'"
    assert str(err) == "UNKNOWN_TOPIC_OR_PARTITION (3): no topic 'x'"

    try:
        raise error_for_code(7)()
    except KafkaError as e:
        assert e.retriable and e.name == "REQUEST_TIMED_OUT"


def test_instance_message_does_not_change_the_class_default() -> None:
    default = CorruptMessageError.message
    CorruptMessageError("custom")
    assert CorruptMessageError.message == default
    assert CorruptMessageError().message == default


def test_unsupported_version_error_is_the_code_35_class() -> None:
    assert error_for_code(35) is UnsupportedVersionError
    err = UnsupportedVersionError("FooRequest has no version 99")
    assert isinstance(err, KafkaError)
    assert err.code == 35 and not err.retriable
    assert "FooRequest has no version 99" in str(err)
    with pytest.raises(UnsupportedVersionError):
        raise_for_code(35)


def test_record_errors_are_their_table_classes() -> None:
    corrupt = CorruptRecordError("CRC mismatch", 2, 140)
    assert isinstance(corrupt, CorruptMessageError) and isinstance(corrupt, RecordSetError)
    assert corrupt.code == 2 and corrupt.name == "CORRUPT_MESSAGE" and corrupt.retriable
    assert str(corrupt) == "CORRUPT_MESSAGE (2): CRC mismatch (batch 2 at byte 140)"
    invalid = InvalidRecordSetError("bad varint", 0, 0, [(3, "null key")])
    assert isinstance(invalid, InvalidRecordError)
    assert invalid.code == 87 and not invalid.retriable
    assert invalid.record_errors == [(3, "null key")]
    assert RecordSetError("no place").message == "no place"


# ---------------------------------------------------------------- pickling


def _round_trip(err: BaseException) -> BaseException:
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        again: BaseException = pickle.loads(pickle.dumps(err, protocol=protocol))
        assert type(again) is type(err)
        assert str(again) == str(err)
        assert again.args == err.args
    return again


def test_pickle_decode_error_keeps_fields() -> None:
    err = DecodeError("string length 9 exceeds the 3 bytes left", "MetadataRequest", 12, 40)
    again = _round_trip(err)
    assert isinstance(again, DecodeError)
    assert (again.reason, again.message, again.version, again.offset) == (
        err.reason,
        "MetadataRequest",
        12,
        40,
    )
    short = _round_trip(DecodeError("short"))
    assert isinstance(short, DecodeError) and short.offset == -1


@pytest.mark.parametrize("code", sorted(ERRORS))
def test_pickle_every_table_class(code: int) -> None:
    err = ERRORS[code](f"message for {code}")
    again = _round_trip(err)
    assert isinstance(again, KafkaError)
    assert again.code == code and again.message == f"message for {code}"


def test_pickle_default_message_and_unknown_code() -> None:
    again = _round_trip(NotLeaderOrFollowerError())
    assert isinstance(again, KafkaError)
    assert again.message == NotLeaderOrFollowerError.message
    unknown = error_for_code(4242)("from a newer broker")
    again = _round_trip(unknown)
    assert isinstance(again, UnknownServerError)
    assert again.code == 4242 and again.message == "from a newer broker"


def test_pickle_record_set_errors_keep_fields() -> None:
    err = InvalidRecordSetError("record 1: null key", 0, 0, [(1, "null key"), (4, "null key")])
    again = _round_trip(err)
    assert isinstance(again, InvalidRecordSetError)
    assert (again.reason, again.batch_index, again.offset) == ("record 1: null key", 0, 0)
    assert again.record_errors == [(1, "null key"), (4, "null key")]
    assert again.code == 87
