"""Kafka record batches (magic v2): parse, build, and the rewrites a broker's log needs.

A record set (the ``records`` field of Produce and Fetch) is zero or more batches back to
back. Each batch is a 61-byte header followed by its records, compressed as one stream
when the attributes name a codec::

    base_offset int64 | batch_length int32 | partition_leader_epoch int32 | magic int8
    crc uint32 | attributes int16 | last_offset_delta int32 | base_timestamp int64
    max_timestamp int64 | producer_id int64 | producer_epoch int16 | base_sequence int32
    record_count int32 | records...

``batch_length`` counts the bytes after itself; the CRC-32C covers ``attributes`` to the
end, so the base offset and partition leader epoch can be rewritten without touching it.
A record is: length varint, attributes int8, timestamp delta varlong, offset delta varint,
key and value (varint length, -1 for null), then a varint count of headers, each a key
string and a nullable value, lengths as varints.

Parsing is lazy: :func:`iter_batches` unpacks only headers, as views into the caller's
buffer; records are decoded (and decompressed) when a batch is iterated.

Failures raise :class:`~kafkagen.runtime.errors.RecordSetError` subclasses that carry the
Kafka error code a broker would answer with: framing, CRC and codec problems are
CORRUPT_MESSAGE (2); records that break the format's rules are INVALID_RECORD (87).
"""

from __future__ import annotations

import functools
import struct
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum

from .compression import CompressionType, compress, decompress
from .errors import (
    CorruptRecordError,
    InvalidRecordSetError,
    InvalidRecordTimestampError,
    RecordBatchTooLargeError,
    RecordSetError,
    UnsupportedCodecError,
    UnsupportedRecordFormatError,
)
from .message import native as _native

__all__ = [
    "HEADER_SIZE",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "AppendInfo",
    "CompressionType",
    "Record",
    "RecordBatch",
    "TimestampType",
    "assign_offsets",
    "build_batch",
    "iter_batches",
    "iter_records",
    "read_batch",
    "set_log_append_time",
    "set_max_timestamp",
    "validate_batch_for_append",
]

Buffer = bytes | bytearray | memoryview


def crc32c(data: Buffer, value: int = 0) -> int:
    """CRC-32C of ``data`` continuing from ``value``: the crc32c package's, imported on the
    first batch (importing it reads installed-package metadata, slow for a broker's start)."""
    return _crc32c()(data, value)


@functools.cache
def _crc32c() -> Callable[[Buffer, int], int]:
    from crc32c import crc32c as impl

    return impl


Header = tuple[str, bytes | None]

HEADER_SIZE = 61
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

# The whole header in one unpack; field order as in the module docstring.
_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _HEADER.size == HEADER_SIZE
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")

_LOG_OVERHEAD = 12  # base offset and batch length: the bytes batch_length does not count
_MAGIC_AT = 16
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_MAX_TIMESTAMP_AT = 35
_PARTITION_LEADER_EPOCH_AT = 8 + 4
_MIN_V2_LENGTH = HEADER_SIZE - _LOG_OVERHEAD
# The smallest magic v0 message after the 12-byte prefix: a length below this is corrupt
# whatever the magic, the first check Kafka makes.
_MIN_LEGACY_LENGTH = 14

_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08
_TRANSACTIONAL_MASK = 0x10
_CONTROL_MASK = 0x20
_DELETE_HORIZON_MASK = 0x40

_INT32_MAX = 2**31 - 1
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


