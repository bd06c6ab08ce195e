"""Record batches (magic v2): parsing, building, compression and broker-side checks."""

from __future__ import annotations

import array
import struct
from collections.abc import Callable, Sequence
from typing import Any

import cramjam
import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafkagen.runtime import compression, records
from kafkagen.runtime.compression import CompressionType, compress, decompress
from kafkagen.runtime.errors import (
    CorruptMessageError,
    CorruptRecordError,
    InvalidRecordError,
    InvalidRecordSetError,
    InvalidRecordTimestampError,
    KafkaError,
    RecordBatchTooLargeError,
    RecordSetError,
    UnsupportedCodecError,
    UnsupportedRecordFormatError,
)
from kafkagen.runtime.records import (
    HEADER_SIZE,
    Record,
    RecordBatch,
    TimestampType,
    assign_offsets,
    build_batch,
    iter_batches,
    iter_records,
    read_batch,
    set_log_append_time,
    set_max_timestamp,
    validate_batch_for_append,
)

# kafka-python loads its schemas through importlib.resources calls that 3.11 deprecates.
pytestmark = pytest.mark.filterwarnings(
    "ignore:(read_text|open_text) is deprecated:DeprecationWarning"
)

ALL_CODECS = list(CompressionType)
T0 = 1_700_000_000_000


def sample_records(n: int = 12, big: bool = False, start: int = 0) -> list[Record]:
    """Records with null and empty keys/values, headers, non-ASCII header keys."""
    out = []
    for i in range(n):
        key = None if i % 5 == 0 else (b"" if i % 7 == 0 else b"key-%d" % i)
        value = None if i % 6 == 3 else b"value-%d-" % i + b"x" * (i * 13)
        if big and i == 1:
            value = bytes(range(256)) * 1200  # 300 KiB: several snappy and lz4 blocks
        headers = [("trace", b"abc"), ("empty", b""), ("null", None)] if i % 2 else []
        if i % 4 == 1:
            headers.append(("clé-ü", b"\x00\xff"))
        out.append(Record(start + i, T0 + i * 17 - (40 if i == 3 else 0), key, value, headers))
    return out


# ---------------------------------------------------------------- hand-made wire bytes
# Independent of build_batch, so that the parser is tested against the format itself.

_HDR = struct.Struct(">qiibIhiqqqhii")


