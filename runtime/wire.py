"""Wire primitives the generated codecs call: varints, strings, bytes, uuids, tagged fields.

Readers take ``(buf, pos, end)`` and return ``(value, new_pos)``; they check every length
against ``end`` before slicing, so a corrupt length prefix never allocates more than what
remains. They raise :class:`DecodeError` with the byte offset; the message and version are
filled in by :meth:`kafkagen.runtime.message.Message.decode`.

Writers have one shape: ``write_x(w, value) -> None`` hands the value's wire bytes to the
writer ``w`` (the ``append`` of the list that is joined once at the end), in one or
more pieces, so that nothing large is copied before the final join; any writer of one
value serves as an item writer of ``write_array``. The helpers that compute a small piece
for the caller to hand on (``uvarint``, ``string_length``, ``compact_string_length``)
are named for what they compute, not ``write_``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any, Literal, overload
from uuid import UUID, SafeUUID

from .errors import DecodeError, UnsupportedVersionError

Buffer = bytes | bytearray | memoryview
Writer = Callable[[Any], Any]
#: Unknown tagged fields kept from the wire: (tag, raw bytes), in the order read.
RawTags = tuple[tuple[int, bytes], ...]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_unpack_i16 = _I16.unpack_from
_unpack_i32 = _I32.unpack_from
_pack_i16 = _I16.pack
_pack_i32 = _I32.pack

#: One-byte unsigned varints, precomputed: most lengths and counts are below 128.
SMALL_UVARINTS = tuple(bytes((i,)) for i in range(128))
EMPTY_TAGS = b"\x00"
NULL_I16 = _pack_i16(-1)
NULL_I32 = _pack_i32(-1)
NULL_COMPACT_LENGTH = b"\x00"
#: The int8 before a nullable struct: negative for null.
NULL_MARKER = b"\xff"
PRESENT_MARKER = b"\x01"
ZERO_UUID = UUID(int=0)

_new_uuid = object.__new__
_set = object.__setattr__
_SAFE_UNKNOWN = SafeUUID.unknown


class FieldUnsupported(UnsupportedVersionError):
    """Raised inside an encoder; Message.encode adds the version and re-raises."""

    def __init__(self, path: str, why: str) -> None:
        # What KafkaError.__init__ would set, without its two nested __init__ calls: the
        # compatibility fuzz meets about one of these per message.
        self.message = text = f"{path}: {why}"
        self.args = (text,)
        self.path = path
        self.why = why


_WHY = {
    "non-default value": "it holds a non-default value and the field does not exist there",
    "null value": "it is null and the field is not nullable there",
    "unknown tagged fields": "it carries tagged fields and that version is not flexible",
}


def unsupported(path: str, why: str) -> FieldUnsupported:
    """The error for a field value that the version being written cannot carry."""
    return FieldUnsupported(path, _WHY.get(why, why))


# ---------------------------------------------------------------- varints


def uvarint(n: int) -> bytes:
    """An unsigned varint (7 bits a byte, low bits first)."""
    if n < 128:
        if n < 0:
            raise ValueError(f"unsigned varint cannot hold {n}")
        return SMALL_UVARINTS[n]
    if n < 16384:
        return bytes((n & 0x7F | 0x80, n >> 7))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_uvarint(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """An unsigned 32-bit varint, as Kafka reads them (at most 5 bytes)."""
    if pos >= end:
        raise DecodeError("varint runs past the end", offset=pos)
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    start = pos
    value = b & 0x7F
    shift = 7
    pos += 1
    while True:
        if pos >= end:
            raise DecodeError("varint runs past the end", offset=start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 28:
            raise DecodeError("varint longer than 5 bytes", offset=start)
    if value > 0xFFFFFFFF:
        raise DecodeError("varint exceeds 32 bits", offset=start)
    return value, pos


# ---------------------------------------------------------------- lengths


def truncated(pos: int) -> DecodeError:
    return DecodeError("truncated: the value runs past the end", offset=pos)


def _short(what: str, n: int, pos: int, end: int) -> DecodeError:
    return DecodeError(f"{what} of length {n} exceeds the {end - pos} bytes left", offset=pos)


def read_length16(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    if pos + 2 > end:
        raise DecodeError("truncated length", offset=pos)
    return _unpack_i16(buf, pos)[0], pos + 2


def read_length32(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    if pos + 4 > end:
        raise DecodeError("truncated length", offset=pos)
    return _unpack_i32(buf, pos)[0], pos + 4


def check_nullable_count(n: int, pos: int, end: int, what: str = "array") -> None:
    if n < -1:
        raise DecodeError(f"negative {what} length {n}", offset=pos)
    if n > end - pos:
        raise _short(what, n, pos, end)


# ---------------------------------------------------------------- strings, bytes, records
#
# Each reader has a fast path for the common case (a length that fits the buffer, and for
# compact forms a one-byte varint) and falls back to _sized, which checks everything and
# raises the precise DecodeError. Invalid UTF-8 raises UnicodeDecodeError from the fast
# path; Message.decode turns it into a DecodeError at the string's offset.


def _sized(
    buf: Buffer, pos: int, end: int, compact: bool, nullable: bool, what: str
) -> tuple[int, int]:
    """A length prefix, fully checked: (length or -1 for null, position after it)."""
    start = pos
    if compact:
        n, pos = read_uvarint(buf, pos, end)
        n -= 1
    elif what == "string":
        n, pos = read_length16(buf, pos, end)
    else:
        n, pos = read_length32(buf, pos, end)
    if n < 0:
        if n != -1:
            raise DecodeError(f"negative {what} length {n}", offset=start)
        if not nullable:
            raise DecodeError(f"{what} is null but not nullable at this version", offset=start)
    elif n > end - pos:
        raise _short(what, n, pos, end)
    elif n > 0x7FFF and what == "string":
        raise DecodeError(f"string length {n} is longer than 32767", offset=start)
    return n, pos


def _slow_text(buf: Buffer, pos: int, end: int, compact: bool, nullable: bool) -> Any:
    n, start = _sized(buf, pos, end, compact, nullable, "string")
    if n < 0:
        return None, start
    return str(buf[start : start + n], "utf-8"), start + n


def read_string(buf: Buffer, pos: int, end: int) -> tuple[str, int]:
    start = pos + 2
    if start <= end:
        n = buf[pos] << 8 | buf[pos + 1]
        if n < 0x8000 and start + n <= end:
            return str(buf[start : start + n], "utf-8"), start + n
    return _slow_text(buf, pos, end, False, False)  # type: ignore[no-any-return]


def read_nullable_string(buf: Buffer, pos: int, end: int) -> tuple[str | None, int]:
    start = pos + 2
    if start <= end:
        n = buf[pos] << 8 | buf[pos + 1]
        if n < 0x8000 and start + n <= end:
            return str(buf[start : start + n], "utf-8"), start + n
        if n == 0xFFFF:
            return None, start
    return _slow_text(buf, pos, end, False, True)  # type: ignore[no-any-return]


def read_compact_string(buf: Buffer, pos: int, end: int) -> tuple[str, int]:
    if pos < end:
        n = buf[pos]
        start, stop = pos + 1, pos + n
        if 0 < n < 128 and stop <= end:
            return str(buf[start:stop], "utf-8"), stop
    return _slow_text(buf, pos, end, True, False)  # type: ignore[no-any-return]


def read_compact_nullable_string(buf: Buffer, pos: int, end: int) -> tuple[str | None, int]:
    if pos < end:
        n = buf[pos]
        start, stop = pos + 1, pos + n
        if 0 < n < 128 and stop <= end:
            return str(buf[start:stop], "utf-8"), stop
        if n == 0:
            return None, pos + 1
    return _slow_text(buf, pos, end, True, True)  # type: ignore[no-any-return]


def string_length(n: int) -> bytes:
    """The int16 length before a string of ``n`` bytes."""
    if n > 0x7FFF:
        raise ValueError(f"string of {n} bytes is longer than 32767")
    return _pack_i16(n)


def compact_string_length(n: int) -> bytes:
    """The varint length before a compact string of ``n`` bytes."""
    if n > 0x7FFF:  # Kafka caps every string at 32767 bytes, compact or not
        raise ValueError(f"string of {n} bytes is longer than 32767")
    return uvarint(n + 1)


# A string is written as one piece, its length and text joined: strings are small, and one
# call to ``w`` costs more than the copy.


def write_string(w: Writer, s: str) -> None:
    b = s.encode()
    if len(b) > 0x7FFF:
        raise ValueError(f"string of {len(b)} bytes is longer than 32767")
    w(_pack_i16(len(b)) + b)


def write_nullable_string(w: Writer, s: str | None) -> None:
    if s is None:
        w(NULL_I16)
    else:
        write_string(w, s)


def write_compact_string(w: Writer, s: str) -> None:
    b = s.encode()
    n = len(b) + 1
    if n < 128:
        w(SMALL_UVARINTS[n] + b)
    elif n > 0x8000:  # Kafka caps every string at 32767 bytes, compact or not
        raise ValueError(f"string of {n - 1} bytes is longer than 32767")
    else:
        w(uvarint(n) + b)


def write_compact_nullable_string(w: Writer, s: str | None) -> None:
    if s is None:
        w(SMALL_UVARINTS[0])
    else:
        write_compact_string(w, s)


def _slow_bytes(buf: Buffer, pos: int, end: int, compact: bool, nullable: bool) -> Any:
    n, pos = _sized(buf, pos, end, compact, nullable, "bytes")
    if n < 0:
        return None, pos
    return bytes(buf[pos : pos + n]), pos + n


def _slow_records(buf: Buffer, pos: int, end: int, compact: bool, nullable: bool) -> Any:
    n, pos = _sized(buf, pos, end, compact, nullable, "records")
    if n < 0:
        return None, pos
    return memoryview(buf)[pos : pos + n], pos + n


def read_bytes(buf: Buffer, pos: int, end: int) -> tuple[bytes, int]:
    return _slow_bytes(buf, pos, end, False, False)  # type: ignore[no-any-return]


def read_nullable_bytes(buf: Buffer, pos: int, end: int) -> tuple[bytes | None, int]:
    return _slow_bytes(buf, pos, end, False, True)  # type: ignore[no-any-return]


def read_compact_bytes(buf: Buffer, pos: int, end: int) -> tuple[bytes, int]:
    if pos < end:
        n = buf[pos]
        stop = pos + n
        if 0 < n < 128 and stop <= end:
            return bytes(buf[pos + 1 : stop]), stop
    return _slow_bytes(buf, pos, end, True, False)  # type: ignore[no-any-return]


def read_compact_nullable_bytes(buf: Buffer, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos < end:
        n = buf[pos]
        stop = pos + n
        if 0 < n < 128 and stop <= end:
            return bytes(buf[pos + 1 : stop]), stop
        if n == 0:
            return None, pos + 1
    return _slow_bytes(buf, pos, end, True, True)  # type: ignore[no-any-return]


def _records_fast(buf: Buffer, pos: int, end: int, compact: bool) -> tuple[int, int]:
    """(length, start) of a record set whose length prefix is sane, else (-2, pos)."""
    if compact:
        if pos + 1 < end:
            b0 = buf[pos]
            if b0 < 0x80:
                n, start = b0 - 1, pos + 1
            elif buf[pos + 1] < 0x80:  # a two-byte varint: record sets up to 16 KiB
                n, start = (b0 & 0x7F | buf[pos + 1] << 7) - 1, pos + 2
            else:
                return -2, pos
            if 0 <= n <= end - start:
                return n, start
    elif pos + 4 <= end:
        n = _unpack_i32(buf, pos)[0]
        if 0 <= n <= end - pos - 4:
            return n, pos + 4
    return -2, pos


def read_records(buf: Buffer, pos: int, end: int) -> tuple[memoryview, int]:
    """Record-set bytes, as a zero-copy view of the input."""
    n, start = _records_fast(buf, pos, end, False)
    if n >= 0:
        return memoryview(buf)[start : start + n], start + n
    return _slow_records(buf, pos, end, False, False)  # type: ignore[no-any-return]


def read_nullable_records(buf: Buffer, pos: int, end: int) -> tuple[memoryview | None, int]:
    n, start = _records_fast(buf, pos, end, False)
    if n >= 0:
        return memoryview(buf)[start : start + n], start + n
    return _slow_records(buf, pos, end, False, True)  # type: ignore[no-any-return]


def read_compact_records(buf: Buffer, pos: int, end: int) -> tuple[memoryview, int]:
    n, start = _records_fast(buf, pos, end, True)
    if n >= 0:
        return memoryview(buf)[start : start + n], start + n
    return _slow_records(buf, pos, end, True, False)  # type: ignore[no-any-return]


def read_compact_nullable_records(buf: Buffer, pos: int, end: int) -> tuple[memoryview | None, int]:
    n, start = _records_fast(buf, pos, end, True)
    if n >= 0:
        return memoryview(buf)[start : start + n], start + n
    return _slow_records(buf, pos, end, True, True)  # type: ignore[no-any-return]


# Bytes and records are written as two pieces, the length and the value itself, so a
# large record set is never copied before the final join.


def write_bytes(w: Writer, b: Buffer) -> None:
    w(_pack_i32(len(b)))
    w(b)


def write_nullable_bytes(w: Writer, b: Buffer | None) -> None:
    if b is None:
        w(NULL_I32)
    else:
        w(_pack_i32(len(b)))
        w(b)


def write_compact_bytes(w: Writer, b: Buffer) -> None:
    n = len(b) + 1
    w(SMALL_UVARINTS[n] if n < 128 else uvarint(n))
    w(b)


def write_compact_nullable_bytes(w: Writer, b: Buffer | None) -> None:
    if b is None:
        w(SMALL_UVARINTS[0])
    else:
        n = len(b) + 1
        w(SMALL_UVARINTS[n] if n < 128 else uvarint(n))
        w(b)


# ---------------------------------------------------------------- uuid and fixed arrays


def uuid_from_bytes(raw: bytes) -> UUID:
    """A UUID from 16 bytes, without UUID.__init__'s argument checks (3x faster)."""
    u = _new_uuid(UUID)
    _set(u, "int", int.from_bytes(raw, "big"))
    _set(u, "is_safe", _SAFE_UNKNOWN)
    return u


