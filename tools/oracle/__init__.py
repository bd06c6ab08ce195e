"""Kafka 4.4.0's own message classes as an oracle for kafkagen's codecs.

A small Java program (``java/`` beside this module, built from source on first use against
``kafka-clients`` from Maven Central and cached outside the tree) puts Kafka's generated
``*Data`` and ``*DataJsonConverter`` classes behind one batch operation: many items in,
one result each out. Items are

- **read**: (API key, kind, version, wire bytes) -> Kafka's JSON form of what it read and
  its re-encoding, or its exception;
- **write**: (API key, kind, version, Kafka's JSON form) -> Kafka's encoding, or its
  exception (no JSON form: that of reading the encoding is the one to compare);
- **versions**: every API Kafka has, its versions and header versions (``ApiMessageType``);
- **judge**: one message with kafkagen's own results for it (:func:`judge_parts`): Kafka
  reads its bytes and corrupted copies and writes its JSON form, compares, and sends back
  only what it does not agree on (:func:`disagreements`), so the common case costs the
  caller nothing.

Kinds are ``request``, ``response``, ``request_header`` and ``response_header``; for the
header kinds the version is the header version. Kafka *accepts* bytes when its ``read``
returns and has consumed every byte (its request parser would ignore leftovers; kafkagen's
``decode`` must consume its input whole, so leftovers are a rejection on both sides).

The batch format (:func:`encode_batch`, :func:`decode_results`) is the contract: a
:class:`KafkaOracle` sends it to one long-lived JVM over stdin and stdout (in a Spark job,
one JVM beside each Python worker, from jars the driver built).
:func:`kafkagen_read` gives kafkagen's side of a read in the same shape, and
:func:`compare` names the first difference between the two.

    with KafkaOracle() as kafka:
        [got] = kafka.read([(3, "request", 12, wire)])
        disagreement = compare(kafkagen_read(MetadataRequest, 12, wire), got)

``python -m kafkagen.oracle`` builds it and prints the JVM's start time and throughput.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kafkagen import maven
from kafkagen.runtime.errors import DecodeError
from kafkagen.runtime.message import Message

#: The Kafka release the oracle speaks for (``$KAFKAGEN_KAFKA_VERSION`` picks another
#: release of ``kafka-clients``, e.g. to tell a spec change from a codec bug).
KAFKA_VERSION = "4.4.0"
#: kafka-clients leaves Jackson, which its JSON converters use, to the application; this
#: is the version Kafka 4.4.0 itself ships with.
JACKSON = "com.fasterxml.jackson.core:jackson-databind:2.21.7"
SOURCES = Path(__file__).resolve().parent / "java" / "src"
MAIN_CLASS = "kafkagen.oracle.KafkaOracle"
#: JVM options: a bounded heap, and the serial collector (one JVM among many processes on
#: a small machine; a batch allocates little that survives it). No perf-data file, whose
#: lock taken by another process makes the JVM print a warning on stdout, the oracle's pipe.
JVM_OPTIONS = (
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-Xss4m",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
)

#: The last two are the group coordinator's records (API key: the record type), which the
#: oracle has when started with ``coordinator_records=True``.
KINDS = (
    "request",
    "response",
    "request_header",
    "response_header",
    "coordinator-key",
    "coordinator-value",
)
_KIND_CODES = {kind: code for code, kind in enumerate(KINDS)}
_READ, _WRITE, _VERSIONS, _JUDGE = 1, 2, 3, 4
_STATUSES = ("ok", "rejected", "unsupported", "unwritable")
_HELLO = b"KGO1"
#: A frame holds at most this many items or payload bytes; bigger calls are split.
MAX_BATCH_ITEMS = 4096
MAX_BATCH_BYTES = 8 << 20
#: How long one batch may take before the JVM is taken for hung.
BATCH_TIMEOUT_S = 300.0
START_TIMEOUT_S = 60.0

_ITEM = struct.Struct(">bhbhi")
_COUNT = struct.Struct(">i")
_ROLES = struct.Struct(">h")


class OracleError(RuntimeError):
    """The oracle could not be built or started, or its JVM failed; the text says why."""


# --------------------------------------------------------------------------- building


def _javac() -> str:
    javac = shutil.which("javac")
    if javac is None or shutil.which("java") is None:
        raise OracleError(
            "the Kafka oracle needs a JDK (java and javac 17 or newer) on PATH; "
            "on Debian: apt-get install openjdk-17-jdk-headless"
        )
    return javac


def source_files() -> list[Path]:
    files = sorted(SOURCES.rglob("*.java"))
    if not files:
        raise OracleError(f"the Kafka oracle's Java sources are missing from {SOURCES}")
    return files


def kafka_version() -> str:
    return os.environ.get("KAFKAGEN_KAFKA_VERSION") or KAFKA_VERSION


def dependencies(version: str | None = None) -> list[str]:
    """The Maven coordinates the oracle runs on."""
    return [f"org.apache.kafka:kafka-clients:{version or kafka_version()}", JACKSON]


def build(version: str | None = None) -> list[Path]:
    """The oracle's classpath for a Kafka release (default :func:`kafka_version`): its
    jar, built now unless a build of these very sources is cached, then Kafka's jars
    (resolved from Maven Central once)."""
    javac = _javac()
    coords = dependencies(version)
    try:
        deps = maven.classpath(coords)
    except maven.MavenError as e:
        raise OracleError(f"the Kafka oracle's jars: {e}") from e
    files = source_files()
    digest = hashlib.sha256("\n".join(coords).encode())
    for path in files:
        digest.update(path.relative_to(SOURCES.parent).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    jar = maven.cache_dir() / f"kafka-oracle-{digest.hexdigest()[:16]}.jar"
    if not jar.is_file():
        _compile(javac, files, deps, jar)
    return [jar, *deps]


def _compile(javac: str, files: Sequence[Path], deps: Sequence[Path], jar: Path) -> None:
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kafkagen-oracle-") as tmp:
        classes = Path(tmp) / "classes"
        cmd = [javac, "--release", "17", "-nowarn", "-d", str(classes)]
        cmd += ["-cp", os.pathsep.join(map(str, deps)), *map(str, files)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise OracleError(
                f"compiling the Kafka oracle failed (javac exit {proc.returncode}):\n"
                + (proc.stderr or proc.stdout).strip()[:2000]
            )
        # Another process may be building the same jar: write aside, then rename.
        part = jar.with_suffix(f".{os.getpid()}.part")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as z:
            for path in sorted(classes.rglob("*.class")):
                z.write(path, path.relative_to(classes).as_posix())
        part.replace(jar)


# --------------------------------------------------------------------------- the batch format


@dataclass(frozen=True, slots=True)
class Item:
    """One question to Kafka: ``payload`` is wire bytes for a read, Kafka's JSON form (as
    a JSON value or its UTF-8 text) for a write."""

    op: int
    api_key: int
    kind: str
    version: int
    payload: bytes


def read_item(api_key: int, kind: str, version: int, data: bytes) -> Item:
    return Item(_READ, api_key, kind, version, bytes(data))


def write_item(api_key: int, kind: str, version: int, obj: Any) -> Item:
    text = obj if isinstance(obj, bytes) else json.dumps(obj, ensure_ascii=False).encode()
    return Item(_WRITE, api_key, kind, version, text)


#: kafkagen's expectation for a read in a judge item: it refuses the bytes, it reads them but
#: cannot write them back, or none given (Kafka's answer comes back to be judged here).
EXPECT_REJECTED = b"\x01"
EXPECT_UNWRITABLE = b"\x03"
NO_EXPECTATION = b"\xff"
#: A length in a judge item standing for the message's own JSON form or the question's bytes.
_SAME = _COUNT.pack(-1)
_LENGTH = _COUNT.pack


def expect_read(json_text: bytes | None, data: bytes | None) -> bytes:
    """kafkagen reads the bytes to the JSON form ``json_text`` (None: the message's own, as
    given to :func:`judge_parts`) and writes them back as ``data`` (None: the bytes read)."""
    parts = [b"\x00"]
    parts += (_SAME,) if json_text is None else (_LENGTH(len(json_text)), json_text)
    parts += (_SAME,) if data is None else (_LENGTH(len(data)), data)
    return b"".join(parts)


def judge_parts(
    api_key: int,
    kind: str,
    version: int,
    data: bytes,
    json_text: bytes,
    read: bytes,
    written: bytes | None,
    mutants: Sequence[tuple[bytes, bytes]] = (),
) -> list[bytes]:
    """One message for Kafka to judge, as its place in a batch in parts, header first (a
    batch joined from these by :meth:`KafkaOracle.call_parts` copies each message's bytes
    once): its bytes ``data``, kafkagen's JSON form of it (``json_text``, which Kafka also
    writes), kafkagen's expectation for reading the bytes (:func:`expect_read`,
    :data:`EXPECT_REJECTED`, ...), the bytes kafkagen writes from the JSON form (``data``
    itself when it is the same object; None: no expectation) and the corrupted copies,
    each with kafkagen's expectation for reading it."""
    parts = [b"", _LENGTH(len(data)), data, _LENGTH(len(json_text)), json_text, read]
    if written is None:
        parts.append(NO_EXPECTATION)
    else:
        parts += (b"\x00", _SAME) if written is data else (b"\x00", _LENGTH(len(written)), written)
    parts.append(bytes((len(mutants),)))
    for bad, expect in mutants:
        parts += (_LENGTH(len(bad)), bad, expect)
    parts[0] = _ITEM.pack(_JUDGE, api_key, _kind_code(kind), version, sum(map(len, parts)))
    return parts


