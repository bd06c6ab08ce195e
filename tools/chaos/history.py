"""A campaign's history: every operation a client attempted, and how it ended.

One JSON object per line, in the order things happened::

    {"process": "producer-0", "type": "invoke", "f": "send", "time": 1.25, "value": {...}}
    {"process": "producer-0", "type": "ok", "f": "send", "time": 1.31, "value": {...}}

Each process does one operation at a time: an ``invoke`` line, then the line that ends it:
``ok`` (it happened), ``fail`` (it certainly did not happen) or ``info`` (nobody knows: a
timeout, a lost connection). ``time`` is seconds on one monotonic clock.

What ``value`` holds, by ``f`` (topic-partitions are ``[topic, partition]`` pairs inside the
lists; every value written is unique in the campaign, so a read names its write):

========== ===========================================================================
send       ``writes``: ``[[topic, partition, value, offset], ...]`` (offset ``null`` until
           acknowledged); ``idempotent``: whether the producer promises no duplicates
txn        ``writes`` as for send, ``reads`` as for poll, ``offsets`` as for commit: one
           transaction; ``ok`` is a commit, ``fail`` a certain abort
poll       ``group``, ``isolation`` (``read_committed`` / ``read_uncommitted``), ``reads``:
           ``[[topic, partition, from, to, [[offset, value], ...]], ...]``: the consumer
           moved from position ``from`` to ``to`` and these records were returned
commit     ``group``, ``offsets``: ``[[topic, partition, offset], ...]``
assign     ``group``, ``partitions``: ``[[topic, partition], ...]``: the consumer took them
revoke     ``group``, ``partitions``: it gave them up
lost       ``group``, ``partitions``: it learnt that the group had fenced it and given
           them to others
final      ``isolation``, ``reads`` as for poll: a read of whole partitions after the faults
fault      ``fault``: what the campaign did to the cluster (not checked, kept for reading)
========== ===========================================================================
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

__all__ = ["Completed", "History", "HistoryError", "Op", "Read", "Recorder", "Write"]

TYPES = ("invoke", "ok", "fail", "info")
FUNCTIONS = ("send", "txn", "poll", "commit", "assign", "revoke", "lost", "final", "fault")

TopicPartition = tuple[str, int]


class HistoryError(ValueError):
    """A history line that cannot be read; the text names the line and what is wrong."""


@dataclass(frozen=True, slots=True)
class Op:
    index: int
    process: str
    type: str
    f: str
    time: float
    value: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(
            {
                "process": self.process,
                "type": self.type,
                "f": self.f,
                "time": self.time,
                "value": self.value,
            },
            separators=(",", ":"),
        )


@dataclass(frozen=True, slots=True)
class Write:
    tp: TopicPartition
    value: Any
    offset: int | None


@dataclass(frozen=True, slots=True)
class Read:
    """A consumer's pass over one partition: positions ``start`` to ``end`` (exclusive)."""

    tp: TopicPartition
    start: int
    end: int
    records: tuple[tuple[int, Any], ...]


@dataclass(frozen=True, slots=True)
class Completed:
    """An operation with its invocation and its end (``info`` when it never ended)."""

    invoke: Op
    end: Op

    @property
    def id(self) -> int:
        return self.invoke.index

    @property
    def type(self) -> str:
        return self.end.type

    @property
    def f(self) -> str:
        return self.invoke.f

    @property
    def process(self) -> str:
        return self.invoke.process

    @property
    def value(self) -> dict[str, Any]:
        """What the end reports (offsets, records), else what was asked."""
        return self.end.value or self.invoke.value

    def writes(self) -> list[Write]:
        return [Write((t, int(p)), v, o) for t, p, v, o in self.value.get("writes", ())]

    def reads(self) -> list[Read]:
        out = []
        for t, p, start, end, records in self.value.get("reads", ()):
            out.append(
                Read((t, int(p)), int(start), int(end), tuple((int(o), v) for o, v in records))
            )
        return out

    def offsets(self) -> list[tuple[TopicPartition, int]]:
        return [((t, int(p)), int(o)) for t, p, o in self.value.get("offsets", ())]

    def partitions(self) -> list[TopicPartition]:
        return [(t, int(p)) for t, p in self.value.get("partitions", ())]


class History:
    """The operations of a campaign in order, paired into `Completed` operations."""

    def __init__(self, ops: Iterable[Op]) -> None:
        self.ops = list(ops)
        self.completed = _pair(self.ops)

    @classmethod
    def load(cls, path: str | Path) -> History:
        with open(path, encoding="utf-8") as f:
            return cls(_parse(f, str(path)))

    def dump(self, path: str | Path) -> None:
        tmp = Path(f"{path}.tmp")
        tmp.write_text("".join(op.to_json() + "\n" for op in self.ops), encoding="utf-8")
        tmp.replace(path)

    @property
    def end_time(self) -> float:
        return self.ops[-1].time if self.ops else 0.0


class Recorder:
    """Builds a history as a campaign runs: ``invoke`` then ``ok``/``fail``/``info``."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self._lock = threading.Lock()

    def add(self, process: str, type: str, f: str, time: float, value: dict[str, Any]) -> Op:
        """Record one line; safe from several threads."""
        with self._lock:
            op = Op(len(self.ops), process, type, f, time, value)
            self.ops.append(op)
        return op

    def history(self) -> History:
        return History(self.ops)


def _parse(lines: TextIO, name: str) -> Iterator[Op]:
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{name}:{n}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise HistoryError(f"{where}: not JSON ({e.msg})") from None
        if not isinstance(obj, dict):
            raise HistoryError(f"{where}: expected an object")
        for key in ("process", "type", "f", "time"):
            if key not in obj:
                raise HistoryError(f"{where}: no {key!r}")
        if obj["type"] not in TYPES:
            raise HistoryError(f"{where}: type {obj['type']!r} is not one of {', '.join(TYPES)}")
        if obj["f"] not in FUNCTIONS:
            raise HistoryError(f"{where}: f {obj['f']!r} is not one of {', '.join(FUNCTIONS)}")
        value = obj.get("value") or {}
        if not isinstance(value, dict):
            raise HistoryError(f"{where}: value must be an object")
        yield Op(n - 1, str(obj["process"]), obj["type"], obj["f"], float(obj["time"]), value)


def _pair(ops: list[Op]) -> list[Completed]:
    """Each invocation with the next end of the same process; invocations never ended
    count as ``info``. An end without an invocation is an error in the history."""
    open_: dict[str, Op] = {}
    done: list[Completed] = []
    for op in ops:
        if op.type == "invoke":
            if op.process in open_:
                raise HistoryError(
                    f"op {op.index}: {op.process} invokes {op.f} while its op "
                    f"{open_[op.process].index} is still open"
                )
            open_[op.process] = op
            continue
        inv = open_.pop(op.process, None)
        if inv is None:
            raise HistoryError(f"op {op.index}: {op.process} ends {op.f} it never invoked")
        if inv.f != op.f:
            raise HistoryError(f"op {op.index}: {op.process} ends {op.f} but invoked {inv.f}")
        done.append(Completed(inv, op))
    for inv in open_.values():
        done.append(Completed(inv, Op(inv.index, inv.process, "info", inv.f, float("inf"), {})))
    done.sort(key=lambda c: c.id)
    return done