class TimestampType(IntEnum):
    """Bit 3 of the attributes: whose clock the batch's timestamps come from."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class Record:
    """One record: absolute offset and timestamp, key, value and headers.

    When building, ``offset=-1`` means "the next offset" and ``timestamp=-1`` is Kafka's
    "no timestamp". ``headers`` is a list of ``(key, value)``; header keys are decoded as
    UTF-8 with ``surrogateescape`` so that any bytes survive a parse/build round trip.
    """

    __slots__ = ("offset", "timestamp", "key", "value", "headers")

    def __init__(
        self,
        offset: int = -1,
        timestamp: int = NO_TIMESTAMP,
        key: bytes | None = None,
        value: bytes | None = None,
        headers: Sequence[Header] | None = None,
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers: list[Header] = (
            [] if headers is None else headers if type(headers) is list else list(headers)
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return (
            self.offset == other.offset
            and self.timestamp == other.timestamp
            and self.key == other.key
            and self.value == other.value
            and self.headers == other.headers
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like the list it holds

    def __repr__(self) -> str:
        return (
            f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
            f"value={self.value!r}, headers={self.headers!r})"
        )


class RecordBatch:
    """A view of one v2 batch inside a record set; nothing is copied.

    Header fields are plain attributes. ``buffer`` is a memoryview of the whole batch,
    ``position`` its byte offset in the record set and ``index`` its ordinal there. Iterate
    the batch (or call :meth:`records`) to decode its records.
    """

    __slots__ = (
        "buffer",
        "index",
        "position",
        "base_offset",
        "batch_length",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "record_count",
    )

    buffer: memoryview
    index: int
    position: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    def __init__(self, buffer: memoryview, index: int = 0, position: int = 0) -> None:
        """Wrap ``buffer``, which must hold exactly one batch (see :func:`iter_batches`)."""
        self.buffer = buffer
        self.index = index
        self.position = position
        (
            self.base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.record_count,
        ) = _HEADER.unpack_from(buffer)

    # -- attributes ---------------------------------------------------------------------

    @property
    def compression(self) -> CompressionType:
        """The codec; an id Kafka does not define raises :class:`CorruptRecordError`."""
        codec = self.attributes & _CODEC_MASK
        try:
            return CompressionType(codec)
        except ValueError:
            raise self._corrupt(f"unknown compression codec id {codec}") from None

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType((self.attributes & _TIMESTAMP_TYPE_MASK) >> 3)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        """Set by the log cleaner: ``base_timestamp`` then holds the delete horizon."""
        return bool(self.attributes & _DELETE_HORIZON_MASK)

    # -- derived ------------------------------------------------------------------------

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + _LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        """The sequence number of the last record; sequences wrap past int32 max to 0."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % (_INT32_MAX + 1)

    # -- checksum -----------------------------------------------------------------------

    def compute_crc(self) -> int:
        return crc32c(self.buffer[_ATTRIBUTES_AT:])

    def is_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def ensure_valid(self) -> None:
        """Raise :class:`CorruptRecordError` if the stored CRC does not match."""
        computed = self.compute_crc()
        if computed != self.crc:
            raise self._corrupt(f"CRC mismatch: stored {self.crc:#010x}, computed {computed:#010x}")

    # -- records ------------------------------------------------------------------------

    @property
    def payload(self) -> memoryview:
        """The records section as stored (compressed if the batch is)."""
        return self.buffer[HEADER_SIZE:]

    def records(self) -> list[Record]:
        # No __len__ on purpose: list() would preallocate for whatever count the header
        # claims, up to 2**31 records, before a single one is read.
        return list(self)

    def records_section(self) -> bytes:
        """The records section, decompressed if the batch is compressed."""
        codec = self.compression
        if codec is CompressionType.NONE:
            # One copy of the section: bytes index and slice faster than a memoryview, and
            # keys and values are copied out anyway.
            return bytes(self.payload)
        try:
            return decompress(codec, self.payload)
        except RecordSetError as e:
            raise type(e)(e.reason, self.index, self.position) from e

    def __iter__(self) -> Iterator[Record]:
        codec = self.compression
        data = self.records_section()
        append_time = self.max_timestamp if self.attributes & _TIMESTAMP_TYPE_MASK else None
        return _parse_records(
            data,
            self.record_count,
            self.base_offset,
            self.base_timestamp,
            append_time,
            self.index,
            self.position,
            codec is not CompressionType.NONE,
        )

    def __repr__(self) -> str:
        return (
            f"RecordBatch(index={self.index}, position={self.position}, "
            f"base_offset={self.base_offset}, last_offset_delta={self.last_offset_delta}, "
            f"record_count={self.record_count}, attributes={self.attributes:#06x}, "
            f"size={self.size_in_bytes})"
        )

    def _corrupt(self, reason: str) -> CorruptRecordError:
        return CorruptRecordError(reason, self.index, self.position)


# ---------------------------------------------------------------- parsing


def _byte_view(data: Buffer) -> memoryview:
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


