"""Version ranges as Kafka's specs write them: ``N``, ``N-M``, ``N+`` and ``none``."""

from __future__ import annotations

import re
from dataclasses import dataclass

_RANGE = re.compile(r"^\s*(\d+)\s*(?:(\+)|-\s*(\d+))?\s*$")

#: Highest version an open-ended range (``N+``) reaches; Kafka uses Short.MAX_VALUE.
OPEN_END = 0x7FFF


@dataclass(frozen=True, slots=True)
class Versions:
    """A closed range of versions ``lowest..highest``; empty when lowest > highest."""

    lowest: int
    highest: int

    @classmethod
    def parse(cls, text: str) -> Versions:
        """Parse ``N``, ``N-M``, ``N+`` or ``none``; raise ValueError on anything else."""
        if not isinstance(text, str):
            raise ValueError(f"a version range must be a string, got {text!r}")
        if text.strip() == "none":
            return NONE
        m = _RANGE.match(text)
        if m is None:
            raise ValueError(f"not a version range (N, N-M, N+ or none): {text!r}")
        low = int(m.group(1))
        if m.group(2):
            high = OPEN_END
        elif m.group(3) is not None:
            high = int(m.group(3))
        else:
            high = low
        if low > OPEN_END or high > OPEN_END:
            raise ValueError(f"version out of range 0-{OPEN_END}: {text!r}")
        if high < low:
            raise ValueError(f"range ends before it starts: {text!r}")
        return cls(low, high)

    @property
    def empty(self) -> bool:
        return self.lowest > self.highest

    @property
    def open_ended(self) -> bool:
        return not self.empty and self.highest == OPEN_END

    def __contains__(self, item: object) -> bool:
        if isinstance(item, int):
            return self.lowest <= item <= self.highest
        if isinstance(item, Versions):
            return item.empty or (self.lowest <= item.lowest and item.highest <= self.highest)
        return False

    def intersect(self, other: Versions) -> Versions:
        low, high = max(self.lowest, other.lowest), min(self.highest, other.highest)
        return Versions(low, high) if low <= high else NONE

    def subtract(self, other: Versions) -> Versions | None:
        """This range minus ``other``; None when the result would not be one range."""
        if self.empty or other.empty or self.intersect(other).empty:
            return self
        if other.lowest <= self.lowest and self.highest <= other.highest:
            return NONE
        if other.lowest <= self.lowest:
            return Versions(other.highest + 1, self.highest)
        if self.highest <= other.highest:
            return Versions(self.lowest, other.lowest - 1)
        return None

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(range(self.lowest, self.highest + 1))

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.highest == OPEN_END:
            return f"{self.lowest}+"
        if self.lowest == self.highest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"


NONE = Versions(1, 0)
ALL = Versions(0, OPEN_END)
