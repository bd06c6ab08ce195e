"""The ``kafka`` check (``kafkagen fuzz --oracle kafka``): Kafka's own classes judge.

For each message at its version three questions go to Kafka's generated classes
(:mod:`kafkagen.oracle`), many per batch:

- *read* its bytes: Kafka's JSON form and re-encoding must be kafkagen's;
- *write* its JSON form: Kafka must write what kafkagen writes from that JSON, and
  kafkagen must read Kafka's bytes back to the same message;
- *read* each corrupted copy of the mutation check: both refuse it, or both read it alike
  (the differences of ``docs/kafka-differences.md`` are counted apart, not failed).

The fuzzer collects the questions per (API, kind, version) into :class:`Pending` batches.
Their answers come from a :class:`~kafkagen.oracle.KafkaOracle` in this process (runs
without Spark, replays) or from the same Java class in the Spark executors' JVMs; either
way :func:`judge` compares them with kafkagen's own results and counts. Versions Kafka
does not have are counted as skipped, never as passed.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkagen.oracle import (
    Item,
    Outcome,
    RecordsPaths,
    compare,
    explain,
    kafkagen_class,
    kafkagen_read,
    read_item,
    write_item,
)
from kafkagen.runtime.message import Message

#: What a question asks, besides a mutant's number (0, 1, ...).
READ, WRITE = -1, -2
_REF = struct.Struct(">qb")
#: Questions per batch: a Spark row, or one call to the JVM.
BATCH_ITEMS = 2048
#: A peer's disagreement waiting for Kafka's answer to the same question: (peer, message
#: index, READ / WRITE / mutant number, question, kind of difference).
PeerEntry = tuple[str, int, int, str, str]


@dataclass
class Pending:
    """Questions about messages of one (API, kind, version): ``refs[i]`` is (message
    index, READ / WRITE / mutant number) of ``items[i]``."""

    api: int
    kind: str
    version: int
    items: list[Item] = field(default_factory=list)
    refs: list[tuple[int, int]] = field(default_factory=list)
    #: The peers' disagreements about these messages.
    peers: list[PeerEntry] = field(default_factory=list)

    def add(self, index: int, data: bytes, message: Message, mutants: list[bytes]) -> None:
        api, kind, v = self.api, self.kind, self.version
        self.items.append(read_item(api, kind, v, data))
        self.refs.append((index, READ))
        self.items.append(write_item(api, kind, v, message.to_json(v)))
        self.refs.append((index, WRITE))
        for k, bad in enumerate(mutants):
            self.items.append(read_item(api, kind, v, bad))
            self.refs.append((index, k))

    def packed_refs(self) -> bytes:
        return b"".join(_REF.pack(i, r) for i, r in self.refs)

    @staticmethod
    def unpack_refs(data: bytes) -> list[tuple[int, int]]:
        return [(i, r) for i, r in _REF.iter_unpack(data)]

    def packed_peers(self) -> bytes:
        return json.dumps(self.peers).encode()

    @staticmethod
    def unpack_peers(data: bytes | None) -> list[PeerEntry]:
        return [(p, int(i), int(r), c, k) for p, i, r, c, k in json.loads(data or b"[]")]


#: What judge reports per failure: (message index, what went wrong, the bytes asked about).
Fail = Callable[[int, str, bytes], None]


@dataclass
class Verdicts:
    """Counts of one batch: questions Kafka answered, of them documented differences, and
    questions about versions Kafka does not have; and the questions (message index,
    role) where Kafka did not plainly agree with kafkagen (skipped, documented or failed),
    on which a peer's disagreement cannot be judged."""

    checks: int = 0
    known: int = 0
    skipped: int = 0
    doubted: set[tuple[int, int]] = field(default_factory=set)


def judge(pending: Pending, answers: list[Outcome], records: RecordsPaths, fail: Fail) -> Verdicts:
    """Compare Kafka's ``answers`` with kafkagen's results on the same questions."""
    cls = kafkagen_class(pending.api, pending.kind)
    paths = records.get((pending.api, pending.kind), ())
    v = pending.version
    out = Verdicts()
    for (index, role), item, theirs in zip(pending.refs, pending.items, answers, strict=True):
        if theirs.status == "unsupported":
            out.skipped += 1
            out.doubted.add((index, role))
            continue
        out.checks += 1
        data = item.payload
        if role == WRITE:
            why = _judge_write(cls, v, json.loads(data), theirs)
            if why:
                out.doubted.add((index, role))
                fail(index, f"Kafka writes kafkagen's JSON form: {why}", theirs.data)
            continue
        ours = kafkagen_read(cls, v, data, paths)
        difference = compare(ours, theirs)
        if difference is None:
            continue
        out.doubted.add((index, role))
        if role >= 0 and explain(cls, v, data, ours, theirs, paths) is not None:
            out.known += 1
            continue
        what = "reads kafkagen's bytes" if role == READ else f"reads corrupted copy {role}"
        fail(index, f"Kafka {what}: {difference}", data)
    return out


def _judge_write(cls: type[Message], v: int, obj: Any, theirs: Outcome) -> str | None:
    """Kafka wrote the bytes kafkagen writes from the same JSON form (the JSON form of
    those bytes is the read question's), and kafkagen reads them back."""
    message = cls.from_json(obj, v)
    difference = compare(Outcome("ok", data=message.encode(v)), theirs)
    if difference is not None:
        return str(difference)
    if cls.decode(theirs.data, v) != message:
        return "kafkagen reads Kafka's bytes to another message"
    return None


__all__ = ["BATCH_ITEMS", "PeerEntry", "READ", "WRITE", "Pending", "Verdicts", "judge"]
