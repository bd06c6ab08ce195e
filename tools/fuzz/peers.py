"""Other Python codecs as oracles: kafka-python 3.x and kio (``--oracle kafka-python,kio``).

A peer answers three kinds of question about a message at a version it has:

- *read*: it reads kafkagen's bytes, all of them, to the same message field by field
  (through the small per-peer mapping of names and types below);
- *write*: it writes back the message it read (kafkagen's message, when the read agreed)
  as kafkagen's bytes;
- *mutant k*: it reads or refuses each corrupted copy of the mutation check as kafkagen
  does (and, with the Kafka oracle, as Kafka does).

APIs and versions a peer lacks count as skipped for it, never as passed; a write whose
read was refused is skipped too. A disagreement is not a kafkagen failure: the fuzz
classifies it against Kafka's answer to the same question (:mod:`kafkagen.fuzz.kafka`)
and :func:`shrink` makes a minimal reproducer of it.
"""

from __future__ import annotations

import datetime
import enum
import faulthandler
import importlib
import io
import os
import pickle
import pkgutil
import re
import signal
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from kafkagen.runtime.message import Message, Struct

from .kafka import READ, WRITE
from .rules import MessageRules

#: Every oracle ``--oracle`` takes, in the order results list them. A peer's questions
#: are coded as the Kafka oracle's (READ, WRITE, a mutant's number), so one answer of
#: Kafka judges both.
PEERS = ("kafka-python", "kio")
ORACLES = ("kafka", *PEERS)
#: Counts kept per peer and (API, kind, version): questions agreed on, disagreed on
#: (findings plus unjudged), skipped; of the disagreements, those Kafka judged to be the
#: peer's (it agreed with kafkagen) and those nobody judged.
PEER_COUNTS = ("agree", "disagree", "skipped", "findings", "unjudged")