def iter_batches(
    data: Buffer, *, verify_crc: bool = True, allow_truncated: bool = False
) -> Iterator[RecordBatch]:
    """The batches of a record set, as views into ``data``.

    Each batch's framing is checked (length, magic 2, fits in the buffer) and, unless
    ``verify_crc`` is false, its CRC. A last batch cut short is an error unless
    ``allow_truncated`` is true: Fetch responses may end with a partial batch, which
    consumers skip, and so does this iterator then.
    """
    view = _byte_view(data)
    total = len(view)
    unpack_i32 = _I32.unpack_from
    pos = 0
    index = 0
    while pos < total:
        remaining = total - pos
        if remaining < _LOG_OVERHEAD:
            if allow_truncated:
                return
            raise CorruptRecordError(
                f"record set ends inside a batch header ({remaining} bytes left)", index, pos
            )
        (length,) = unpack_i32(view, pos + 8)
        if length < _MIN_LEGACY_LENGTH:
            raise CorruptRecordError(f"batch length {length} is too small", index, pos)
        if remaining <= _MAGIC_AT:
            if allow_truncated:
                return
            raise CorruptRecordError(
                f"record set ends inside a batch header ({remaining} bytes left)", index, pos
            )
        magic = view[pos + _MAGIC_AT]
        if magic != 2:
            if magic in (0, 1):
                raise UnsupportedRecordFormatError(
                    f"message format v{magic} is not supported, only v2 batches", index, pos
                )
            raise CorruptRecordError(f"invalid magic byte {magic}", index, pos)
        if length < _MIN_V2_LENGTH:
            raise CorruptRecordError(
                f"batch length {length} is shorter than the v2 header", index, pos
            )
        size = length + _LOG_OVERHEAD
        if size > remaining:
            if allow_truncated:
                return
            raise CorruptRecordError(
                f"batch of {size} bytes is cut short: {remaining} bytes left", index, pos
            )
        batch = RecordBatch(view[pos : pos + size], index, pos)
        if verify_crc:
            batch.ensure_valid()
        yield batch
        pos += size
        index += 1


def read_batch(data: Buffer, *, verify_crc: bool = True) -> RecordBatch:
    """The one batch that ``data`` holds; anything else raises."""
    batches = list(iter_batches(data, verify_crc=verify_crc))
    if len(batches) != 1:
        raise CorruptRecordError(f"expected exactly one batch, found {len(batches)}")
    return batches[0]


def iter_records(
    data: Buffer, *, include_control: bool = False, allow_truncated: bool = False
) -> Iterator[Record]:
    """Every record of a record set, batch after batch (control batches skipped)."""
    for batch in iter_batches(data, allow_truncated=allow_truncated):
        if include_control or not batch.is_control:
            yield from batch


class _Malformed(Exception):
    """Internal: a record does not parse; turned into InvalidRecordSetError with its place."""