def read_uuid(buf: Buffer, pos: int, end: int) -> tuple[UUID, int]:
    if pos + 16 > end:
        raise DecodeError("truncated uuid", offset=pos)
    return uuid_from_bytes(bytes(buf[pos : pos + 16])), pos + 16


# ---------------------------------------------------------------- arrays

ItemReader = Callable[[Buffer, int, int], tuple[Any, int]]


def _array_count(
    buf: Buffer, pos: int, end: int, compact: bool, nullable: bool, name: str
) -> tuple[int, int]:
    """An array's item count (-1 for null), checked against the bytes left."""
    start = pos
    if compact:
        n, pos = read_uvarint(buf, pos, end)
        n -= 1
    else:
        n, pos = read_length32(buf, pos, end)
    if n < 0:
        if n != -1 or not nullable:
            what = "null but not nullable at this version" if n == -1 else f"of length {n}"
            raise DecodeError(f"array {name} is {what}", offset=start)
    elif n > end - pos:
        raise _short(f"array {name}", n, pos, end)
    return n, pos


def read_array(
    buf: Buffer,
    pos: int,
    end: int,
    item: ItemReader,
    compact: bool,
    nullable: bool,
    name: str,
    factory: Callable[[], list[Any]] = list,
) -> tuple[Any, int]:
    """An array of structs, strings, bytes or uuids, each read by ``item``."""
    n, pos = _array_count(buf, pos, end, compact, nullable, name)
    if n < 0:
        return None, pos
    items = factory()
    add = items.append
    for _ in range(n):
        value, pos = item(buf, pos, end)
        add(value)
    return items, pos