def parse_oracles(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"kafka,kio"`` (or a sequence of names) as a tuple in :data:`ORACLES` order."""
    if text is None:
        return ()
    parts = text.split(",") if isinstance(text, str) else list(text)
    names = [p.strip() for p in parts if p.strip()]
    for name in names:
        if name not in ORACLES:
            raise ValueError(f"--oracle: unknown oracle {name!r} (known: {', '.join(ORACLES)})")
        if names.count(name) > 1:
            raise ValueError(f"--oracle: {name!r} is named twice")
    return tuple(o for o in ORACLES if o in names)


def column(peer: str, what: str) -> str:
    """The name of a per-peer count or time in the results, e.g. ``kafka_python_agree``."""
    return f"{peer.replace('-', '_')}_{what}"


class Difference(NamedTuple):
    #: What kind of difference, the same for every message that shows it (the report
    #: groups by it): "refuses: ValueError", "field topics[].name", "writes other bytes".
    kind: str
    #: This message's detail: values, byte offsets.
    detail: str


_ZERO_UUID = uuid.UUID(int=0)
_INT32_MIN = -(1 << 31)


class Refused(Exception):
    """A refusal the peer made in its sandbox, brought back by the exception's name."""

    def __init__(self, name: str, text: str) -> None:
        super().__init__(text)
        self.name = name


class Killed(Exception):
    """Reading the bytes killed the peer's sandbox process; the text says how."""


def _name(e: BaseException) -> str:
    return e.name if isinstance(e, Refused) else type(e).__name__


def refusal(e: BaseException) -> str:
    """A refusal's kind of difference: the exception with its numbers left out, so one
    cause is one group ("refuses: ValueError: N is not a valid ErrorCode")."""
    if isinstance(e, Killed):
        return f"kills the process: {e}"
    return f"refuses: {_name(e)}: " + re.sub(r"-?\d+", "N", str(e))[:80]


def _generic(path: str) -> str:
    return re.sub(r"\[\d+\]", "[]", path)


class Peer:
    """One peer codec: where its classes are, how it reads and writes, and how its
    names and values map onto kafkagen's."""

    name = ""
    #: Whether its reader may kill the process on bad input (then it reads in a child).
    fragile = False
    #: kafkagen attribute -> the peer's, where the peer names a field otherwise.
    renames: dict[str, str] = {}

    def __init__(self) -> None:
        self._classes: dict[tuple[int, str, int], Any] = {}
        #: What the sandbox read ahead: (class id, version, bytes) -> outcome.
        self._ahead: dict[tuple[int, int, bytes], tuple[Any, ...]] = {}
        self._sandbox: Sandbox | None = None

    def message_class(self, api: int, kind: str, version: int) -> Any | None:
        """The peer's class of that API, kind and version, or None: it lacks it."""
        key = (api, kind, version)
        if key not in self._classes:
            self._classes[key] = self._find(api, kind, version)
        return self._classes[key]

    def _find(self, api: int, kind: str, version: int) -> Any | None:
        raise NotImplementedError

    def read(self, cls: Any, version: int, data: bytes) -> Any:
        """The peer's reading of all of ``data``; raises when it refuses (:class:`Killed`
        when reading it killed the sandbox)."""
        ahead = self._ahead.get((id(cls), version, data))
        if ahead is None:
            if not self.fragile:
                return self._read(cls, version, data)
            ahead = self._sandboxed([(cls, version, data)])[0]  # e.g. while shrinking
        if ahead[0] == "ok":
            return ahead[1]
        if ahead[0] == "refused":
            raise Refused(ahead[1], ahead[2])
        raise Killed(ahead[1])

    def _read(self, cls: Any, version: int, data: bytes) -> Any:
        raise NotImplementedError

    def read_ahead(self, questions: list[tuple[Any, int, bytes]]) -> None:
        """Read these (class, version, bytes) in the sandbox, for :meth:`read` to answer
        from; an empty list forgets what was read."""
        if not questions:
            self._ahead = {}
            return
        outcomes = self._sandboxed(questions)
        self._ahead = {
            (id(cls), v, data): o for (cls, v, data), o in zip(questions, outcomes, strict=True)
        }

    def _sandboxed(self, questions: list[tuple[Any, int, bytes]]) -> list[tuple[Any, ...]]:
        if self._sandbox is None:
            self._sandbox = Sandbox(self._read)
        return self._sandbox.read_all(questions)

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def write(self, obj: Any, version: int) -> bytes:
        raise NotImplementedError

    def field_name(self, attr: str, theirs: Any) -> str | None:
        for name in (attr, self.renames.get(attr)):
            if name is not None and hasattr(theirs, name):
                return name
        return None

    def value(self, ours: Any, theirs: Any) -> Any:
        """The peer's scalar as kafkagen would hold it: both peers read a zero UUID
        (Kafka's "no id") as None."""
        if theirs is None and ours == _ZERO_UUID:
            return _ZERO_UUID
        return theirs

    def unknown_tags(self, theirs: Any) -> tuple[tuple[int, bytes], ...] | None:
        """The unknown tagged fields the peer kept, or None when it has no such notion."""
        return None

    def absent_struct(self, tag: int | None, ours: Any, theirs: Any) -> bool:
        """Whether the peer's None for a struct stands for kafkagen's value."""
        return False

    # -- comparing ---------------------------------------------------------------

    def compare(
        self, rules: MessageRules, version: int, ours: Any, theirs: Any
    ) -> Difference | None:
        """The first field where the peer's reading differs from kafkagen's message."""
        return self._walk(rules, 0, version, ours, theirs, "")

    def _walk(
        self, rules: MessageRules, si: int, v: int, ours: Any, theirs: Any, path: str
    ) -> Difference | None:
        for f in rules.structs[si].fields:
            if not f.low <= v <= f.high:
                continue
            here = f"{path}.{f.attr}" if path else f.attr
            name = self.field_name(f.attr, theirs)
            if name is None:
                return Difference(f"no field {_generic(here)}", f"{self.name} has no {here}")
            a, b = getattr(ours, f.attr), getattr(theirs, name)
            if a is None or b is None:
                if a is None and b is None:
                    continue
                if not f.array and f.child < 0 and self.same(a, b):
                    continue
                if self.absent_struct(f.tag, a, b):
                    continue
                return Difference(
                    f"field {_generic(here)}", f"{here}: {b!r:.80}, kafkagen {a!r:.80}"
                )
            if f.array:
                if len(a) != len(b):
                    return Difference(
                        f"field {_generic(here)}",
                        f"{here}: {len(b)} items, kafkagen {len(a)}",
                    )
                for i, (x, y) in enumerate(zip(a, b, strict=True)):
                    item = f"{here}[{i}]"
                    if f.child >= 0:
                        found = self._walk(rules, f.child, v, x, y, item)
                        if found is not None:
                            return found
                    elif not self.same(x, y):
                        return Difference(
                            f"field {_generic(item)}", f"{item}: {y!r:.80}, kafkagen {x!r:.80}"
                        )
            elif f.child >= 0:
                found = self._walk(rules, f.child, v, a, b, here)
                if found is not None:
                    return found
            elif not self.same(a, b):
                return Difference(
                    f"field {_generic(here)}", f"{here}: {b!r:.80}, kafkagen {a!r:.80}"
                )
        tags = self.unknown_tags(theirs)
        # Their order on the wire is no part of the message: compared sorted.
        if tags is not None and tags != tuple(sorted(ours.unknown_tagged_fields)):
            here = f"{path}.unknown_tagged_fields" if path else "unknown_tagged_fields"
            return Difference(
                f"field {_generic(here)}",
                f"{here}: {tags!r:.80}, kafkagen {tuple(ours.unknown_tagged_fields)!r:.80}",
            )
        return None

    def same(self, ours: Any, theirs: Any) -> bool:
        b = self.value(ours, theirs)
        if isinstance(ours, float) and isinstance(b, float) and ours != ours and b != b:
            return True  # NaN: the same bits are checked by the write question
        if isinstance(b, (bytearray, memoryview)):
            b = bytes(b)
        a = bytes(ours) if isinstance(ours, (bytearray, memoryview)) else ours
        return bool(a == b and type(a) is type(b)) or (
            isinstance(a, int) and isinstance(b, int) and not isinstance(b, bool) and a == b
        )


# ---------------------------------------------------------------- kafka-python 3.x


class KafkaPython(Peer):
    """kafka-python 3.x: one class per API and kind built from Kafka's specs, decoded
    with ``cls.decode(data, version=v)`` and written with ``obj.encode(version=v)``."""

    name = "kafka-python"
    renames = {
        # kafka-python reads both authorized-operations bitfields under one name.
        "cluster_authorized_operations": "authorized_operations",
        "topic_authorized_operations": "authorized_operations",
        "generation_id_or_member_epoch": "generation_id",
    }

    def __init__(self) -> None:
        super().__init__()
        self._by_api = kafka_python_classes()

    def _find(self, api: int, kind: str, version: int) -> Any | None:
        cls = self._by_api.get((api, kind))
        if cls is None:
            return None
        low, high = cls.valid_versions
        return cls if low <= version <= high else None

    def _read(self, cls: Any, version: int, data: bytes) -> Any:
        return cls.decode(data, version=version)

    def write(self, obj: Any, version: int) -> bytes:
        # Decoded messages skip __init__: the header slot encode's version setter reads.
        if not hasattr(obj, "_header"):
            obj._header = None
        return bytes(obj.encode(version=version))

    def value(self, ours: Any, theirs: Any) -> Any:
        if isinstance(theirs, (set, frozenset)):  # a bitfield, as its set bits
            bits = sum(1 << b for b in theirs)
            return bits - (1 << 32) if bits >= 1 << 31 else bits
        if theirs is None and ours == _INT32_MIN:  # a bitfield's "not asked for"
            return ours
        return super().value(ours, theirs)

    def absent_struct(self, tag: int | None, ours: Any, theirs: Any) -> bool:
        # A tagged struct at its defaults is not on the wire; kafka-python reads it as None.
        return tag is not None and theirs is None and ours is not None and ours == type(ours)()

    def unknown_tags(self, theirs: Any) -> tuple[tuple[int, bytes], ...] | None:
        tags = getattr(theirs, "unknown_tags", None) or {}
        return tuple(sorted((int(k.lstrip("_")), bytes(v)) for k, v in tags.items()))


def _subclasses(cls: Any) -> Iterator[Any]:
    subs: list[Any] = cls.__subclasses__()  # kafka-python's classes are untyped
    for sub in subs:
        yield sub
        yield from _subclasses(sub)


def kafka_python_classes() -> dict[tuple[int, str], Any]:
    """kafka-python's message classes by (API key, kind)."""
    from kafka.protocol.api_message import ApiMessage  # type: ignore[import-untyped]

    for group in ("admin", "consumer", "metadata", "producer"):
        pkg = importlib.import_module(f"kafka.protocol.{group}")
        for mod in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"kafka.protocol.{group}.{mod.name}")
    found: dict[tuple[int, str], Any] = {}
    for cls in _subclasses(ApiMessage):
        # Versioned wrappers (Foo_v3) share the primary class's schema; keep the primary.
        if getattr(cls, "_class_version", 1) is None and getattr(cls, "_json", None):
            found[(int(cls.API_KEY), str(cls.type))] = cls
    return found


