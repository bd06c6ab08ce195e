"""Hypothesis strategies for every generated message and version.

The fuzz's random builders (:mod:`kafkagen.fuzz.builders`) ask a generator object for one
value per field (see :mod:`kafkagen.fuzz.randomgen`). :class:`HypothesisGen` answers those calls
with ``draw``\\ s from Hypothesis strategies instead of a seeded PRNG, so the same builders
produce Hypothesis examples, and a failing example shrinks field by field: integers toward
0, strings and arrays toward empty, nullable values toward present, tagged fields toward
absent.

Hypothesis is a development dependency: only this module imports it, and it lives with the
fuzz rather than in the runtime every user imports.

    from hypothesis import given
    from kafkagen.generated.metadata import MetadataResponse
    from kafkagen.fuzz.strategies import any_message, message_strategy

    @given(message_strategy(MetadataResponse, 12))
    def test_round_trip(m): ...

    @given(any_message())
    def test_any(case):
        cls, version, m = case
"""

from __future__ import annotations

import builtins
import functools
from types import ModuleType
from typing import Any, TypeVar
from uuid import UUID

from hypothesis import strategies as st
from hypothesis.strategies import DrawFn, SearchStrategy
from kafkagen.runtime.errors import UnsupportedVersionError
from kafkagen.runtime.message import Message
from kafkagen.runtime.wire import RawTags, uuid_from_bytes

from .builders import builder
from .randomgen import INT_RANGES

M = TypeVar("M", bound=Message)

#: Defaults for the size limits: small enough that even a Fetch or Metadata response takes
#: only milliseconds to draw, large enough that strings and bytes sometimes need two-byte
#: length varints.
DEFAULT_BUDGET = 24
DEFAULT_MAX_COUNT = 3
DEFAULT_MAX_STR = 40
DEFAULT_MAX_BYTES = 160
DEFAULT_MAX_UNKNOWN_TAGS = 3


def _int_strategy(kind: str) -> SearchStrategy[int]:
    lo, hi = INT_RANGES[kind]
    # Edges first: one_of shrinks toward its first branch, and sampled_from toward its first
    # element, so a failing integer shrinks to 0 when it can.
    edges = [0, 1, hi, lo, hi - 1, lo + 1]
    if lo < 0:
        edges.insert(1, -1)
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi))


_INTS: dict[str, SearchStrategy[int]] = {kind: _int_strategy(kind) for kind in INT_RANGES}
_FLOATS = st.floats(allow_nan=False, allow_infinity=False)
_BOOLS = st.booleans()
_UUIDS = st.binary(min_size=16, max_size=16).map(uuid_from_bytes)
_QUARTER = st.integers(0, 3)


# Strategies are built once and reused: building and validating a strategy costs more
# than drawing from it.
@functools.cache
def _counts(limit: int) -> SearchStrategy[int]:
    return st.integers(0, limit)


@functools.cache
def _unknown_tags(first_free: int, min_size: int, max_size: int) -> SearchStrategy[RawTags]:
    tags = st.one_of(
        st.integers(first_free, first_free + 20),
        # Mostly past 127: tags that take two or three varint bytes.
        st.integers(first_free + 100, first_free + 20_000),
    )
    raw = st.lists(
        st.tuples(tags, st.binary(max_size=16)),
        min_size=min_size,
        max_size=max_size,
        unique_by=lambda t: t[0],
    )
    return raw.map(lambda found: tuple(sorted(found)))


@functools.cache
def _texts(max_size: int) -> SearchStrategy[str]:
    # st.text() never yields surrogates, so every string encodes as UTF-8.
    return st.text(max_size=max_size)


@functools.cache
def _binaries(max_size: int) -> SearchStrategy[bytes]:
    return st.binary(max_size=max_size)


