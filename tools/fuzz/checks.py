"""The fuzz checks of one message, in plain Python: no Spark here.

A *message* is one generated instance of an (API, kind, version) with all its checks:

1. ``roundtrip``: ``decode(encode(m)) == m`` and re-encoding is byte-identical;
2. ``json``: Kafka's JSON converter form survives JSON text (on a sample), ``from_json``
   and ``to_json``, and (without unknown tagged fields) encodes to the same bytes;
3. ``cross_version``: writing ``m`` at another version ``w`` fails with
   UnsupportedVersionError exactly when the spec oracle (:mod:`kafkagen.fuzz.rules`) says
   it must, and otherwise decodes to ``m`` as seen at ``w`` (``to_json(w)`` shows exactly
   the fields that exist at ``w``) with its unknown tagged fields;
4. ``forward_compat``: at a flexible version, unknown tagged fields added to the message
   survive decoding and re-encode byte-identically;
5. ``mutation``: corrupted encodings decode or raise DecodeError, in bounded time and
   memory (a sample runs under tracemalloc), and what decodes can be written back;
6. ``differential`` (optional): a peer codec (kafka-python) reads the bytes and writes
   the same bytes back (messages without unknown tagged fields, which the peer drops);
   disagreements are not failures.

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
import sys
import threading
import time
import traceback
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from kafkagen.runtime.errors import DecodeError, UnsupportedVersionError
from kafkagen.runtime.message import Message, Struct

from .gen import make_gen
from .rules import MessageRules, Oracle, Table

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
    "differential",
)
KIND_IDS = {"request": 0, "response": 1}
#: One message in this many takes the JSON check through JSON text.
JSON_TEXT_EVERY = 8


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
    #: Other versions checked per message: a number sampled per message, or 0 for all.
    cross: int = 1
    #: Corrupted copies of each message's bytes decoded (at most MAX_MUTATIONS). One a
    #: message: a failing decode costs about two clean ones (the exception path), and
    #: millions of messages give millions of mutations of every kind anyway.
    mutations: int = 1
    keep: int = KEEP
    #: Peer codec for the differential check ("kafka-python") or None.
    differential: str | None = None
    #: Sample one message in this many for the allocation guard (0: never).
    alloc_every: int = 256


def chunk_seed(seed: int, api: int, kind: str, version: int, chunk: int) -> int:
    """The generator seed of one chunk: a hash, so any process on any machine agrees."""
    raw = f"{seed}:{api}:{KIND_IDS[kind]}:{version}:{chunk}".encode()
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big")


def failure_id(seed: int, api: int, kind: str, version: int, index: int) -> str:
    """What ``kafkagen fuzz --replay`` takes: enough to regenerate the message."""
    return f"{seed}:{api}:{kind}:{version}:{index}"


def parse_failure_id(text: str) -> tuple[int, int, str, int, int]:
    parts = text.strip().split(":")
    if len(parts) < 5 or parts[2] not in KIND_IDS:
        raise ValueError(f"not a failure id (SEED:API:KIND:VERSION:INDEX): {text!r}")
    return int(parts[0]), int(parts[1]), parts[2], int(parts[3]), int(parts[4])


@dataclass
class Finding:
    """A failure (the codec broke a rule) or a disagreement (a peer codec differs)."""

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
    peer_checks: int = 0
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    #: Failures and disagreements by check, all of them.
    by_check: dict[str, int] = field(default_factory=dict)
    #: Findings kept by check (at most ``FuzzOptions.keep`` each).
    kept: dict[str, int] = field(default_factory=dict)


class CheckTimeout(BaseException):
    """Raised by the hang guard's alarm; a BaseException so no check swallows it."""


# ---------------------------------------------------------------- codec bug injection

_injected: dict[str, tuple[type[Message], int, Any]] = {}


def apply_injection(spec: str | None = None) -> None:
    """Break one decoder as ``spec`` (default: ``$KAFKAGEN_FUZZ_INJECT``) says, so tests can
    prove the fuzz finds a codec bug; :func:`clear_injection` undoes it."""
    spec = spec if spec is not None else os.environ.get(INJECT_ENV, "")
    if not spec or spec in _injected:
        return
    from kafkagen.generated import message_type

    api, kind, version = spec.split(":")
    cls = message_type(int(api), kind)  # type: ignore[arg-type]
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


def _pick_budget(rng: random.Random) -> int:
    r = rng.random()
    for odds, budget in BUDGETS:
        if r < odds:
            return budget
    return BUDGETS[-1][1]


class _HangGuard:
    """SIGALRM after HANG_SECONDS, armed per message; only in the main thread and only
    when nobody else (e.g. pytest-timeout) owns SIGALRM."""

    def __init__(self) -> None:
        self.enabled = (
            hasattr(signal, "setitimer")
            and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)
        )
        if self.enabled:
            signal.signal(signal.SIGALRM, self._fire)

    @staticmethod
    def _fire(signum: int, frame: Any) -> None:
        raise CheckTimeout(f"checks ran longer than {HANG_SECONDS:.0f} s")

    def arm(self) -> None:
        if self.enabled:
            signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)

    def disarm(self) -> None:
        if self.enabled:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def close(self) -> None:
        if self.enabled:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            self.enabled = False


