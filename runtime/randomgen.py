"""Seeded random values for every wire type, biased toward the edges that break codecs.

The generated ``random(version, gen)`` builders call one method per field; a
:class:`RandomGen` answers from a seeded PRNG (the same seed gives the same messages on
any machine), and ``kafkagen.runtime.strategies`` answers the same calls from Hypothesis
draws, so both share the builders.
"""

from __future__ import annotations

import builtins
import random as _random
from typing import Any
from uuid import UUID

from .wire import RawTags, uuid_from_bytes

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

# Text that exercises the UTF-8 paths: 2-, 3- and 4-byte characters, controls, NUL.
_ALPHABETS = (
    "abcdefghijklmnopqrstuvwxyz-_.0123456789",
    "ABCxyz019 \t\n\x00\x7f",
    "éüßñøå",
    "中文字符テスト한국어",
    "😀🚀🎉🔥",
)
_EDGE_FLOATS = (0.0, -0.0, 1.0, -1.5, 5e-324, 1e300, -1e300, 2.0**53 + 1)


class RandomGen:
    """Random field values from a seeded PRNG.

    ``budget`` caps the array items one message may hold in all, so nested arrays stay
    bounded while single arrays still reach lengths that need multi-byte length prefixes.
    """

    __slots__ = ("rng", "budget", "_edges")

    def __init__(self, seed: builtins.int | _random.Random = 0, budget: builtins.int = 400) -> None:
        self.rng = seed if isinstance(seed, _random.Random) else _random.Random(seed)
        self.budget = budget
        self._edges = {
            name: (lo, hi, 0, -1 if lo < 0 else 1, lo + 1, hi - 1)
            for name, (lo, hi) in INT_RANGES.items()
        }

    def reset(self, budget: builtins.int = 400) -> None:
        self.budget = budget

    def int(self, kind: str) -> builtins.int:
        r = self.rng.random()
        lo, hi = INT_RANGES[kind]
        if r < 0.3:
            return self.rng.choice(self._edges[kind])
        if r < 0.6:
            return self.rng.randint(max(lo, -128), min(hi, 1000))
        return self.rng.randint(lo, hi)

    def float(self) -> builtins.float:
        if self.rng.random() < 0.3:
            return self.rng.choice(_EDGE_FLOATS)
        return self.rng.uniform(-1e12, 1e12)

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
        n = rng.randint(1, 12) if r < 0.85 else rng.randint(13, 300)
        alphabet = _ALPHABETS[0] if rng.random() < 0.7 else rng.choice(_ALPHABETS)
        return "".join(rng.choices(alphabet, k=n))

    def bytes(self) -> builtins.bytes:
        rng = self.rng
        r = rng.random()
        if r < 0.15:
            return b""
        n = rng.randint(1, 16) if r < 0.85 else rng.randint(17, 400)
        return rng.randbytes(n)

    def uuid(self) -> UUID:
        if self.rng.random() < 0.1:
            return UUID(int=0)
        return uuid_from_bytes(self.rng.randbytes(16))

    def count(self) -> builtins.int:
        """An array length: mostly small, sometimes past 127 (a two-byte varint)."""
        rng = self.rng
        r = rng.random()
        if r < 0.2 or self.budget <= 0:
            n = 0
        elif r < 0.97:
            n = rng.randint(1, 4)
        else:
            n = rng.randint(127, 140)
        n = min(n, max(self.budget, 0))
        self.budget -= n
        return n

    def unknown_tags(self, first_free: builtins.int) -> RawTags:
        """Tagged fields no reader knows (tags from ``first_free`` on), in tag order."""
        rng = self.rng
        if rng.random() < 0.9:
            return ()
        tags = sorted(rng.sample(range(first_free, first_free + 40), rng.randint(1, 3)))
        return tuple((t, rng.randbytes(rng.randint(0, 20))) for t in tags)

    def records(self) -> builtins.bytes:
        return self.bytes()

    def items(self, make: Any) -> list[Any]:
        return [make() for _ in range(self.count())]


__all__ = ["INT_RANGES", "RandomGen"]
