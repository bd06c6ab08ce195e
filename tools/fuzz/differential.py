"""A second opinion on the wire bytes: another codec reads them and writes them back.

Only kafka-python (3.x) for now: its protocol classes are built from Kafka's own JSON
specs, one class per API and kind (``kafka.protocol.{admin,consumer,metadata,producer}``),
with ``cls.decode(data, version=v)`` and ``obj.encode()``. Where it knows the API and the
version, the bytes it writes back must equal ours; anything else is a *disagreement*, which
the report keeps apart from failures (either side may be wrong).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any

PEERS = ("kafka-python",)

#: (api key, kind, version, our bytes) -> None when the peer does not know that API and
#: version, "" when it agrees, else why not.
Peer = Callable[[int, str, int, bytes], "str | None"]


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


def load_peer(name: str) -> Peer:
    if name != "kafka-python":
        raise ValueError(f"unknown differential peer {name!r} (known: {', '.join(PEERS)})")
    try:
        classes = kafka_python_classes()
    except ImportError as e:
        raise RuntimeError(
            "--differential kafka-python needs kafka-python 3.x: pip install 'kafka-python>=3'"
        ) from e

    def compare(api: int, kind: str, version: int, data: bytes) -> str | None:
        cls = classes.get((api, kind))
        if cls is None:
            return None
        low, high = cls.valid_versions
        if not low <= version <= high:
            return None
        try:
            theirs = cls.decode(data, version=version).encode()
        except Exception as e:
            return f"kafka-python cannot read it: {type(e).__name__}: {e}"[:500]
        if theirs != data:
            at = next(
                (i for i, (a, b) in enumerate(zip(theirs, data, strict=False)) if a != b),
                min(len(theirs), len(data)),
            )
            return (
                f"kafka-python writes it back differently from byte {at} "
                f"({len(theirs)} bytes, ours {len(data)}): {theirs[at : at + 16].hex()}"
            )
        return ""

    return compare


def peer_supports(name: str) -> dict[tuple[int, str], tuple[int, int]]:
    """(API key, kind) -> the peer's version range (for the report)."""
    if name != "kafka-python":
        return {}
    return {k: tuple(c.valid_versions) for k, c in kafka_python_classes().items()}


__all__ = ["PEERS", "Peer", "kafka_python_classes", "load_peer", "peer_supports"]
