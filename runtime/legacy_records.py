"""Kafka's message formats v0 and v1 (magic 0 and 1), the "message sets" of Produce v0-2
and Fetch v0-3, and their conversion from and to v2 record batches.

A message set is entries back to back, each one message::

    offset int64 | message_size int32 | crc uint32 | magic int8 | attributes int8
    | timestamp int64 (magic 1 only) | key bytes | value bytes

``message_size`` counts the bytes after itself; keys and values are an int32 length (-1
for null) and the bytes. The CRC-32 (IEEE) covers magic to the end. The attributes' low
three bits name the codec (none, gzip, snappy, lz4); in magic 1 bit 3 says the timestamp
is the broker's append time. A compressed message (the wrapper) holds as its value a
compressed message set of inner messages of its magic; its offset is the last inner one's.
Inner offsets are absolute in magic 0 and relative (0, 1, ...) in magic 1, whose wrapper
timestamp is the largest inner one (or the append time, which then stands for all).

As Kafka 3.x does, the broker's log holds only v2 batches: a produced message set becomes
one v2 batch (:func:`upconvert`) and a fetch older than v4 gets the v2 batches written back
as messages of the magic its version reads (:func:`downconvert`): headers, producer ids
and transaction markers have no place there and are dropped.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from .compression import CompressionType, compress, decompress
from .errors import (
    CorruptRecordError,
    InvalidRecordSetError,
    RecordSetError,
    UnsupportedCodecError,
)
from .records import (
    NO_TIMESTAMP,
    Record,
    TimestampType,
    build_batch,
    iter_batches,
)

__all__ = [
    "LegacyMessage",
    "build_message_set",
    "downconvert",
    "fetch_magic",
    "is_legacy",
    "iter_legacy_records",
    "iter_messages",
    "upconvert",
]

Buffer = bytes | bytearray | memoryview

_ENTRY = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_LOG_OVERHEAD = 12
_MAGIC_AT = 16
# The smallest message after offset and size: crc, magic, attributes and two null lengths
# (magic 1 adds its timestamp).
_MIN_SIZE = {0: 14, 1: 22}
_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08
_LEGACY_CODECS = (
    CompressionType.NONE,
    CompressionType.GZIP,
    CompressionType.SNAPPY,
    CompressionType.LZ4,
)


def fetch_magic(fetch_version: int) -> int:
    """The message format a Fetch of this version reads: 0 up to v1, 1 for v2-3, else 2."""
    return 0 if fetch_version <= 1 else 1 if fetch_version <= 3 else 2


@dataclass(frozen=True, slots=True)
class LegacyMessage:
    """One magic 0/1 message as it stands in its set (a wrapper's value still compressed)."""

    offset: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    #: Byte position of the entry in its message set.
    position: int

    @property
    def compression(self) -> int:
        return self.attributes & _CODEC_MASK

    @property
    def timestamp_type(self) -> TimestampType:
        log_append = self.magic > 0 and self.attributes & _TIMESTAMP_TYPE_MASK
        return TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME


def is_legacy(data: Buffer) -> bool:
    """Whether a record set starts with a magic 0 or 1 message (else v2 or empty)."""
    return len(data) > _MAGIC_AT and data[_MAGIC_AT] in (0, 1)


def iter_messages(data: Buffer) -> Iterator[LegacyMessage]:
    """The complete messages of a message set, CRC checked; a cut-short last entry is
    dropped, as Kafka drops it from a produced set. Framing and CRC problems raise
    CorruptRecordError naming the entry."""
    view = memoryview(data).cast("B") if isinstance(data, memoryview) else memoryview(data)
    total = len(view)
    pos = 0
    index = 0
    while total - pos >= _LOG_OVERHEAD:
        (size,) = _I32.unpack_from(view, pos + 8)
        if total - pos <= _MAGIC_AT:
            break
        magic = view[pos + _MAGIC_AT]
        if magic not in _MIN_SIZE:
            raise CorruptRecordError(f"message {index}: magic {magic} in a v0/v1 set", -1, pos)
        if size < _MIN_SIZE[magic]:
            raise CorruptRecordError(
                f"message {index}: size {size} is below the smallest magic {magic} message",
                -1,
                pos,
            )
        end = pos + _LOG_OVERHEAD + size
        if end > total:
            break
        offset, _, crc, _, attributes = _ENTRY.unpack_from(view, pos)
        body = view[pos + _MAGIC_AT : end]
        if zlib.crc32(body) != crc:
            raise CorruptRecordError(
                f"message {index}: CRC {crc:#010x} does not match its contents", -1, pos
            )
        at = pos + _MAGIC_AT + 2
        timestamp = NO_TIMESTAMP
        if magic == 1:
            (timestamp,) = _I64.unpack_from(view, at)
            at += 8
        key, at = _read_bytes(view, at, end, index, pos)
        value, at = _read_bytes(view, at, end, index, pos)
        if at != end:
            raise CorruptRecordError(
                f"message {index}: {end - at} bytes left after its value", -1, pos
            )
        yield LegacyMessage(offset, magic, attributes, timestamp, key, value, pos)
        pos = end
        index += 1


def _read_bytes(
    view: memoryview, at: int, end: int, index: int, pos: int
) -> tuple[bytes | None, int]:
    if at + 4 > end:
        raise CorruptRecordError(f"message {index}: ends inside a length", -1, pos)
    (n,) = _I32.unpack_from(view, at)
    at += 4
    if n < 0:
        return None, at
    if at + n > end:
        raise CorruptRecordError(
            f"message {index}: a {n}-byte field runs past the message's end", -1, pos
        )
    return bytes(view[at : at + n]), at + n


def _inner_messages(wrapper: LegacyMessage) -> list[LegacyMessage]:
    codec = wrapper.compression
    if codec not in _LEGACY_CODECS:
        raise CorruptRecordError(f"codec {codec} does not exist in magic {wrapper.magic}")
    if codec == CompressionType.LZ4 and wrapper.magic == 0:
        # Magic 0 wrote lz4 frames with a header checksum Kafka itself got wrong.
        raise UnsupportedCodecError("lz4 in magic 0 messages is not supported, use magic 1")
    try:
        payload = decompress(codec, wrapper.value or b"")
    except RecordSetError as e:
        raise CorruptRecordError(f"compressed message: {e.reason}", -1, wrapper.position) from e
    inner = list(iter_messages(payload))
    for i, m in enumerate(inner):
        if m.compression != CompressionType.NONE:
            raise InvalidRecordSetError(
                "a compressed message may not hold another compressed message",
                -1,
                wrapper.position,
                [(i, "inner message has a compression codec")],
            )
        if m.magic != wrapper.magic:
            raise InvalidRecordSetError(
                f"inner message {i} has magic {m.magic}, its wrapper {wrapper.magic}",
                -1,
                wrapper.position,
            )
    return inner


def iter_legacy_records(data: Buffer) -> Iterator[Record]:
    """Every record of a magic 0/1 set, compressed wrappers opened, with absolute offsets;
    an append-time wrapper's timestamp stands for its messages."""
    for m in iter_messages(data):
        if m.compression == CompressionType.NONE:
            yield Record(m.offset, m.timestamp, m.key, m.value)
            continue
        inner = _inner_messages(m)
        log_append = m.timestamp_type is TimestampType.LOG_APPEND_TIME
        # Magic 1 inner offsets count from the wrapper's, which is the last one's.
        shift = m.offset - inner[-1].offset if m.magic == 1 and inner else 0
        for x in inner:
            yield Record(
                x.offset + shift, m.timestamp if log_append else x.timestamp, x.key, x.value
            )


def upconvert(data: Buffer) -> bytes:
    """One v2 batch (base offset 0) holding the records of a produced magic 0/1 set.

    The set is either plain messages or one compressed wrapper (Kafka refuses more than
    one); every message must share the first one's magic. Magic 0 records have no
    timestamp; magic 1 records keep theirs, and a LOG_APPEND_TIME wrapper keeps its type so
    that validation refuses it as it refuses a producer's v2 batch claiming append time.
    Raises CorruptRecordError (CRC, framing, codec payload) or InvalidRecordSetError.
    """
    messages = list(iter_messages(data))
    if not messages:
        raise InvalidRecordSetError("the message set holds no complete message")
    magic = messages[0].magic
    for i, m in enumerate(messages):
        if m.magic != magic:
            raise InvalidRecordSetError(
                f"message {i} has magic {m.magic}, the first one {magic}", -1, m.position
            )
    codec = messages[0].compression
    ts_type = messages[0].timestamp_type
    if codec != CompressionType.NONE:
        if len(messages) > 1:
            raise InvalidRecordSetError(
                f"a compressed message set holds one wrapper message, not {len(messages)}"
            )
        wrapper = messages[0]
        # An append-time wrapper's timestamp stands for all its messages.
        log_append = ts_type is TimestampType.LOG_APPEND_TIME
        records = [
            Record(i, wrapper.timestamp if log_append else m.timestamp, m.key, m.value)
            for i, m in enumerate(_inner_messages(wrapper))
        ]
    else:
        if any(m.timestamp_type is TimestampType.LOG_APPEND_TIME for m in messages):
            ts_type = TimestampType.LOG_APPEND_TIME
        records = [Record(i, m.timestamp, m.key, m.value) for i, m in enumerate(messages)]
    if not records:
        raise InvalidRecordSetError("the compressed message holds no message")
    return build_batch(records, compression=codec, timestamp_type=ts_type)


def build_message_set(
    records: list[Record],
    magic: int,
    compression: int = CompressionType.NONE,
    timestamp_type: int = TimestampType.CREATE_TIME,
) -> bytes:
    """``records`` (absolute offsets) as magic 0/1 messages: one each, or one wrapper
    whose offset is the last record's when ``compression`` names a codec."""
    if magic not in (0, 1):
        raise ValueError(f"magic {magic} is not a v0/v1 message format")
    if not records:
        return b""
    log_append = timestamp_type == TimestampType.LOG_APPEND_TIME and magic == 1
    if compression == CompressionType.NONE:
        ts_attr = _TIMESTAMP_TYPE_MASK if log_append else 0
        return b"".join(
            _message(r.offset, magic, ts_attr, r.timestamp, r.key, r.value) for r in records
        )
    if compression not in _LEGACY_CODECS or (compression == CompressionType.LZ4 and magic == 0):
        raise UnsupportedCodecError(
            f"codec {CompressionType(compression).name} cannot be written in magic {magic}"
        )
    first = records[0].offset
    # Magic 1 numbers inner messages from 0; magic 0 gives their absolute offsets.
    shift = first if magic == 1 else 0
    inner = b"".join(
        _message(r.offset - shift, magic, 0, r.timestamp, r.key, r.value) for r in records
    )
    max_ts = max(r.timestamp for r in records)
    attributes = compression | (_TIMESTAMP_TYPE_MASK if log_append else 0)
    return _message(
        records[-1].offset, magic, attributes, max_ts, None, compress(compression, inner)
    )


def _message(
    offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    body = bytearray((magic, attributes))
    if magic == 1:
        body += _I64.pack(timestamp)
    for field in (key, value):
        if field is None:
            body += _I32.pack(-1)
        else:
            body += _I32.pack(len(field))
            body += field
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def downconvert(data: Buffer, magic: int, first_offset: int = 0) -> bytes:
    """A v2 record set (complete batches, a cut-short tail skipped) as magic 0/1 messages.

    Each batch becomes messages of its codec and timestamp type; control batches and
    records before ``first_offset`` are left out, headers dropped. zstd has no v0/v1 form:
    UnsupportedCodecError, which a Fetch answers with UNSUPPORTED_COMPRESSION_TYPE.
    """
    out = []
    for batch in iter_batches(data, allow_truncated=True):
        if batch.is_control:
            continue
        codec = batch.compression
        if codec == CompressionType.ZSTD:
            raise UnsupportedCodecError(
                f"zstd batches cannot be read as magic {magic} messages (Fetch v10 reads them)"
            )
        if codec == CompressionType.LZ4 and magic == 0:
            codec = CompressionType.NONE  # no correct lz4 framing in magic 0
        records = [r for r in batch if r.offset >= first_offset]
        out.append(build_message_set(records, magic, codec, batch.timestamp_type))
    return b"".join(out)
