"""How Kafka frames a coordinator's records in its internal topics.

A key is the int16 record type (the spec's apiKey) then the key struct at version 0; a
value is its int16 version then the value struct at that version; a null value is a
tombstone. The structs are the codecs generated from Kafka's own record specs, so Kafka's
tools (``DumpLogSegments --offsets-decoder``) read what the broker writes.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import TypeVar

from kafkagen.runtime.message import Message
from kafkagen.runtime.records import Record

__all__ = [
    "changed_records",
    "decode_key",
    "decode_state_key",
    "decode_value",
    "key_bytes",
    "record",
    "value_bytes",
]

#: A group's state records by owner (a member id, "" for the group's own): key -> value.
GroupRecords = dict[str, dict[bytes, bytes]]

_I16 = struct.Struct(">h")
M = TypeVar("M", bound=Message)


def key_bytes(key: Message) -> bytes:
    assert key.API_KEY is not None, f"{type(key).__name__} is not a coordinator record key"
    return _I16.pack(key.API_KEY) + key.encode(0)


def value_bytes(value: Message, version: int) -> bytes:
    return _I16.pack(version) + value.encode(version)


def decode_key(data: bytes, types: Mapping[int, type[Message]]) -> Message | None:
    """The key struct of a record whose type is one of ``types``; None for any other type.

    Raises ValueError naming the record type if its bytes do not decode.
    """
    if len(data) < 2:
        raise ValueError(f"a record key of {len(data)} bytes has no record type")
    (record_type,) = _I16.unpack_from(data)
    cls = types.get(record_type)
    if cls is None:
        return None
    try:
        return cls.decode(data[2:], 0)
    except Exception as e:
        raise ValueError(f"record type {record_type} ({cls.__name__}) key: {e}") from e


def decode_value(cls: type[M], data: bytes) -> M:
    """The value struct at the version its prefix names; ValueError if it does not decode."""
    if len(data) < 2:
        raise ValueError(f"a {cls.__name__} of {len(data)} bytes has no version")
    (version,) = _I16.unpack_from(data)
    if not cls.LOWEST_VERSION <= version <= cls.HIGHEST_VERSION:
        raise ValueError(f"{cls.__name__} version {version} is not one Kafka defines")
    try:
        return cls.decode(data[2:], version)
    except Exception as e:
        raise ValueError(f"{cls.__name__} v{version}: {e}") from e


def record(key: Message, value: Message) -> tuple[bytes, bytes]:
    """A group state record's key and value bytes (value version 0)."""
    return key_bytes(key), value_bytes(value, 0)


def decode_state_key(key: bytes, types: Mapping[int, type[Message]]) -> tuple[str, str, int] | None:
    """(group id, member id or "", record type) of a group state record's key whose type is
    one of ``types``; None for any other type. Raises ValueError if it does not decode."""
    k = decode_key(key, types)
    if k is None:
        return None
    assert k.API_KEY is not None
    return k.group_id, getattr(k, "member_id", ""), k.API_KEY  # type: ignore[attr-defined]


def changed_records(old: GroupRecords, wanted: GroupRecords, timestamp: int) -> list[Record]:
    """The records that take a group's state from ``old`` to ``wanted``: those whose value
    changed, and tombstones for the owners gone."""
    records = [
        Record(-1, timestamp, key, value)
        for owner, values in wanted.items()
        for key, value in values.items()
        if old.get(owner, {}).get(key) != value
    ]
    records += [
        Record(-1, timestamp, key, None)
        for owner, values in old.items()
        if owner not in wanted
        for key in values
    ]
    return records