def zz(n: int) -> bytes:
    """A zigzag varint."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def raw_record(
    key: bytes | None = b"k",
    value: bytes | None = b"v",
    offset_delta: int = 0,
    ts_delta: int = 0,
    headers: Sequence[tuple[bytes, bytes | None]] = (),
) -> bytes:
    def blob(b: bytes | None) -> bytes:
        return zz(-1) if b is None else zz(len(b)) + b

    body = b"\x00" + zz(ts_delta) + zz(offset_delta) + blob(key) + blob(value)
    body += zz(len(headers)) + b"".join(blob(k) + blob(v) for k, v in headers)
    return zz(len(body)) + body


def raw_batch(
    payload: bytes,
    count: int,
    *,
    attributes: int = 0,
    last_offset_delta: int | None = None,
    base_offset: int = 0,
    magic: int = 2,
    base_timestamp: int = T0,
    max_timestamp: int = T0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    crc: int | None = None,
) -> bytes:
    lod = count - 1 if last_offset_delta is None else last_offset_delta
    head = bytearray(
        _HDR.pack(
            base_offset,
            HEADER_SIZE - 12 + len(payload),
            -1,
            magic,
            0,
            attributes,
            lod,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
    )
    whole = bytes(head) + payload
    struct.pack_into(">I", head, 17, crc32c(whole[21:]) if crc is None else crc)
    return bytes(head) + payload


def parse_all(data: bytes, **kw: Any) -> list[list[Record]]:
    return [b.records() for b in iter_batches(data, **kw)]


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
def test_round_trip_every_codec(codec: CompressionType) -> None:
    records = sample_records(big=True)
    data = build_batch(
        records,
        compression=codec,
        producer_id=77,
        producer_epoch=3,
        base_sequence=1000,
        transactional=True,
        partition_leader_epoch=9,
    )
    batch = read_batch(data)
    assert batch.compression is codec
    assert batch.magic == 2
    assert batch.record_count == len(records)
    assert batch.last_offset_delta == len(records) - 1
    assert batch.base_timestamp == records[0].timestamp
    assert batch.max_timestamp == max(r.timestamp for r in records)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, 1000)
    assert batch.last_sequence == 1000 + len(records) - 1
    assert batch.is_transactional and not batch.is_control
    assert batch.partition_leader_epoch == 9
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert batch.size_in_bytes == len(data)
    assert batch.is_valid()
    assert batch.records() == records


def test_offsets_timestamps_and_gaps() -> None:
    # -1 means "next": 100, 101; explicit 105 leaves a gap as compaction does.
    records = [Record(timestamp=5), Record(timestamp=3), Record(105, 9, b"k", b"v")]
    batch = read_batch(build_batch(records, base_offset=100))
    assert [r.offset for r in batch] == [100, 101, 105]
    assert [r.timestamp for r in batch] == [5, 3, 9]
    assert batch.base_offset == 100 and batch.last_offset == 105 and batch.next_offset == 106
    assert batch.record_count == 3 and batch.last_offset_delta == 5


def test_empty_batch() -> None:
    batch = read_batch(build_batch([]))
    assert batch.record_count == 0 and batch.records() == []
    assert batch.max_timestamp == -1


def test_build_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="increase"):
        build_batch([Record(5), Record(5)])
    with pytest.raises(ValueError, match="after base offset 10"):
        build_batch([Record(0)], base_offset=10)
    with pytest.raises(ValueError, match="out of range"):
        build_batch([Record()], producer_epoch=70000)
    with pytest.raises(ValueError):
        build_batch([Record()], compression=7)


def test_multiple_batches_are_views() -> None:
    a = build_batch(sample_records(3), base_offset=0)
    b = build_batch(sample_records(2, start=3), base_offset=3, compression=CompressionType.GZIP)
    data = bytearray(a + b)
    batches = list(iter_batches(data))
    assert [(x.index, x.position) for x in batches] == [(0, 0), (1, len(a))]
    assert batches[1].buffer.obj is data  # a view, not a copy
    assert [r.offset for r in iter_records(data)] == [0, 1, 2, 3, 4]
    assert parse_all(bytes(data)) == parse_all(memoryview(data))


def test_non_byte_memoryview_input() -> None:
    raw = build_batch(sample_records(4))
    padded = raw + b"\x00" * (-len(raw) % 4)  # whole 4-byte items; the pad is a short tail
    view = memoryview(array.array("I", padded))
    (batch,) = iter_batches(view, allow_truncated=True)
    assert batch.records() == sample_records(4)


def test_control_batches_are_skipped_by_iter_records() -> None:
    marker = Record(key=b"\x00\x00\x00\x01", value=b"\x00\x00\x00\x00\x00\x05")
    control = build_batch([marker], base_offset=2, is_control=True, producer_id=1)
    data = build_batch(sample_records(2)) + control
    assert read_batch(control).is_control
    assert [r.offset for r in iter_records(data)] == [0, 1]
    assert [r.offset for r in iter_records(data, include_control=True)] == [0, 1, 2]


# ---------------------------------------------------------------- corruption


def test_crc_corruption_is_detected() -> None:
    a = build_batch(sample_records(3))
    b = bytearray(build_batch(sample_records(3, start=3), base_offset=3))
    b[HEADER_SIZE + 5] ^= 0x01  # inside the records of the second batch
    with pytest.raises(CorruptRecordError) as info:
        list(iter_batches(a + b))
    err = info.value
    assert err.code == 2 and isinstance(err, CorruptMessageError)
    assert (err.batch_index, err.offset) == (1, len(a))
    assert "CRC" in str(err) and "batch 1" in str(err) and f"byte {len(a)}" in str(err)
    # The CRC covers the attributes too, but not the base offset or leader epoch.
    c = bytearray(a)
    c[22] ^= 0x08
    with pytest.raises(CorruptRecordError):
        read_batch(c)
    d = bytearray(a)
    d[7] ^= 0xFF
    d[12] ^= 0xFF
    assert read_batch(d).is_valid()
    # Checking can be skipped (a broker re-reading its own log, say).
    assert len(list(iter_batches(a + b, verify_crc=False))) == 2


def test_truncated_record_sets() -> None:
    a = build_batch(sample_records(4))
    b = build_batch(sample_records(3, start=4), base_offset=4, compression=CompressionType.GZIP)
    data = a + b
    for cut in range(len(data)):
        prefix = data[:cut]
        complete = 0 if cut < len(a) else 1
        if cut in (0, len(a)):
            assert len(parse_all(prefix)) == complete
        else:
            with pytest.raises(CorruptRecordError) as info:
                parse_all(prefix)
            assert info.value.batch_index == complete
            assert info.value.offset == (0 if complete == 0 else len(a))
        # A Fetch response may end in a partial batch, which readers skip.
        assert len(parse_all(prefix, allow_truncated=True)) == complete
    assert len(parse_all(data)) == 2


def test_old_and_unknown_magic() -> None:
    for magic in (0, 1):
        legacy = raw_batch(raw_record(), 1, magic=magic)
        with pytest.raises(UnsupportedRecordFormatError) as info:
            list(iter_batches(legacy))
        assert info.value.code == 43 and f"v{magic}" in str(info.value)
    with pytest.raises(CorruptRecordError, match="magic"):
        list(iter_batches(raw_batch(raw_record(), 1, magic=3)))


def test_bad_batch_lengths() -> None:
    good = bytearray(raw_batch(raw_record(), 1))
    for length in (-1, 0, 13, 20, 48):
        bad = bytearray(good)
        struct.pack_into(">i", bad, 8, length)
        with pytest.raises(CorruptRecordError, match="length"):
            list(iter_batches(bad))
    big = bytearray(good)
    struct.pack_into(">i", big, 8, 2**31 - 1)
    with pytest.raises(CorruptRecordError, match="cut short"):
        list(iter_batches(big))


def test_unknown_codec_id_is_corrupt() -> None:
    batch = raw_batch(raw_record(), 1, attributes=5)
    with pytest.raises(CorruptRecordError, match="codec"):
        read_batch(batch).records()


def test_undecompressable_payload_is_corrupt() -> None:
    batch = raw_batch(b"definitely not gzip", 1, attributes=CompressionType.GZIP)
    with pytest.raises(CorruptRecordError, match="gzip") as info:
        read_batch(batch).records()
    assert (info.value.batch_index, info.value.offset) == (0, 0)


BAD_RECORD_PAYLOADS = {
    "varint too long": b"\xff" * 6,
    "varint cut off": b"\x80\x80",
    "record longer than the batch": zz(100) + b"\x00\x00",
    "zero length": zz(0),
    "negative length": zz(-4),
    "long timestamp varlong": zz(12) + b"\x00" + b"\xff" * 11,
    "key overruns record": zz(6) + b"\x00\x00\x00" + zz(50) + b"ab",
    "value overruns record": zz(6) + b"\x00\x00\x00" + zz(-1) + zz(9) + b"a",
    "negative header count": zz(6) + b"\x00\x00\x00" + zz(-1) + zz(-1) + zz(-3) + b"\x00",
    "negative header key length": zz(6) + b"\x00\x00\x00" + zz(-1) + zz(-1) + zz(1) + zz(-1),
    "record length too long for fields": zz(8) + b"\x00\x00\x00" + zz(-1) + zz(-1) + zz(0) * 3,
}


@pytest.mark.parametrize("payload", BAD_RECORD_PAYLOADS.values(), ids=BAD_RECORD_PAYLOADS)
def test_bad_records_are_invalid_record(payload: bytes) -> None:
    batch = read_batch(raw_batch(payload, 1))  # framing and CRC are fine
    with pytest.raises(InvalidRecordSetError) as info:
        batch.records()
    err = info.value
    assert err.code == 87 and isinstance(err, InvalidRecordError)
    assert (err.batch_index, err.offset) == (0, 0)
    assert "record 0 at byte 0" in str(err)


def test_record_count_must_match_the_data() -> None:
    two = raw_record(offset_delta=0) + raw_record(offset_delta=1)
    with pytest.raises(InvalidRecordSetError, match="declares 3 records but holds 2"):
        read_batch(raw_batch(two, 3)).records()
    with pytest.raises(InvalidRecordSetError, match="follow the 1 records"):
        read_batch(raw_batch(two, 1)).records()
    with pytest.raises(InvalidRecordSetError, match="negative record count"):
        read_batch(raw_batch(two, -1)).records()
    # Same inside a compressed payload, where the place is in the decompressed bytes.
    gz = raw_batch(compress(CompressionType.GZIP, two), 3, attributes=1)
    with pytest.raises(InvalidRecordSetError, match="decompressed records"):
        read_batch(gz).records()


def test_records_decode_lazily() -> None:
    two = raw_record(offset_delta=0) + b"\xff" * 6
    batch = read_batch(raw_batch(two, 2))
    it = iter(batch)
    assert next(it).key == b"k"
    with pytest.raises(InvalidRecordSetError, match="record 1 at byte"):
        next(it)


def test_negative_key_length_is_null_like_kafka() -> None:
    payload = zz(6) + b"\x00\x00\x00" + zz(-7) + zz(-1) + zz(0)
    (record,) = read_batch(raw_batch(payload, 1)).records()
    assert record.key is None and record.value is None and record.headers == []


def _only_record_set_errors(fn: Callable[[], object]) -> None:
    try:
        fn()
    except RecordSetError:
        pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_input_raises_only_record_set_errors(data: st.DataObject) -> None:
    codec = data.draw(st.sampled_from([CompressionType.NONE, CompressionType.GZIP]))
    original = build_batch(sample_records(4), compression=codec) + build_batch(
        sample_records(2, start=4), base_offset=4
    )
    raw = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    raw = raw[: data.draw(st.integers(0, len(raw)))]
    verify = data.draw(st.booleans())
    _only_record_set_errors(lambda: parse_all(bytes(raw), verify_crc=verify))
    _only_record_set_errors(lambda: validate_batch_for_append(bytes(raw), now_ms=T0))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_raise_only_record_set_errors(raw: bytes) -> None:
    _only_record_set_errors(lambda: parse_all(raw, verify_crc=False))
    # With a valid-looking header in front, the record parser gets the random bytes.
    _only_record_set_errors(lambda: parse_all(raw_batch(raw, len(raw) % 5)))


# ---------------------------------------------------------------- property: build then parse

_header = st.tuples(
    st.text(max_size=8),
    st.one_of(st.none(), st.binary(max_size=16)),
)
_record = st.builds(
    Record,
    offset=st.just(-1),
    timestamp=st.integers(-1, 2**41),
    key=st.one_of(st.none(), st.binary(max_size=40)),
    value=st.one_of(st.none(), st.binary(max_size=200)),
    headers=st.lists(_header, max_size=3),
)


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(_record, max_size=20),
    base_offset=st.integers(0, 2**62),
    gaps=st.lists(st.integers(0, 3), min_size=20, max_size=20),
    codec=st.sampled_from(ALL_CODECS),
)
def test_build_then_parse_property(
    records: list[Record], base_offset: int, gaps: list[int], codec: CompressionType
) -> None:
    offset = base_offset
    expected = []
    for r, gap in zip(records, gaps, strict=False):
        expected.append(Record(offset, r.timestamp, r.key, r.value, r.headers))
        offset += 1 + gap
    batch = read_batch(build_batch(expected, base_offset=base_offset, compression=codec))
    assert batch.records() == expected
    if expected:
        assert batch.last_offset == expected[-1].offset


def test_header_keys_survive_any_bytes() -> None:
    payload = raw_record(headers=[(b"\xff\xfe-not-utf8", b"v")])
    (record,) = read_batch(raw_batch(payload, 1)).records()
    again = read_batch(build_batch([record])).records()[0]
    assert again.headers == record.headers
    assert again.headers[0][0].encode("utf-8", "surrogateescape") == b"\xff\xfe-not-utf8"


# ---------------------------------------------------------------- other client libraries


def _kafka_python_has(codec: CompressionType) -> bool:
    from kafka import codec as kp

    checks = {
        CompressionType.NONE: lambda: True,
        CompressionType.GZIP: kp.has_gzip,
        CompressionType.SNAPPY: kp.has_snappy,
        CompressionType.LZ4: kp.has_lz4,
        CompressionType.ZSTD: kp.has_zstd,
    }
    return bool(checks[codec]())


def _client_view(records: Any) -> list[tuple[Any, ...]]:
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records]


def _ours(records: list[Record]) -> list[tuple[Any, ...]]:
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records]


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
def test_kafka_python_batches(codec: CompressionType) -> None:
    if not _kafka_python_has(codec):
        pytest.skip(f"kafka-python has no {codec.name.lower()} library here")
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

    records = sample_records(10)
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(codec),
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for r in records:
        builder.append(r.offset, r.timestamp, r.key, r.value, r.headers)
    theirs = bytes(builder.build())
    batch = read_batch(theirs)
    assert batch.compression is codec  # the data compresses, so it was not sent plain
    assert batch.records() == records

    ours = build_batch(records, compression=codec)
    reader = DefaultRecordBatch(ours)
    assert reader.validate_crc()
    assert reader.compression_type == codec and reader.records_count == len(records)
    assert _client_view(DefaultRecordBatch(ours)) == _ours(records)


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("impl", ["python", "cython"])
def test_aiokafka_batches(codec: CompressionType, impl: str) -> None:
    from aiokafka.record import default_records as ak

    builder_cls = (
        ak._DefaultRecordBatchBuilderPy if impl == "python" else ak.DefaultRecordBatchBuilder
    )
    reader_cls = ak._DefaultRecordBatchPy if impl == "python" else ak.DefaultRecordBatch
    records = sample_records(10, big=codec is not CompressionType.NONE)
    builder = builder_cls(
        magic=2,
        compression_type=int(codec),
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 22,
    )
    for r in records:
        builder.append(r.offset, r.timestamp, r.key, r.value, r.headers)
    batch = read_batch(bytes(builder.build()))
    assert batch.compression is codec
    assert batch.records() == records

    ours = build_batch(records, compression=codec)
    reader = reader_cls(ours)
    assert reader.validate_crc()
    assert _client_view(reader_cls(ours)) == _ours(records)


def test_log_append_time_read_by_kafka_python() -> None:
    from kafka.record.default_records import DefaultRecordBatch

    stamped = set_log_append_time(build_batch(sample_records(3)), T0 + 999)
    reader = DefaultRecordBatch(stamped)
    assert reader.validate_crc() and reader.timestamp_type == 1
    assert [r.timestamp for r in reader] == [T0 + 999] * 3


# ---------------------------------------------------------------- compression module


def test_snappy_accepts_xerial_and_raw() -> None:
    data = bytes(range(256)) * 600  # more than one 32 KiB xerial block
    framed = compress(CompressionType.SNAPPY, data)
    assert framed.startswith(b"\x82SNAPPY\x00")
    assert decompress(CompressionType.SNAPPY, framed) == data
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert decompress(CompressionType.SNAPPY, raw) == data
    with pytest.raises(CorruptRecordError, match="snappy"):
        decompress(CompressionType.SNAPPY, framed[:-7])


def test_lz4_frames_written_elsewhere() -> None:
    data = b"kafka " * 50_000
    # cramjam's one-shot frame uses linked blocks and a content checksum: still a frame.
    assert decompress(CompressionType.LZ4, bytes(cramjam.lz4.compress(data))) == data
    ours = compress(CompressionType.LZ4, data)
    assert ours[:4] == b"\x04\x22\x4d\x18"
    assert ours[4] & 0x20, "blocks must be independent for Kafka's reader"


def test_zstd_streamed_and_concatenated_frames() -> None:
    data = b"zstd " * 10_000
    streamer = cramjam.zstd.Compressor()
    streamer.compress(data)
    frame = bytes(streamer.finish())  # no content size in the frame header
    assert decompress(CompressionType.ZSTD, frame) == data
    assert decompress(CompressionType.ZSTD, frame + frame) == data + data


@pytest.mark.parametrize("codec", ALL_CODECS[1:], ids=lambda c: c.name)
def test_garbage_is_corrupt_for_every_codec(codec: CompressionType) -> None:
    with pytest.raises(CorruptRecordError, match=codec.name.lower()):
        decompress(codec, b"\x00\x01\x02 garbage garbage garbage")


def test_missing_cramjam_names_the_codec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compression, "_cramjam", lambda: None)
    assert not compression.codec_available(CompressionType.ZSTD)
    assert compression.codec_available(CompressionType.GZIP)
    for codec in (CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD):
        with pytest.raises(UnsupportedCodecError, match=codec.name.lower()) as info:
            compress(codec, b"x")
        assert info.value.code == 76
        with pytest.raises(UnsupportedCodecError, match=codec.name.lower()):
            decompress(codec, b"x")
    good = build_batch(sample_records(2))
    gz = build_batch(sample_records(2), compression=CompressionType.GZIP)
    assert read_batch(good).records() and read_batch(gz).records()
    lz4 = raw_batch(b"\x04\x22\x4d\x18", 1, attributes=CompressionType.LZ4)
    with pytest.raises(UnsupportedCodecError) as err:
        read_batch(lz4).records()
    assert (err.value.batch_index, err.value.offset) == (0, 0)


def test_unknown_codec_id_in_compression_api() -> None:
    with pytest.raises(ValueError, match="codec id 6"):
        compress(6, b"x")


# ---------------------------------------------------------------- broker-side rewrites


def test_assign_offsets_keeps_crc_valid() -> None:
    a = build_batch(sample_records(3))
    b = build_batch([Record(0), Record(4)], compression=CompressionType.GZIP)
    data = assign_offsets(a + b, 1000, partition_leader_epoch=7)
    first, second = iter_batches(data)  # CRCs checked
    assert (first.base_offset, second.base_offset) == (1000, 1003)
    assert first.partition_leader_epoch == second.partition_leader_epoch == 7
    assert [r.offset for r in iter_records(data)] == [1000, 1001, 1002, 1003, 1007]
    # The input is untouched.
    assert read_batch(a).base_offset == 0


def test_set_log_append_time() -> None:
    original = build_batch(sample_records(4), compression=CompressionType.GZIP)
    stamped = set_log_append_time(original, T0 + 5_000)
    batch = read_batch(stamped)  # new CRC checked
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == T0 + 5_000
    assert batch.compression is CompressionType.GZIP
    assert [r.timestamp for r in batch] == [T0 + 5_000] * 4
    back = read_batch(set_max_timestamp(stamped, TimestampType.CREATE_TIME, T0))
    assert back.timestamp_type is TimestampType.CREATE_TIME
    assert [r.timestamp for r in back] == [r.timestamp for r in sample_records(4)]
    assert set_max_timestamp(original, 0, read_batch(original).max_timestamp) == original


def test_rewrites_do_not_launder_corrupt_batches() -> None:
    bad = bytearray(build_batch(sample_records(2)))
    bad[-1] ^= 0x55
    with pytest.raises(CorruptRecordError, match="CRC"):
        set_log_append_time(bad, T0)


# ---------------------------------------------------------------- validate_batch_for_append


def produced(records: list[Record] | None = None, **kw: Any) -> bytes:
    return build_batch(sample_records(5) if records is None else records, **kw)


def test_validate_accepts_a_normal_batch() -> None:
    data = produced(producer_id=5, producer_epoch=0, base_sequence=0)
    info = validate_batch_for_append(data, produce_version=9, now_ms=T0, compacted=False)
    assert info.record_count == 5 and info.valid_bytes == len(data)
    assert info.max_timestamp == max(r.timestamp for r in sample_records(5))
    assert info.consecutive_offsets
    assert info.batch.buffer.tobytes() == data
    lat = validate_batch_for_append(data, timestamp_type=TimestampType.LOG_APPEND_TIME, now_ms=7)
    assert lat.max_timestamp == 7


def _code_of(data: bytes, **kw: Any) -> int:
    with pytest.raises(KafkaError) as info:
        validate_batch_for_append(data, **kw)
    assert isinstance(info.value, RecordSetError)
    return info.value.code


def test_validate_rejects_what_kafka_rejects() -> None:
    good = produced()
    corrupt = bytearray(good)
    corrupt[-2] ^= 1
    assert _code_of(bytes(corrupt)) == 2
    assert _code_of(produced([Record(key=b"k")], base_offset=10)) == 87
    assert _code_of(good, max_message_size=len(good) - 1) == 10
    with pytest.raises(RecordBatchTooLargeError):
        validate_batch_for_append(good, max_message_size=10)
    # last offset delta must agree with the count for client batches...
    gappy = produced([Record(0), Record(3)])
    assert _code_of(gappy) == 87
    assert validate_batch_for_append(gappy, from_client=False).record_count == 2
    assert _code_of(produced([Record(key=b"k")], is_control=True)) == 87
    assert _code_of(produced(producer_id=3, producer_epoch=0)) == 87  # no base sequence
    assert _code_of(b"") == 87
    assert _code_of(good + good) == 87
    assert _code_of(raw_batch(raw_record(), 1, magic=1)) == 43
    assert _code_of(raw_batch(raw_record(), 1, magic=1), produce_version=3) == 87
    assert _code_of(good + good, produce_version=3) == 87
    assert _code_of(b"", produce_version=8) == 87
    zstd = produced(compression=CompressionType.ZSTD)
    assert _code_of(zstd, produce_version=6) == 76
    assert validate_batch_for_append(zstd, produce_version=7).record_count == 5
    not_gzip = raw_batch(b"not gzip at all", 1, attributes=CompressionType.GZIP)
    assert _code_of(not_gzip) == 2
    wrong_count = raw_batch(raw_record() + raw_record(offset_delta=1), 3)
    assert _code_of(wrong_count) == 87


def test_validate_per_record_errors() -> None:
    records = [Record(key=b"a"), Record(key=None), Record(key=b"c"), Record(key=None)]
    with pytest.raises(InvalidRecordSetError) as info:
        validate_batch_for_append(produced(records), compacted=True)
    assert [i for i, _ in info.value.record_errors] == [1, 3]
    assert "key" in info.value.record_errors[0][1]
    assert "and 1 more" in str(info.value)
    assert validate_batch_for_append(produced(records)).record_count == 4

    old, new = Record(timestamp=T0 - 10_000), Record(timestamp=T0 + 10_000)
    data = produced([Record(timestamp=T0), old, new, Record(timestamp=-1)])
    kw: dict[str, Any] = {"now_ms": T0}
    assert validate_batch_for_append(data, **kw).max_timestamp == T0 + 10_000
    with pytest.raises(InvalidRecordTimestampError) as ts_info:
        validate_batch_for_append(data, timestamp_before_max_ms=5_000, **kw)
    assert ts_info.value.code == 32 and [i for i, _ in ts_info.value.record_errors] == [1]
    with pytest.raises(InvalidRecordTimestampError) as ts_info:
        validate_batch_for_append(
            data, timestamp_before_max_ms=5_000, timestamp_after_max_ms=5_000, **kw
        )
    assert [i for i, _ in ts_info.value.record_errors] == [1, 2]
    # A timestamp problem wins over a key problem, as in Kafka.
    mixed = produced([Record(key=None, timestamp=T0), Record(key=b"k", timestamp=0)])
    assert _code_of(mixed, compacted=True, timestamp_before_max_ms=1, now_ms=T0) == 32
    # Producers may not claim LOG_APPEND_TIME.
    claimed = produced([Record(key=b"k", timestamp=-1)], timestamp_type=1)
    assert _code_of(claimed) == 32


def test_validate_trims_a_partial_tail_and_flags_offset_gaps() -> None:
    good = produced()
    info = validate_batch_for_append(good + good[:30])
    assert info.valid_bytes == len(good)
    assert info.batch.buffer.tobytes() == good
    # Deltas 0, 2 with last delta 1: count matches, but Kafka would rebuild the batch.
    payload = raw_record(offset_delta=0) + raw_record(offset_delta=2)
    info = validate_batch_for_append(raw_batch(payload, 2))
    assert not info.consecutive_offsets


def test_batch_view_reports_place() -> None:
    data = produced()
    batch = RecordBatch(memoryview(data), index=4, position=128)
    assert "index=4" in repr(batch)
    with pytest.raises(CorruptRecordError) as info:
        bad = bytearray(data)
        bad[-1] ^= 1
        RecordBatch(memoryview(bytes(bad)), 4, 128).ensure_valid()
    assert (info.value.batch_index, info.value.offset) == (4, 128)


# ---------------------------------------------------------------- the accelerator's record scan


def _outcome(data: bytes, kw: dict[str, Any]) -> tuple[Any, ...]:
    """What validation says of ``data``: the accepted batch's summary, or the error."""
    try:
        info = validate_batch_for_append(data, now_ms=T0, **kw)
    except RecordSetError as e:
        return (type(e), str(e), e.record_errors)
    return (
        info.record_count,
        info.max_timestamp,
        info.max_timestamp_offset_delta,
        info.consecutive_offsets,
        info.valid_bytes,
    )