# ---------------------------------------------------------------- kio


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_MS = datetime.timedelta(milliseconds=1)


class Kio(Peer):
    """kio: frozen dataclasses per API, version and kind (``kio.schema.<api>.v<N>``),
    read by its compiled parser and written by its Python serializer. Time fields drop
    kafkagen's ``_ms`` suffix and hold ``timedelta`` or ``datetime``; error codes are an
    enum; a zero UUID and a timestamp of -1 read as None."""

    name = "kio"
    #: Its compiled reader aborts the process on some corrupted lengths (it allocates
    #: the length's worth before checking the bytes are there).
    fragile = True
    renames = {
        "generation_id_or_member_epoch": "generation_id",
        "id": "id_",
        "acceptable_recovery_lag_legacy": "acceptable_recovery_lag",
    }

    def __init__(self) -> None:
        super().__init__()
        from kio.schema.index import api_key_map, schema_name_map
        from kio.serial import entity_reader, entity_writer
        from kio.static.constants import EntityType

        self._names: Any = api_key_map
        self._paths: Any = schema_name_map
        self._kinds: dict[str, Any] = {
            "request": EntityType.request,
            "response": EntityType.response,
        }
        self._reader, self._writer = entity_reader, entity_writer
        self._codecs: dict[Any, tuple[Any, Any]] = {}

    def _find(self, api: int, kind: str, version: int) -> Any | None:
        from pkgutil import resolve_name

        name = self._names.get(api)
        path = self._paths.get(name, {}).get(version, {}).get(self._kinds[kind]) if name else None
        return resolve_name(path) if path else None

    def _codec(self, cls: Any) -> tuple[Any, Any]:
        codec = self._codecs.get(cls)
        if codec is None:
            codec = self._codecs[cls] = (self._reader(cls), self._writer(cls))
        return codec

    def _read(self, cls: Any, version: int, data: bytes) -> Any:
        obj, size = self._codec(cls)[0](data, 0)
        if size != len(data):
            raise ValueError(f"read {size} of {len(data)} bytes")
        return obj

    def write(self, obj: Any, version: int) -> bytes:
        buf = io.BytesIO()
        self._codec(type(obj))[1](buf, obj)
        return buf.getvalue()

    def field_name(self, attr: str, theirs: Any) -> str | None:
        found = super().field_name(attr, theirs)
        if found is None and attr.endswith("_ms") and hasattr(theirs, attr[:-3]):
            return attr[:-3]  # a time field, as timedelta or datetime
        return found

    def value(self, ours: Any, theirs: Any) -> Any:
        if isinstance(theirs, enum.Enum):
            return theirs.value
        if isinstance(theirs, datetime.timedelta):
            return theirs // _MS
        if isinstance(theirs, datetime.datetime):
            return (theirs - _EPOCH) // _MS
        if theirs is None and ours == -1:  # a timestamp's "none"
            return -1
        return super().value(ours, theirs)