#: A question of a judge item: the read of its bytes, the write of its JSON form, or the
#: read of corrupted copy k (k = 0, 1, ...).
JUDGED_READ, JUDGED_WRITE = -1, -2


def disagreements(answer: Outcome) -> list[tuple[int, Outcome, bytes]]:
    """What Kafka did not agree on in a judged message: (the question: :data:`JUDGED_READ`,
    :data:`JUDGED_WRITE` or a corrupted copy's number; Kafka's outcome; the bytes or JSON
    text asked about)."""
    if answer is AGREED:
        return []
    if not answer.ok:
        raise OracleError(f"a judge item's answer is {answer.status}: {answer.reason[:300]}")
    view = memoryview(answer.data)
    (count,) = _ROLES.unpack_from(view, 0)
    pos, out = 2, []
    for _ in range(count):
        role = struct.unpack_from(">b", view, pos)[0]
        theirs, pos = _result(view, pos + 1)
        (n,) = _COUNT.unpack_from(view, pos)
        out.append((role, theirs, bytes(view[pos + 4 : pos + 4 + n])))
        pos += 4 + n
    if pos != len(view):
        raise OracleError(f"a judge item's answer has {len(view) - pos} bytes after its end")
    return out


def _kind_code(kind: str) -> int:
    code = _KIND_CODES.get(kind)
    if code is None:
        raise ValueError(f"oracle item: unknown kind {kind!r} (known: {', '.join(KINDS)})")
    return code


