"""SortedKeysDict: the sorted keys cursor pages start from follow every added and removed key."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kafkagen.runtime.broker.sorted_keys import SortedKeysDict


def test_keys_from_starts_at_the_first_key_at_or_after_the_start() -> None:
    d = SortedKeysDict([("b", 2), ("d", 4), ("a", 1)])
    assert list(d.keys_from()) == ["a", "b", "d"]
    assert list(d.keys_from("b")) == ["b", "d"]
    assert list(d.keys_from("c")) == ["d"]
    assert list(d.keys_from("e")) == []


def test_a_tuple_prefix_starts_at_the_first_key_it_begins() -> None:
    d = SortedKeysDict([((2, "x", 4), 1), ((2, "x", 3), 2), ((1, "y", 3), 3)])
    assert list(d.keys_from((2, "x"))) == [(2, "x", 3), (2, "x", 4)]


def _set(d: SortedKeysDict[str, int]) -> None:
    d["c"] = 3


def _setdefault(d: SortedKeysDict[str, int]) -> None:
    d.setdefault("c", 3)


def _update(d: SortedKeysDict[str, int]) -> None:
    d.update({"c": 3})


def _ior(d: SortedKeysDict[str, int]) -> None:
    d |= {"c": 3}


def _del(d: SortedKeysDict[str, int]) -> None:
    del d["b"]


def _pop(d: SortedKeysDict[str, int]) -> None:
    d.pop("b")


def _popitem(d: SortedKeysDict[str, int]) -> None:
    d.popitem()


def _clear(d: SortedKeysDict[str, int]) -> None:
    d.clear()


@pytest.mark.parametrize("change", [_set, _setdefault, _update, _ior, _del, _pop, _popitem, _clear])
def test_every_change_of_the_keys_shows_in_the_sorted_keys(
    change: Callable[[SortedKeysDict[str, int]], None],
) -> None:
    d = SortedKeysDict([("b", 2), ("a", 1)])
    assert d.sorted_keys() == ["a", "b"]  # built before the change
    change(d)
    assert d.sorted_keys() == sorted(d)


def test_a_new_value_for_a_present_key_keeps_the_sorted_keys() -> None:
    d = SortedKeysDict([("b", 2), ("a", 1)])
    keys = d.sorted_keys()
    d["a"] = 10
    assert d.sorted_keys() is keys
    assert d.pop("zz", None) is None and d.sorted_keys() is keys
