"""Message formats v0 and v1: parsing, CRC checks, and conversion to and from v2 batches.

Produce v0-2 and Fetch v0-3 go over real sockets to a broker; the kafka-python clients
pinned to old protocol versions are in ``test_legacy_clients.py``.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from typing import Any

import pytest
from broker_helpers import WireClient, req
from kafkagen.generated import message_type
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.compression import CompressionType, codec_available
from kafkagen.runtime.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordSetError,
    UnsupportedCodecError,
)
from kafkagen.runtime.legacy_records import (
    build_message_set,
    downconvert,
    fetch_magic,
    is_legacy,
    iter_legacy_records,
    iter_messages,
    upconvert,
)
from kafkagen.runtime.records import (
    NO_TIMESTAMP,
    Record,
    TimestampType,
    build_batch,
    iter_records,
    read_batch,
)

PRODUCE, FETCH = 0, 1
T0 = 1_700_000_000_000


def records(n: int, first: int = 0) -> list[Record]:
    return [Record(first + i, T0 + i, b"k%d" % i, b"v%d" % i) for i in range(n)]


def test_a_magic_0_message_is_laid_out_as_kafka_writes_it() -> None:
    data = build_message_set([Record(7, T0, b"k", None)], 0)
    body = bytes([0, 0]) + struct.pack(">i", 1) + b"k" + struct.pack(">i", -1)
    assert data == struct.pack(">qiI", 7, len(body) + 4, zlib.crc32(body)) + body
    (m,) = iter_messages(data)
    assert (m.offset, m.magic, m.timestamp, m.key, m.value) == (7, 0, NO_TIMESTAMP, b"k", None)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [c for c in CompressionType if c != CompressionType.ZSTD])
def test_upconvert_keeps_keys_values_and_magic_1_timestamps(magic: int, codec: int) -> None:
    if not codec_available(codec):
        pytest.skip(f"{CompressionType(codec).name} needs cramjam")
    if codec == CompressionType.LZ4 and magic == 0:
        with pytest.raises(UnsupportedCodecError, match="magic 0"):
            build_message_set(records(1), magic, codec)
        return
    batch = read_batch(upconvert(build_message_set(records(5, first=40), magic, codec)))
    assert batch.base_offset == 0 and batch.compression == codec
    got = [(r.offset, r.timestamp, r.key, r.value) for r in batch]
    stamps = [T0 + i if magic == 1 else NO_TIMESTAMP for i in range(5)]
    assert got == [(i, stamps[i], b"k%d" % i, b"v%d" % i) for i in range(5)]


def test_upconvert_refuses_a_bad_crc_and_mixed_or_nested_sets() -> None:
    good = bytearray(build_message_set(records(2), 1))
    good[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="message 1: CRC"):
        upconvert(good)
    mixed = build_message_set(records(1), 0) + build_message_set(records(1, first=1), 1)
    with pytest.raises(InvalidRecordSetError, match="message 1 has magic 1, the first one 0"):
        upconvert(mixed)
    inner = build_message_set(records(2), 1, CompressionType.GZIP)
    nested = magic_1_message(1, CompressionType.GZIP, gzip.compress(inner))
    with pytest.raises(InvalidRecordSetError, match="may not hold another compressed"):
        upconvert(nested)
    two_wrappers = inner + build_message_set(records(1, first=2), 1, CompressionType.GZIP)
    with pytest.raises(InvalidRecordSetError, match="one wrapper message, not 2"):
        upconvert(two_wrappers)


def magic_1_message(offset: int, attributes: int, value: bytes) -> bytes:
    """A magic 1 message with no key, laid out by hand."""
    body = bytes([1, attributes]) + struct.pack(">qii", T0, -1, len(value)) + value
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def test_downconvert_writes_the_fetch_versions_magic() -> None:
    assert [fetch_magic(v) for v in range(6)] == [0, 0, 1, 1, 2, 2]
    log = build_batch(records(3, first=10), base_offset=10) + build_batch(
        records(2, first=13), base_offset=13, compression=CompressionType.GZIP
    )
    for magic in (0, 1):
        data = downconvert(log, magic, first_offset=11)
        assert is_legacy(data)
        shallow = [(m.offset, m.magic, m.compression) for m in iter_messages(data)]
        # Offset 10 is before the fetch offset; a wrapper carries its last offset.
        assert shallow == [(11, magic, 0), (12, magic, 0), (14, magic, CompressionType.GZIP)]
        got = [(r.offset, r.timestamp, r.key) for r in iter_legacy_records(data)]
        stamps = [T0 + 1, T0 + 2, T0, T0 + 1] if magic else [NO_TIMESTAMP] * 4
        assert got == list(zip([11, 12, 13, 14], stamps, [b"k1", b"k2", b"k0", b"k1"], strict=True))


def test_downconvert_drops_control_batches_and_refuses_zstd() -> None:
    marker = build_batch(
        [Record(-1, T0, b"\0\0\0\1", b"\0\0\0\0\0\0")],
        base_offset=5,
        producer_id=1,
        producer_epoch=0,
        transactional=True,
        is_control=True,
    )
    assert downconvert(marker, 1) == b""
    zstd = build_batch(records(1), compression=CompressionType.ZSTD)
    with pytest.raises(UnsupportedCodecError, match="zstd"):
        downconvert(zstd, 1)


def test_log_append_time_survives_down_conversion() -> None:
    batch = build_batch(
        records(2), timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0 + 99
    )
    a, b = iter_messages(downconvert(batch, 1))
    assert a.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert (a.timestamp, b.timestamp) == (T0 + 99, T0 + 99)


# -- over the wire ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster() -> Any:
    with BackgroundCluster(configs={"auto.create.topics.enable": "true"}) as c:
        yield c


def produce(version: int, topic: str, data: bytes) -> Any:
    P: Any = message_type(PRODUCE, "request")
    return P(
        acks=1,
        timeout_ms=5000,
        topic_data=[
            P.TopicProduceData(
                name=topic, partition_data=[P.PartitionProduceData(index=0, records=data)]
            )
        ],
    )


def fetch(version: int, topic: str, offset: int) -> Any:
    F: Any = message_type(FETCH, "request")
    return F(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        topics=[
            F.FetchTopic(
                topic=topic,
                partitions=[
                    F.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
                ],
            )
        ],
    )


def test_produce_v0_to_v2_then_fetch_v0_to_v3_and_v4(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as w:
        w.call(3, 1, req(3, topics=[req(3).MetadataRequestTopic(name="legacy")]))
        for version, magic in ((0, 0), (1, 0), (2, 1)):
            got = w.call(PRODUCE, version, produce(version, "legacy", build_message_set(
                records(2), magic, CompressionType.GZIP if version == 1 else 0)))  # fmt: skip
            part = got.responses[0].partition_responses[0]
            assert (part.error_code, part.base_offset) == (0, 2 * version), version
        for version in range(5):
            got = w.call(FETCH, version, fetch(version, "legacy", 1))
            part = got.responses[0].partitions[0]
            assert part.error_code == 0 and part.high_watermark == 6
            data = bytes(part.records)
            if version >= 4:  # whole batches, from before the fetch offset too
                read = [r for r in iter_records(data) if r.offset >= 1]
            else:
                assert {m.magic for m in iter_messages(data)} == {fetch_magic(version)}
                read = list(iter_legacy_records(data))
            offsets = [r.offset for r in read]
            stamps = [r.timestamp for r in read]
            assert offsets == [1, 2, 3, 4, 5], version
            if fetch_magic(version) != 0:
                assert stamps == [-1, -1, -1, T0, T0 + 1], version


def test_a_corrupt_message_set_is_refused_and_nothing_is_written(
    cluster: BackgroundCluster,
) -> None:
    bad = bytearray(build_message_set(records(3), 1))
    bad[36] ^= 0xFF  # a byte of the first value, under its CRC
    with WireClient(cluster.bootstrap) as w:
        w.call(3, 1, req(3, topics=[req(3).MetadataRequestTopic(name="corrupt")]))
        got = w.call(PRODUCE, 2, produce(2, "corrupt", bytes(bad)))
        assert got.responses[0].partition_responses[0].error_code == ErrorCode.CORRUPT_MESSAGE
        part = w.call(FETCH, 2, fetch(2, "corrupt", 0)).responses[0].partitions[0]
        assert (part.high_watermark, bytes(part.records)) == (0, b"")


def test_old_fetchers_get_unsupported_compression_for_zstd(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as w:
        w.call(3, 1, req(3, topics=[req(3).MetadataRequestTopic(name="zstd")]))
        zstd = build_batch(records(1), compression=CompressionType.ZSTD)
        assert w.call(PRODUCE, 7, produce(7, "zstd", zstd)).responses[0].partition_responses[
            0
        ].error_code == 0  # fmt: skip
        part = w.call(FETCH, 3, fetch(3, "zstd", 0)).responses[0].partitions[0]
        assert part.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        assert w.call(FETCH, 10, fetch(10, "zstd", 0)).responses[0].partitions[0].error_code == 0


def test_fetch_v3_max_bytes_bounds_the_response(cluster: BackgroundCluster) -> None:
    F: Any = message_type(FETCH, "request")

    def fetch_both(version: int, max_bytes: int) -> list[int]:
        r = w.call(
            FETCH,
            version,
            F(
                replica_id=-1,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=max_bytes,
                topics=[
                    F.FetchTopic(
                        topic="bounded",
                        partitions=[
                            F.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=4096)
                            for p in (0, 1)
                        ],
                    )
                ],
            ),
        )
        return [len(list(iter_legacy_records(bytes(p.records)))) for p in r.responses[0].partitions]

    with WireClient(cluster.bootstrap) as w:
        Create: Any = message_type(19, "request")
        topic = Create.CreatableTopic(name="bounded", num_partitions=2, replication_factor=1)
        assert w.call(19, 4, Create(topics=[topic], timeout_ms=5000)).topics[0].error_code == 0
        for p in (0, 1):
            P: Any = message_type(PRODUCE, "request")
            data = build_message_set(records(5), 1)
            request = P(
                acks=1,
                timeout_ms=5000,
                topic_data=[
                    P.TopicProduceData(
                        name="bounded",
                        partition_data=[P.PartitionProduceData(index=p, records=data)],
                    )
                ],
            )
            assert w.call(PRODUCE, 2, request).responses[0].partition_responses[0].error_code == 0
        assert fetch_both(2, 1) == [5, 5]  # v2 has no response limit: max_bytes is ignored
        # v3: the first partition still returns its first batch, the second nothing.
        assert fetch_both(3, 1) == [5, 0]
        assert fetch_both(3, 1 << 20) == [5, 5]


def test_fetch_v2_cuts_at_the_partition_limit_and_v3_returns_the_first_message_whole(
    cluster: BackgroundCluster,
) -> None:
    with WireClient(cluster.bootstrap) as w:
        w.call(3, 1, req(3, topics=[req(3).MetadataRequestTopic(name="large")]))
        big = build_message_set([Record(0, T0, None, b"x" * 500)], 1)
        assert w.call(PRODUCE, 2, produce(2, "large", big)).responses[0].partition_responses[
            0
        ].error_code == 0  # fmt: skip
        for version, whole in ((2, False), (3, True)):
            request = fetch(version, "large", 0)
            request.topics[0].partitions[0].partition_max_bytes = 100
            data = bytes(w.call(FETCH, version, request).responses[0].partitions[0].records)
            if whole:
                assert [len(r.value or b"") for r in iter_legacy_records(data)] == [500]
            else:
                assert len(data) == 100 and list(iter_messages(data)) == []  # a partial message
