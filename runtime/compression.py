"""Compression codecs of Kafka record batches.

A batch's attributes name its codec; the records section of the batch is then one
compressed stream, in the framing Kafka's Java client writes and reads:

- gzip: a gzip stream (stdlib ``gzip``/``zlib``).
- snappy: the xerial snappy-java stream (a 16-byte header, then blocks of a big-endian
  length and raw snappy data). Some clients (librdkafka among them) send one raw snappy
  block instead; :func:`decompress` accepts both.
- lz4: the LZ4 frame format with independent blocks, which Kafka's reader requires
  because it decompresses each block on its own.
- zstd: standard zstd frames.

snappy, lz4 and zstd use the optional ``cramjam`` package (``kafkagen[compression]``);
without it they raise :class:`UnsupportedCodecError` naming the codec, which maps to
Kafka's UNSUPPORTED_COMPRESSION_TYPE.
"""

from __future__ import annotations

import enum
import functools
import gzip
import struct
from types import ModuleType

from .errors import CorruptRecordError, UnsupportedCodecError

Buffer = bytes | bytearray | memoryview


class CompressionType(enum.IntEnum):
    """The codec ids of the low three bits of a batch's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


# snappy-java's stream header: marker byte, "SNAPPY", NUL, then format version 1 and the
# lowest compatible version 1 as big-endian int32s.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size
_INT32 = struct.Struct(">i")

# Levels Kafka uses when the producer sets none (KIP-390): zlib's default for gzip, 9 for
# lz4, 3 for zstd. Snappy has no levels.
_DEFAULT_LEVEL = {CompressionType.GZIP: 6, CompressionType.LZ4: 9, CompressionType.ZSTD: 3}


def codec_available(codec: int) -> bool:
    """Whether this installation can compress and decompress ``codec``."""
    codec = _codec(codec)
    return codec in (CompressionType.NONE, CompressionType.GZIP) or _cramjam() is not None


def compress(codec: int, data: Buffer, *, level: int | None = None) -> bytes:
    """Compress ``data`` the way Kafka frames ``codec`` inside a record batch."""
    codec = _codec(codec)
    if codec is CompressionType.NONE:
        return bytes(data)
    if level is None:
        level = _DEFAULT_LEVEL.get(codec, 0)
    if codec is CompressionType.GZIP:
        # mtime=0 keeps the output a function of the input alone.
        return gzip.compress(data, compresslevel=level, mtime=0)
    cramjam = _need_cramjam(codec)
    if codec is CompressionType.SNAPPY:
        return _xerial_encode(cramjam, data)
    if codec is CompressionType.LZ4:
        # Independent blocks and no content checksum: what Kafka's Java reader handles.
        lz4 = cramjam.lz4.Compressor(level=level, content_checksum=False, block_linked=False)
        lz4.compress(data if type(data) is bytes else bytes(data))  # it takes bytes only
        return bytes(lz4.finish())
    return bytes(cramjam.zstd.compress(data, level=level))


def decompress(codec: int, data: Buffer) -> bytes:
    """Undo :func:`compress`; bad input raises :class:`CorruptRecordError`."""
    codec = _codec(codec)
    if codec is CompressionType.NONE:
        return bytes(data)
    if codec is CompressionType.GZIP:
        cramjam = None
    else:
        cramjam = _need_cramjam(codec)
    try:
        if cramjam is None:
            return gzip.decompress(data)
        if codec is CompressionType.SNAPPY:
            return _snappy_decode(cramjam, data)
        if codec is CompressionType.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        return bytes(cramjam.zstd.decompress(data))
    except CorruptRecordError:
        raise
    except Exception as e:  # noqa: BLE001 - any codec failure means the payload is bad
        raise CorruptRecordError(f"{codec.name.lower()} payload does not decompress: {e}") from e


def _codec(codec: int) -> CompressionType:
    try:
        return CompressionType(codec)
    except ValueError:
        raise ValueError(f"unknown compression codec id {codec}") from None


@functools.cache
def _cramjam() -> ModuleType | None:
    """The optional cramjam package, imported on first use (a broker's start needs none of
    it); None without it: gzip and uncompressed batches still work."""
    try:
        import cramjam
    except ImportError:
        return None
    return cramjam


def _need_cramjam(codec: CompressionType) -> ModuleType:
    cramjam = _cramjam()
    if cramjam is None:
        raise UnsupportedCodecError(
            f"{codec.name.lower()} compression needs the cramjam package "
            "(pip install 'kafkagen[compression]')"
        )
    return cramjam


def _xerial_encode(cramjam: ModuleType, data: Buffer) -> bytes:
    view = memoryview(data)
    out = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
        out.append(_INT32.pack(len(block)))
        out.append(block)
    return b"".join(out)


def _snappy_decode(cramjam: ModuleType, data: Buffer) -> bytes:
    view = memoryview(data)
    if len(view) < len(_XERIAL_HEADER) or view[: len(_XERIAL_MAGIC)] != _XERIAL_MAGIC:
        # No snappy-java header: one raw snappy block, as librdkafka writes.
        return bytes(cramjam.snappy.decompress_raw(view))
    pos, end = len(_XERIAL_HEADER), len(view)
    out = []
    while pos < end:
        if end - pos < 4:
            raise CorruptRecordError(f"snappy block length cut short at byte {pos}")
        (size,) = _INT32.unpack_from(view, pos)
        pos += 4
        if size < 0 or size > end - pos:
            raise CorruptRecordError(f"snappy block of {size} bytes at byte {pos - 4} overruns")
        out.append(bytes(cramjam.snappy.decompress_raw(view[pos : pos + size])))
        pos += size
    return b"".join(out)