class HypothesisGen:
    """The generator interface of :class:`kafkagen.fuzz.randomgen.RandomGen`, answered
    from Hypothesis draws.

    ``budget`` caps the array items one message may hold in all (nested arrays included);
    ``max_count`` caps a single array.
    """

    __slots__ = (
        "draw",
        "budget",
        "max_count",
        "_str",
        "_bytes",
        "_max_unknown_tags",
        "_min_unknown_tags",
    )

    def __init__(
        self,
        draw: DrawFn,
        budget: builtins.int = DEFAULT_BUDGET,
        *,
        max_count: builtins.int = DEFAULT_MAX_COUNT,
        max_str: builtins.int = DEFAULT_MAX_STR,
        max_bytes: builtins.int = DEFAULT_MAX_BYTES,
        max_unknown_tags: builtins.int = DEFAULT_MAX_UNKNOWN_TAGS,
        min_unknown_tags: builtins.int = 0,
    ) -> None:
        self.draw = draw
        self.budget = budget
        self.max_count = max_count
        self._str = _texts(max_str)
        self._bytes = _binaries(max_bytes)
        self._max_unknown_tags = max_unknown_tags
        self._min_unknown_tags = min(min_unknown_tags, max_unknown_tags)

    def reset(self, budget: builtins.int = DEFAULT_BUDGET) -> None:
        self.budget = budget

    def int(self, kind: builtins.str) -> builtins.int:
        return self.draw(_INTS[kind])

    def float(self) -> builtins.float:
        return self.draw(_FLOATS)

    def bool(self) -> builtins.bool:
        return self.draw(_BOOLS)

    def is_null(self) -> builtins.bool:
        """Whether a nullable value is null this time (shrinks toward not null)."""
        return self.draw(_BOOLS)

    def present(self) -> builtins.bool:
        """Whether a tagged field carries a value this time (shrinks toward absent)."""
        return self.draw(_BOOLS)

    def str(self) -> builtins.str:
        return self.draw(self._str)

    def bytes(self) -> builtins.bytes:
        return self.draw(self._bytes)

    def uuid(self) -> UUID:
        return self.draw(_UUIDS)

    def count(self) -> builtins.int:
        """An array length, at most ``max_count`` and never past the remaining budget."""
        limit = min(self.max_count, self.budget)
        if limit <= 0:
            return 0
        n = self.draw(_counts(limit))
        self.budget -= n
        return n

    def unknown_tags(self, first_free: builtins.int) -> RawTags:
        """Tagged fields no reader knows (tags from ``first_free`` on), in tag order.

        Unless ``min_unknown_tags`` asks for some in every struct, most structs get none:
        one draw in four asks for any (and shrinks toward none).
        """
        if self._min_unknown_tags > 0:
            return self.draw(
                _unknown_tags(first_free, self._min_unknown_tags, self._max_unknown_tags)
            )
        if self._max_unknown_tags <= 0 or self.draw(_QUARTER) != 3:
            return ()
        return self.draw(_unknown_tags(first_free, 1, self._max_unknown_tags))


def _check_version(cls: type[Message], version: int) -> None:
    if version not in cls._encoders:
        raise UnsupportedVersionError(
            f"{cls.__name__} has no version {version} "
            f"(supported {cls.LOWEST_VERSION}-{cls.HIGHEST_VERSION})"
        )


_STRATEGIES: dict[tuple[Any, ...], SearchStrategy[Any]] = {}


def message_strategy(
    cls: type[M],
    version: int,
    *,
    budget: int = DEFAULT_BUDGET,
    max_count: int = DEFAULT_MAX_COUNT,
    max_str: int = DEFAULT_MAX_STR,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_unknown_tags: int = DEFAULT_MAX_UNKNOWN_TAGS,
    min_unknown_tags: int = 0,
) -> SearchStrategy[M]:
    """Messages of ``cls`` valid at ``version``: every field present there is drawn, every
    other field holds its default, so ``cls.decode(m.encode(version), version) == m``.

    The limits bound the message: ``budget`` array items in all, ``max_count`` per array,
    ``max_str`` characters per string, ``max_bytes`` per bytes or records value, and
    ``min_unknown_tags``..``max_unknown_tags`` unknown tagged fields per struct at flexible
    versions (``max_unknown_tags=0`` for none, ``min_unknown_tags=1`` for some everywhere).
    Raises :class:`UnsupportedVersionError` for a version ``cls`` does not have.
    """
    key = (cls, version, budget, max_count, max_str, max_bytes, max_unknown_tags, min_unknown_tags)
    cached: SearchStrategy[M] | None = _STRATEGIES.get(key)
    if cached is not None:
        return cached
    _check_version(cls, version)

    @st.composite
    def build(draw: DrawFn) -> M:
        gen = HypothesisGen(
            draw,
            budget,
            max_count=max_count,
            max_str=max_str,
            max_bytes=max_bytes,
            max_unknown_tags=max_unknown_tags,
            min_unknown_tags=min_unknown_tags,
        )
        built: M = builder(cls)(gen, version)
        return built

    strategy: SearchStrategy[M] = build()
    _STRATEGIES[key] = strategy
    return strategy


def _default_package() -> ModuleType:
    # Imported here: the runtime does not depend on the generated package.
    import kafkagen.generated

    return kafkagen.generated


def message_versions(package: ModuleType | None = None) -> list[tuple[type[Message], int]]:
    """Every (class, version) of a generated package: each API's request and response,
    then the headers and data specs, in API-key order."""
    pkg = package if package is not None else _default_package()
    classes: list[type[Message]] = []
    for api_key in sorted(pkg.APIS):
        classes.append(pkg.message_type(api_key, "request"))
        classes.append(pkg.message_type(api_key, "response"))
    for name in sorted(pkg.OTHER_TYPES):
        classes.append(pkg.other_type(name))
    return [(cls, v) for cls in classes for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1)]


def any_message(
    package: ModuleType | None = None, **limits: int
) -> SearchStrategy[tuple[type[Message], int, Message]]:
    """``(cls, version, message)`` for any message and version of a generated package
    (default: ``kafkagen.generated``); ``limits`` are those of :func:`message_strategy`."""
    pairs = message_versions(package)

    def one(pair: tuple[type[Message], int]) -> SearchStrategy[tuple[type[Message], int, Message]]:
        cls, version = pair
        return message_strategy(cls, version, **limits).map(lambda m: (cls, version, m))

    return st.sampled_from(pairs).flatmap(one)


__all__ = [
    "DEFAULT_BUDGET",
    "HypothesisGen",
    "any_message",
    "message_strategy",
    "message_versions",
]
