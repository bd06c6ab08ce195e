"""`TopicPartition`: a partition's name, shared by the broker and the client."""

from __future__ import annotations

__all__ = ["TopicPartition"]


class TopicPartition(tuple[str, int]):
    """(topic, partition) with names; a plain tuple underneath, so it hashes fast and
    compares, sorts and unpacks like ``(topic, partition)``."""

    __slots__ = ()

    def __new__(cls, topic: str, partition: int) -> TopicPartition:
        return tuple.__new__(cls, (topic, partition))

    @property
    def topic(self) -> str:
        return self[0]

    @property
    def partition(self) -> int:
        return self[1]

    def __repr__(self) -> str:
        return f"{self[0]}-{self[1]}"
