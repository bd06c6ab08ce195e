"""A dict that can also hand out its keys in sorted order, for cursor pages (seed 001).

Paged listings (groups by id, a group's offsets by topic then partition, ACL resources by
type then name) must find the cursor's position without scanning or sorting everything on
every page: the state objects keep their entries in a ``SortedKeysDict`` and a page costs a
bisect plus its own size.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from typing import Any, Protocol, TypeVar, overload

__all__ = ["SortedKeysDict"]


class _Ordered(Protocol):
    def __lt__(self, other: Any, /) -> bool: ...


K = TypeVar("K", bound=_Ordered)
V = TypeVar("V")
D = TypeVar("D")


class SortedKeysDict(dict[K, V]):
    """A dict whose keys can also be read in sorted order from any position.

    The sorted list is built on the first ordered read and dropped whenever a key is added
    or removed (a new value for a present key keeps it), so a walk over entries that do not
    change sorts once, whatever the number of pages.
    """

    __slots__ = ("_sorted",)

    def __init__(self, items: Iterable[tuple[K, V]] = ()) -> None:
        super().__init__(items)
        self._sorted: list[K] | None = None

    def sorted_keys(self) -> list[K]:
        """The keys in ascending order (do not modify the list)."""
        if self._sorted is None:
            self._sorted = sorted(self)
        return self._sorted

    def keys_from(self, start: Any = None) -> Iterator[K]:
        """The keys in ascending order, from the first one at or after ``start`` (None:
        from the first). ``start`` only needs to compare with the keys, so a tuple prefix
        works for tuple keys."""
        keys = self.sorted_keys()  # a snapshot: later changes build a new list
        i = 0 if start is None else bisect.bisect_left(keys, start)
        while i < len(keys):
            yield keys[i]
            i += 1

    # Everything that adds or removes a key drops the sorted list.

    def __setitem__(self, key: K, value: V) -> None:
        if self._sorted is not None and key not in self:
            self._sorted = None
        super().__setitem__(key, value)

    def __delitem__(self, key: K) -> None:
        super().__delitem__(key)
        self._sorted = None

    @overload
    def pop(self, key: K, /) -> V: ...
    @overload
    def pop(self, key: K, default: V, /) -> V: ...
    @overload
    def pop(self, key: K, default: D, /) -> V | D: ...
    def pop(self, key: K, *default: Any) -> Any:
        if key in self:
            self._sorted = None
        return super().pop(key, *default)

    def popitem(self) -> tuple[K, V]:
        self._sorted = None
        return super().popitem()

    def clear(self) -> None:
        self._sorted = None
        super().clear()

    def setdefault(self, key: K, default: V, /) -> V:
        if key not in self:
            self._sorted = None
        return super().setdefault(key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._sorted = None
        super().update(*args, **kwargs)

    def __ior__(self, other: Any) -> SortedKeysDict[K, V]:  # type: ignore[override,misc]
        self._sorted = None
        super().__ior__(other)
        return self