@overload
def read_fixed_array(
    buf: Buffer,
    pos: int,
    end: int,
    code: str,
    size: int,
    compact: bool,
    nullable: Literal[False],
    name: str,
) -> tuple[list[Any], int]: ...


@overload
def read_fixed_array(
    buf: Buffer,
    pos: int,
    end: int,
    code: str,
    size: int,
    compact: bool,
    nullable: bool,
    name: str,
) -> tuple[list[Any] | None, int]: ...


def read_fixed_array(
    buf: Buffer,
    pos: int,
    end: int,
    code: str,
    size: int,
    compact: bool,
    nullable: bool,
    name: str,
) -> tuple[list[Any] | None, int]:
    """An array of fixed-width numbers, unpacked in one call."""
    n, pos = _array_count(buf, pos, end, compact, nullable, name)
    if n < 0:
        return None, pos
    if n * size > end - pos:
        raise _short(f"array {name}", n, pos, end)
    return list(struct.unpack_from(f">{n}{code}", buf, pos)), pos + n * size


def _null_array(w: Writer, compact: bool, nullable: bool, name: str) -> None:
    if not nullable:
        raise unsupported(name, "null value")
    w(SMALL_UVARINTS[0] if compact else NULL_I32)


def write_struct_array(
    w: Writer,
    items: Sequence[Any] | None,
    item: Callable[[Any, Writer], None],
    compact: bool,
    nullable: bool,
    name: str,
) -> None:
    """Length, then each struct through its encoder ``item(value, w)``."""
    if items is None:
        return _null_array(w, compact, nullable, name)
    w(uvarint(len(items) + 1) if compact else _pack_i32(len(items)))
    for value in items:
        item(value, w)


