"""The ``kafka`` check (``kafkagen fuzz --oracle kafka``): Kafka's own classes judge.

For each message at its version three questions go to Kafka's generated classes
(:mod:`kafkagen.oracle`), many messages per batch:

- *read* its bytes: Kafka's JSON form and re-encoding must be kafkagen's;
- *write* its JSON form: Kafka must write what kafkagen writes from that JSON, and
  kafkagen must read Kafka's bytes back to the same message;
- *read* each corrupted copy of the mutation check: both refuse it, or both read it alike
  (the differences of ``docs/kafka-differences.md`` are counted apart, not failed).

The fuzzer has kafkagen's side of all three already (its own checks decoded, encoded and
converted the same bytes), so it sends it along (:func:`kafkagen.oracle.judge_parts`) and
Kafka compares where both values are: an agreement comes back as nothing. What Kafka does
not agree on comes back with Kafka's outcome, and :func:`judge` decides it here with
kafkagen's full comparison (which names the first differing field or byte, and knows the
documented differences). Where the fuzzer has no cheap exact expectation (a message its
own checks already failed), Kafka's answer always comes back to be judged here.

The fuzzer collects the messages per (API, kind, version) into :class:`Pending` batches.
Their answers come from the one :class:`~kafkagen.oracle.KafkaOracle` JVM of this process
(:func:`process_oracle`): in a Spark job each Python worker keeps its own beside it for
all the tasks it runs, so a message goes once through a pipe and comes back (as a rule)
as nothing. Versions Kafka does not have are counted as skipped, never as passed.
"""

from __future__ import annotations

import atexit
import json
import json.encoder
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkagen.oracle import (
    JUDGED_READ,
    JUDGED_WRITE,
    KafkaOracle,
    Outcome,
    RecordsPaths,
    compare,
    disagreements,
    explain,
    judge_parts,
    kafkagen_class,
    kafkagen_read,
)
from kafkagen.runtime.message import Message

#: What a question asks, besides a mutant's number (0, 1, ...): as a judged message's
#: answer names them.
READ, WRITE = JUDGED_READ, JUDGED_WRITE
#: Messages per call to the JVM (each about three questions), and the bytes after which a
#: batch goes sooner (well under what one call takes).
BATCH_ITEMS = 1024
BATCH_BYTES = 4 << 20
#: A peer's disagreement waiting for Kafka's answer to the same question: (peer, message
#: index, READ / WRITE / mutant number, question, kind of difference).
PeerEntry = tuple[str, int, int, str, str]


# kafkagen's JSON form as text for Kafka: the C encoder built once (json.dumps builds one
# per call), NaN and infinities as the bare tokens Kafka's JSON reader takes.
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)


def _no_default(o: Any) -> Any:
    raise TypeError(f"{type(o).__name__} is not a JSON value")


_encode: Any = (
    _c_make_encoder(
        None, _no_default, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
    if _c_make_encoder is not None
    else None
)


def json_text(obj: Any) -> bytes:
    """``obj`` as compact UTF-8 JSON text (``json.dumps(obj, ensure_ascii=False)`` without
    the spaces)."""
    if _encode is None:
        return json.dumps(obj, ensure_ascii=False, default=_no_default).encode()
    return "".join(_encode(obj, 0)).encode()


@dataclass
class Pending:
    """Messages of one (API, kind, version) for Kafka to judge, as the parts of a batch
    (:func:`kafkagen.oracle.judge_parts`): ``refs[i]`` is (message index, questions
    asked) of the i-th."""

    api: int
    kind: str
    version: int
    parts: list[bytes] = field(default_factory=list)
    size: int = 0
    refs: list[tuple[int, int]] = field(default_factory=list)
    #: The peers' disagreements about these messages.
    peers: list[PeerEntry] = field(default_factory=list)

    def add(
        self,
        index: int,
        data: bytes,
        text: bytes,
        read: bytes,
        written: bytes | None,
        mutants: list[tuple[bytes, bytes]],
    ) -> None:
        """One message: see :func:`kafkagen.oracle.judge_parts`."""
        api, kind, v = self.api, self.kind, self.version
        parts = judge_parts(api, kind, v, data, text, read, written, mutants)
        self.parts += parts
        self.size += sum(map(len, parts))
        self.refs.append((index, 2 + len(mutants)))

    def __len__(self) -> int:
        return len(self.refs)

    def ask(self, oracle: KafkaOracle) -> list[Outcome]:
        """Kafka's answers about these messages, in order."""
        return oracle.call_parts(self.parts, len(self.refs))


_oracles: dict[tuple[str, ...] | None, KafkaOracle] = {}


def process_oracle(classpath: Sequence[str] | None = None) -> KafkaOracle:
    """This process's Kafka oracle JVM, started on first use and kept until the process
    exits (a Spark Python worker runs many tasks: one JVM start and warm-up serves them
    all). ``classpath``: the oracle's jars when this process cannot build them (a Spark
    task gets the driver's); None builds them here."""
    key = None if classpath is None else tuple(classpath)
    oracle = _oracles.get(key)
    if oracle is None:
        if not _oracles:
            atexit.register(close_process_oracles)
        oracle = KafkaOracle(classpath=None if key is None else [Path(p) for p in key])
        oracle.start()
        _oracles[key] = oracle
    return oracle


def close_process_oracles() -> None:
    """Stop this process's oracle JVMs (they also stop when the process dies: their
    input ends)."""
    while _oracles:
        _oracles.popitem()[1].close()


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


def judge(
    pending: Pending,
    answers: list[Outcome],
    records: RecordsPaths,
    fail: Fail,
    cls: type[Message] | None = None,
) -> Verdicts:
    """Count Kafka's judgement of ``pending`` and decide what it did not agree on by
    comparing its outcome with kafkagen's (``cls``: the class under test, default the
    built-in package's), as computed here."""
    cls = cls or kafkagen_class(pending.api, pending.kind)
    paths = records.get((pending.api, pending.kind), ())
    v = pending.version
    out = Verdicts()
    for (index, questions), theirs in zip(pending.refs, answers, strict=True):
        if theirs.status == "unsupported":
            out.skipped += questions
            out.doubted.update((index, role) for role in (READ, WRITE, *range(questions - 2)))
            continue
        out.checks += questions
        for role, kafka, asked in disagreements(theirs):
            if role == WRITE:
                why = _judge_write(cls, v, json.loads(asked), kafka)
                if why:
                    out.doubted.add((index, role))
                    fail(index, f"Kafka writes kafkagen's JSON form: {why}", kafka.data)
                continue
            ours = kafkagen_read(cls, v, asked, paths)
            difference = compare(ours, kafka)
            if difference is None:
                continue
            out.doubted.add((index, role))
            if role >= 0 and explain(cls, v, asked, ours, kafka, paths) is not None:
                out.known += 1
                continue
            what = "reads kafkagen's bytes" if role == READ else f"reads corrupted copy {role}"
            fail(index, f"Kafka {what}: {difference}", asked)
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


__all__ = [
    "BATCH_ITEMS",
    "PeerEntry",
    "READ",
    "WRITE",
    "Pending",
    "Verdicts",
    "close_process_oracles",
    "json_text",
    "judge",
    "process_oracle",
]
