"""Codec benchmark: kafkagen's generated codecs against kio and kafka-python, side by side.

For every workload (see ``kafkagen.bench.workloads``) the three libraries get the same message
content. Before anything is timed, each peer's encoding must equal kafkagen's byte for byte,
and each library must decode those bytes back to something that re-encodes to the same
bytes; a difference is a correctness finding, printed loudly, and the exit status is 1.

Then encode (object -> bytes) and decode (bytes -> object) are timed timeit-style: the loop
count is scaled so that one measurement takes about ``--target`` seconds, the libraries are
measured in turns, and the best of ``--repeat`` measurements is kept. The garbage collector
stays enabled (timeit turns it off), because decoding large messages pays for it in real
programs too, but what set-up allocated is frozen out of its sight; ``--no-gc`` turns it off.

kafkagen's figures time its native accelerator (runtime/_native.c) when it is built and
not switched off, else the generated pure-Python codecs; the "kafkagen codecs:" line says
which. ``--pure`` times the pure-Python codecs on purpose, to see both.

How the peers are driven:
  kio           encode: ``kio.serial.entity_writer(cls)(BytesIO, obj)`` (pure Python);
                decode: ``kio.serial.entity_reader(cls)(data, 0)`` (compiled Rust extension)
  kafka-python  ``obj.encode(version)`` and ``cls.decode(data, version)`` of the 3.x
                ``kafka.protocol`` classes (Python codecs compiled from its JSON schemas)
A peer that is not installed, or that lacks the API, shows as "n/a". A peer that lacks the
version runs at its nearest version, marked with "*", and is compared with kafkagen's
encoding at that version.

Targets (kafkagen against each peer, in operations per second): encode at least 4x
kafka-python and 10x kio; decode at least 2x kafka-python and no slower than 1.5x kio's time.

Run: kafkagen bench codecs [--quick] [--json FILE] [--profile N] [--help]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib
import importlib.metadata
import inspect
import io
import json
import math
import os
import pkgutil
import platform
import pstats
import random
import re
import subprocess
import sys
import time
import timeit
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import msgspec_graph
from .workloads import WORKLOADS, Workload

KAFKAGEN, KIO, KAFKA_PYTHON = "kafkagen", "kio", "kafka-python"
PEERS = (KIO, KAFKA_PYTHON)

#: (op, peer) -> lowest acceptable kafkagen/peer ratio of operations per second
TARGETS: dict[tuple[str, str], float] = {
    ("encode", KAFKA_PYTHON): 4.0,
    ("encode", KIO): 10.0,
    ("decode", KAFKA_PYTHON): 2.0,
    ("decode", KIO): 1 / 1.5,
}
SHORT = {KIO: "kio", KAFKA_PYTHON: "kp"}

DEFAULT_TARGET_S, DEFAULT_REPEAT = 0.2, 7
QUICK_TARGET_S, QUICK_REPEAT = 0.05, 5


# -- the three libraries -------------------------------------------------------------------


@dataclass
class Side:
    """One library set up for one workload: its object, its version and its timed statements.

    ``namespace`` holds ``obj`` (the message) and ``data`` (the bytes to decode); the
    statements are what a user of the library writes, so call overhead is counted alike.
    """

    library: str
    version: int
    supported: str  # the library's version range for this message, e.g. "0-13"
    namespace: dict[str, Any]
    encode_stmt: str
    decode_stmt: str
    encode: Callable[[Any], bytes]  # message -> bytes (also for decoded messages)
    decode: Callable[[bytes], Any]
    exact: bool = True  # whether it runs at the workload's version


@dataclass
class Missing:
    """Why a library has no side for a workload."""

    library: str
    reason: str


def nearest_version(wanted: int, versions: Sequence[int]) -> int:
    """``wanted`` if supported, else the highest supported version below it, else the lowest."""
    if wanted in versions:
        return wanted
    below = [v for v in versions if v < wanted]
    return max(below) if below else min(versions)


def span(versions: Sequence[int]) -> str:
    lo, hi = min(versions), max(versions)
    gaps = len(versions) != hi - lo + 1
    return f"{lo}-{hi}" + (" (gaps)" if gaps else "")


def kafkagen_side(w: Workload, msg: Any) -> Side:
    cls = type(msg)
    versions = range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1)
    version = w.version
    return Side(
        KAFKAGEN,
        version,
        span(versions),
        {"obj": msg, "cls": cls, "version": version},
        "obj.encode(version)",
        "cls.decode(data, version)",
        lambda o: bytes(o.encode(version)),
        lambda data: cls.decode(data, version),
    )


def kio_side(w: Workload, msg: Any) -> Side | Missing:
    try:
        from kio.serial import entity_reader, entity_writer

        package = importlib.import_module(f"kio.schema.{w.kio_module}")
    except ImportError as e:
        return Missing(KIO, f"not installed ({e.name})")
    versions = sorted(
        int(m.name[1:])
        for m in pkgutil.iter_modules(package.__path__)
        if re.fullmatch(r"v\d+", m.name)
    )
    if not versions:
        return Missing(KIO, "no versions of this API")
    version = nearest_version(w.version, versions)
    module = importlib.import_module(f"kio.schema.{w.kio_module}.v{version}.{w.kind}")
    cls = getattr(module, w.class_name)
    obj = w.to_kio(msg, module)
    write, read = entity_writer(cls), entity_reader(cls)

    def encode(o: Any) -> bytes:
        buf = io.BytesIO()
        write(buf, o)
        return buf.getvalue()

    def decode(data: bytes) -> Any:
        o, size = read(data, 0)
        if size != len(data):
            raise ValueError(f"kio read {size} of {len(data)} bytes")
        return o

    return Side(
        KIO,
        version,
        span(versions),
        {"obj": obj, "write": write, "read": read, "BytesIO": io.BytesIO},
        "buf = BytesIO()\nwrite(buf, obj)\nbuf.getvalue()",
        "read(data, 0)",
        encode,
        decode,
        exact=version == w.version,
    )


def kafka_python_side(w: Workload, msg: Any) -> Side | Missing:
    try:
        module = importlib.import_module(f"kafka.protocol.{w.kafka_python_module}")
    except ImportError as e:
        return Missing(KAFKA_PYTHON, f"not installed ({e.name})")
    cls = getattr(module, w.class_name, None)
    if cls is None or not hasattr(cls, "valid_versions"):
        return Missing(KAFKA_PYTHON, "no such message class (kafka-python 3.x needed)")
    lo, hi = cls.valid_versions
    versions = list(range(lo, hi + 1))
    version = nearest_version(w.version, versions)
    obj = w.to_kafka_python(msg, cls)

    def encode(o: Any) -> bytes:
        # Decoded messages skip __init__, so their _header slot is unset and the
        # API_VERSION setter that encode(version) runs raises AttributeError.
        if not hasattr(o, "_header"):
            o._header = None
        return bytes(o.encode(version))

    return Side(
        KAFKA_PYTHON,
        version,
        span(versions),
        {"obj": obj, "cls": cls, "version": version},
        "obj.encode(version)",
        "cls.decode(data, version)",
        encode,
        lambda data: cls.decode(data, version),
        exact=version == w.version,
    )


def peer_side(library: str, w: Workload, msg: Any) -> Side | Missing:
    make = kio_side if library == KIO else kafka_python_side
    try:
        return make(w, msg)
    except Exception as e:  # a peer that cannot build this message must not stop the run
        return Missing(library, f"setup failed: {type(e).__name__}: {e}")


def library_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for library, dist in ((KAFKAGEN, "kafkagen"), (KIO, "kio"), (KAFKA_PYTHON, "kafka-python")):
        try:
            out[library] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[library] = None
    return out


def source_state() -> str | None:
    """The kafkagen checkout's commit, "+dirty" when the codec sources differ from it.

    The generated code changes while it is being optimised, so a saved figure needs it.
    None outside a git checkout (an installed package).
    """
    generated: Any = importlib.import_module("kafkagen.generated")
    where = Path(generated.__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "generated", "runtime", "templates"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


def kio_decoder_kind() -> str:
    try:
        from kio.serial import entity_reader
    except ImportError:
        return "n/a"
    return "compiled (Rust extension)" if inspect.isbuiltin(entity_reader) else "pure Python"


# -- correctness ---------------------------------------------------------------------------


@dataclass
class Finding:
    """A correctness finding: different bytes (``mismatch``), or a library raising."""

    workload: str
    library: str
    what: str
    mismatch: bool = True  # False: a peer raised; that is the peer's problem, not kafkagen's

    def line(self) -> str:
        label = "MISMATCH" if self.mismatch else "PEER ERROR"
        return f"{label} {self.workload} [{self.library}]: {self.what}"


def describe_difference(got: bytes, want: bytes) -> str:
    at = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)
    if at is None:
        at = min(len(got), len(want))
    lo = max(0, at - 8)
    return (
        f"{len(got)} bytes vs kafkagen's {len(want)}, first difference at offset {at}: "
        f"{got[lo : at + 16].hex(' ')} vs {want[lo : at + 16].hex(' ')} (from offset {lo})"
    )


def check_kafkagen(w: Workload, side: Side, msg: Any, ref: bytes, findings: list[Finding]) -> None:
    try:
        back = side.decode(ref)
    except Exception as e:
        findings.append(Finding(w.key, KAFKAGEN, f"cannot decode its own bytes: {e!r}"))
        return
    if back != msg:
        findings.append(Finding(w.key, KAFKAGEN, "decode(encode(m)) != m"))
    again = side.encode(back)
    if again != ref:
        findings.append(
            Finding(w.key, KAFKAGEN, "re-encode after decode: " + describe_difference(again, ref))
        )


def check_peer(w: Workload, side: Side, want: bytes, findings: list[Finding]) -> set[str]:
    """Compare the peer's encoding with kafkagen's and round-trip kafkagen's bytes through it.

    Returns the operations the peer can do here (and so can be timed on).
    """
    lib, works = side.library, set()
    try:
        got = side.encode(side.namespace["obj"])
    except Exception as e:
        findings.append(Finding(w.key, lib, f"encode failed: {e!r}", mismatch=False))
    else:
        works.add("encode")
        if got != want:
            findings.append(Finding(w.key, lib, "encode: " + describe_difference(got, want)))
    try:
        back = side.decode(want)
    except Exception as e:
        findings.append(Finding(w.key, lib, f"cannot decode kafkagen's bytes: {e!r}", False))
        return works
    works.add("decode")
    try:
        again = side.encode(back)
    except Exception as e:
        findings.append(Finding(w.key, lib, f"cannot re-encode what it decoded: {e!r}", False))
        return works
    if again != want:
        findings.append(
            Finding(w.key, lib, "decode then re-encode: " + describe_difference(again, want))
        )
    return works


# -- timing --------------------------------------------------------------------------------


@dataclass
class Timing:
    seconds: float  # best time of one operation
    loops: int
    times: list[float]  # each repeat's total, for the JSON

    @property
    def ops(self) -> float:
        return 1.0 / self.seconds


def make_timer(stmt: str, namespace: dict[str, Any], gc_enabled: bool) -> timeit.Timer:
    # timeit.Timer turns the collector off around the loop; its setup runs after that.
    setup = "import gc; gc.enable()" if gc_enabled else "pass"
    return timeit.Timer(stmt, setup, globals=namespace)


def calibrate(timer: timeit.Timer, target: float) -> int:
    """The loop count that makes one measurement take about ``target`` seconds."""
    loops, took = 1, timer.timeit(1)
    while took < target / 10:  # calibrate on a tenth of the target, then scale
        loops = loops * 10 if took < target / 1000 else math.ceil(loops * target / 10 / took)
        took = timer.timeit(loops)
    return max(1, round(loops * target / took))


def measure(timers: dict[str, timeit.Timer], target: float, repeat: int) -> dict[str, Timing]:
    """Best of ``repeat`` measurements of each timer, taken in turns.

    Taking the libraries in turns, rather than one after the other, spreads a slow spell of
    a shared machine over all of them, so the ratios stay fair when the clock speed drifts.
    """
    gc.collect()
    loops = {lib: calibrate(t, target) for lib, t in timers.items()}
    times: dict[str, list[float]] = {lib: [] for lib in timers}
    for _ in range(repeat):
        for lib, t in timers.items():
            times[lib].append(t.timeit(loops[lib]))
    return {lib: Timing(min(times[lib]) / loops[lib], loops[lib], times[lib]) for lib in timers}


# -- one run -------------------------------------------------------------------------------


@dataclass
class Row:
    workload: Workload
    op: str  # "encode" | "decode"
    timings: dict[str, Timing | None] = field(default_factory=dict)
    versions: dict[str, int | None] = field(default_factory=dict)
    exact: dict[str, bool] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    mismatched: list[str] = field(default_factory=list)  # libraries whose bytes differ

    def ratio(self, peer: str) -> float | None:
        ours, theirs = self.timings.get(KAFKAGEN), self.timings.get(peer)
        if ours is None or theirs is None:
            return None
        return theirs.seconds / ours.seconds

    def misses(self) -> list[str]:
        """The targets this row misses, e.g. ["kio 7.1x < 10x"]."""
        out = []
        for peer in PEERS:
            r, goal = self.ratio(peer), TARGETS[(self.op, peer)]
            if r is not None and r < goal:
                out.append(f"{SHORT[peer]} {r:.2f}x < {goal:.2f}x")
        return out

    def verdict(self) -> str:
        if all(self.ratio(p) is None for p in PEERS):
            return "n/a"
        return "FAIL" if self.misses() else "PASS"


@dataclass
class WorkloadSetup:
    workload: Workload
    sides: dict[str, Side | Missing]
    data: dict[str, bytes]  # per library, the bytes it decodes (kafkagen's, at its version)
    works: dict[str, set[str]]  # per library, the operations it managed in the checks
    mismatched: list[str]


def set_up(w: Workload, seed: int, findings: list[Finding]) -> WorkloadSetup:
    msg = w.build(random.Random(seed))
    ours = kafkagen_side(w, msg)
    ref = ours.encode(msg)
    ours.namespace["data"] = ref
    check_kafkagen(w, ours, msg, ref, findings)
    sides: dict[str, Side | Missing] = {KAFKAGEN: ours}
    data, works = {KAFKAGEN: ref}, {KAFKAGEN: {"encode", "decode"}}
    for peer in PEERS:
        side = peer_side(peer, w, msg)
        sides[peer] = side
        if isinstance(side, Missing):
            continue
        try:
            want = ref if side.exact else msg.encode(side.version)
        except Exception as e:
            findings.append(Finding(w.key, KAFKAGEN, f"cannot encode v{side.version}: {e!r}"))
            works[peer] = set()
            continue
        side.namespace["data"] = data[peer] = want
        works[peer] = check_peer(w, side, want, findings)
    mismatched = [f.library for f in findings if f.workload == w.key and f.mismatch]
    return WorkloadSetup(w, sides, data, works, mismatched)


def time_workload(s: WorkloadSetup, target: float, repeat: int, gc_enabled: bool) -> list[Row]:
    rows = []
    for op in ("encode", "decode"):
        row = Row(s.workload, op, mismatched=s.mismatched)
        timers: dict[str, timeit.Timer] = {}
        for library in (KAFKAGEN, *PEERS):
            side = s.sides[library]
            row.timings[library] = None
            if isinstance(side, Missing):
                row.versions[library] = None
                row.notes[library] = side.reason
                continue
            row.versions[library] = side.version
            row.exact[library] = side.exact
            if op not in s.works.get(library, ()):
                row.notes[library] = f"{op} failed in the checks"
                continue
            stmt = side.encode_stmt if op == "encode" else side.decode_stmt
            timers[library] = make_timer(stmt, side.namespace, gc_enabled)
        row.timings.update(measure(timers, target, repeat))
        rows.append(row)
    return rows


def msgspec_namespaces(setups: list[WorkloadSetup]) -> list[dict[str, Any]]:
    """Per workload, kafkagen's encode namespace joined with msgspec's mirror of its message."""
    out = []
    for s in setups:
        side = s.sides[KAFKAGEN]
        assert isinstance(side, Side)
        out.append(side.namespace | msgspec_graph.namespace(side.namespace["obj"]))
    return out


def compare_msgspec(
    setups: list[WorkloadSetup],
    namespaces: list[dict[str, Any]],
    target: float,
    repeat: int,
    gc_enabled: bool,
) -> list[msgspec_graph.Comparison]:
    """kafkagen's encode and msgspec's of the same object graph, timed in turns."""
    out = []
    for s, ns in zip(setups, namespaces, strict=True):
        side = s.sides[KAFKAGEN]
        assert isinstance(side, Side)
        best = measure(
            {
                KAFKAGEN: make_timer(side.encode_stmt, ns, gc_enabled),
                "msgspec": make_timer(msgspec_graph.STATEMENT, ns, gc_enabled),
            },
            target,
            repeat,
        )
        out.append(
            msgspec_graph.Comparison(
                s.workload.title, best[KAFKAGEN].seconds, best["msgspec"].seconds
            )
        )
    return out


# -- output --------------------------------------------------------------------------------


def fmt_ops(t: Timing | None, exact: bool = True) -> str:
    if t is None:
        return "n/a"
    return f"{t.ops:,.0f}" + ("" if exact else "*")


def fmt_ratio(r: float | None, exact: bool) -> str:
    if r is None:
        return "n/a"
    return f"{r:.2f}x" + ("" if exact else "*")


def render_table(rows: list[Row]) -> list[str]:
    head = [
        "workload",
        "op",
        "kafkagen ops/s",
        "us/op",
        "kio ops/s",
        "kafka-python ops/s",
        "kg/kio",
        "kg/kp",
        "targets",
    ]
    body = []
    for row in rows:
        ours = row.timings.get(KAFKAGEN)
        kio_exact, kp_exact = row.exact.get(KIO, True), row.exact.get(KAFKA_PYTHON, True)
        verdict = row.verdict()
        misses = row.misses()
        body.append(
            [
                row.workload.title,
                row.op,
                fmt_ops(ours),
                "n/a" if ours is None else f"{ours.seconds * 1e6:,.1f}",
                fmt_ops(row.timings.get(KIO), kio_exact),
                fmt_ops(row.timings.get(KAFKA_PYTHON), kp_exact),
                fmt_ratio(row.ratio(KIO), kio_exact),
                fmt_ratio(row.ratio(KAFKA_PYTHON), kp_exact),
                ("MISMATCH " + ",".join(row.mismatched) + "; " if row.mismatched else "")
                + verdict
                + (f" ({'; '.join(misses)})" if misses else ""),
            ]
        )
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    left = {0, 1, 8}

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(head), "  ".join("-" * w for w in widths), *(line(r) for r in body)]


def render_versions(setups: list[WorkloadSetup]) -> list[str]:
    head = ["workload", "content", "kafkagen", "kio", "kafka-python"]
    body = []
    for s in setups:
        cells = [s.workload.title, s.workload.size]
        for library in (KAFKAGEN, *PEERS):
            side = s.sides[library]
            if isinstance(side, Missing):
                cells.append(f"n/a: {side.reason}")
            elif side.exact:
                cells.append(f"v{side.version} (has {side.supported})")
            else:
                cells.append(f"v{side.version}* (has {side.supported})")
        body.append(cells)
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [head, [("-" * w) for w in widths], *body]
    ]


def profile_rows(
    rows: list[Row], setups: dict[str, WorkloadSetup], top: int, target: float, gc_enabled: bool
) -> list[str]:
    """cProfile kafkagen's side of each row: the ``top`` functions by own time, per operation.

    Also times the loop with the collector off, to show how much of the figure GC takes.
    """
    out = []
    for row in rows:
        ours = row.timings.get(KAFKAGEN)
        side = setups[row.workload.key].sides[KAFKAGEN]
        if ours is None or not isinstance(side, Side):
            continue
        stmt = side.encode_stmt if row.op == "encode" else side.decode_stmt
        timer = make_timer(stmt, side.namespace, gc_enabled)
        # GC on and off, in turns like the main figures, to show the collector's share.
        gc_share = measure(
            {
                "on": make_timer(stmt, side.namespace, True),
                "off": make_timer(stmt, side.namespace, False),
            },
            max(target / 2, 0.1),
            5,
        )
        loops = max(1, round(target / ours.seconds))
        prof = cProfile.Profile()
        prof.enable()
        timer.timeit(loops)
        prof.disable()
        stats: dict[Any, Any] = pstats.Stats(prof).stats  # type: ignore[attr-defined]
        total = sum(v[2] for v in stats.values()) or 1.0
        out.append(
            f"\nprofile: kafkagen {row.workload.title} {row.op}: "
            f"{gc_share['on'].seconds * 1e6:,.1f} us/op with GC, "
            f"{gc_share['off'].seconds * 1e6:,.1f} us/op without ({loops} loops profiled)"
        )
        out.append(f"  {'own%':>6}  {'calls/op':>9}  function")
        for (filename, lineno, func), (_cc, calls, own, _cum, _callers) in sorted(
            stats.items(), key=lambda kv: kv[1][2], reverse=True
        )[:top]:
            where = "builtin" if filename == "~" else f"{Path(filename).name}:{lineno}"
            out.append(f"  {100 * own / total:5.1f}%  {calls / loops:9.1f}  {func} ({where})")
    return out


# -- command line --------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options (``kafkagen bench codecs``)."""
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"short run (~{QUICK_TARGET_S} s x {QUICK_REPEAT} per measurement)",
    )
    parser.add_argument(
        "--target",
        type=float,
        metavar="SECONDS",
        help=f"time per measurement (default {DEFAULT_TARGET_S})",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        metavar="N",
        help=f"measurements per figure, best kept (default {DEFAULT_REPEAT})",
    )
    parser.add_argument(
        "--workload",
        action="append",
        default=[],
        metavar="NAME",
        choices=[w.key for w in WORKLOADS],
        help="run only this workload (repeatable): " + ", ".join(w.key for w in WORKLOADS),
    )
    parser.add_argument("--seed", type=int, default=1, help="content seed (default 1)")
    parser.add_argument(
        "--no-gc",
        dest="gc",
        action="store_false",
        help="turn the garbage collector off while timing, as plain timeit does",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument(
        "--profile",
        type=int,
        metavar="N",
        default=0,
        help="cProfile kafkagen on each row that misses a target; "
        "print the N functions with the most own time",
    )
    parser.add_argument(
        "--pure",
        action="store_true",
        help="time kafkagen's generated pure-Python codecs instead of the native accelerator "
        "(same bytes; the targets are judged on them), as KAFKAGEN_PURE_PYTHON=1 would",
    )
    parser.add_argument(
        "--fail-on-targets",
        action="store_true",
        help="exit 2 when a target is missed (byte mismatches always exit 1)",
    )


def kafkagen_class(s: WorkloadSetup) -> type[Any]:
    side = s.sides[KAFKAGEN]
    assert isinstance(side, Side)
    return type(side.namespace["obj"])


def codecs_in_use(classes: list[tuple[type[Any], int]], pure: bool) -> str:
    """Which codecs kafkagen's figures time: the native accelerator or pure Python, and why."""
    from kafkagen.runtime import message

    if pure:
        return "pure Python (--pure)"
    if message.native is None:
        if os.environ.get("KAFKAGEN_PURE_PYTHON", "") not in ("", "0"):
            return "pure Python (KAFKAGEN_PURE_PYTHON is set)"
        return "pure Python (the compiled accelerator is not built, or is stale; see the README)"
    off = [f"{c.__name__} v{v}" for c, v in classes if not message.uses_native(c, v)]
    where = f"; pure Python for {', '.join(off)}" if off else " on every workload"
    return f"native accelerator ({Path(message.native.__file__ or '_native').name}){where}"


def run(args: argparse.Namespace) -> int:
    target = args.target or (QUICK_TARGET_S if args.quick else DEFAULT_TARGET_S)
    repeat = args.repeat or (QUICK_REPEAT if args.quick else DEFAULT_REPEAT)
    chosen = [w for w in WORKLOADS if not args.workload or w.key in args.workload]
    started = time.perf_counter()
    versions = library_versions()
    source = source_state()
    gc_mode = "enabled (set-up objects frozen)" if args.gc else "disabled"
    print(
        f"kafkagen codec benchmark: best of {repeat} x ~{target} s per figure, GC {gc_mode}, "
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}"
    )
    print(
        " | ".join(f"{lib} {versions[lib] or 'not installed'}" for lib in (KAFKAGEN, *PEERS))
        + f" | kio decoder: {kio_decoder_kind()}"
        + (f" | kafkagen source: {source}" if source else "")
    )

    findings: list[Finding] = []
    setups = [set_up(w, args.seed, findings) for w in chosen]
    classes = [(kafkagen_class(s), s.workload.version) for s in setups]
    restore = [(cls, cls._decoders, cls._encoders) for cls, _ in classes]
    if args.pure:
        from kafkagen.runtime.message import python_codecs

        for cls, _ in classes:
            cls._decoders, cls._encoders = python_codecs(cls)
    mode = codecs_in_use(classes, args.pure)
    print(f"kafkagen codecs: {mode}")
    print()
    print("\n".join(render_versions(setups)))
    if any(isinstance(x, Side) and not x.exact for s in setups for x in s.sides.values()):
        print(
            "* the peer lacks the version asked for: it runs at the version shown, and its "
            "bytes are compared with kafkagen's at that version"
        )
    mismatches = [f for f in findings if f.mismatch]
    compared = sum("encode" in s.works.get(p, ()) for s in setups for p in PEERS)
    errors = len(findings) - len(mismatches)
    if mismatches:
        print(f"\nbytes: {len(mismatches)} MISMATCH(ES)")
    elif compared:
        print(f"\nbytes: every peer wrote kafkagen's bytes ({compared} comparisons)")
    else:
        print("\nbytes: no peer library to compare with")
    if errors:
        print(f"{errors} peer error(s): those figures show n/a")
    for f in findings:
        print("  !! " + f.line())
    sys.stdout.flush()

    mirrors = msgspec_namespaces(setups) if msgspec_graph.available() else None
    # Freeze what set-up allocated, so that collections during the timed loops scan only
    # what the codec under test allocates, not the benchmark's own heap.
    gc.collect()
    gc.freeze()
    try:
        rows = [row for s in setups for row in time_workload(s, target, repeat, args.gc)]
        print()
        print("\n".join(render_table(rows)))
        print(
            "targets: encode >= 4x kafka-python and >= 10x kio; decode >= 2x kafka-python and "
            ">= 0.67x kio (kg/x: kafkagen's ops/s over x's)"
        )
        failed = [r for r in rows if r.verdict() == "FAIL"]
        judged = [r for r in rows if r.verdict() != "n/a"]
        print(
            f"{len(judged) - len(failed)} of {len(judged)} rows meet the targets"
            + (f"; {len(failed)} miss them" if failed else "")
            + (
                f" ({len(rows) - len(judged)} without a peer to compare)"
                if len(judged) < len(rows)
                else ""
            )
        )
        if mismatches:
            print(
                f"\n!! {len(mismatches)} byte mismatch(es): some figures compare codecs that "
                "disagree"
            )
            for f in mismatches:
                print("  !! " + f.line())
        against_msgspec: list[msgspec_graph.Comparison] = []
        if mirrors is None:
            print("\nmsgspec: not installed (the bench extra): no encode comparison with it")
        else:
            against_msgspec = compare_msgspec(setups, mirrors, target, repeat, args.gc)
            print()
            print("\n".join(msgspec_graph.render(against_msgspec)))
        if args.profile and failed:
            by_key = {s.workload.key: s for s in setups}
            print("\n".join(profile_rows(failed, by_key, args.profile, target * 2, args.gc)))
    finally:
        gc.unfreeze()
        for cls, decoders, encoders in restore:
            cls._decoders, cls._encoders = decoders, encoders
    took = time.perf_counter() - started
    print(f"\n(benchmark took {took:.1f} s)")

    if args.json:
        write_json(
            Path(args.json),
            rows,
            setups,
            findings,
            versions,
            source,
            target,
            repeat,
            args,
            took,
            mode,
            against_msgspec,
        )
    if mismatches or any(f.library == KAFKAGEN for f in findings):
        return 1
    return 2 if failed and args.fail_on_targets else 0