def write_array(
    w: Writer,
    items: Sequence[Any] | None,
    item: Callable[[Writer, Any], None],
    compact: bool,
    nullable: bool,
    name: str,
) -> None:
    """Length, then each string, bytes or uuid value through its writer ``item(w, value)``."""
    if items is None:
        return _null_array(w, compact, nullable, name)
    w(uvarint(len(items) + 1) if compact else _pack_i32(len(items)))
    for value in items:
        item(w, value)


def write_fixed_array(
    w: Writer, items: Sequence[Any] | None, code: str, compact: bool, nullable: bool, name: str
) -> None:
    if items is None:
        return _null_array(w, compact, nullable, name)
    n = len(items)
    w(uvarint(n + 1) if compact else _pack_i32(n))
    w(struct.pack(f">{n}{code}", *items))


FixedArrayReader = Callable[[Buffer, int, int, str], tuple[Any, int]]
FixedArrayWriter = Callable[[Writer, Any, str], None]
#: Arrays up to this many items use a precompiled struct for the whole array.
_PRECOMPILED = 256


_ARRAY_STRUCTS: dict[str, list[struct.Struct]] = {}


def _array_structs(code: str) -> list[struct.Struct]:
    """``n`` items of ``code`` for every n below _PRECOMPILED, built once per code."""
    structs = _ARRAY_STRUCTS.get(code)
    if structs is None:
        structs = _ARRAY_STRUCTS[code] = [struct.Struct(f">{n}{code}") for n in range(_PRECOMPILED)]
    return structs


