"""The classic group coordinator's records in ``__consumer_offsets``, in Kafka's format.

The structs are the codecs generated from Kafka's record specs (`record_format` frames
them as Kafka does), written at the versions Kafka writes them:

- offset commit: record type 1 (group, topic, partition), value v3 (offset, leader epoch,
  metadata, commit timestamp);
- group metadata: record type 2 (group), value v3 (protocol type, generation, protocol,
  leader, state timestamp, members with their subscription and assignment).

A null value is a tombstone: the offset or the group was deleted. Record type 0 is the
offset commit key of Kafka's oldest brokers, read like type 1.
"""

from __future__ import annotations

from kafkagen.generated.group_metadata_key import GroupMetadataKey
from kafkagen.generated.group_metadata_value import GroupMetadataValue
from kafkagen.generated.offset_commit_key import OffsetCommitKey
from kafkagen.generated.offset_commit_value import OffsetCommitValue
from kafkagen.runtime.message import Message

from ..coordinator import record_format

__all__ = [
    "GroupMetadataValue",
    "OffsetCommitValue",
    "decode_group_value",
    "decode_key",
    "decode_offset_value",
    "group_key",
    "group_value",
    "offset_key",
    "offset_value",
]

OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3

#: Record type -> key struct of the classic group records (KIP-848's are `consumer_group`'s);
#: 0 is the legacy offset commit key.
KEY_TYPES: dict[int, type[Message]] = {0: OffsetCommitKey, 1: OffsetCommitKey, 2: GroupMetadataKey}


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return record_format.key_bytes(OffsetCommitKey(group=group, topic=topic, partition=partition))


def offset_value(v: OffsetCommitValue) -> bytes:
    return record_format.value_bytes(v, OFFSET_VALUE_VERSION)


def group_key(group: str) -> bytes:
    return record_format.key_bytes(GroupMetadataKey(group=group))


def group_value(v: GroupMetadataValue) -> bytes:
    return record_format.value_bytes(v, GROUP_VALUE_VERSION)


def decode_key(data: bytes) -> tuple[str, str, str, int] | None:
    """("offset", group, topic, partition) or ("group", group, "", -1); None for a record
    type that is not a classic group's. Raises ValueError if the key does not decode."""
    key = record_format.decode_key(data, KEY_TYPES)
    if isinstance(key, OffsetCommitKey):
        return "offset", key.group, key.topic, key.partition
    if isinstance(key, GroupMetadataKey):
        return "group", key.group, "", -1
    return None


def decode_offset_value(data: bytes) -> OffsetCommitValue:
    return record_format.decode_value(OffsetCommitValue, data)


def decode_group_value(data: bytes) -> GroupMetadataValue:
    return record_format.decode_value(GroupMetadataValue, data)