def write_json(
    path: Path,
    rows: list[Row],
    setups: list[WorkloadSetup],
    findings: list[Finding],
    versions: dict[str, str | None],
    source: str | None,
    target: float,
    repeat: int,
    args: argparse.Namespace,
    took: float,
    mode: str,
    against_msgspec: list[msgspec_graph.Comparison],
) -> None:
    doc = {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "libraries": versions,
        "kafkagen_source": source,
        "kafkagen_codecs": mode,
        "kio_decoder": kio_decoder_kind(),
        "target_seconds": target,
        "repeat": repeat,
        "gc_enabled": args.gc,
        "seed": args.seed,
        "seconds": round(took, 2),
        "targets": {f"{op}/{peer}": goal for (op, peer), goal in TARGETS.items()},
        "workloads": [
            {
                "key": s.workload.key,
                "message": s.workload.class_name,
                "version": s.workload.version,
                "content": s.workload.size,
                "bytes": len(s.data[KAFKAGEN]),
                "libraries": {
                    lib: (
                        {"missing": side.reason}
                        if isinstance(side, Missing)
                        else {
                            "version": side.version,
                            "supported": side.supported,
                            "exact_version": side.exact,
                        }
                    )
                    for lib, side in s.sides.items()
                },
            }
            for s in setups
        ],
        "results": [
            {
                "workload": row.workload.key,
                "op": row.op,
                "verdict": row.verdict(),
                "misses": row.misses(),
                "ratios": {peer: row.ratio(peer) for peer in PEERS},
                "notes": row.notes,
                "libraries": {
                    lib: (
                        None
                        if t is None
                        else {
                            "version": row.versions[lib],
                            "ops_per_second": t.ops,
                            "us_per_op": t.seconds * 1e6,
                            "loops": t.loops,
                            "repeat_seconds": t.times,
                        }
                    )
                    for lib, t in row.timings.items()
                },
            }
            for row in rows
        ],
        "msgspec_encode": [
            {
                "workload": c.title,
                "kafkagen_us_per_op": c.kafkagen * 1e6,
                "msgspec_us_per_op": c.msgspec * 1e6,
                "kafkagen_over_msgspec": c.ratio,
                "verdict": c.verdict(),
            }
            for c in against_msgspec
        ],
        "findings": [
            {"workload": f.workload, "library": f.library, "what": f.what, "mismatch": f.mismatch}
            for f in findings
        ],
    }
    path.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kafkagen bench codecs",
        description="Encode and decode throughput of kafkagen's codecs against kio and "
        "kafka-python, after checking that all three write the same bytes.",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
