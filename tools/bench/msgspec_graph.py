"""kafkagen's encoder against msgspec's on the same object graph (``kafkagen bench codecs``).

msgspec (a compiled serialisation library) cannot write Kafka's wire format, so its bytes
are not compared with kafkagen's; what is compared is the time to turn the same object graph
into bytes. Each kafkagen message is mirrored as ``msgspec.Struct`` objects with the same
fields, values and nesting (one Struct class per message or nested struct class, made with
``msgspec.defstruct``), built once before timing. Structs are ``array_like``: MessagePack
then writes fields by position, as Kafka's format does, not by name. Keyed lists become
plain lists; bytes, strings, numbers, booleans and UUIDs stay as they are.

The target: kafkagen's encode takes at most 1.2x msgspec's MessagePack encode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The most kafkagen's encode may take, as a multiple of msgspec's time.
TARGET = 1.2


def available() -> bool:
    try:
        import msgspec  # noqa: F401
    except ImportError:
        return False
    return True


class Mirror:
    """Converts kafkagen structs into msgspec Structs of the same shape."""

    def __init__(self) -> None:
        self._classes: dict[type[Any], Any] = {}

    def struct_class(self, cls: type[Any]) -> Any:
        import msgspec

        made = self._classes.get(cls)
        if made is None:
            fields = [name for name in cls.__slots__ if name != "unknown_tagged_fields"]
            made = msgspec.defstruct(cls.__name__, fields, array_like=True)
            self._classes[cls] = made
        return made

    def convert(self, value: Any) -> Any:
        if isinstance(value, list):  # KeyedList too
            return [self.convert(v) for v in value]
        slots = getattr(type(value), "__slots__", None)
        if slots is not None and hasattr(type(value), "_field_table"):
            made = self.struct_class(type(value))
            return made(*(self.convert(getattr(value, f)) for f in made.__struct_fields__))
        if isinstance(value, memoryview):
            return bytes(value)
        return value


@dataclass
class Comparison:
    """One workload's encode: kafkagen's and msgspec's best time per operation (s)."""

    title: str
    kafkagen: float
    msgspec: float

    @property
    def ratio(self) -> float:
        """kafkagen's time over msgspec's (at most TARGET meets the target)."""
        return self.kafkagen / self.msgspec

    def verdict(self) -> str:
        return "PASS" if self.ratio <= TARGET else "FAIL"


#: The timed statement of msgspec's side; its namespace comes from :func:`namespace`.
STATEMENT = "encode(mirror)"


def namespace(obj: Any) -> dict[str, Any]:
    """What :data:`STATEMENT` runs on: the mirror of ``obj`` and a MessagePack encoder."""
    import msgspec

    return {"mirror": Mirror().convert(obj), "encode": msgspec.msgpack.Encoder().encode}


def render(rows: list[Comparison]) -> list[str]:
    head = (
        f"{'workload':<28} {'kafkagen us/op':>14} {'msgspec us/op':>14} {'kg/msgspec':>10}  target"
    )
    out = [head, "-" * len(head)]
    for r in rows:
        out.append(
            f"{r.title:<28} {r.kafkagen * 1e6:>14,.2f} {r.msgspec * 1e6:>14,.2f} "
            f"{r.ratio:>9.2f}x  {r.verdict()}"
        )
    out.append(
        f"target: kafkagen's encode takes at most {TARGET}x msgspec's time (kg/msgspec: "
        "kafkagen's time over msgspec's, MessagePack of the same object graph, array_like)"
    )
    return out
