"""Errors of the wire layer and Kafka's error-code table."""

from __future__ import annotations


class DecodeError(ValueError):
    """Bytes that are not a valid encoding of a message at a version.

    Names the message, the version and the byte offset where decoding failed.
    """

    def __init__(self, reason: str, message: str = "", version: int = -1, offset: int = -1):
        self.reason = reason
        self.message = message
        self.version = version
        self.offset = offset
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.message} v{self.version}" if self.message else "message"
        at = f" at byte {self.offset}" if self.offset >= 0 else ""
        return f"cannot decode {where}{at}: {self.reason}"


class UnsupportedVersionError(Exception):
    """A message cannot be written at, or a peer does not support, the version asked for."""
