"""Kafka's JSON converter form: reading fields out of a JSON object, with clear errors.

``get_*`` read one field of an object: a missing field gets ``missing`` (or an error when
it is :data:`REQUIRED`), a null is allowed only where the field is nullable, and a value of
the wrong JSON type is an error naming the struct path and the key. ``as_*`` convert one
array item.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any, Final, Protocol
from uuid import UUID

from .wire import Buffer, uuid_from_bytes


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: The ``missing`` argument of a field the version requires.
REQUIRED: Final[Any] = _Required()


def missing_field(path: str, key: str) -> ValueError:
    return ValueError(f"{path}.{key}: required field missing")


def _bad(path: str, what: str, value: Any) -> ValueError:
    return ValueError(f"{path}: expected {what}, got {value!r}")


def uuid_to_json(u: UUID) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(u.bytes).decode("ascii").rstrip("=")


def bytes_to_json(b: Buffer) -> str:
    return base64.b64encode(b).decode("ascii")


def as_int(value: Any, path: str) -> int:
    if value.__class__ is int:  # the common case, checked first
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(path, "an integer", value)
    return value


def as_float(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(path, "a number", value)
    return float(value)


def as_bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise _bad(path, "true or false", value)
    return value


def as_str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise _bad(path, "a string", value)
    return value


def as_uuid(value: Any, path: str) -> UUID:
    if not isinstance(value, str) or len(value) != 22:
        raise _bad(path, "a 22-character base64url uuid", value)
    try:
        return uuid_from_bytes(base64.urlsafe_b64decode(value + "=="))
    except (binascii.Error, ValueError):
        raise _bad(path, "a base64url uuid", value) from None


def as_bytes(value: Any, path: str) -> bytes:
    if not isinstance(value, str):
        raise _bad(path, "base64 text", value)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise _bad(path, "base64 text", value) from None


def as_object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad(path, "an object", value)
    return value


class _Getter(Protocol):
    def __call__(
        self, obj: dict[str, Any], key: str, path: str, missing: Any, nullable: bool = False
    ) -> Any: ...


def _getter(convert: Callable[[Any, str], Any], exact: type | None = None) -> _Getter:
    """A reader of one key of a JSON object: absent, null or the value ``convert`` checks.

    A value of type ``exact`` is returned as it is: ``from_json`` reads every field through
    these, so the common case skips the converter call and the path text it needs.
    """

    def get(obj: dict[str, Any], key: str, path: str, missing: Any, nullable: bool = False) -> Any:
        try:
            value = obj[key]
        except KeyError:
            if missing is REQUIRED:
                raise missing_field(path, key) from None
            return missing
        if value.__class__ is exact:
            return value
        if value is None:
            if nullable:
                return None
            raise ValueError(f"{path}.{key}: null is not allowed here")
        return convert(value, f"{path}.{key}")

    return get


get_int = _getter(as_int, int)
get_float = _getter(as_float, float)
get_bool = _getter(as_bool, bool)
get_str = _getter(as_str, str)
get_uuid = _getter(as_uuid)
get_bytes = _getter(as_bytes)


def _as_list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise _bad(path, "an array", value)
    return value


get_list = _getter(_as_list, list)
get_object = _getter(as_object, dict)


__all__ = [
    "REQUIRED",
    "as_bool",
    "as_bytes",
    "as_float",
    "as_int",
    "as_object",
    "as_str",
    "as_uuid",
    "bytes_to_json",
    "get_bool",
    "get_bytes",
    "get_float",
    "get_int",
    "get_list",
    "get_object",
    "get_str",
    "get_uuid",
    "missing_field",
    "uuid_to_json",
]
