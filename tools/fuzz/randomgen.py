"""Seeded random values for every wire type, biased toward the edges that break codecs.

The fuzz's random builders (:mod:`kafkagen.fuzz.builders`) call one method per field; a
:class:`RandomGen` answers from a seeded PRNG (the same seed gives the same messages on
any machine), and ``kafkagen.fuzz.strategies`` answers the same calls from Hypothesis
draws, so both share the builders. The compiled builders (``_builders.c``) mirror these
methods draw for draw and read their tables from this module.

Volume fuzzing calls these methods tens of millions of times, so each draws as little as
it can: one ``random()`` both picks the branch and, rescaled, the value inside it; strings
and bytes come whole from one ``getrandbits`` (characters through a translation table),
never a character at a time. Every full integer range is a power of two wide, so
``getrandbits`` gives it exactly.
"""

from __future__ import annotations

import builtins
import random as _random
from uuid import UUID

from kafkagen.generator.types import INT_RANGES
from kafkagen.runtime.wire import RawTags, uuid_from_bytes

# Text that exercises the UTF-8 paths: 2-, 3- and 4-byte characters, controls, NUL.
_ALPHABETS = (
    "abcdefghijklmnopqrstuvwxyz-_.0123456789",
    "ABCxyz019 \t\n\x00\x7f",
    "éüßñøå",
    "中文字符テスト한국어",
    "😀🚀🎉🔥",
)
_EDGE_FLOATS = (0.0, -0.0, 1.0, -1.5, 5e-324, 1e300, -1e300, 2.0**53 + 1)

# Per alphabet, random byte b -> alphabet[b % len]: bytes.translate for the ASCII ones
# (then a plain ASCII decode), a str.translate mapping for the others.
_ASCII_TABLES = tuple(
    bytes(ord(a[b % len(a)]) for b in range(256)) if a.isascii() else None for a in _ALPHABETS
)
_TEXT_TABLES = tuple({b: a[b % len(a)] for b in range(256)} for a in _ALPHABETS)
#: Alphabet selector byte: below this the plain alphabet (70%), otherwise any of them.
_PLAIN_BELOW = 179

# kind -> (the six edges, small-range low, small-range width / 0.3, full-range low, its
# bits). Edges: both ends, 0, -1 (or 1 when unsigned), and one step inside each end.
_INTS = {
    kind: (
        (lo, hi, 0, -1 if lo < 0 else 1, lo + 1, hi - 1),
        max(lo, -128),
        (min(hi, 1000) - max(lo, -128) + 1) / 0.3,
        lo,
        (hi - lo + 1).bit_length() - 1,
    )
    for kind, (lo, hi) in INT_RANGES.items()
}
_ALPHABET_COUNT = len(_ALPHABETS)
#: The built-in int, named apart from the method ``RandomGen.int`` so neither reader nor
#: type checker confuses them (``builtins.int`` costs an attribute lookup per call).
_trunc = int
_ZERO_UUID = UUID(int=0)