def encode_batch(items: Sequence[Item]) -> bytes:
    """The items as one batch, the form the Java side reads."""
    parts = [_COUNT.pack(len(items))]
    for it in items:
        parts.append(
            _ITEM.pack(it.op, it.api_key, _kind_code(it.kind), it.version, len(it.payload))
        )
        parts.append(it.payload)
    return b"".join(parts)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one side made of one item: ``ok`` with the JSON form and the bytes written, or
    ``rejected`` / ``unsupported`` / ``unwritable`` (read but not written back) with the
    reason. kafkagen's side is ``failed`` when it raised something other than a decode
    error, which always counts as a disagreement."""

    status: str
    json: Any = None
    data: bytes = b""
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def summary(self) -> str:
        if self.ok:
            return f"reads it ({len(self.data)} bytes written back)"
        return f"{self.status}: {self.reason[:300]}"


def decode_batch(batch: bytes | memoryview) -> list[Item]:
    """The items of a batch (what :func:`encode_batch` wrote)."""
    view = memoryview(batch)
    (count,) = _COUNT.unpack_from(view, 0)
    pos, out = 4, []
    for _ in range(count):
        op, api, kind, version, n = _ITEM.unpack_from(view, pos)
        pos += _ITEM.size
        out.append(Item(op, api, KINDS[kind], version, bytes(view[pos : pos + n])))
        pos += n
    return out


def decode_results(frame: bytes | memoryview) -> list[Outcome]:
    """The results of one batch, in item order."""
    view = memoryview(frame)
    (count,) = _COUNT.unpack_from(view, 0)
    pos = 4
    out = []
    agreed, size = _AGREED_RESULT, len(_AGREED_RESULT)
    for _ in range(count):
        if view[pos : pos + size] == agreed:  # the common answer, shared
            out.append(AGREED)
            pos += size
            continue
        outcome, pos = _result(view, pos)
        out.append(outcome)
    if pos != len(view):
        raise OracleError(f"oracle results: {len(view) - pos} bytes after {count} results")
    return out


#: A judged message Kafka agreed with all of: no disagreement (see :func:`disagreements`).
AGREED = Outcome("ok", None, b"\x00\x00")
_AGREED_RESULT = b"\x00" + _COUNT.pack(0) + _COUNT.pack(2) + AGREED.data


def _result(view: memoryview, pos: int) -> tuple[Outcome, int]:
    """The result at ``pos`` and where the next one starts."""
    status = _STATUSES[view[pos]]
    (n,) = _COUNT.unpack_from(view, pos + 1)
    text = bytes(view[pos + 5 : pos + 5 + n]).decode()
    pos += 5 + n
    (n,) = _COUNT.unpack_from(view, pos)
    data = bytes(view[pos + 4 : pos + 4 + n])
    pos += 4 + n
    if status == "ok":
        return Outcome("ok", json.loads(text) if text else None, data), pos
    return Outcome(status, reason=text), pos


def _split(items: Sequence[Item]) -> Iterable[Sequence[Item]]:
    start, size = 0, 0
    for i, it in enumerate(items):
        if i > start and (i - start >= MAX_BATCH_ITEMS or size + len(it.payload) > MAX_BATCH_BYTES):
            yield items[start:i]
            start, size = i, 0
        size += len(it.payload)
    if start < len(items):
        yield items[start:]


# --------------------------------------------------------------------------- the JVM


@dataclass(frozen=True)
class ApiVersions:
    """What Kafka has of one API: its versions (``highest`` includes an unstable latest
    one), each kind's spec versions, and the header version of each version."""

    api_key: int
    name: str
    lowest: int
    highest: int
    highest_stable: int
    request_header_versions: tuple[int, ...]
    response_header_versions: tuple[int, ...]

    @property
    def versions(self) -> range:
        return range(self.lowest, self.highest + 1)


