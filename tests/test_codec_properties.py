"""Properties of every generated codec at every version, checked with Hypothesis.

The messages come from ``kafkagen.fuzz.strategies``, which drives the generated random
builders with Hypothesis draws, so a failure shrinks to a small message. There is one test
per (API, kind) (and per header or data spec); it runs a small Hypothesis search at each
version in turn and, on failure, notes the version. ``KAFKAGEN_EXAMPLES`` sets the examples
per version (default 5); the Hypothesis profile (``dev`` or, with ``CI`` set,
derandomized ``ci``) comes from ``conftest.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy
from kafkagen.fuzz.strategies import any_message, message_strategy
from kafkagen.generated import APIS, OTHER_TYPES, message_type, other_type
from kafkagen.runtime.errors import DecodeError, UnsupportedVersionError
from kafkagen.runtime.message import Message

EXAMPLES = int(os.environ.get("KAFKAGEN_EXAMPLES", "5"))


def codec_classes() -> list[type[Message]]:
    classes = [message_type(key, kind) for key in sorted(APIS) for kind in ("request", "response")]
    return classes + [other_type(name) for name in sorted(OTHER_TYPES)]


CLASSES = codec_classes()
IDS = [cls.__name__ for cls in CLASSES]
FLEXIBLE = [cls for cls in CLASSES if cls.FIRST_FLEXIBLE_VERSION is not None]


def all_versions(cls: type[Message]) -> range:
    return range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1)


def flexible_versions(cls: type[Message]) -> range:
    first = cls.FIRST_FLEXIBLE_VERSION
    return range(0) if first is None else range(first, cls.HIGHEST_VERSION + 1)


def at_each_version(
    cls: type[Message],
    versions: range,
    strategy: Callable[[int], SearchStrategy[Any]],
    check: Callable[[Any, int], None],
    examples: int = EXAMPLES,
) -> None:
    """Run ``check(example, version)`` over a Hypothesis search at each version.

    Each version gets its own search (and its own example-database key), so a failure
    shrinks within one version and its report names it.
    """
    for version in versions:
        run = _bind(check, version, f"{check.__name__}__{cls.__name__}_v{version}")
        test = settings(max_examples=examples)(given(strategy(version))(run))
        try:
            test()
        except BaseException as e:
            e.add_note(f"while checking {cls.__name__} v{version}")
            raise


def _bind(check: Callable[[Any, int], None], version: int, name: str) -> Callable[[Any], None]:
    def run(example: Any) -> None:
        check(example, version)

    run.__name__ = run.__qualname__ = name  # Hypothesis keys its example database on it
    return run


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_binary_round_trip(cls: type[Message]) -> None:
    """decode(encode(m)) == m, and encoding that again gives the same bytes."""

    def check(m: Message, version: int) -> None:
        wire = m.encode(version)
        note(f"wire: {wire.hex()}")
        decoded = cls.decode(wire, version)
        assert decoded == m
        assert decoded.encode(version) == wire

    at_each_version(cls, all_versions(cls), lambda v: message_strategy(cls, v), check)


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_json_round_trip(cls: type[Message]) -> None:
    """to_json is plain JSON, and from_json of it (after json.dumps/loads) gives m back.

    Kafka's JSON form has no place for unknown tagged fields, so the messages have none.
    """

    def check(m: Message, version: int) -> None:
        text = json.dumps(m.to_json(version), allow_nan=False)
        note(f"json: {text}")
        again = cls.from_json(json.loads(text), version)
        assert again == m
        assert again.encode(version) == m.encode(version)

    at_each_version(
        cls, all_versions(cls), lambda v: message_strategy(cls, v, max_unknown_tags=0), check
    )


@pytest.mark.parametrize("cls", FLEXIBLE, ids=lambda cls: cls.__name__)
def test_unknown_tagged_fields_survive_a_round_trip(cls: type[Message]) -> None:
    """At flexible versions, every struct here carries unknown tagged fields; all of them
    come back from decode, and encoding again gives the same bytes."""
    versions = flexible_versions(cls)

    def check(m: Message, version: int) -> None:
        assert m.unknown_tagged_fields
        wire = m.encode(version)
        decoded = cls.decode(wire, version)
        assert decoded.unknown_tagged_fields == m.unknown_tagged_fields
        assert decoded == m
        assert decoded.encode(version) == wire

    at_each_version(cls, versions, lambda v: message_strategy(cls, v, min_unknown_tags=1), check)


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_encoding_at_another_version_is_decodable_or_unsupported(cls: type[Message]) -> None:
    """A message valid at one version, written at any other version, either raises
    UnsupportedVersionError (it holds something that version cannot carry) or gives bytes
    that decode at that version and re-encode identically."""

    def check(m: Message, version: int) -> None:
        for other in all_versions(cls):
            try:
                wire = m.encode(other)
            except UnsupportedVersionError:
                continue
            note(f"v{other}: {wire.hex()}")
            assert cls.decode(wire, other).encode(other) == wire

    at_each_version(cls, all_versions(cls), lambda v: message_strategy(cls, v), check)


# --------------------------------------------------------------------------- mutations

# Length prefixes and varints that break decoders: negative, null, huge, over-long.
_LENGTHS = [
    bytes.fromhex(h)
    for h in (
        "fffe",
        "ffff",
        "7fff",
        "8000",
        "fffffffb",
        "ffffffff",
        "7fffffff",
        "00",
        "7f",
        "ff7f",
        "ffffffff0f",
        "ffffffff7f",
        "808080808001",
    )
]


@st.composite
def mutation_of(draw: st.DrawFn, wire: bytes) -> bytes:
    """``wire`` changed in one to three places: a bit flipped, cut short, bytes inserted or
    deleted, or a length-like value written over whatever was there."""
    data = bytearray(wire)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "length"]))
        pos = draw(st.integers(0, len(data)))
        if kind == "flip" and pos < len(data):
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[pos:]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=6))
        elif kind == "delete":
            del data[pos : pos + draw(st.integers(1, 4))]
        elif kind == "length":
            patch = draw(st.sampled_from(_LENGTHS))
            data[pos : pos + len(patch)] = patch
    return bytes(data)


@st.composite
def message_and_mutants(draw: st.DrawFn, cls: type[Message], version: int) -> list[bytes]:
    wire = draw(message_strategy(cls, version)).encode(version)
    return [draw(mutation_of(wire)) for _ in range(4)]


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_mutated_encodings_decode_or_raise_decode_error(cls: type[Message]) -> None:
    """Corrupt bytes never raise anything but DecodeError; what decodes re-encodes."""

    def check(mutants: list[bytes], version: int) -> None:
        for mutant in mutants:
            note(f"mutant: {mutant.hex()}")
            try:
                m = cls.decode(mutant, version)
            except DecodeError as e:
                assert (e.message, e.version) == (cls.__name__, version)
                assert 0 <= e.offset <= len(mutant)
                continue
            m.encode(version)

    at_each_version(cls, all_versions(cls), lambda v: message_and_mutants(cls, v), check)


# --------------------------------------------------------------------------- any message


@settings(max_examples=200)
@given(any_message())
def test_any_message_round_trips_from_every_buffer_type(
    case: tuple[type[Message], int, Message],
) -> None:
    cls, version, m = case
    wire = m.encode(version)
    for data in (wire, bytearray(wire), memoryview(b"\x00" + wire)[1:]):
        assert cls.decode(data, version) == m


def test_message_strategy_rejects_a_version_the_message_lacks() -> None:
    with pytest.raises(UnsupportedVersionError):
        message_strategy(message_type(3, "request"), 99)