class RandomGen:
    """Random field values from a seeded PRNG.

    The odds: integers 30% an edge value, 30% small (-128..1000), 40% anywhere in range;
    nullable values null 15% of the time; tagged fields present half the time; strings 10%
    empty, 75% 1-12 characters, 15% 13-300 (long enough for two-byte length varints), 30%
    of them over multi-byte alphabets; bytes 15% empty, 70% 1-16, 15% 17-400; arrays 20%
    empty, 77% 1-4 items, 3% 127-140 (a two-byte varint count); 10% of flexible structs
    carry 1-3 unknown tagged fields.

    ``budget`` caps the array items one message may hold in all, so nested arrays stay
    bounded while single arrays still reach lengths that need multi-byte length prefixes.
    ``unknown`` counts the non-empty unknown tag sets drawn since the last :meth:`reset`,
    so a caller knows without a walk whether a message carries any.
    """

    __slots__ = ("rng", "budget", "unknown")

    def __init__(self, seed: builtins.int | _random.Random = 0, budget: builtins.int = 400) -> None:
        self.rng = seed if isinstance(seed, _random.Random) else _random.Random(seed)
        self.budget = budget
        self.unknown = 0

    def reset(self, budget: builtins.int = 400) -> None:
        """Start a new message: a fresh array budget and unknown-tag count."""
        self.budget = budget
        self.unknown = 0

    def int(self, kind: str) -> builtins.int:
        edges, small_lo, small_scale, lo, bits = _INTS[kind]
        rng = self.rng
        r = rng.random()
        if r < 0.3:
            return edges[_trunc(r * 20.0)]  # r / 0.3 * 6
        if r < 0.6:
            # r is uniform on [0.3, 0.6): rescaled, it is the small value's draw too.
            return small_lo + _trunc((r - 0.3) * small_scale)
        return lo + rng.getrandbits(bits)

    def float(self) -> builtins.float:
        rng = self.rng
        r = rng.random()
        if r < 0.3:
            return _EDGE_FLOATS[_trunc(r * (len(_EDGE_FLOATS) / 0.3))]
        return rng.uniform(-1e12, 1e12)

    def bool(self) -> builtins.bool:
        return self.rng.random() < 0.5

    def is_null(self) -> builtins.bool:
        """Whether a nullable value is null this time."""
        return self.rng.random() < 0.15

    def present(self) -> builtins.bool:
        """Whether a tagged field carries a value this time."""
        return self.rng.random() < 0.5

    def str(self) -> builtins.str:
        rng = self.rng
        r = rng.random()
        if r < 0.1:
            return ""
        if r < 0.85:
            n = 1 + _trunc((r - 0.1) * 16.0)  # (r - 0.1) / 0.75 * 12
        else:
            n = 13 + _trunc((r - 0.85) * 1920.0)  # (r - 0.85) / 0.15 * 288
        # One draw: the text's bytes and, in the low byte, which alphabet.
        x = rng.getrandbits(8 * n + 8)
        pick = x & 0xFF
        a = 0 if pick < _PLAIN_BELOW else pick % _ALPHABET_COUNT
        raw = (x >> 8).to_bytes(n, "little")
        table = _ASCII_TABLES[a]
        if table is not None:
            return raw.translate(table).decode("ascii")
        return raw.decode("latin-1").translate(_TEXT_TABLES[a])

    def bytes(self) -> builtins.bytes:
        rng = self.rng
        r = rng.random()
        if r < 0.15:
            return b""
        if r < 0.85:
            n = 1 + _trunc((r - 0.15) * (16 / 0.7))
        else:
            n = 17 + _trunc((r - 0.85) * (384 / 0.15))
        return rng.getrandbits(8 * n).to_bytes(n, "little")

    def uuid(self) -> UUID:
        rng = self.rng
        if rng.random() < 0.1:
            return _ZERO_UUID
        return uuid_from_bytes(rng.getrandbits(128).to_bytes(16, "little"))

    def count(self) -> builtins.int:
        """An array length: mostly small, sometimes past 127 (a two-byte varint)."""
        r = self.rng.random()
        budget = self.budget
        if r < 0.2 or budget <= 0:
            return 0
        if r < 0.97:
            n = 1 + _trunc((r - 0.2) * (4 / 0.77))
        else:
            n = 127 + _trunc((r - 0.97) * (14 / 0.03))
        if n > budget:
            n = budget
        self.budget = budget - n
        return n

    def unknown_tags(self, first_free: builtins.int) -> RawTags:
        """Tagged fields no reader knows (tags from ``first_free`` on), in tag order."""
        rng = self.rng
        if rng.random() >= 0.1:
            return ()
        self.unknown += 1
        k = 1 + _trunc(rng.random() * 3)
        # k distinct tags among the next 40, by rejection over 6-bit draws: cheap, and
        # simple enough for the compiled builder to mirror exactly.
        picked: list[builtins.int] = []
        while len(picked) < k:
            t = rng.getrandbits(6)
            if t < 40 and t not in picked:
                picked.append(t)
        out = []
        for t in sorted(picked):
            n = _trunc(rng.random() * 21)
            out.append((first_free + t, rng.getrandbits(8 * n).to_bytes(n, "little")))
        return tuple(out)


__all__ = ["INT_RANGES", "RandomGen"]
