"""The records the group coordinator keeps in ``__consumer_offsets``, in Kafka's layout.

Keys and values start with an int16 schema version, then the fields big-endian with int16
string lengths, as Kafka writes them, so tools that read Kafka's offsets topic read ours:

- offset commit: key v1 (group, topic, partition), value v3 (offset, leader epoch,
  metadata, commit timestamp);
- group metadata: key v2 (group), value v3 (protocol type, generation, protocol, leader,
  state timestamp, members with their subscription and assignment).

A null value is a tombstone: the offset or the group was deleted.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafkagen.runtime.wire import write_nullable_string, write_string

__all__ = [
    "GroupMetadataValue",
    "MemberMetadataValue",
    "OffsetValue",
    "decode_key",
    "decode_offset_value",
    "group_key",
    "group_value",
    "offset_key",
    "offset_value",
]

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


def _bytes(b: bytes) -> bytes:
    return _I32.pack(len(b)) + b


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def i16(self) -> int:
        (v,) = _I16.unpack_from(self.data, self.pos)
        self.pos += 2
        return int(v)

    def i32(self) -> int:
        (v,) = _I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(v)

    def i64(self) -> int:
        (v,) = _I64.unpack_from(self.data, self.pos)
        self.pos += 8
        return int(v)

    def nstr(self) -> str | None:
        n = self.i16()
        if n < 0:
            return None
        s = self.data[self.pos : self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def str(self) -> str:
        return self.nstr() or ""


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    state_timestamp: int
    members: tuple[MemberMetadataValue, ...]


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return (
        _I16.pack(OFFSET_KEY_VERSION)
        + write_string(group)
        + write_string(topic)
        + _I32.pack(partition)
    )


def offset_value(v: OffsetValue) -> bytes:
    return (
        _I16.pack(OFFSET_VALUE_VERSION)
        + _I64.pack(v.offset)
        + _I32.pack(v.leader_epoch)
        + write_string(v.metadata)
        + _I64.pack(v.commit_timestamp)
    )


def group_key(group: str) -> bytes:
    return _I16.pack(GROUP_KEY_VERSION) + write_string(group)


def group_value(v: GroupMetadataValue) -> bytes:
    out = [
        _I16.pack(GROUP_VALUE_VERSION),
        write_string(v.protocol_type),
        _I32.pack(v.generation),
        write_nullable_string(v.protocol),
        write_nullable_string(v.leader),
        _I64.pack(v.state_timestamp),
        _I32.pack(len(v.members)),
    ]
    for m in v.members:
        out += [
            write_string(m.member_id),
            write_nullable_string(m.group_instance_id),
            write_string(m.client_id),
            write_string(m.client_host),
            _I32.pack(m.rebalance_timeout_ms),
            _I32.pack(m.session_timeout_ms),
            _bytes(m.subscription),
            _bytes(m.assignment),
        ]
    return b"".join(out)


def decode_key(data: bytes) -> tuple[str, str, str, int] | None:
    """("offset", group, topic, partition) or ("group", group, "", -1); None if unknown."""
    r = _Reader(data)
    version = r.i16()
    if version in (0, 1):
        return "offset", r.str(), r.str(), r.i32()
    if version == 2:
        return "group", r.str(), "", -1
    return None


def decode_offset_value(data: bytes) -> OffsetValue:
    r = _Reader(data)
    version = r.i16()
    offset = r.i64()
    epoch = r.i32() if version >= 3 else -1
    metadata = r.str()
    timestamp = r.i64()
    return OffsetValue(offset, epoch, metadata, timestamp)