_checks = st.fixed_dictionaries(
    {
        "compacted": st.booleans(),
        "from_client": st.booleans(),
        "timestamp_type": st.sampled_from(list(TimestampType)),
        "timestamp_before_max_ms": st.sampled_from([None, 0, 100, 10**13]),
        "timestamp_after_max_ms": st.sampled_from([None, 0, 100, 10**13]),
    }
)


@pytest.mark.skipif(records._native is None, reason="the accelerator is not built")
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), kw=_checks)
def test_native_scan_validates_as_python_does(data: st.DataObject, kw: dict[str, Any]) -> None:
    """Validation with the compiled record scan accepts and refuses exactly what the Python
    reading does, with the same figures and errors: on built batches with every kind of
    record, and on their records sections mutated, cut or extended (CRC made valid, so the
    record parser is reached)."""
    recs = data.draw(st.lists(_record, min_size=1, max_size=8))
    shift = data.draw(st.sampled_from([0, T0, -T0, 2**62]))
    recs = [Record(i, r.timestamp + shift, r.key, r.value, r.headers) for i, r in enumerate(recs)]
    codec = data.draw(st.sampled_from([CompressionType.NONE, CompressionType.GZIP]))
    batch = read_batch(build_batch(recs, compression=codec))
    section = bytearray(batch.records_section())
    count = len(recs)
    damage = data.draw(st.sampled_from(["none", "none", "flip", "cut", "extend", "count"]))
    if damage == "flip":
        section[data.draw(st.integers(0, len(section) - 1))] = data.draw(st.integers(0, 255))
    elif damage == "cut":
        section = section[: data.draw(st.integers(0, len(section) - 1))]
    elif damage == "extend":
        section += data.draw(st.binary(min_size=1, max_size=3))
    elif damage == "count":
        count += data.draw(st.sampled_from([-1, 1]))
    raw = raw_batch(
        bytes(section),
        count,
        last_offset_delta=len(recs) - 1,
        base_timestamp=batch.base_timestamp,
        attributes=data.draw(st.sampled_from([0, 0, 0, 8])),
    )
    native, records._native = records._native, None
    try:
        python = _outcome(raw, kw)
    finally:
        records._native = native
    assert _outcome(raw, kw) == python


@pytest.mark.skipif(records._native is None, reason="the accelerator is not built")
def test_native_scan_reads_what_the_records_hold() -> None:
    recs = sample_records(12)
    batch = read_batch(build_batch(recs))
    max_ts, delta, consecutive, lowest, highest, null_keys = records._native.scan_records(
        batch.records_section(), batch.record_count, batch.base_timestamp
    )
    stamps = [r.timestamp for r in recs]
    assert (max_ts, delta) == (max(stamps), stamps.index(max(stamps)))
    assert consecutive and (lowest, highest) == (min(stamps), max(stamps))
    assert null_keys == sum(r.key is None for r in recs)
    section = batch.records_section()
    for bad in (section[:-1], section + b"\x00", b""):
        assert records._native.scan_records(bad, 12, T0) is None
    assert records._native.scan_records(section, 13, T0) is None
    assert records._native.scan_records(section, -1, T0) is None
    # A timestamp past int64 is left to the Python reading (which has big integers).
    assert records._native.scan_records(section, 12, 2**63 - 1) is None