def _read_varint(buf: Buffer, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    """A zigzag varint (max_bytes 5) or varlong (10), read as Kafka does."""
    if pos >= end:
        raise _Malformed("varint runs past the end")
    b = buf[pos]
    if b < 0x80:  # most varints in a record are one byte
        return (b >> 1) ^ -(b & 1), pos + 1
    value = b & 0x7F
    shift = 7
    pos += 1
    limit = 7 * max_bytes
    while True:
        if pos >= end:
            raise _Malformed("varint runs past the end")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift >= limit:
            raise _Malformed(f"varint longer than {max_bytes} bytes")
    # Java drops bits past the type's width; do the same before undoing the zigzag.
    value &= 0xFFFFFFFF if max_bytes == 5 else 0xFFFFFFFFFFFFFFFF
    return (value >> 1) ^ -(value & 1), pos


def _parse_records(
    buf: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    append_time: int | None,
    batch_index: int,
    batch_position: int,
    compressed: bool,
) -> Iterator[Record]:
    # Hot loop: one-byte varints (nearly all of them) are decoded inline, the rest by
    # _read_varint. Every read is bounded by the record's end, so a bad length can only
    # fail the record, never read into the next one.
    end = len(buf)
    pos = 0
    i = 0
    start = 0
    varint = _read_varint
    try:
        if count < 0:
            raise _Malformed(f"negative record count {count}")
        while i < count:
            start = pos
            if pos < end and (b := buf[pos]) < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                if pos >= end:
                    raise _Malformed(f"the batch declares {count} records but holds {i}")
                length, pos = varint(buf, pos, end, 5)
            if length <= 0 or length > end - pos:
                raise _Malformed(f"record length {length} does not fit the {end - pos} bytes left")
            rend = pos + length
            pos += 1  # record attributes: unused in v2
            if pos < rend and (b := buf[pos]) < 0x80:
                delta_ts = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                delta_ts, pos = varint(buf, pos, rend, 10)
            if pos < rend and (b := buf[pos]) < 0x80:
                delta_offset = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                delta_offset, pos = varint(buf, pos, rend, 5)
            if pos < rend and (b := buf[pos]) < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                n, pos = varint(buf, pos, rend, 5)
            if n >= 0:  # any negative length is null, as Kafka reads it
                if n > rend - pos:
                    raise _Malformed(f"key of {n} bytes overruns the record")
                key: bytes | None = buf[pos : pos + n]
                pos += n
            else:
                key = None
            if pos < rend and (b := buf[pos]) < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                n, pos = varint(buf, pos, rend, 5)
            if n >= 0:
                if n > rend - pos:
                    raise _Malformed(f"value of {n} bytes overruns the record")
                value: bytes | None = buf[pos : pos + n]
                pos += n
            else:
                value = None
            n, pos = varint(buf, pos, rend, 5)
            if n < 0:
                raise _Malformed(f"negative header count {n}")
            headers: list[Header] = []
            for _ in range(n):
                n, pos = varint(buf, pos, rend, 5)
                if n < 0 or n > rend - pos:
                    raise _Malformed(f"header key length {n} does not fit the record")
                h_key = buf[pos : pos + n].decode("utf-8", "surrogateescape")
                pos += n
                n, pos = varint(buf, pos, rend, 5)
                if n >= 0:
                    if n > rend - pos:
                        raise _Malformed(f"header value of {n} bytes overruns the record")
                    h_value: bytes | None = buf[pos : pos + n]
                    pos += n
                else:
                    h_value = None
                headers.append((h_key, h_value))
            if pos != rend:
                raise _Malformed(
                    f"record length is {length} but its fields take {length - (rend - pos)}"
                )
            yield Record(
                base_offset + delta_offset,
                base_timestamp + delta_ts if append_time is None else append_time,
                key,
                value,
                headers,
            )
            i += 1
        if pos != end:
            start = pos
            raise _Malformed(f"{end - pos} bytes follow the {count} records the batch declares")
    except _Malformed as e:
        where = "decompressed records" if compressed else "records"
        raise InvalidRecordSetError(
            f"record {i} at byte {start} of the {where}: {e}", batch_index, batch_position
        ) from None


# ---------------------------------------------------------------- building


def _put_varint(out: bytearray, n: int) -> None:
    z = (n << 1) ^ (n >> 63)  # zigzag; equals the 32-bit form for values in int32 range
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def _put_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out.append(1)  # zigzag(-1)
    else:
        _put_varint(out, len(data))
        out += data


def build_batch(
    records: Iterable[Record],
    base_offset: int = 0,
    compression: int = CompressionType.NONE,
    timestamp_type: int = TimestampType.CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    *,
    compression_level: int | None = None,
    log_append_time: int | None = None,
    last_offset: int | None = None,
    delete_horizon_ms: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """One v2 batch holding ``records``, with its CRC.

    The log cleaner's rewrites use the last three: ``last_offset`` keeps the original
    batch's last offset when its last records went, ``delete_horizon_ms`` takes the base
    timestamp's place (with the attribute bit saying so), ``max_timestamp`` keeps the
    original's max timestamp in a batch left without records.

    A record's offset, when not -1, must be above the previous one and at or above
    ``base_offset`` (gaps are allowed, as after compaction); -1 takes the next offset. The
    base timestamp is the first record's, the max timestamp the largest one, or
    ``log_append_time`` when given with LOG_APPEND_TIME. The payload is compressed with
    ``compression`` even when that does not make it smaller, as Kafka's producer does.
    Bad arguments raise ``ValueError`` or ``TypeError``.
    """
    codec = CompressionType(compression)
    ts_type = TimestampType(timestamp_type)
    body = bytearray()
    put_varint = _put_varint
    put_bytes = _put_bytes
    record = bytearray()
    count = 0
    last_delta = -1
    base_ts: int | None = delete_horizon_ms
    max_ts = NO_TIMESTAMP
    for r in records:
        if r.offset < 0:
            delta = last_delta + 1
        else:
            delta = r.offset - base_offset
            if delta <= last_delta:
                after = f"offset {base_offset + last_delta}"
                raise ValueError(
                    f"record offsets must increase: got {r.offset} after "
                    f"{after if last_delta >= 0 else f'base offset {base_offset}'}"
                )
        if delta > _INT32_MAX:
            raise ValueError(f"offset {base_offset + delta} is too far from {base_offset}")
        ts = r.timestamp
        if base_ts is None:
            base_ts = ts
        if ts > max_ts:
            max_ts = ts
        if not _INT64_MIN <= ts - base_ts <= _INT64_MAX:
            raise ValueError(f"timestamp {ts} is too far from the first one, {base_ts}")
        record.clear()
        record.append(0)  # record attributes
        put_varint(record, ts - base_ts)
        put_varint(record, delta)
        put_bytes(record, r.key)
        put_bytes(record, r.value)
        put_varint(record, len(r.headers))
        for h_key, h_value in r.headers:
            put_bytes(record, h_key.encode("utf-8", "surrogateescape"))
            put_bytes(record, h_value)
        put_varint(body, len(record))
        body += record
        last_delta = delta
        count += 1
    if count == 0:
        last_delta = 0
        base_ts = NO_TIMESTAMP if delete_horizon_ms is None else delete_horizon_ms
    if ts_type is TimestampType.LOG_APPEND_TIME and log_append_time is not None:
        max_ts = log_append_time
    if max_timestamp is not None:
        max_ts = max_timestamp
    if last_offset is not None:
        last_delta = last_offset - base_offset

    attributes = codec | (ts_type << 3)
    if transactional:
        attributes |= _TRANSACTIONAL_MASK
    if is_control:
        attributes |= _CONTROL_MASK
    if delete_horizon_ms is not None:
        attributes |= _DELETE_HORIZON_MASK
    payload = (
        body if codec is CompressionType.NONE else compress(codec, body, level=compression_level)
    )

    out = bytearray(HEADER_SIZE)
    try:
        _HEADER.pack_into(
            out,
            0,
            base_offset,
            HEADER_SIZE - _LOG_OVERHEAD + len(payload),
            partition_leader_epoch,
            2,
            0,  # CRC, filled in below
            attributes,
            last_delta,
            base_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
    except struct.error as e:
        raise ValueError(f"a batch header field is out of range: {e}") from None
    # CRC over attributes..end, in two pieces so the payload is not copied for it.
    crc = crc32c(payload, crc32c(memoryview(out)[_ATTRIBUTES_AT:]))
    _U32.pack_into(out, _CRC_AT, crc)
    out += payload
    return bytes(out)


# ---------------------------------------------------------------- broker-side rewrites


def assign_offsets(
    data: Buffer, base_offset: int, *, partition_leader_epoch: int | None = None
) -> bytes:
    """A copy of ``data`` whose batches start at ``base_offset`` and follow on.

    Only base offsets (and, if given, partition leader epochs) change; the CRC does not
    cover them, so it stays valid. Each batch keeps its offset deltas: the next batch
    starts after the previous one's last offset.
    """
    view = memoryview(data)
    # The new fields between the unchanged runs of bytes, joined once: a produced batch
    # (up to a MiB) is copied once into what the log keeps, not once more to patch it.
    pieces: list[Buffer] = []
    kept_from = 0
    next_offset = base_offset
    for b in iter_batches(view, verify_crc=False):
        at = b.position
        pieces += (view[kept_from:at], _I64.pack(next_offset))
        kept_from = at + 8
        if partition_leader_epoch is not None:
            epoch_at = at + _PARTITION_LEADER_EPOCH_AT
            pieces += (view[kept_from:epoch_at], _I32.pack(partition_leader_epoch))
            kept_from = epoch_at + 4
        next_offset += b.last_offset_delta + 1
    pieces.append(view[kept_from:])
    return b"".join(pieces)


def set_max_timestamp(data: Buffer, timestamp_type: int, max_timestamp: int) -> bytes:
    """A copy of ``data`` with each batch's timestamp type and max timestamp set.

    The CRC covers both, so it is recomputed; the old CRC is checked first so that a
    corrupt batch is never given a fresh, valid-looking checksum.
    """
    ts_type = TimestampType(timestamp_type)
    out = bytearray(data)
    changes = []
    for batch in iter_batches(out, verify_crc=True):
        attributes = (batch.attributes & ~_TIMESTAMP_TYPE_MASK) | (ts_type << 3)
        if attributes != batch.attributes or batch.max_timestamp != max_timestamp:
            changes.append((batch.position, batch.size_in_bytes, attributes))
    for position, size, attributes in changes:
        _I16.pack_into(out, position + _ATTRIBUTES_AT, attributes)
        _I64.pack_into(out, position + _MAX_TIMESTAMP_AT, max_timestamp)
        crc = crc32c(memoryview(out)[position + _ATTRIBUTES_AT : position + size])
        _U32.pack_into(out, position + _CRC_AT, crc)
    return bytes(out)


def set_log_append_time(data: Buffer, timestamp: int) -> bytes:
    """Stamp every batch with the broker's append time (LOG_APPEND_TIME topics)."""
    return set_max_timestamp(data, TimestampType.LOG_APPEND_TIME, timestamp)


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """What :func:`validate_batch_for_append` learnt about an accepted batch.

    Append ``batch.buffer``, not the raw input: like Kafka, a partial batch after the
    valid one is dropped (``valid_bytes`` is how much was kept). ``max_timestamp`` is
    computed from the records (the append time for LOG_APPEND_TIME topics); Kafka writes
    it into the header, see :func:`set_max_timestamp`. When ``consecutive_offsets`` is
    false the record offset deltas are not 0, 1, 2, ...: Kafka then rewrites the batch
    rather than assigning offsets in place.
    """

    batch: RecordBatch
    record_count: int
    max_timestamp: int
    max_timestamp_offset_delta: int
    consecutive_offsets: bool
    valid_bytes: int


def validate_batch_for_append(
    data: Buffer,
    *,
    produce_version: int | None = None,
    from_client: bool = True,
    max_message_size: int | None = None,
    compacted: bool = False,
    topic_partition: str = "",
    timestamp_type: int = TimestampType.CREATE_TIME,
    now_ms: int | None = None,
    timestamp_before_max_ms: int | None = None,
    timestamp_after_max_ms: int | None = None,
) -> AppendInfo:
    """Check a partition's record set from a Produce request the way Kafka's broker does.

    The checks and the error each raises, in Kafka's order:

    - ``produce_version`` >= 3 (what the request layer checks): no batch, a batch that is
      not magic v2, or more than one batch -> INVALID_RECORD; zstd below version 7 ->
      UNSUPPORTED_COMPRESSION_TYPE.
    - framing (sizes, magic byte) -> CORRUPT_MESSAGE; magic 0/1 outside such a request ->
      UNSUPPORTED_FOR_MESSAGE_FORMAT (kafkagen does not convert old formats); no batch or
      more than one -> INVALID_RECORD.
    - ``from_client``: a base offset other than 0 -> INVALID_RECORD.
    - a batch over ``max_message_size`` bytes -> MESSAGE_TOO_LARGE.
    - a CRC mismatch, or a payload that does not decompress -> CORRUPT_MESSAGE.
    - ``from_client``: last offset delta + 1 not equal to a positive record count, a
      control batch, or a producer id without a base sequence -> INVALID_RECORD.
    - records that do not parse, or more/fewer of them than declared -> INVALID_RECORD.
    - per record, collected into ``record_errors``: a null key on a ``compacted`` topic
      (INVALID_RECORD, in Kafka's words naming ``topic_partition``); on a CREATE_TIME
      topic a timestamp more than ``timestamp_before_max_ms`` before or
      ``timestamp_after_max_ms`` after ``now_ms``
      (None: no limit), or a batch that claims LOG_APPEND_TIME (INVALID_TIMESTAMP, which
      wins over INVALID_RECORD when both occur).
    """
    view = _byte_view(data)
    batch = _single_batch(view, produce_version)
    if from_client and batch.base_offset != 0:
        raise InvalidRecordSetError(
            f"base offset of a produced batch must be 0, not {batch.base_offset}",
            batch.index,
            batch.position,
        )
    if max_message_size is not None and batch.size_in_bytes > max_message_size:
        raise RecordBatchTooLargeError(
            f"batch of {batch.size_in_bytes} bytes is over the limit of {max_message_size}",
            batch.index,
            batch.position,
        )
    batch.ensure_valid()
    if from_client:
        _check_client_batch(batch)

    topic_ts_type = TimestampType(timestamp_type)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    scanned = _scan_records(
        batch, compacted, topic_ts_type, now, timestamp_before_max_ms, timestamp_after_max_ms
    )
    if scanned is not None:
        max_ts, max_ts_delta, consecutive = scanned
    else:
        max_ts, max_ts_delta, consecutive = _check_records(
            batch,
            compacted,
            topic_partition,
            topic_ts_type,
            now,
            timestamp_before_max_ms,
            timestamp_after_max_ms,
        )
    if topic_ts_type is TimestampType.LOG_APPEND_TIME:
        max_ts, max_ts_delta = now, batch.last_offset_delta
    return AppendInfo(
        batch=batch,
        record_count=batch.record_count,  # the parser checked it against the data
        max_timestamp=max_ts,
        max_timestamp_offset_delta=max_ts_delta,
        consecutive_offsets=consecutive,
        valid_bytes=batch.size_in_bytes,
    )


def _scan_records(
    batch: RecordBatch,
    compacted: bool,
    topic_ts_type: TimestampType,
    now: int,
    before_max: int | None,
    after_max: int | None,
) -> tuple[int, int, bool] | None:
    """The accelerator's read of a batch that passes every per-record check: (max
    timestamp, its offset delta, offsets consecutive). None when it is not built, or when
    a record is malformed or refused: :func:`_check_records` then reads the records in
    Python for the exact errors."""
    if _native is None or batch.attributes & _TIMESTAMP_TYPE_MASK:
        return None  # a LOG_APPEND_TIME batch from a producer: Python says what is wrong
    # An uncompressed section is scanned where it lies, without a copy.
    section = batch.records_section() if batch.attributes & _CODEC_MASK else batch.payload
    found = _native.scan_records(section, batch.record_count, batch.base_timestamp)
    if found is None:
        return None
    max_ts, max_ts_delta, consecutive, lowest, highest, null_keys = found
    if compacted and null_keys:
        return None
    if topic_ts_type is TimestampType.CREATE_TIME and lowest is not None:
        if before_max is not None and now - lowest > before_max:
            return None
        if after_max is not None and highest - now > after_max:
            return None
    return max_ts, max_ts_delta, consecutive


def _check_records(
    batch: RecordBatch,
    compacted: bool,
    topic_partition: str,
    topic_ts_type: TimestampType,
    now: int,
    timestamp_before_max_ms: int | None,
    timestamp_after_max_ms: int | None,
) -> tuple[int, int, bool]:
    """Each record of ``batch`` read and checked in Python: (max timestamp, its offset
    delta, offsets consecutive), or the errors of :func:`validate_batch_for_append`."""
    record_errors: list[tuple[int, str]] = []
    timestamp_error = False
    max_ts = NO_TIMESTAMP
    max_ts_delta = -1
    consecutive = True
    for i, record in enumerate(batch):
        delta = record.offset - batch.base_offset
        if delta != i:
            consecutive = False
        if record.timestamp > max_ts:
            max_ts, max_ts_delta = record.timestamp, delta
        if compacted and record.key is None:
            record_errors.append(
                (
                    i,
                    "Compacted topic cannot accept message without key in topic partition "
                    f"{topic_partition}.",
                )
            )
            continue
        problem = _timestamp_problem(
            record.timestamp,
            batch,
            topic_ts_type,
            now,
            timestamp_before_max_ms,
            timestamp_after_max_ms,
        )
        if problem is not None:
            record_errors.append((i, problem))
            timestamp_error = True
    if record_errors:
        kind: type[RecordSetError] = (
            InvalidRecordTimestampError if timestamp_error else InvalidRecordSetError
        )
        first_index, first_reason = record_errors[0]
        more = f" (and {len(record_errors) - 1} more)" if len(record_errors) > 1 else ""
        raise kind(
            f"record {first_index}: {first_reason}{more}",
            batch.index,
            batch.position,
            record_errors,
        )
    return max_ts, max_ts_delta, consecutive


def _single_batch(view: memoryview, produce_version: int | None) -> RecordBatch:
    """The one batch of a produced record set, checked for framing but not yet for CRC."""
    positions = _frame(view)
    if produce_version is not None and produce_version >= 3:
        if not positions:
            raise InvalidRecordSetError(
                f"Produce v{produce_version} needs a record batch for every partition"
            )
        first_magic = view[positions[0] + _MAGIC_AT]
        if first_magic != 2:
            raise InvalidRecordSetError(
                f"Produce v{produce_version} only carries magic v2 batches, not v{first_magic}",
                0,
                positions[0],
            )
        codec = _I16.unpack_from(view, positions[0] + _ATTRIBUTES_AT)[0] & _CODEC_MASK
        if codec == CompressionType.ZSTD and produce_version < 7:
            raise UnsupportedCodecError(
                f"zstd needs Produce v7 or later, the request is v{produce_version}",
                0,
                positions[0],
            )
        if len(positions) > 1:
            raise InvalidRecordSetError(
                f"Produce v{produce_version} carries exactly one batch per partition, "
                f"found {len(positions)}"
            )
    if not positions:
        raise InvalidRecordSetError("the record set holds no batch")
    if len(positions) > 1:
        raise InvalidRecordSetError(f"expected one batch, found {len(positions)}")
    position = positions[0]
    magic = view[position + _MAGIC_AT]
    if magic != 2:
        raise UnsupportedRecordFormatError(
            f"message format v{magic} is not supported, only v2 batches", 0, position
        )
    (length,) = _I32.unpack_from(view, position + 8)
    if length < _MIN_V2_LENGTH:
        raise CorruptRecordError(
            f"batch length {length} is shorter than the v2 header", 0, position
        )
    return RecordBatch(view[position : position + length + _LOG_OVERHEAD], 0, position)


def _frame(view: memoryview) -> list[int]:
    """Start positions of the complete batches, any magic; a partial tail is dropped.

    Mirrors how Kafka walks a produced record set: a length below the smallest message
    or an unknown magic byte is corrupt, a cut-short last batch is ignored.
    """
    positions: list[int] = []
    total = len(view)
    pos = 0
    while total - pos >= _LOG_OVERHEAD:
        (length,) = _I32.unpack_from(view, pos + 8)
        if length < _MIN_LEGACY_LENGTH:
            raise CorruptRecordError(f"batch length {length} is too small", len(positions), pos)
        if total - pos <= _MAGIC_AT:
            break
        magic = view[pos + _MAGIC_AT]
        if magic > 2:
            raise CorruptRecordError(f"invalid magic byte {magic}", len(positions), pos)
        if length + _LOG_OVERHEAD > total - pos:
            break
        positions.append(pos)
        pos += length + _LOG_OVERHEAD
    return positions


def _check_client_batch(batch: RecordBatch) -> None:
    def invalid(reason: str) -> InvalidRecordSetError:
        return InvalidRecordSetError(reason, batch.index, batch.position)

    from_offsets = batch.last_offset_delta + 1
    if from_offsets <= 0:
        raise invalid(f"invalid offset range: last offset delta {batch.last_offset_delta}")
    if batch.record_count <= 0:
        raise invalid(f"invalid record count {batch.record_count}")
    if from_offsets != batch.record_count:
        raise invalid(
            f"last offset delta {batch.last_offset_delta} does not match "
            f"{batch.record_count} records"
        )
    if batch.is_control:
        raise invalid("clients may not write control batches")
    if batch.has_producer_id and batch.base_sequence < 0:
        raise invalid(
            f"producer id {batch.producer_id} comes with invalid sequence {batch.base_sequence}"
        )


def _timestamp_problem(
    timestamp: int,
    batch: RecordBatch,
    topic_ts_type: TimestampType,
    now: int,
    before_max: int | None,
    after_max: int | None,
) -> str | None:
    # Same shape as Kafka's check: a CREATE_TIME topic bounds real timestamps; otherwise
    # (or for "no timestamp") a producer claiming LOG_APPEND_TIME is refused.
    if topic_ts_type is TimestampType.CREATE_TIME and timestamp != NO_TIMESTAMP:
        if before_max is not None and now - timestamp > before_max:
            return f"timestamp {timestamp} is more than {before_max} ms before {now}"
        if after_max is not None and timestamp - now > after_max:
            return f"timestamp {timestamp} is more than {after_max} ms after {now}"
    elif batch.timestamp_type is TimestampType.LOG_APPEND_TIME:
        return "producers may not set the LOG_APPEND_TIME timestamp type"
    return None