def fixed_array_reader(code: str, size: int, compact: bool, nullable: bool) -> FixedArrayReader:
    """A reader of one kind of fixed-width array, specialised so the common case (a
    one-byte length and a short array) costs one index, one compare and one unpack."""
    structs = _array_structs(code)

    def slow(buf: Buffer, pos: int, end: int, name: str) -> tuple[list[Any] | None, int]:
        return read_fixed_array(buf, pos, end, code, size, compact, nullable, name)

    if compact:

        def read(buf: Buffer, pos: int, end: int, name: str) -> tuple[Any, int]:
            if pos < end:
                n = buf[pos] - 1
                if 0 <= n < 127:
                    stop = pos + 1 + n * size
                    if stop <= end:
                        return list(structs[n].unpack_from(buf, pos + 1)), stop
            return slow(buf, pos, end, name)

    else:
        unpack_count = _I32.unpack_from

        def read(buf: Buffer, pos: int, end: int, name: str) -> tuple[Any, int]:
            if pos + 4 <= end:
                n = unpack_count(buf, pos)[0]
                if 0 <= n < _PRECOMPILED:
                    stop = pos + 4 + n * size
                    if stop <= end:
                        return list(structs[n].unpack_from(buf, pos + 4)), stop
            return slow(buf, pos, end, name)

    return read