_PEER_TYPES: dict[str, Callable[[], Peer]] = {"kafka-python": KafkaPython, "kio": Kio}


def load_peer(name: str) -> Peer:
    if name not in _PEER_TYPES:
        raise ValueError(f"unknown peer {name!r} (known: {', '.join(PEERS)})")
    try:
        return _PEER_TYPES[name]()
    except ImportError as e:
        dist = "kafka-python>=3" if name == "kafka-python" else "kio"
        raise RuntimeError(f"--oracle {name} needs {name}: pip install '{dist}'") from e


# ---------------------------------------------------------------- questions


def ask(
    peer: Peer, rules: MessageRules, cls: Any, version: int, m: Message, data: bytes
) -> tuple[Difference | None, Difference | None]:
    """The read and write questions about kafkagen's message ``m`` and its bytes: each
    None when the peer agrees; the write is :data:`NOT_ASKED` after a refused read."""
    try:
        theirs = peer.read(cls, version, data)
    except Exception as e:
        return Difference(refusal(e), _describe(e)), NOT_ASKED
    read = peer.compare(rules, version, m, theirs)
    try:
        written = peer.write(theirs, version)
    except Exception as e:
        return read, Difference(f"cannot write: {type(e).__name__}", _describe(e))
    if written == data:
        return read, None
    at = first_byte_difference(written, data)
    return read, Difference(
        "writes other bytes",
        f"from byte {at} ({len(written)} bytes, kafkagen {len(data)}): "
        f"{written[at : at + 16].hex()} where kafkagen has {data[at : at + 16].hex()}",
    )