# ---------------------------------------------------------------- the fuzzer


class Fuzzer:
    """Runs every check on generated messages; one per process (or per Spark task)."""

    def __init__(self, table: Table, options: FuzzOptions) -> None:
        from kafkagen.generated import message_type

        apply_injection()
        self.table = table
        self.options = options
        self._message_type = message_type
        self._oracles: dict[tuple[int, str], Oracle] = {}
        self.peer: Any = None
        if options.differential:
            from .differential import load_peer

            self.peer = load_peer(options.differential)
        self.guard = _HangGuard()
        self.replaying = False

    def close(self) -> None:
        self.guard.close()

    def _setup(self, api: int, kind: str) -> tuple[type[Message], MessageRules, Oracle]:
        rules = self.table[(api, kind)]
        oracle = self._oracles.get((api, kind))
        if oracle is None:
            oracle = self._oracles[(api, kind)] = Oracle(rules)
        return self._message_type(api, kind), rules, oracle  # type: ignore[arg-type]

    # -- a range of messages -------------------------------------------------------

    def messages(
        self, api: int, kind: str, version: int, start: int, stop: int
    ) -> Iterator[tuple[int, Message | BaseException, int]]:
        """(index, message or the builder's exception, check bits) for start <= index <
        stop, regenerating from the start of each chunk."""
        cls = self._message_type(api, kind)  # type: ignore[arg-type]
        seed = self.options.seed
        index = start - start % CHUNK
        while index < stop:
            chunk = index // CHUNK
            s = chunk_seed(seed, api, kind, version, chunk)
            gen = make_gen(s)
            draws = random.Random(s ^ 0x5DEECE66D)  # the checks' own stream
            rng = gen.rng
            end = min(stop, (chunk + 1) * CHUNK)
            while index < end:
                gen.reset(_pick_budget(rng))
                bits = draws.getrandbits(288)
                m: Message | BaseException
                try:
                    m = cls._random(gen, version)
                except Exception as e:
                    m = e
                if index >= start:
                    yield index, m, bits
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
        for index, m, bits in self.messages(api, kind, version, start, stop):
            self.check_message(cls, rules, oracle, version, index, m, bits, stats)
        stats.seconds += time.perf_counter() - began
        return stats

    # -- one message ---------------------------------------------------------------

    def _fail(
        self, stats: ComboStats, index: int, check: str, error: str, data: bytes, peer: bool
    ) -> None:
        if peer:
            stats.disagreements += 1
        else:
            stats.failures += 1
        stats.by_check[check] = stats.by_check.get(check, 0) + 1
        kept = stats.kept.get(check, 0)
        if kept >= self.options.keep and not self.replaying:
            return
        stats.kept[check] = kept + 1
        if self.replaying and sys.exc_info()[1] is not None:
            error += "\n" + traceback.format_exc().rstrip()
        fid = failure_id(self.options.seed, stats.api, stats.kind, stats.version, index)
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
    ) -> None:
        stats.messages += 1
        if isinstance(m, BaseException):
            self._fail(stats, index, "generate", _describe(m), b"", False)
            return
        self.guard.arm()
        data = b""
        check = "roundtrip"
        try:
            # 1. round trip at its own version
            try:
                data = m.encode(v)
            except Exception as e:
                self._fail(stats, index, check, "encode: " + _describe(e), b"", False)
                return
            stats.bytes += len(data)
            try:
                d = cls.decode(data, v)
                if d != m:
                    why = "decoded value differs: " + difference(d, m)
                    self._fail(stats, index, check, why, data, False)
                elif d.encode(v) != data:
                    self._fail(stats, index, check, "re-encoding differs", data, False)
            except Exception as e:
                self._fail(stats, index, check, _describe(e), data, False)
                return  # the other checks would only repeat this failure

            check = "json"
            self._check_json(cls, m, v, data, index, stats)
            check = "cross_version"
            self._check_cross(cls, oracle, m, v, bits, index, stats)
            if rules.flexible(v):
                check = "forward_compat"
                self._check_forward(cls, rules, m, v, bits >> 16, index, stats)
            check = "mutation"
            self._check_mutations(cls, v, data, bits >> 96, index, stats)
            # kafka-python drops unknown tagged fields when it writes a message back, so
            # those messages would only show that known limitation.
            if self.peer is not None and not has_unknown_tags(m):
                check = "differential"
                why = self.peer(rules.api_key, rules.kind, v, data)
                if why is not None:  # None: the peer does not know this API or version
                    stats.peer_checks += 1
                    if why:
                        self._fail(stats, index, "differential", why, data, True)
        except CheckTimeout as e:
            self._fail(stats, index, check, f"hang: {e}", data, False)
        except MemoryError as e:
            self._fail(stats, index, check, f"huge allocation: {_describe(e)}", data, False)
        finally:
            self.guard.disarm()

    def _check_json(
        self, cls: type[Message], m: Message, v: int, data: bytes, index: int, stats: ComboStats
    ) -> None:
        try:
            j = m.to_json(v)
            if index % JSON_TEXT_EVERY == 0:
                # Through JSON text, on a sample: the form must be plain JSON (a systematic
                # defect shows on every message of its version, so a sample finds it).
                j_in = _json_scan(_json_text(j), 0)[0]
            else:
                j_in = j
            m3 = cls.from_json(j_in, v)
            j3 = m3.to_json(v)
            if j3 != j:
                # JSON does not carry unknown tagged fields; a tagged struct that differs
                # from its default only by them is written, as Kafka's converter does, and
                # reads back as the default. Then from_json(j) must be m without them.
                if not has_unknown_tags(m) or m3 != without_unknown_tags(m):
                    why = "to_json(from_json(j)) != j: " + json_difference(j3, j)
                    self._fail(stats, index, "json", why, data, False)
            elif m3.encode(v) != data and not has_unknown_tags(m):
                # Bytes, not values: equal values may still differ on the wire (-0.0).
                why = "from_json encodes differently: " + difference(m3, m)
                self._fail(stats, index, "json", why, data, False)
        except Exception as e:
            self._fail(stats, index, "json", _describe(e), data, False)

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
        rules = oracle.rules
        others = [w for w in rules.versions if w != v]
        if not others:
            return
        k = self.options.cross
        if k and k < len(others) and not self.replaying:
            # A per-message rotation: every other version is visited equally often.
            first = (bits & 0xFFFF) % len(others)
            others = [others[(first + i) % len(others)] for i in range(k)]
        for w in others:
            stats.cross_checks += 1
            why = oracle.violation(m, v, w)
            try:
                data_w = m.encode(w)
            except UnsupportedVersionError as e:
                if why is None:
                    self._fail(
                        stats, index, "cross_version", f"v{w}: raised but must not: {e}", b"", False
                    )
                else:
                    stats.cross_raised += 1
                continue
            except Exception as e:
                self._fail(stats, index, "cross_version", f"v{w}: {_describe(e)}", b"", False)
                continue
            if why is not None:
                self._fail(
                    stats,
                    index,
                    "cross_version",
                    f"v{w}: wrote but must raise UnsupportedVersionError: {why}",
                    data_w,
                    False,
                )
                continue
            try:
                d = cls.decode(data_w, w)
                got, want = d.to_json(w), m.to_json(w)
                if got != want:
                    why = f"v{w}: decodes to another value: {json_difference(got, want)}"
                    self._fail(stats, index, "cross_version", why, data_w, False)
                elif d.unknown_tagged_fields != m.unknown_tagged_fields:
                    # JSON does not show them; the oracle let them through, so w is flexible.
                    why = f"v{w}: unknown tagged fields {d.unknown_tagged_fields!r:.80} lost"
                    self._fail(stats, index, "cross_version", why, data_w, False)
            except Exception as e:
                self._fail(stats, index, "cross_version", f"v{w}: {_describe(e)}", data_w, False)

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
        try:
            target.unknown_tagged_fields = tags
            data = m.encode(v)
            d = cls.decode(data, v)
            if d.unknown_tagged_fields != tags:
                self._fail(
                    stats,
                    index,
                    "forward_compat",
                    f"tags {d.unknown_tagged_fields!r} != {tags!r}",
                    data,
                    False,
                )
            elif d.encode(v) != data:
                self._fail(stats, index, "forward_compat", "re-encoding differs", data, False)
        except Exception as e:
            self._fail(stats, index, "forward_compat", _describe(e), data, False)
        finally:
            target.unknown_tagged_fields = kept

    def _check_mutations(
        self, cls: type[Message], v: int, data: bytes, bits: int, index: int, stats: ComboStats
    ) -> None:
        every = self.options.alloc_every
        traced = every > 0 and index % every == 0 and not tracemalloc.is_tracing()
        count = MAX_MUTATIONS if self.replaying else min(self.options.mutations, MAX_MUTATIONS)
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
                    continue
                except Exception as e:
                    self._fail(stats, index, "mutation", "decode: " + _describe(e), bad, False)
                    continue
                stats.mutations_decoded += 1
                try:
                    d.encode(v)  # what a codec accepts, it must be able to write back
                except Exception as e:
                    self._fail(stats, index, "mutation", "re-encode: " + _describe(e), bad, False)
            finally:
                took = time.perf_counter() - began
                if traced:
                    peak = tracemalloc.get_traced_memory()[1]
                    tracemalloc.stop()
                    if peak > ALLOC_BASE + ALLOC_PER_BYTE * len(bad):
                        self._fail(
                            stats,
                            index,
                            "mutation",
                            f"allocated {peak} bytes at peak",
                            bad,
                            False,
                        )
                if took > SLOW_SECONDS:
                    self._fail(stats, index, "mutation", f"took {took:.2f} s", bad, False)


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
    "failure_id",
    "has_unknown_tags",
    "mutate",
    "parse_failure_id",
]
