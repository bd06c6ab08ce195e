"""The wire writers' one convention: ``write_x(w, value) -> None``, handing the bytes to
``w``; every writer of one value round-trips through its reader and serves as an item
writer of ``write_array``."""

from __future__ import annotations

import inspect
import uuid
from typing import Any

import pytest
from kafkagen.runtime import wire

#: Every writer of one value, with values to write; its reader is ``read_`` + the rest.
VALUES: dict[str, list[Any]] = {
    "write_string": ["", "orders", "é中😀" * 40],
    "write_nullable_string": [None, "", "orders"],
    "write_compact_string": ["", "orders", "x" * 200],
    "write_compact_nullable_string": [None, "orders", "y" * 300],
    "write_bytes": [b"", b"\x00\xff", bytes(range(256))],
    "write_nullable_bytes": [None, b"", b"\x01"],
    "write_compact_bytes": [b"", b"ab", b"z" * 500],
    "write_compact_nullable_bytes": [None, b"", b"q" * 130],
    "write_uuid": [uuid.UUID(int=0), uuid.UUID("5f0e9a5c-3b1e-4d6a-9c1d-0b6f1e2a3c4d")],
}
#: Writers of more than one value: arrays (their items through an item writer or encoder)
#: and tagged-field sections.
COMPOSITE = {"write_array", "write_struct_array", "write_fixed_array", "write_tags"}


def test_every_public_writer_takes_the_writer_first_and_returns_none() -> None:
    writers = [n for n in wire.__all__ if n.startswith("write_")]
    assert set(writers) == set(VALUES) | COMPOSITE
    for name in writers:
        params = list(inspect.signature(getattr(wire, name)).parameters)
        assert params[0] == "w", name
    for name in VALUES:
        assert inspect.signature(getattr(wire, name)).return_annotation in ("None", None), name


@pytest.mark.parametrize("name", sorted(VALUES))
def test_each_writer_round_trips_through_its_reader(name: str) -> None:
    writer = getattr(wire, name)
    reader = getattr(wire, "read_" + name.removeprefix("write_"))
    for value in VALUES[name]:
        out: list[bytes] = []
        assert writer(out.append, value) is None
        data = b"".join(out)
        back, end = reader(data, 0, len(data))
        assert end == len(data)
        assert (bytes(back) if isinstance(back, memoryview) else back) == value


@pytest.mark.parametrize("compact", [False, True])
def test_a_value_writer_serves_as_an_array_item_writer(compact: bool) -> None:
    names = ["a", "bb", "é"]
    writer = wire.write_compact_string if compact else wire.write_string
    reader = wire.read_compact_string if compact else wire.read_string
    out: list[bytes] = []
    wire.write_array(out.append, names, writer, compact, False, "Names")
    data = b"".join(out)
    back, end = wire.read_array(data, 0, len(data), reader, compact, False, "Names")
    assert (back, end) == (names, len(data))
    out.clear()
    with pytest.raises(wire.FieldUnsupported):
        wire.write_array(out.append, None, writer, compact, False, "Names")