def fixed_array_writer(code: str, compact: bool, nullable: bool) -> FixedArrayWriter:
    """A writer of one kind of fixed-width array (see :func:`fixed_array_reader`)."""
    packs = [s.pack for s in _array_structs(code)]
    lengths = [uvarint(n + 1) if compact else _pack_i32(n) for n in range(_PRECOMPILED)]

    def write(w: Writer, items: Any, name: str) -> None:
        if items is None:
            return _null_array(w, compact, nullable, name)
        n = len(items)
        if n < _PRECOMPILED:
            w(lengths[n])
            w(packs[n](*items))
        else:
            write_fixed_array(w, items, code, compact, nullable, name)

    return write


def write_uuid(w: Writer, u: UUID) -> None:
    w(u.bytes)


# ---------------------------------------------------------------- tagged fields


def read_tag_header(buf: Buffer, pos: int, end: int) -> tuple[int, int, int]:
    """One tagged field's (tag, end of its value, start of its value)."""
    tag, pos = read_uvarint(buf, pos, end)
    size, pos = read_uvarint(buf, pos, end)
    if size > end - pos:
        raise _short("tagged field", size, pos, end)
    return tag, pos + size, pos


def check_tag_end(pos: int, tag_end: int, tag: int) -> None:
    if pos != tag_end:
        raise DecodeError(
            f"tagged field {tag} has {tag_end - pos} bytes its value did not use", offset=pos
        )


def tag_of_other_version(tag: int, path: str, versions: str, pos: int) -> DecodeError:
    """A tag that a field of the struct has only at other versions, read at ``pos``: Kafka
    refuses the message (it is no unknown tagged field), so kafkagen does too."""
    reason = f"tagged field {tag} ({path}) exists only at versions {versions}"
    return DecodeError(reason, offset=pos)


def write_tags(w: Writer, known: list[tuple[int, bytes]], unknown: RawTags) -> None:
    """The tagged-field section: count, then each (tag, size, value) in tag order."""
    tags = known + list(unknown) if unknown else known
    if unknown:
        tags.sort(key=_tag_of)
    w(uvarint(len(tags)))
    for tag, value in tags:
        w(uvarint(tag))
        w(uvarint(len(value)))
        w(value)


def read_unknown_tags(buf: Buffer, pos: int, end: int) -> tuple[RawTags, int]:
    """A tagged-field section of a struct that knows no tags at this version: keep them all."""
    count, pos = read_uvarint(buf, pos, end)
    check_nullable_count(count, pos, end, "tagged fields")
    unknown = []
    for _ in range(count):
        tag, tag_end, pos = read_tag_header(buf, pos, end)
        unknown.append((tag, bytes(buf[pos:tag_end])))
        pos = tag_end
    return tuple(unknown), pos


def _tag_of(item: tuple[int, bytes]) -> int:
    return item[0]


__all__ = [
    "compact_string_length",
    "string_length",
    "FieldUnsupported",
    "unsupported",
    "Buffer",
    "EMPTY_TAGS",
    "NULL_COMPACT_LENGTH",
    "NULL_I16",
    "NULL_I32",
    "NULL_MARKER",
    "PRESENT_MARKER",
    "RawTags",
    "SMALL_UVARINTS",
    "Writer",
    "ZERO_UUID",
    "check_nullable_count",
    "check_tag_end",
    "read_bytes",
    "read_compact_bytes",
    "read_compact_nullable_bytes",
    "read_compact_nullable_records",
    "read_compact_nullable_string",
    "read_compact_records",
    "read_compact_string",
    "read_fixed_array",
    "read_length16",
    "read_length32",
    "read_nullable_bytes",
    "read_nullable_records",
    "read_nullable_string",
    "read_records",
    "read_string",
    "read_tag_header",
    "read_unknown_tags",
    "read_uuid",
    "read_uvarint",
    "tag_of_other_version",
    "truncated",
    "uuid_from_bytes",
    "uvarint",
    "write_bytes",
    "write_compact_bytes",
    "write_compact_nullable_bytes",
    "write_compact_nullable_string",
    "write_compact_string",
    "write_fixed_array",
    "fixed_array_reader",
    "fixed_array_writer",
    "read_array",
    "write_array",
    "write_struct_array",
    "write_uuid",
    "write_nullable_bytes",
    "write_nullable_string",
    "write_string",
    "write_tags",
]