#: The write question was not asked (the peer refused to read the message).
NOT_ASKED = Difference("", "")


def ask_mutant(
    peer: Peer, rules: MessageRules, cls: Any, version: int, ours: Any, bad: bytes
) -> Difference | None:
    """Whether the peer reads or refuses a corrupted copy as kafkagen does: ``ours`` is
    kafkagen's reading of it, or None when kafkagen refuses it."""
    try:
        theirs = peer.read(cls, version, bad)
    except Exception as e:
        if isinstance(e, Killed):
            return Difference(refusal(e), str(e))
        if ours is None:
            return None
        return Difference(
            refusal(e).replace("refuses", "refuses what kafkagen reads", 1), _describe(e)
        )
    if ours is None:
        return Difference("reads what kafkagen refuses", "")
    return peer.compare(rules, version, ours, theirs)


def first_byte_difference(a: bytes, b: bytes) -> int:
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def _describe(e: BaseException) -> str:
    return f"{_name(e)}: {e}"[:300]


# ---------------------------------------------------------------- the sandbox


class _Died(Exception):
    pass


class Sandbox:
    """A forked child process that reads for a peer whose reader may kill its process
    (kio's compiled reader aborts on some corrupted lengths, allocating the length's
    worth before checking the bytes are there). Questions go over a pipe a batch at a
    time; when the child dies the batch is asked again one question at a time in fresh
    children, so the question that kills it is known and the others are answered."""

    def __init__(self, read: Callable[[Any, int, bytes], Any]) -> None:
        self._read = read
        self._pid = 0
        self._to = self._from = -1

    def read_all(self, questions: list[tuple[Any, int, bytes]]) -> list[tuple[Any, ...]]:
        """("ok", object), ("refused", exception name, text) or ("killed", how) each."""
        try:
            return self._call(questions)
        except _Died:
            pass
        outcomes: list[tuple[Any, ...]] = []
        for q in questions:
            try:
                outcomes += self._call([q])
            except _Died as died:
                outcomes.append(("killed", str(died)))
        return outcomes

    def close(self) -> None:
        if self._pid:
            os.close(self._to)  # the child ends at the end of its input
            os.close(self._from)
            os.waitpid(self._pid, 0)
            self._pid = 0

    def _start(self) -> None:
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.close(req_w)
                os.close(res_r)
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's
                faulthandler.disable()  # its dump would go to the parent's stderr
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 2)  # a dying reader's own report is not ours to print
                _serve(req_r, res_w, self._read)
                code = 0
            finally:
                os._exit(code)
        os.close(req_r)
        os.close(res_w)
        self._pid, self._to, self._from = pid, req_w, res_r

    def _call(self, questions: list[tuple[Any, int, bytes]]) -> list[tuple[Any, ...]]:
        if not self._pid:
            self._start()
        try:
            _write_frame(self._to, pickle.dumps(questions))
            reply = _read_frame(self._from)
        except OSError:
            reply = None
        if reply is None:
            os.close(self._to)
            os.close(self._from)
            _, status = os.waitpid(self._pid, 0)
            self._pid = 0
            if os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                raise _Died(f"killed by signal {sig} ({signal.Signals(sig).name})")
            raise _Died(f"exit status {os.waitstatus_to_exitcode(status)}")
        outcomes: list[tuple[Any, ...]] = pickle.loads(reply)
        return outcomes


