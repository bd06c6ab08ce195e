"""The fuzz checks of one message, in plain Python: no Spark here.

A *message* is one generated instance of an (API, kind, version) with all its checks:

1. ``roundtrip``: ``decode(encode(m)) == m`` and re-encoding is byte-identical;
2. ``json``: Kafka's JSON converter form survives JSON text (on a sample), ``from_json``
   and ``to_json``, and (without unknown tagged fields) encodes to the same bytes;
3. ``cross_version``: writing ``m`` at every other version ``w`` fails with
   UnsupportedVersionError exactly when the spec oracle (:mod:`kafkagen.fuzz.rules`) says
   it must, and otherwise decodes to ``m`` with the fields ``w`` lacks at their defaults
   (and its unknown tagged fields); versions sharing a layout are one check (see
   :func:`cross_groups`);
4. ``forward_compat``: at a flexible version, unknown tagged fields added to the message
   survive decoding and re-encode byte-identically;
5. ``mutation``: corrupted encodings decode or raise DecodeError, in bounded time and
   memory (a sample runs under tracemalloc), and what decodes can be written back;
6. peers (``--oracle kafka-python,kio``): other codecs read the bytes, write them back
   and read the corrupted copies (:mod:`kafkagen.fuzz.peers`); their disagreements are
   not failures but findings of the peer (Kafka agrees with kafkagen) or unjudged;
7. ``native``: where the compiled accelerator serves the message, the pure-Python codecs
   write the same bytes and read the same value, and agree on a corrupted copy (one
   message in :data:`NATIVE_EVERY`);
8. ``kafka`` (``--oracle kafka``): Kafka's own classes read the bytes, write the JSON
   form and read the corrupted copies, and must agree (:mod:`kafkagen.fuzz.kafka`).

Messages come in chunks of :data:`CHUNK` consecutive indices of one (API, kind, version),
each chunk with its own generator seeded from (run seed, API, kind, version, chunk): the
same seed gives the same messages however the work is split, and one message is replayed
by regenerating at most one chunk.
"""

from __future__ import annotations

import hashlib
import json
import json.encoder
import os
import random
import signal
import struct
import sys
import threading
import time
import traceback
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from kafkagen.oracle import (
    EXPECT_REJECTED,
    EXPECT_UNWRITABLE,
    NO_EXPECTATION,
    RecordsPaths,
    as_kafka_renders,
    expect_read,
    records_paths,
)
from kafkagen.runtime import message as _message
from kafkagen.runtime.errors import DecodeError, UnsupportedVersionError
from kafkagen.runtime.message import Message, Struct

from .builders import builder
from .kafka import (
    BATCH_BYTES,
    BATCH_ITEMS,
    READ,
    WRITE,
    PeerEntry,
    Pending,
    json_text,
    judge,
    process_oracle,
)
from .peers import NOT_ASKED, PEERS, Difference, ask, ask_mutant, column, shrink
from .randomgen import RandomGen
from .rules import MessageRules, Oracle, Plan, Table

#: Messages per generator seed. Small, so a replay regenerates few messages; large enough
#: that seeding (about 10 us per Random) is noise.
CHUNK = 128
#: Most mutations per message (each has its own 48 random bits); a run uses
#: ``FuzzOptions.mutations`` of them, a replay all of them.
MAX_MUTATIONS = 4
#: Array-item budgets per message and their odds (cumulative): mostly small messages, a few
#: with long arrays (two-byte varint lengths) so the value space is still covered.
BUDGETS = ((0.96, 6), (0.995, 24), (1.0, 200))
#: A mutated decode slower than this is a failure.
SLOW_SECONDS = 1.0
#: A message whose checks run longer than this is stopped and reported as a hang.
HANG_SECONDS = 20.0
#: Peak bytes a mutated decode may allocate (when sampled): a base plus this many per input
#: byte (a one-byte empty struct becomes a ~100-byte object; allow a wide margin).
ALLOC_BASE, ALLOC_PER_BYTE = 4 << 20, 512
#: Failure and disagreement records kept per (API, kind, version, check) in one task;
#: counts are always exact.
KEEP = 20

CHECKS = (
    "generate",
    "roundtrip",
    "json",
    "cross_version",
    "forward_compat",
    "mutation",
    "native",
    "kafka",
)
KIND_IDS = {"request": 0, "response": 1}
#: One message in this many takes the JSON check through JSON text.
JSON_TEXT_EVERY = 8
#: One message in this many is also written and read by the pure-Python codecs, which
#: must agree with the compiled ones (when the accelerator is in use).
NATIVE_EVERY = 64
#: Random bits drawn per message for its checks: 0-15 pick the sampled other versions,
#: 16-95 the added unknown tagged fields, 96-287 the mutations, 288-319 which sampled
#: extras (allocation guard, compiled against pure codecs) the message gets.
CHECK_BITS = 320


def sampled(bits: int, every: int, which: int) -> bool:
    """Whether a message with check bits ``bits`` is in the one-in-``every`` sample
    ``which`` (0: the allocation guard, 1: compiled against pure codecs). Drawn, not
    ``index % every``: every combination's first message would otherwise always be in
    the sample, which skews short runs."""
    return every > 0 and ((bits >> (288 + 16 * which)) & 0xFFFF) % every == 0


def _no_default(o: Any) -> Any:
    raise TypeError(f"{type(o).__name__} is not a JSON value")