class KafkaOracle:
    """One JVM running Kafka's classes, answering batches over stdin and stdout.

    Start it with ``with KafkaOracle() as kafka:`` (or :meth:`start` and :meth:`close`);
    it builds the oracle first when needed. ``version`` is the Kafka release (default
    :func:`kafka_version`); ``started_in`` is how long the JVM took to answer (seconds).
    ``coordinator_records`` puts the group coordinator's jar of the same release on the
    classpath, for the kinds ``coordinator-key`` and ``coordinator-value``. ``classpath``
    is :func:`build`'s result made elsewhere (a Spark task gets the driver's jars), so
    this process needs neither the Java sources nor Maven.
    """

    def __init__(
        self,
        version: str | None = None,
        java: str | None = None,
        coordinator_records: bool = False,
        classpath: Sequence[Path] | None = None,
    ) -> None:
        self.version = version or kafka_version()
        self.classpath = list(classpath) if classpath is not None else None
        self.coordinator_records = coordinator_records
        self._java = java or shutil.which("java") or "java"
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._versions: dict[int, ApiVersions] | None = None
        self._headers: dict[str, range] = {}
        self.started_in = 0.0

    def __enter__(self) -> KafkaOracle:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        if self._proc is not None:
            return
        jars = build(self.version) if self.classpath is None else list(self.classpath)
        if self.coordinator_records:
            coords = [f"org.apache.kafka:kafka-group-coordinator:{self.version}"]
            try:
                jars += maven.classpath(coords)
            except maven.MavenError as e:
                raise OracleError(f"the group coordinator's jars: {e}") from e
        cp = os.pathsep.join(map(str, jars))
        self._stderr = tempfile.TemporaryFile(prefix="kafkagen-oracle-")
        began = time.perf_counter()
        self._proc = subprocess.Popen(
            [self._java, *JVM_OPTIONS, "-cp", cp, MAIN_CLASS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        hello = self._read_exactly(len(_HELLO), START_TIMEOUT_S)
        if hello != _HELLO:
            raise self._died(f"the oracle JVM started with {hello!r}, not its greeting")
        self.started_in = time.perf_counter() - began

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin is not None:
                with contextlib.suppress(BrokenPipeError):  # it may have died already
                    proc.stdin.close()  # end of input: the server returns
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    # -- the calls -------------------------------------------------------------------

    def call(self, items: Sequence[Item]) -> list[Outcome]:
        """Kafka's outcome of each item, in order (split into frames as needed)."""
        out: list[Outcome] = []
        for part in _split(items):
            out.extend(decode_results(self._exchange(encode_batch(part))))
        return out

    def call_parts(self, parts: Sequence[bytes], count: int) -> list[Outcome]:
        """Kafka's outcome of each of ``count`` items given as their parts in a batch
        (:func:`judge_parts`), in order; at most MAX_BATCH_ITEMS and MAX_BATCH_BYTES."""
        size = sum(map(len, parts))
        if count > MAX_BATCH_ITEMS or size > MAX_BATCH_BYTES:
            raise ValueError(f"a batch of {count} items and {size:,} bytes is too big to send")
        return decode_results(self._exchange(b"".join([_COUNT.pack(count), *parts])))

    def read(self, items: Iterable[tuple[int, str, int, bytes]]) -> list[Outcome]:
        """Kafka reads each (API key, kind, version, bytes)."""
        return self.call([read_item(*it) for it in items])

    def write(self, items: Iterable[tuple[int, str, int, Any]]) -> list[Outcome]:
        """Kafka writes each (API key, kind, version, its JSON form)."""
        return self.call([write_item(*it) for it in items])

    def versions(self) -> dict[int, ApiVersions]:
        """Every API Kafka has, by key (asked once)."""
        if self._versions is None:
            [got] = self.call([Item(_VERSIONS, 0, "request", 0, b"")])
            self._headers = {
                kind: range(low, high + 1)
                for kind in ("request", "response")
                for low, high in [got.json[f"{kind}_header"]]
            }
            self._versions = {
                a["api_key"]: ApiVersions(
                    a["api_key"],
                    a["name"],
                    a["lowest"],
                    a["highest"],
                    a["highest_stable"],
                    tuple(a["request_header_versions"]),
                    tuple(a["response_header_versions"]),
                )
                for a in got.json["apis"]
            }
        return self._versions

    def header_versions(self, kind: str) -> range:
        """The versions of Kafka's request or response header."""
        self.versions()
        return self._headers[kind]

    # -- the pipe --------------------------------------------------------------------

    def _exchange(self, batch: bytes) -> bytes:
        proc = self._proc
        if proc is None:
            self.start()
            proc = self._proc
        assert proc is not None and proc.stdin is not None
        try:
            proc.stdin.write(_COUNT.pack(len(batch)) + batch)
            proc.stdin.flush()
        except BrokenPipeError:
            raise self._died("the oracle JVM stopped reading") from None
        (n,) = _COUNT.unpack(self._read_exactly(4, BATCH_TIMEOUT_S))
        if n < 0:  # the batch itself was malformed: a bug on this side
            (k,) = _COUNT.unpack(self._read_exactly(4, BATCH_TIMEOUT_S))
            reason = self._read_exactly(k, BATCH_TIMEOUT_S).decode()
            raise OracleError(f"the oracle refused a batch: {reason}")
        return self._read_exactly(n, BATCH_TIMEOUT_S)

    def _read_exactly(self, n: int, timeout: float) -> bytes:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        chunks, left = [], n
        deadline = time.monotonic() + timeout
        while left:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                proc.kill()
                raise self._died(f"the oracle JVM gave no answer in {timeout:.0f} s")
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                raise self._died("the oracle JVM exited")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _died(self, what: str) -> OracleError:
        said = ""
        if self._stderr is not None:
            self._stderr.seek(0)
            said = self._stderr.read().decode(errors="replace").strip()[-2000:]
        proc = self._proc
        code = proc.poll() if proc is not None else None
        self.close()
        status = f" (exit status {code})" if code is not None else ""
        return OracleError(f"{what}{status}" + (f"; it said:\n{said}" if said else ""))


# --------------------------------------------------------------------------- comparing


#: Per (API key, kind): the JSON key paths of its ``records`` fields, through structs and
#: arrays (e.g. ``("responses", "partitions", "records")``). Plain tuples: a Spark driver
#: can ship them to executors that cannot read the specs.
RecordsPaths = dict[tuple[int, str], tuple[tuple[str, ...], ...]]


def records_paths(spec_dirs: Sequence[Path] | None = None) -> RecordsPaths:
    """Where the messages of the specs (default: the built-in ones) have records fields."""
    from kafkagen.generator.generate import BUILTIN_SPECS, load_messages
    from kafkagen.generator.model import Struct

    def walk(struct: Struct, prefix: tuple[str, ...], out: list[tuple[str, ...]]) -> None:
        for f in struct.fields:
            if f.type.name == "records":
                out.append((*prefix, f.json_key))
            elif f.struct is not None:
                walk(f.struct, (*prefix, f.json_key), out)

    paths: RecordsPaths = {}
    for msg in load_messages(list(spec_dirs) if spec_dirs is not None else [BUILTIN_SPECS]):
        if msg.kind in ("request", "response") and msg.api_key is not None:
            found: list[tuple[str, ...]] = []
            walk(msg.root, (), found)
            if found:
                paths[(msg.api_key, msg.kind)] = tuple(found)
    return paths


def as_kafka_renders(obj: Any, paths: Iterable[tuple[str, ...]]) -> Any:
    """``obj`` (a JSON form, changed in place) as Kafka's converter renders it: Kafka's
    ``*DataJsonConverter.write`` gives every non-null records field as ``""``, whatever
    the records hold (kafkagen keeps their bytes, base64, as for any bytes field)."""
    for path in paths:
        _blank(obj, path)
    return obj


def _blank(node: Any, path: tuple[str, ...]) -> None:
    if isinstance(node, list):
        for item in node:
            _blank(item, path)
    elif isinstance(node, dict) and path[0] in node:
        if len(path) == 1:
            if node[path[0]] is not None:
                node[path[0]] = ""
        else:
            _blank(node[path[0]], path[1:])


def kafkagen_class(api_key: int, kind: str) -> type[Message]:
    """kafkagen's class for an item's API key and kind (the header kinds ignore the key)."""
    from kafkagen.generated import header_type, message_type

    if kind in ("request_header", "response_header"):
        return header_type("request" if kind == "request_header" else "response")
    if kind == "request":
        return message_type(api_key, "request")
    if kind == "response":
        return message_type(api_key, "response")
    raise ValueError(f"unknown kind {kind!r} (known: {', '.join(KINDS)})")


def kafkagen_read(
    cls: type[Message], version: int, data: bytes, records: Iterable[tuple[str, ...]] = ()
) -> Outcome:
    """kafkagen's side of a read, in the shape of Kafka's: decode, then JSON form (with
    the ``records`` paths of :func:`records_paths` as Kafka renders them) and
    re-encoding."""
    try:
        message = cls.decode(data, version)
    except DecodeError as e:
        return Outcome("rejected", reason=str(e))
    except Exception as e:
        return Outcome("failed", reason=f"{type(e).__name__}: {e}")
    try:
        obj = as_kafka_renders(message.to_json(version), records)
        return Outcome("ok", obj, message.encode(version))
    except Exception as e:
        return Outcome("unwritable", reason=f"{type(e).__name__}: {e}")


@dataclass(frozen=True, slots=True)
class Disagreement:
    """Where kafkagen and Kafka part: ``check`` is ``accept`` (one side reads what the
    other refuses), ``json`` or ``bytes``; ``where`` names the first differing field or
    byte."""

    check: str
    where: str
    kafkagen: str
    kafka: str

    def __str__(self) -> str:
        at = f" at {self.where}" if self.where else ""
        return f"{self.check} differs{at}: kafkagen {self.kafkagen}; Kafka {self.kafka}"


def compare(ours: Outcome, kafka: Outcome) -> Disagreement | None:
    """None when both sides refuse for the same kind of reason, or both produce the same
    JSON form and the same bytes; else the first difference."""
    if not ours.ok or not kafka.ok:
        if ours.status == kafka.status and ours.status in ("rejected", "unwritable"):
            return None
        return Disagreement("accept", "", ours.summary(), kafka.summary())
    if ours.json is not None or kafka.json is not None:
        where = _json_difference(ours.json, kafka.json)
        if where is not None:
            return Disagreement("json", where, "", "")
    if ours.data != kafka.data:
        at = first_byte_difference(ours.data, kafka.data)
        return Disagreement(
            "bytes",
            f"byte {at}",
            f"{len(ours.data)} bytes, {ours.data[at : at + 16].hex() or 'end'} from there",
            f"{len(kafka.data)} bytes, {kafka.data[at : at + 16].hex() or 'end'} from there",
        )
    return None


#: The differences from Kafka that kafkagen keeps on purpose (docs/kafka-differences.md),
#: by the name :func:`explain` gives them.
DIFFERENCES = {
    "invalid-utf8": "kafkagen refuses invalid UTF-8 in a string; Kafka reads it with "
    "U+FFFD in place of the bad bytes",
    "negative-length": "kafkagen refuses a negative length other than -1; Kafka reads "
    "any negative length of a nullable field as null",
    "tag-count": "kafkagen refuses a tagged-field count of 2^31 or more; Kafka 4.0 read "
    "it as a negative count and read no tagged fields (4.4.0 refuses it too)",
    "tag-size": "kafkagen reads a known tagged field within its declared size; Kafka "
    "reads the value and ignores the size",
    "unknown-tag-order": "kafkagen writes unknown tagged fields back in tag order; Kafka "
    "reads them in any order, then refuses to write them back",
    "varint-overflow": "kafkagen refuses an unsigned varint over 32 bits; Kafka drops the "
    "bits above 32",
}
_NEGATIVE_LENGTH = re.compile(r"negative \w+ length -\d+|is of length -\d+")
_TAG_COUNT = re.compile(r"tagged fields of length (\d+)")
# (Not any "tagged field": a tag of another version is refused by Kafka too.)
_OUT_OF_BYTES = re.compile(
    r"tagged field \d+ has|runs past the end|exceeds the \d+ bytes left|truncated"
)


def explain(
    cls: type[Message],
    version: int,
    data: bytes,
    ours: Outcome,
    kafka: Outcome,
    records: Iterable[tuple[str, ...]] = (),
) -> str | None:
    """The documented difference (a key of :data:`DIFFERENCES`) behind a disagreement on
    ``data``, or None when none explains it.

    A refusal is explained only where Kafka did not read the bytes as written (its
    re-encoding differs from them: it repaired them) and kafkagen reads Kafka's repaired
    bytes exactly as Kafka does; bytes Kafka writes back unchanged, kafkagen must read.
    """
    if kafka.status == "unwritable":
        # Kafka read the bytes but refuses its own unknown tags' order; kafkagen either
        # wrote them back sorted, or refused the bytes for a reason it is stricter on.
        if ours.status in ("ok", "rejected") and "Invalid raw tag field list" in kafka.reason:
            return "unknown-tag-order"
        return None
    if ours.status != "rejected" or not kafka.ok or kafka.data == data:
        return None
    if compare(kafkagen_read(cls, version, kafka.data, records), kafka) is not None:
        return None
    reason = ours.reason
    if "invalid UTF-8" in reason:
        return "invalid-utf8"
    if _NEGATIVE_LENGTH.search(reason):
        return "negative-length"
    if "varint exceeds 32 bits" in reason:
        return "varint-overflow"
    count = _TAG_COUNT.search(reason)
    if count and int(count.group(1)) >= 1 << 31:
        return "tag-count"
    # A known tagged field is read within its declared size, so a size Kafka ignores
    # shows as that field (or a struct inside it) running out of its bytes.
    flexible = cls.FIRST_FLEXIBLE_VERSION is not None and version >= cls.FIRST_FLEXIBLE_VERSION
    if flexible and _OUT_OF_BYTES.search(reason):
        return "tag-size"
    return None


def _json_difference(ours: Any, kafka: Any) -> str | None:
    # Equal reprs (keys in the same order, the same types and values: repr tells True
    # from 1 and 1.0 from 1) are the common case, and C compares them far faster than
    # the walk that names a difference.
    if repr(ours) == repr(kafka):
        return None
    return first_json_difference(ours, kafka)


def first_byte_difference(a: bytes, b: bytes) -> int:
    """The offset of the first byte where ``a`` and ``b`` differ (or the shorter length)."""
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def first_json_difference(ours: Any, kafka: Any, path: str = "$") -> str | None:
    """Where ``ours`` differs from Kafka's JSON form, or None when they agree.

    Stricter than ``==``: keys must come in the same (spec) order, booleans are not
    integers, and a float must be a float (compared by value, so ``-0.0 == 0.0``: the
    bytes comparison sees the sign).
    """
    if isinstance(kafka, dict):
        if not isinstance(ours, dict):
            return f"{path}: expected an object, got {ours!r:.80}"
        if list(ours) != list(kafka):
            return f"{path}: keys {list(ours)} != Kafka's {list(kafka)}"
        for key in kafka:
            found = first_json_difference(ours[key], kafka[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(kafka, list):
        if not isinstance(ours, list) or len(ours) != len(kafka):
            return f"{path}: expected a list of {len(kafka)}, got {ours!r:.80}"
        for i, (g, w) in enumerate(zip(ours, kafka, strict=True)):
            found = first_json_difference(g, w, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(kafka, float):
        same = type(ours) is float and (ours == kafka or (math.isnan(ours) and math.isnan(kafka)))
        return None if same else f"{path}: {ours!r:.80} != Kafka's {kafka!r:.80}"
    if type(ours) is not type(kafka) or ours != kafka:
        return (
            f"{path}: {ours!r:.80} ({type(ours).__name__}) "
            f"!= Kafka's {kafka!r:.80} ({type(kafka).__name__})"
        )
    return None


# --------------------------------------------------------------------------- measuring


def main(argv: Sequence[str] | None = None) -> int:
    """Build the oracle, then time the JVM's start and reads and writes through it of
    random messages of every API, kind and version both sides have."""
    import argparse

    from kafkagen.fuzz.builders import RandomGen, random_message

    parser = argparse.ArgumentParser(
        prog="python -m kafkagen.oracle",
        description="Build Kafka's oracle (if needed) and measure it: the JVM's start, and "
        "messages/s read and written by Kafka, with and without comparing them to kafkagen.",
    )
    parser.add_argument(
        "--per-version",
        type=int,
        default=20,
        metavar="N",
        help="random messages per API, kind and version (default 20)",
    )
    args = parser.parse_args(argv)
    began = time.perf_counter()
    try:
        build()
    except OracleError as e:
        print(f"kafkagen oracle: {e}", file=sys.stderr)
        return 2
    print(f"oracle built or found in {time.perf_counter() - began:.1f} s")
    records = records_paths()
    with KafkaOracle() as kafka:
        print(f"Kafka {kafka.version}: JVM started and answering in {kafka.started_in:.2f} s")
        samples = []
        for api in kafka.versions().values():
            for kind in ("request", "response"):
                try:
                    cls = kafkagen_class(api.api_key, kind)
                except Exception:
                    continue
                for v in api.versions:
                    if cls.LOWEST_VERSION <= v <= cls.HIGHEST_VERSION:
                        gen = RandomGen(api.api_key * 1000 + v)
                        for _ in range(args.per_version):
                            gen.reset()
                            samples.append((cls, api.api_key, kind, v, random_message(cls, v, gen)))
        wire = [(key, kind, v, m.encode(v)) for _, key, kind, v, m in samples]
        size = sum(len(w[3]) for w in wire) / max(len(wire), 1)
        print(f"{len(wire):,} messages, {size:,.0f} bytes on average")
        for label in ("reads, cold", "reads, warm"):
            began = time.perf_counter()
            got = kafka.read(wire)
            took = time.perf_counter() - began
            print(f"{label}: {len(wire) / took:,.0f} msg/s ({took:.2f} s)")
        began = time.perf_counter()
        kafka.write((key, kind, v, m.to_json(v)) for _, key, kind, v, m in samples)
        took = time.perf_counter() - began
        print(f"writes from kafkagen's JSON: {len(wire) / took:,.0f} msg/s ({took:.2f} s)")
        began = time.perf_counter()
        got = kafka.read(wire)
        disagree = 0
        for (cls, key, kind, v, _), (_, _, _, data), theirs in zip(samples, wire, got, strict=True):
            ours = kafkagen_read(cls, v, data, records.get((key, kind), ()))
            disagree += compare(ours, theirs) is not None
        took = time.perf_counter() - began
        print(
            f"reads compared with kafkagen's: {len(wire) / took:,.0f} msg/s ({took:.2f} s), "
            f"{disagree:,} disagreements"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