def _serve(rfd: int, wfd: int, read: Callable[[Any, int, bytes], Any]) -> None:
    while True:
        request = _read_frame(rfd)
        if request is None:
            return
        out: list[tuple[Any, ...]] = []
        for cls, v, data in pickle.loads(request):
            try:
                out.append(("ok", read(cls, v, data)))
            except Exception as e:
                out.append(("refused", type(e).__name__, str(e)[:300]))
        _write_frame(wfd, pickle.dumps(out))


def _write_frame(fd: int, payload: bytes) -> None:
    view = memoryview(len(payload).to_bytes(8, "big") + payload)
    while view:
        view = view[os.write(fd, view) :]


def _read_frame(fd: int) -> bytes | None:
    """One length-prefixed frame, or None at the end of the input."""
    head = _read_exactly(fd, 8)
    if head is None:
        return None
    return _read_exactly(fd, int.from_bytes(head, "big"))


def _read_exactly(fd: int, n: int) -> bytes | None:
    parts, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


# ---------------------------------------------------------------- minimal reproducers


def shrink(
    m: Message, version: int, still: Callable[[Message], bool], budget: int = 200
) -> Message:
    """A smaller message on which ``still`` holds (the same disagreement), made by setting
    fields to their defaults, shortening lists and dropping unknown tagged fields, while
    it keeps holding; at most ``budget`` tries. ``m`` itself is not changed."""
    cls = type(m)
    small = cls.decode(m.encode(version), version)
    left = budget

    def holds() -> bool:
        try:
            small.encode(version)
        except Exception:
            return False
        try:
            return still(small)
        except Exception:
            return False

    def visit(obj: Any) -> None:
        nonlocal left
        defaults = type(obj)()
        for attr in (*obj._fields, "unknown_tagged_fields"):
            value = getattr(obj, attr)
            default = getattr(defaults, attr)
            tries = [] if value == default else [default]
            if isinstance(value, list) and len(value) > 1:
                tries += [type(value)(value[:1]), type(value)(value[: len(value) // 2])]
            for candidate in tries:
                if left <= 0:
                    return
                left -= 1
                setattr(obj, attr, candidate)
                if holds():
                    break
                setattr(obj, attr, value)
            value = getattr(obj, attr)
            if isinstance(value, Struct):
                visit(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, Struct):
                        visit(item)

    visit(small)
    return small


__all__ = [
    "NOT_ASKED",
    "ORACLES",
    "PEERS",
    "PEER_COUNTS",
    "READ",
    "WRITE",
    "Difference",
    "Killed",
    "Refused",
    "Sandbox",
    "KafkaPython",
    "Kio",
    "Peer",
    "ask",
    "ask_mutant",
    "column",
    "kafka_python_classes",
    "load_peer",
    "parse_oracles",
    "shrink",
]