# The C encoder and scanner behind json.dumps / json.loads, built once: the module-level
# functions rebuild them on every call, which costs more than the conversion itself here.
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_encode = (
    _c_make_encoder(
        None, _no_default, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
    if _c_make_encoder is not None
    else None
)
_json_scan: Any = cast(Any, json.JSONDecoder()).scan_once


def _json_text(obj: Any) -> str:
    if _encode is None:
        return json.dumps(obj, ensure_ascii=False, allow_nan=False)
    return "".join(_encode(obj, 0))


#: Environment variable naming a codec bug to inject (tests): ``API:KIND:VERSION``; the
#: decoder of that version then raises RuntimeError on every input whose length is a
#: multiple of 3, in every process that runs checks.
INJECT_ENV = "KAFKAGEN_FUZZ_INJECT"


class FuzzOptions(NamedTuple):
    seed: int = 1
    #: Other versions checked per message: 0 for all of them (the default), or a number
    #: sampled per message, rotating, for a cheaper run.
    cross: int = 0
    #: Corrupted copies of each message's bytes decoded (at most MAX_MUTATIONS). One a
    #: message: a failing decode costs about two clean ones (the exception path), and
    #: millions of messages give millions of mutations of every kind anyway.
    mutations: int = 1
    keep: int = KEEP
    #: Sample one message in this many for the allocation guard (0: never): starting and
    #: stopping tracemalloc costs about as much as checking a few hundred messages.
    alloc_every: int = 1024
    #: Oracles that answer about every message too (``peers.ORACLES``): "kafka", Kafka's
    #: own classes (kafkagen.fuzz.kafka); "kafka-python" and "kio" (kafkagen.fuzz.peers).
    oracles: tuple[str, ...] = ()
    #: The generated package under test, by import name (see kafkagen.fuzz.packages), and
    #: the start of its spec digest, which the failure ids of a package other than the
    #: built-in carry (empty for the built-in).
    package: str = "kafkagen.generated"
    digest: str = ""


def chunk_seed(seed: int, api: int, kind: str, version: int, chunk: int) -> int:
    """The generator seed of one chunk: a hash, so any process on any machine agrees."""
    raw = f"{seed}:{api}:{KIND_IDS[kind]}:{version}:{chunk}".encode()
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big")


def failure_id(seed: int, api: int, kind: str, version: int, index: int, digest: str = "") -> str:
    """What ``kafkagen fuzz --replay`` takes: enough to regenerate the message, and for a
    package other than the built-in, ``@`` and the start of its spec digest."""
    return f"{seed}:{api}:{kind}:{version}:{index}" + (f"@{digest}" if digest else "")


def parse_failure_id(text: str) -> tuple[int, int, str, int, int]:
    parts = text.strip().split(":")
    if len(parts) < 5 or parts[2] not in KIND_IDS:
        raise ValueError(f"not a failure id (SEED:API:KIND:VERSION:INDEX): {text!r}")
    index = parts[4].partition("@")[0]
    return int(parts[0]), int(parts[1]), parts[2], int(parts[3]), int(index)


def failure_digest(text: str) -> str:
    """The spec digest part of a failure id ("" for the built-in package)."""
    parts = text.strip().split(":")
    return parts[4].partition("@")[2] if len(parts) >= 5 else ""


@dataclass
class Finding:
    """A failure: the codec broke a rule."""

    id: str
    api: int
    kind: str
    version: int
    index: int
    check: str
    error: str
    hex: str


@dataclass
class ComboStats:
    """Counts of one (API, kind, version) in one task."""

    api: int
    kind: str
    version: int
    messages: int = 0
    bytes: int = 0
    failures: int = 0
    disagreements: int = 0
    cross_checks: int = 0
    cross_raised: int = 0
    forward_checks: int = 0
    mutations: int = 0
    mutations_decoded: int = 0
    native_checks: int = 0
    #: Questions Kafka answered; of them, documented differences; and questions about
    #: versions Kafka does not have (skipped, not passed).
    kafka_checks: int = 0
    kafka_known: int = 0
    kafka_skipped: int = 0
    seconds: float = 0.0
    #: Per oracle: peers' counts (``peers.column(peer, PEER_COUNTS[i])``) and the seconds
    #: each oracle took (``kafka_seconds``, ``kio_seconds``, ...).
    oracle: dict[str, float] = field(default_factory=dict)
    #: Peer disagreements by (peer, check, kind of difference): [findings, unjudged].
    peer_groups: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    #: A minimal reproducer of each group (see :class:`PeerRepro`), made in the task.
    peer_repros: dict[tuple[str, str, str], PeerRepro] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    #: Failures and disagreements by check, all of them.
    by_check: dict[str, int] = field(default_factory=dict)
    #: Findings kept by check (at most ``FuzzOptions.keep`` each).
    kept: dict[str, int] = field(default_factory=dict)


@dataclass
class PeerRepro:
    """The smallest message showing a peer's disagreement: its replay id, what differs,
    its bytes and kafkagen's JSON form of it (Kafka's converter form; None for a
    corrupted copy kafkagen refuses)."""

    id: str
    detail: str
    hex: str
    json: str | None


class CheckTimeout(BaseException):
    """Raised by the hang guard's alarm; a BaseException so no check swallows it."""


# ---------------------------------------------------------------- codec bug injection

_injected: dict[str, tuple[type[Message], int, Any]] = {}


def apply_injection(spec: str | None = None, package: str = "kafkagen.generated") -> None:
    """Break one decoder of ``package`` as ``spec`` (default: ``$KAFKAGEN_FUZZ_INJECT``)
    says, so tests can prove the fuzz finds a codec bug; :func:`clear_injection` undoes it."""
    spec = spec if spec is not None else os.environ.get(INJECT_ENV, "")
    if not spec or spec in _injected:
        return
    from .packages import load_shipped

    api, kind, version = spec.split(":")
    cls = load_shipped(package).message_type(int(api), kind)
    v = int(version)
    original = cls._decoders[v]

    def broken(buf: Any, pos: int, end: int) -> tuple[Any, int]:
        if end % 3 == 0:
            raise RuntimeError(f"injected bug in {cls.__name__} v{v}")
        return original(buf, pos, end)

    # Only this version: the layout function may be shared with neighbouring versions.
    cls._decoders = {**cls._decoders, v: broken}
    _injected[spec] = (cls, v, original)


def clear_injection() -> None:
    """Restore every decoder :func:`apply_injection` broke."""
    for cls, v, original in _injected.values():
        cls._decoders = {**cls._decoders, v: original}
    _injected.clear()


# ---------------------------------------------------------------- helpers


def has_unknown_tags(obj: Any) -> bool:
    """Whether a struct or anything nested in it carries unknown tagged fields."""
    if obj.unknown_tagged_fields:
        return True
    for attr in obj._fields:
        value = getattr(obj, attr)
        if isinstance(value, Struct):
            if has_unknown_tags(value):
                return True
        elif isinstance(value, list) and value and isinstance(value[0], Struct):
            if any(has_unknown_tags(x) for x in value):
                return True
    return False


def without_unknown_tags(obj: Any) -> Any:
    """A copy of a struct with the unknown tagged fields removed everywhere in it."""
    new = object.__new__(type(obj))
    for attr in obj._fields:
        value = getattr(obj, attr)
        if isinstance(value, Struct):
            value = without_unknown_tags(value)
        elif isinstance(value, list) and value and isinstance(value[0], Struct):
            value = type(value)(without_unknown_tags(x) for x in value)
        setattr(new, attr, value)
    new.unknown_tagged_fields = ()
    return new


def difference(a: Any, b: Any, path: str = "") -> str:
    """Where two values first differ, as a field path with both values (for reports)."""
    if isinstance(a, Struct) and type(a) is type(b):
        for attr in (*a._fields, "unknown_tagged_fields"):
            x, y = getattr(a, attr), getattr(b, attr)
            if x != y:
                return difference(x, y, f"{path}.{attr}" if path else attr)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return difference(x, y, f"{path}[{i}]")
    return f"{path or 'value'}: {a!r:.80} != {b!r:.80}"


def json_difference(a: Any, b: Any, path: str = "") -> str:
    """Where two JSON values first differ (for reports)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in (*a, *(k for k in b if k not in a)):
            if key not in a or key not in b:
                return f"{path}.{key}: only in the {'first' if key in a else 'second'}"
            if a[key] != b[key]:
                return json_difference(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return json_difference(x, y, f"{path}[{i}]")
    return f"{path or 'value'}: {a!r:.80} != {b!r:.80}"


def _verdict(result: Any) -> str:
    if result is DecodeError:
        return "raises DecodeError"
    if isinstance(result, BaseException):
        return "raises " + _describe(result)
    return f"decodes to {result!r:.80}"


#: What the pure decoders raise on bad input, which Message.decode turns into DecodeError.
_DECODE_ERRORS = (DecodeError, IndexError, struct.error, UnicodeDecodeError)
#: Whether a class decodes and encodes through the accelerator at a version (never, in a
#: runtime without one).
_uses_native: Callable[[type[Message], int], bool] = getattr(
    _message, "uses_native", lambda cls, version: False
)
#: A class's pure-Python decoders and encoders by version, behind the accelerator.
_python_codecs: Callable[[type[Message]], tuple[dict[int, Any], dict[int, Any]]] | None = getattr(
    _message, "python_codecs", None
)


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:500]


_LENGTH_PATTERNS = (
    b"\xff\xff\xff\xff",  # int32 -1: null
    b"\x7f\xff\xff\xff",  # int32 max
    b"\xff\xff\xff\xfe",  # int32 -2
    b"\x7f\xff",  # int16 max
    b"\x80\x00",  # int16 min
    b"\xff\xff\xff\xff\x0f",  # varint 2^32-1
    b"\x80\x80\x80\x80\x80\x01",  # varint longer than 5 bytes
    b"\xfe\xff\xff\xff\x07",  # varint 2^31-2
)


def mutate(data: bytes, bits: int) -> bytes:
    """One corruption of ``data`` chosen by ``bits``: a bit flip, a truncation, inserted
    bytes, or an altered length (a length-like pattern written over, or one byte nudged)."""
    n = len(data)
    kind = bits & 3
    pos = (bits >> 2) & 0xFFFF
    arg = bits >> 18
    if n == 0:
        return bytes((arg & 0xFF,)) * (1 + (pos & 3))
    pos %= n
    if kind == 0:  # flip one to three bits
        out = bytearray(data)
        for k in range(1 + (arg & 1) + ((arg >> 1) & 1)):
            p = (pos + k * ((arg >> 2) & 0xFF)) % n
            out[p] ^= 1 << ((arg >> (10 + 3 * k)) & 7)
        return bytes(out)
    if kind == 1:  # truncate
        return data[:pos]
    if kind == 2:  # insert one to four bytes
        k = 1 + (arg & 3)
        return data[:pos] + (arg >> 2).to_bytes(8, "big")[:k] + data[pos:]
    if arg & 1:  # nudge one byte: an off-by-one length or count
        out = bytearray(data)
        out[pos] = (out[pos] + (1 if arg & 2 else 255)) & 0xFF
        return bytes(out)
    pattern = _LENGTH_PATTERNS[(arg >> 1) % len(_LENGTH_PATTERNS)]
    return data[:pos] + pattern + data[pos + len(pattern) :]


# BUDGETS unrolled for the generation loop.
(_P0, _B0), (_P1, _B1), (_, _B2) = BUDGETS


class _HangGuard:
    """Stops a message whose checks run longer than HANG_SECONDS.

    A periodic SIGALRM (a few ticks per HANG_SECONDS, at most one a second) looks at which
    message is running: one still running after HANG_SECONDS is interrupted. Arming a
    one-shot timer per message would cost two system calls a message; this costs two
    attribute writes. Only in the main thread and only when nobody else (e.g.
    pytest-timeout) owns SIGALRM.
    """

    def __init__(self) -> None:
        self.enabled = (
            hasattr(signal, "setitimer")
            and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)
        )
        #: Messages begun, and whether one is running now: set by the checks.
        self.seq = 0
        self.busy = False
        #: Whether the timer runs: only while checks run, so a process never exits with it.
        self.running = False
        self._seen = -1
        self._since = 0.0
        if self.enabled:
            signal.signal(signal.SIGALRM, self._tick)

    def start(self) -> bool:
        """Start the ticks unless they run; True when this call started them."""
        if not self.enabled or self.running:
            return False
        tick = min(1.0, HANG_SECONDS / 4)
        signal.setitimer(signal.ITIMER_REAL, tick, tick)
        self.running = True
        return True

    def stop(self) -> None:
        if self.running:
            signal.setitimer(signal.ITIMER_REAL, 0)
            self.running = False

    def _tick(self, signum: int, frame: Any) -> None:
        if not self.busy:
            return
        now = time.monotonic()
        if self.seq != self._seen:
            self._seen, self._since = self.seq, now
        elif now - self._since >= HANG_SECONDS:
            self._seen = -1
            raise CheckTimeout(f"checks ran longer than {HANG_SECONDS:.0f} s")

    def close(self) -> None:
        if self.enabled:
            self.stop()
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            self.enabled = False


# ---------------------------------------------------------------- versions sharing a check


class _CrossGroup(NamedTuple):
    """One cross-version check standing for every version in ``versions``."""

    versions: tuple[int, ...]
    #: The version it runs at.
    w: int
    #: The oracle's compiled (v, w) violation check, or None when nothing can fail.
    plan: Plan | None
    #: The compiled comparison of the decoding with the message, or None: must be equal.
    expect: Plan | None
    #: Same layout and shape as v itself.
    own: bool
    label: str
    encoder: Any
    decoder: Any
    #: len(versions)
    n: int


def _codec_id(f: Any) -> tuple[int, str]:
    """Who a codec function is: a bound method (a compiled codec's ``decode``) is looked
    up afresh per version, so it is known by its object and name, not its own identity."""
    owner = getattr(f, "__self__", None)
    if owner is not None:
        return id(owner), getattr(f, "__name__", "")
    return id(f), ""


def cross_groups(
    cls: type[Message], oracle: Oracle, v: int, others: list[int], share: bool = True
) -> tuple[_CrossGroup, ...]:
    """The cross-version checks of a message built at ``v`` against ``others``.

    Versions w1 and w2 make the same check when they have the same encoder object, the
    same decoder object and the same shape in the rules (which fields exist, which may be
    null, flexibility): the oracle's verdict and the expected value are functions of the
    shape, the bytes written are a function of the encoder, and the value read back a
    function of the decoder and those bytes, so the outcome at w1 is the outcome at w2.
    Each such group is checked once and counted for all its versions. A group that also
    matches v itself was run by the round trip: writing at it gives the bytes just
    decoded back to the message; only the oracle (which might still demand a refusal)
    runs for it. Identity, not equal code, decides: an injected or patched codec is its
    own group. ``share=False`` checks every version on its own (replays).
    """
    enc, dec = cls._encoders, cls._decoders

    def key(w: int) -> tuple[Any, ...]:
        return (_codec_id(enc.get(w)), _codec_id(dec.get(w)), oracle.shape(w))

    by_key: dict[tuple[Any, ...], list[int]] = {}
    for w in others:
        by_key.setdefault(key(w) if share else (w,), []).append(w)
    own_key = key(v) if share else None
    groups = []
    for k, ws in by_key.items():
        w = ws[0]
        label = (
            f"v{w}"
            if len(ws) == 1
            else f"v{w} (with {', '.join(f'v{x}' for x in ws[1:])}: same layout)"
        )
        plan, expect = oracle.plan(v, w), oracle.expectation(v, w)
        groups.append(
            _CrossGroup(tuple(ws), w, plan, expect, k == own_key, label, enc[w], dec[w], len(ws))
        )
    return tuple(groups)


#: Messages whose peer questions are asked together.
PEER_BATCH = 256


# ---------------------------------------------------------------- the fuzzer


#: What the mutation check made of a corrupted copy, when it did not read it: refused it
#: with a DecodeError, or failed otherwise.
REFUSED, FAILED = "refused", "failed"


def _written_from_json(cls: type[Message], obj: Any, v: int) -> bytes | None:
    """What kafkagen writes from the JSON form ``obj`` when it reads those bytes back to
    the same message (Kafka's bytes, if equal, then read back alike); else None."""
    try:
        message = cls.from_json(obj, v)
        written = message.encode(v)
        return written if cls.decode(written, v) == message else None
    except Exception:
        return None


def _expect(
    cls: type[Message], v: int, bad: bytes, got: Any, paths: Sequence[tuple[str, ...]]
) -> bytes:
    """kafkagen's expectation for Kafka's read of a corrupted copy, from what the mutation
    check made of it (``got``: :data:`REFUSED`, :data:`FAILED`, or the message read and its
    re-encoding, None when that raised), the outcome
    :func:`kafkagen.oracle.kafkagen_read` would give."""
    if got is REFUSED:
        return EXPECT_REJECTED
    if got is FAILED:
        return NO_EXPECTATION  # kafkagen failed otherwise: always a disagreement
    d, written = got
    try:
        obj = as_kafka_renders(d.to_json(v), paths)
    except Exception:
        return EXPECT_UNWRITABLE
    if written is None:
        return EXPECT_UNWRITABLE
    try:
        text = json_text(obj)
    except (TypeError, ValueError):
        return NO_EXPECTATION
    return expect_read(text, None if written == bad else written)


_ORACLES: dict[tuple[int, str], Oracle] = {}


class Fuzzer:
    """Runs every check on generated messages; one per process (or per Spark task)."""

    def __init__(self, table: Table, options: FuzzOptions) -> None:
        from .packages import load_shipped

        apply_injection(package=options.package)
        self.table = table
        self.options = options
        self._message_type = load_shipped(options.package).message_type
        self._oracles: dict[tuple[int, str], Oracle] = {}
        self._groups: dict[tuple[Any, ...], tuple[_CrossGroup, ...]] = {}
        from .peers import load_peer

        self.peers = [load_peer(p) for p in PEERS if p in options.oracles]
        #: Messages waiting for the peers' questions, and the stats of the messages
        #: queued for the peers and Kafka (one (API, kind, version) at a time).
        self._peer_batch: list[tuple[Any, ...]] = []
        self._queued: ComboStats | None = None
        self.guard = _HangGuard()
        self.replaying = False
        self._pure: dict[tuple[Any, int], tuple[Any, Any] | None] = {}
        # --oracle kafka: questions for Kafka, asked a batch at a time of this process's
        # oracle JVM.
        self._kafka: Pending | None = None
        self.records: RecordsPaths | None = None
        #: The oracle's jars when this process cannot build them (see process_oracle).
        self.kafka_classpath: Sequence[str] | None = None

    def close(self) -> None:
        self.guard.close()
        for peer in self.peers:
            peer.close()

    def _setup(self, api: int, kind: str) -> tuple[type[Message], MessageRules, Oracle]:
        rules = self.table[(api, kind)]
        oracle = self._oracles.get((api, kind))
        if oracle is None:
            # Reused across the tasks a worker process runs while the rules are the same,
            # so each task does not compile the same plans again.
            oracle = _ORACLES.get((api, kind))
            if oracle is None or oracle.rules != rules:
                oracle = _ORACLES[(api, kind)] = Oracle(rules)
            self._oracles[(api, kind)] = oracle
        return self._message_type(api, kind), rules, oracle  # type: ignore[arg-type]

    # -- a range of messages -------------------------------------------------------

    def messages(
        self, api: int, kind: str, version: int, start: int, stop: int
    ) -> Iterator[tuple[int, Message | BaseException, int]]:
        """(index, message or the builder's exception, check bits) for start <= index <
        stop, regenerating from the start of each chunk."""
        for index, m, bits, _tagged in self._generate(api, kind, version, start, stop):
            yield index, m, bits

    def _generate(
        self, api: int, kind: str, version: int, start: int, stop: int
    ) -> Iterator[tuple[int, Message | BaseException, int, bool]]:
        """:meth:`messages` plus whether each message carries unknown tagged fields (the
        generator counts them, which spares a walk over the message)."""
        cls = self._message_type(api, kind)  # type: ignore[arg-type]
        build = builder(cls)
        seed = self.options.seed
        index = start - start % CHUNK
        while index < stop:
            chunk = index // CHUNK
            s = chunk_seed(seed, api, kind, version, chunk)
            gen = RandomGen(random.Random(s))
            draws = random.Random(s ^ 0x5DEECE66D)  # the checks' own stream
            rng = gen.rng
            end = min(stop, (chunk + 1) * CHUNK)
            while index < end:
                r = rng.random()
                # gen.reset(budget), inlined: it runs once a message.
                gen.budget = _B0 if r < _P0 else _B1 if r < _P1 else _B2
                gen.unknown = 0
                bits = draws.getrandbits(CHECK_BITS)
                m: Message | BaseException
                try:
                    m = build(gen, version)
                except Exception as e:
                    m = e
                if index >= start:
                    yield index, m, bits, gen.unknown > 0
                index += 1

    def run_range(
        self,
        api: int,
        kind: str,
        version: int,
        start: int,
        stop: int,
        stats: ComboStats | None = None,
    ) -> ComboStats:
        """Check messages start..stop-1 of one (API, kind, version), counting into
        ``stats`` (a new one by default)."""
        if stats is None:
            stats = ComboStats(api, kind, version)
        cls, rules, oracle = self._setup(api, kind)
        began = time.perf_counter()
        started = self.guard.start()
        try:
            for index, m, bits, tagged in self._generate(api, kind, version, start, stop):
                self.check_message(cls, rules, oracle, version, index, m, bits, stats, tagged)
            self.flush()
        finally:
            if started:
                self.guard.stop()
        stats.seconds += time.perf_counter() - began
        return stats

    # -- Kafka's judgement -----------------------------------------------------------

    def _queue(
        self,
        stats: ComboStats,
        item: tuple[Any, ...],
        kafka: tuple[bool, bool, list[tuple[bytes, Any]]] | None,
    ) -> None:
        """Queue a message's questions for the peers and Kafka, which are asked a batch
        at a time: Kafka's answers to a batch judge the peers' about the same messages.
        ``kafka``: kafkagen's side for Kafka, see :meth:`_kafka_item`."""
        cls, rules, m, v, data, bits, index = item
        if self._queued is not stats:
            self.flush()
            self._queued = stats
        if self.peers:
            self._peer_batch.append(item)
        if kafka is not None:
            if self._kafka is None:
                self._kafka = Pending(stats.api, stats.kind, v)
            self._kafka_item(self._kafka, stats, index, cls, m, v, data, *kafka)
        pending = self._kafka
        if len(self._peer_batch) >= PEER_BATCH or (
            pending is not None and (len(pending) >= BATCH_ITEMS or pending.size >= BATCH_BYTES)
        ):
            self.flush()

    def _kafka_item(
        self,
        pending: Pending,
        stats: ComboStats,
        index: int,
        cls: type[Message],
        m: Message,
        v: int,
        data: bytes,
        exact: bool,
        json_exact: bool,
        mutants: list[tuple[bytes, Any]],
    ) -> None:
        """Add the message for Kafka with kafkagen's side of each question, taken from the
        checks that just ran: ``exact`` when m read back as m and its bytes,
        ``json_exact`` when its JSON form read back as m and its bytes, ``mutants`` what
        the mutation check made of each corrupted copy. Where those checks failed, Kafka's
        answer comes back to be judged here (no expectation)."""
        if self.records is None:
            self.records = records_paths()
        paths = self.records.get((stats.api, stats.kind), ())
        try:
            obj = m.to_json(v)
            text = json_text(obj)
        except Exception as e:
            why = f"kafkagen has no JSON form to give Kafka: {_describe(e)}"
            self._fail(stats, index, "kafka", why, data)
            return
        written: bytes | None = data if exact and json_exact else None
        if written is None and exact:
            written = _written_from_json(cls, obj, v)
        read = NO_EXPECTATION
        if exact:
            rendered = json_text(as_kafka_renders(obj, paths)) if paths else None
            read = expect_read(rendered, None)
        asked = [(bad, _expect(cls, v, bad, got, paths)) for bad, got in mutants]
        pending.add(index, data, text, read, written, asked)

    def flush(self) -> None:
        """Ask the peers the questions queued so far, then Kafka its, with the peers'
        disagreements about the same messages (or, without Kafka, count those as
        unjudged)."""
        stats, batch, pending = self._queued, self._peer_batch, self._kafka
        self._queued, self._peer_batch, self._kafka = None, [], None
        if stats is None:
            return
        entries: list[PeerEntry] = []
        if batch:
            for peer in self.peers:
                entries += self._ask_peer(peer, batch, stats)
        if pending is not None and len(pending):
            pending.peers.extend(entries)
            self._ask_kafka(pending, stats)
        else:
            self._judge_peers(stats, entries, set(), kafka=False)

    def _ask_kafka(self, pending: Pending, stats: ComboStats) -> None:
        began = time.perf_counter()
        answers = pending.ask(process_oracle(self.kafka_classpath))
        stats.oracle["kafka_seconds"] = (
            stats.oracle.get("kafka_seconds", 0.0) + time.perf_counter() - began
        )
        self.judge_kafka(pending, answers, stats)

    def judge_kafka(self, pending: Pending, answers: list[Any], stats: ComboStats) -> None:
        """Count Kafka's answers to ``pending`` into ``stats``; failures as check "kafka"."""
        if self.records is None:
            self.records = records_paths()

        def fail(index: int, why: str, data: bytes) -> None:
            self._fail(stats, index, "kafka", why, data)

        began = time.perf_counter()
        cls = self._message_type(pending.api, pending.kind)
        verdicts = judge(pending, answers, self.records, fail, cls)
        stats.kafka_checks += verdicts.checks
        stats.kafka_known += verdicts.known
        stats.kafka_skipped += verdicts.skipped
        self._judge_peers(stats, pending.peers, verdicts.doubted, kafka=True)
        stats.oracle["kafka_seconds"] = (
            stats.oracle.get("kafka_seconds", 0.0) + time.perf_counter() - began
        )

    # -- one message ---------------------------------------------------------------

    def _fail(self, stats: ComboStats, index: int, check: str, error: str, data: bytes) -> None:
        stats.failures += 1
        stats.by_check[check] = stats.by_check.get(check, 0) + 1
        kept = stats.kept.get(check, 0)
        if kept >= self.options.keep and not self.replaying:
            return
        stats.kept[check] = kept + 1
        if self.replaying and sys.exc_info()[1] is not None:
            error += "\n" + traceback.format_exc().rstrip()
        o = self.options
        fid = failure_id(o.seed, stats.api, stats.kind, stats.version, index, o.digest)
        stats.findings.append(
            Finding(fid, stats.api, stats.kind, stats.version, index, check, error, data.hex())
        )

    def check_message(
        self,
        cls: type[Message],
        rules: MessageRules,
        oracle: Oracle,
        v: int,
        index: int,
        m: Message | BaseException,
        bits: int,
        stats: ComboStats,
        tagged: bool | None = None,
    ) -> None:
        """All checks of one message; ``tagged``: whether it carries unknown tagged fields
        anywhere (None: look)."""
        stats.messages += 1
        if isinstance(m, BaseException):
            self._fail(stats, index, "generate", _describe(m), b"")
            return
        guard = self.guard
        guard.seq += 1
        started = not guard.running and guard.start()  # a lone message (replays)
        data = b""
        check = "roundtrip"
        try:
            guard.busy = True
            # 1. round trip at its own version
            try:
                data = m.encode(v)
            except Exception as e:
                self._fail(stats, index, check, "encode: " + _describe(e), b"")
                return
            stats.bytes += len(data)
            exact = False  # decoded to m, and m's bytes again
            try:
                d = cls.decode(data, v)
                if d != m:
                    why = "decoded value differs: " + difference(d, m)
                    self._fail(stats, index, check, why, data)
                elif d.encode(v) != data:
                    self._fail(stats, index, check, "re-encoding differs", data)
                else:
                    exact = True
            except Exception as e:
                self._fail(stats, index, check, _describe(e), data)
                return  # the other checks would only repeat this failure

            if tagged is None:
                tagged = has_unknown_tags(m)
            check = "json"
            json_exact = self._check_json(cls, m, v, data, index, stats, tagged)
            check = "cross_version"
            self._check_cross(cls, oracle, m, v, bits, index, stats)
            if rules.flexible(v):
                check = "forward_compat"
                self._check_forward(cls, rules, m, v, bits >> 16, index, stats)
            check = "mutation"
            every = self.options.alloc_every
            traced = every > 0 and ((bits >> 288) & 0xFFFF) % every == 0  # sampled(bits, every, 0)
            kafka = "kafka" in self.options.oracles
            judged = rules.judged(v)
            keep = kafka and judged
            mutants = self._check_mutations(cls, v, data, bits >> 96, index, stats, traced, keep)
            if ((bits >> 304) & 0xFFFF) % NATIVE_EVERY == 0 and _uses_native(cls, v):
                check = "native"
                self._check_native(cls, m, v, data, bits >> 96, index, stats)
            if (self.peers or kafka) and not judged:
                self._skip_oracles(stats, kafka)
            elif self.peers or kafka:
                check = "oracles"
                ours = (exact, json_exact, mutants) if kafka else None
                self._queue(stats, (cls, rules, m, v, data, bits >> 96, index), ours)
        except CheckTimeout as e:
            self._fail(stats, index, check, f"hang: {e}", data)
        except MemoryError as e:
            self._fail(stats, index, check, f"huge allocation: {_describe(e)}", data)
        finally:
            guard.busy = False
            if started:
                guard.stop()

    def _skip_oracles(self, stats: ComboStats, kafka: bool) -> None:
        """Count the questions the oracles are not asked: the package's schema of this
        version is not Kafka's (see kafkagen.fuzz.packages)."""
        mutations = MAX_MUTATIONS if self.replaying else self.options.mutations
        questions = 2 + min(mutations, MAX_MUTATIONS)
        if kafka:
            stats.kafka_skipped += questions
        for peer in self.peers:
            name = column(peer.name, "skipped")
            stats.oracle[name] = stats.oracle.get(name, 0) + questions

    def _check_json(
        self,
        cls: type[Message],
        m: Message,
        v: int,
        data: bytes,
        index: int,
        stats: ComboStats,
        tagged: bool,
    ) -> bool:
        """Returns whether from_json(to_json(m)) gave back m and m's bytes exactly."""
        try:
            j = m.to_json(v)
            if index % JSON_TEXT_EVERY == 0:
                # Through JSON text, on a sample: the form must be plain JSON (a systematic
                # defect shows on every message of its version, so a sample finds it).
                j_in = _json_scan(_json_text(j), 0)[0]
            else:
                j_in = j
            m3 = cls.from_json(j_in, v)
            if not tagged:
                # The value must come back whole, and as the same bytes: equal values may
                # still differ on the wire (-0.0, or a float where an int belongs).
                if m3 != m:
                    why = "from_json(to_json(m)) != m: " + difference(m3, m)
                    self._fail(stats, index, "json", why, data)
                elif m3.encode(v) != data:
                    self._fail(stats, index, "json", "from_json encodes differently", data)
                else:
                    return True
                return False
            # JSON does not carry unknown tagged fields: compare the JSON forms instead.
            j3 = m3.to_json(v)
            if j3 != j:
                # A tagged struct that differs from its default only by unknown tagged
                # fields is written, as Kafka's converter does, and reads back as the
                # default. Then from_json(j) must be m without them.
                if m3 != without_unknown_tags(m):
                    why = "to_json(from_json(j)) != j: " + json_difference(j3, j)
                    self._fail(stats, index, "json", why, data)
        except Exception as e:
            self._fail(stats, index, "json", _describe(e), data)
        return False

    def _cross_groups(
        self, cls: type[Message], oracle: Oracle, v: int, bits: int
    ) -> tuple[_CrossGroup, ...]:
        """The other versions this message is written at, as checks to run (cached)."""
        k = self.options.cross
        if not k or self.replaying:
            groups = self._groups.get((cls, v))
            if groups is None:
                others = [w for w in oracle.rules.versions if w != v]
                groups = cross_groups(cls, oracle, v, others, not self.replaying)
                self._groups[(cls, v)] = groups
            return groups
        others = [w for w in oracle.rules.versions if w != v]
        if k < len(others):
            # A per-message rotation: every other version is visited equally often.
            first = (bits & 0xFFFF) % len(others)
            others = sorted(others[(first + i) % len(others)] for i in range(k))
        key = (cls, v, tuple(others))
        groups = self._groups.get(key)
        if groups is None:
            groups = self._groups[key] = cross_groups(cls, oracle, v, others)
        return groups

    def _check_cross(
        self,
        cls: type[Message],
        oracle: Oracle,
        m: Message,
        v: int,
        bits: int,
        index: int,
        stats: ComboStats,
    ) -> None:
        # The layout functions are called directly: Message.encode and decode add only the
        # version lookup and the mapping of errors, which the round trip exercises on every
        # message. An encoder refuses a version by FieldUnsupported, an
        # UnsupportedVersionError; the decoder's end must be the end of the bytes.
        for g in self._cross_groups(cls, oracle, v, bits):
            n = g.n
            stats.cross_checks += n
            why = g.plan(m) if g.plan is not None else None  # the oracle's compiled walk
            if g.own and why is None:
                continue  # the round trip at v was this very check (see cross_groups)
            out: list[bytes] = []
            try:
                g.encoder(m, out.append)
            except UnsupportedVersionError as e:
                if why is None:
                    why = f"{g.label}: raised but must not: {e}"
                    self._fail(stats, index, "cross_version", why, b"")
                else:
                    stats.cross_raised += n
                continue
            except Exception as e:
                self._fail(stats, index, "cross_version", f"{g.label}: {_describe(e)}", b"")
                continue
            data_w = b"".join(out)
            if why is not None:
                why = f"{g.label}: wrote but must raise UnsupportedVersionError: {why}"
                self._fail(stats, index, "cross_version", why, data_w)
                continue
            try:
                d, end = g.decoder(data_w, 0, len(data_w))
                if end != len(data_w):
                    bad: str | None = f"read {end} of {len(data_w)} bytes"
                elif g.expect is None:
                    bad = None if d == m else difference(d, m)
                else:
                    bad = oracle.mismatch(d, m, g.expect)
                if bad is not None:
                    why = f"{g.label}: decodes to another value: {bad}"
                    self._fail(stats, index, "cross_version", why, data_w)
            except Exception as e:
                why = f"{g.label}: {_describe(e)}"
                self._fail(stats, index, "cross_version", why, data_w)

    def _check_forward(
        self,
        cls: type[Message],
        rules: MessageRules,
        m: Message,
        v: int,
        bits: int,
        index: int,
        stats: ComboStats,
    ) -> None:
        stats.forward_checks += 1
        target: Any = m  # Message declares no slots of its own; the generated class does
        first = rules.structs[0].first_free_tag
        kept = m.unknown_tagged_fields
        taken = {t for t, _ in kept}
        added = []
        for k in range(1 + (bits & 1)):
            tag = first + ((bits >> (1 + 6 * k)) & 63)
            if tag not in taken:
                taken.add(tag)
                size = (bits >> (13 + 3 * k)) & 7
                added.append((tag, ((bits >> 20) & 0xFFFFFFFFFFFF).to_bytes(6, "big")[:size]))
        tags = tuple(sorted((*kept, *added)))
        data = b""
        # The layout functions directly, as in the cross-version check.
        enc, dec = cls._encoders[v], cls._decoders[v]
        try:
            target.unknown_tagged_fields = tags
            out: list[bytes] = []
            enc(m, out.append)
            data = b"".join(out)
            d, end = dec(data, 0, len(data))
            if end != len(data):
                why = f"read {end} of {len(data)} bytes"
                self._fail(stats, index, "forward_compat", why, data)
            elif d.unknown_tagged_fields != tags:
                why = f"tags {d.unknown_tagged_fields!r} != {tags!r}"
                self._fail(stats, index, "forward_compat", why, data)
            else:
                out = []
                enc(d, out.append)
                if b"".join(out) != data:
                    self._fail(stats, index, "forward_compat", "re-encoding differs", data)
        except Exception as e:
            self._fail(stats, index, "forward_compat", _describe(e), data)
        finally:
            target.unknown_tagged_fields = kept

    def _mutants(self, data: bytes, bits: int) -> list[bytes]:
        """The corrupted copies of the mutation check, which Kafka and the peers read too."""
        count = MAX_MUTATIONS if self.replaying else min(self.options.mutations, MAX_MUTATIONS)
        return [mutate(data, (bits >> (48 * k)) & 0xFFFFFFFFFFFF) for k in range(count)]

    def _ask_peer(
        self, peer: Any, batch: list[tuple[Any, ...]], stats: ComboStats
    ) -> list[PeerEntry]:
        """The peer's questions about a batch of messages, counted into ``stats``; returns
        its disagreements. A peer that may kill the process reads the batch's bytes (its
        own and the corrupted copies) in its sandbox first (see ``peers.Sandbox``)."""
        began = time.perf_counter()
        if peer.fragile:
            questions = []
            for _cls, rules, _m, v, data, bits, _index in batch:
                theirs = peer.message_class(rules.api_key, rules.kind, v)
                if theirs is not None:
                    questions += [(theirs, v, b) for b in (data, *self._mutants(data, bits))]
            peer.read_ahead(questions)
        try:
            entries = self._peer_answers(peer, batch, stats)
        finally:
            peer.read_ahead([])
        name = column(peer.name, "seconds")
        stats.oracle[name] = stats.oracle.get(name, 0.0) + time.perf_counter() - began
        return entries

    def _peer_answers(
        self, peer: Any, batch: list[tuple[Any, ...]], stats: ComboStats
    ) -> list[PeerEntry]:
        entries: list[PeerEntry] = []
        for cls, rules, m, v, data, bits, index in batch:
            entries += self._check_peer(peer, cls, rules, m, v, data, bits, index, stats)
        return entries

    def _check_peer(
        self,
        peer: Any,
        cls: type[Message],
        rules: MessageRules,
        m: Message,
        v: int,
        data: bytes,
        bits: int,
        index: int,
        stats: ComboStats,
    ) -> list[PeerEntry]:
        """The peer's read, write and corrupted-copy questions about one message, counted
        into ``stats``; returns its disagreements, which wait for Kafka's answers."""
        found: list[PeerEntry] = []
        counts = stats.oracle
        mutants = self._mutants(data, bits)
        theirs = peer.message_class(rules.api_key, rules.kind, v)
        if theirs is None:
            name = column(peer.name, "skipped")
            counts[name] = counts.get(name, 0) + 2 + len(mutants)
        else:
            read, write = ask(peer, rules, theirs, v, m, data)
            answers: list[tuple[int, Difference | None]] = [(READ, read), (WRITE, write)]
            for k, bad in enumerate(mutants):
                try:
                    ours: Any = cls.decode(bad, v)
                except Exception:
                    ours = None
                answers.append((k, ask_mutant(peer, rules, theirs, v, ours, bad)))
            for role, difference in answers:
                if difference is None:
                    what = "agree"
                elif difference is NOT_ASKED:
                    what = "skipped"
                else:
                    what = "disagree"
                    check = "read" if role == READ else "write" if role == WRITE else "mutant"
                    found.append((peer.name, index, role, check, difference.kind))
                    key = (peer.name, check, difference.kind)
                    if key not in stats.peer_repros:
                        stats.peer_repros[key] = self._reproduce(
                            peer,
                            cls,
                            rules,
                            theirs,
                            m,
                            v,
                            index,
                            stats,
                            role,
                            difference,
                            mutants,
                        )
                name = column(peer.name, what)
                counts[name] = counts.get(name, 0) + 1
        return found

    def _reproduce(
        self,
        peer: Any,
        cls: type[Message],
        rules: MessageRules,
        theirs: Any,
        m: Message,
        v: int,
        index: int,
        stats: ComboStats,
        role: int,
        difference: Difference,
        mutants: list[bytes],
    ) -> PeerRepro:
        """A minimal reproducer of a peer's disagreement: the message shrunk while the
        same kind of difference shows (a corrupted copy is kept as it is)."""
        o = self.options
        fid = failure_id(o.seed, stats.api, stats.kind, stats.version, index, o.digest)
        if role >= 0:
            bad = mutants[role]
            try:
                read: Any = cls.decode(bad, v).to_json(v)
            except Exception:
                read = None
            return PeerRepro(
                fid, difference.detail, bad.hex(), None if read is None else _json_text(read)
            )

        def still(small: Message) -> bool:
            found = ask(peer, rules, theirs, v, small, small.encode(v))[0 if role == READ else 1]
            return found is not None and found.kind == difference.kind

        small = shrink(m, v, still)
        detail = ask(peer, rules, theirs, v, small, small.encode(v))[0 if role == READ else 1]
        return PeerRepro(
            fid,
            (detail or difference).detail,
            small.encode(v).hex(),
            _json_text(small.to_json(v)),
        )

    def _judge_peers(
        self,
        stats: ComboStats,
        entries: list[PeerEntry],
        doubted: set[tuple[int, int]],
        kafka: bool,
    ) -> None:
        """Count peer disagreements: the peer's finding where Kafka answered the same
        question as kafkagen did, unjudged where Kafka was not asked or did not agree."""
        for peer, index, role, check, kind in entries:
            # A peer writes back what it read: Kafka's counterpart is its reading and
            # writing back of the same bytes (the read question) and its writing of the
            # message's JSON form (the write question).
            asked = [(index, READ), (index, WRITE)] if role == WRITE else [(index, role)]
            finding = kafka and not any(q in doubted for q in asked)
            group = stats.peer_groups.setdefault((peer, check, kind), [0, 0])
            group[0 if finding else 1] += 1
            name = column(peer, "findings" if finding else "unjudged")
            stats.oracle[name] = stats.oracle.get(name, 0) + 1
            stats.disagreements += 1

    def _pure_codecs(self, cls: type[Message], v: int) -> tuple[Any, Any] | None:
        """The generated pure-Python decoder and encoder of ``cls`` at ``v``, behind the
        compiled ones (they call their nested structs' pure codecs directly)."""
        key = (cls, v)
        if key not in self._pure:
            found = None
            if _python_codecs is not None:
                decoders, encoders = _python_codecs(cls)
                dec, enc = decoders.get(v), encoders.get(v)
                if dec is not None and enc is not None:
                    found = (dec, enc)
            self._pure[key] = found
        return self._pure[key]

    def _check_native(
        self,
        cls: type[Message],
        m: Message,
        v: int,
        data: bytes,
        bits: int,
        index: int,
        stats: ComboStats,
    ) -> None:
        """The compiled codecs against the pure-Python ones: the same bytes for ``m``, the
        same value from them, and the same verdict on a corrupted copy."""
        pure = self._pure_codecs(cls, v)
        if pure is None:
            return
        dec, enc = pure
        stats.native_checks += 1
        try:
            out: list[bytes] = []
            enc(m, out.append)
            if b"".join(out) != data:
                self._fail(stats, index, "native", "pure-Python encoding differs", data)
                return
            d, end = dec(data, 0, len(data))
            if end != len(data) or d != m:
                why = "pure-Python decoding differs: " + (
                    difference(d, m) if end == len(data) else f"read {end} of {len(data)}"
                )
                self._fail(stats, index, "native", why, data)
                return
        except Exception as e:
            self._fail(stats, index, "native", "pure-Python codec: " + _describe(e), data)
            return
        bad = mutate(data, bits & 0xFFFFFFFFFFFF)
        try:
            fast: Any = cls.decode(bad, v)
        except DecodeError:
            fast = DecodeError
        try:
            slow, end = dec(bad, 0, len(bad))
            if end != len(bad):
                slow = DecodeError
        except _DECODE_ERRORS:  # what Message.decode reports as DecodeError
            slow = DecodeError
        except Exception as e:
            slow = e
        if fast is not slow and fast != slow:
            why = f"a corrupted copy: compiled {_verdict(fast)}, pure-Python {_verdict(slow)}"
            self._fail(stats, index, "native", why, bad)

    def _check_mutations(
        self,
        cls: type[Message],
        v: int,
        data: bytes,
        bits: int,
        index: int,
        stats: ComboStats,
        traced: bool = False,
        keep: bool = False,
    ) -> list[tuple[bytes, Any]]:
        """With ``keep``, returns each corrupted copy with what kafkagen made of it: see
        :func:`_expect`. (No exception is kept: its traceback would hold these frames in a
        cycle, and cycles by the million cost more in collection than all the checks.)"""
        traced = traced and not tracemalloc.is_tracing()
        count = MAX_MUTATIONS if self.replaying else min(self.options.mutations, MAX_MUTATIONS)
        kept: list[tuple[bytes, Any]] = []
        for k in range(count):
            bad = mutate(data, (bits >> (48 * k)) & 0xFFFFFFFFFFFF)
            stats.mutations += 1
            if traced:
                tracemalloc.start()
            began = time.perf_counter()
            try:
                try:
                    d = cls.decode(bad, v)
                except DecodeError:
                    if keep:
                        kept.append((bad, REFUSED))
                    continue
                except Exception as e:
                    if keep:
                        kept.append((bad, FAILED))
                    self._fail(stats, index, "mutation", "decode: " + _describe(e), bad)
                    continue
                stats.mutations_decoded += 1
                written: bytes | None = None
                try:
                    written = d.encode(v)  # what a codec accepts, it must be able to write back
                except Exception as e:
                    self._fail(stats, index, "mutation", "re-encode: " + _describe(e), bad)
                if keep:
                    kept.append((bad, (d, written)))
            finally:
                took = time.perf_counter() - began
                if traced:
                    peak = tracemalloc.get_traced_memory()[1]
                    tracemalloc.stop()
                    if peak > ALLOC_BASE + ALLOC_PER_BYTE * len(bad):
                        self._fail(stats, index, "mutation", f"allocated {peak} bytes at peak", bad)
                if took > SLOW_SECONDS:
                    self._fail(stats, index, "mutation", f"took {took:.2f} s", bad)
        return kept


__all__ = [
    "CHECKS",
    "CHUNK",
    "ComboStats",
    "Finding",
    "FuzzOptions",
    "Fuzzer",
    "apply_injection",
    "clear_injection",
    "chunk_seed",
    "cross_groups",
    "failure_digest",
    "failure_id",
    "has_unknown_tags",
    "mutate",
    "parse_failure_id",
    "sampled",
]
