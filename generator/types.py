"""Field types of Kafka's spec language, each knowing its wire facts."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Fixed-width primitives: struct format character and size in bytes.
FIXED = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
    "uuid": ("16s", 16),
}
#: Variable-length primitives.
VARIABLE = ("string", "bytes", "records")
PRIMITIVES = tuple(FIXED) + VARIABLE

#: Integer ranges, for defaults.
INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

STRUCT_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")


@dataclass(frozen=True, slots=True)
class FieldType:
    """A parsed type string: a primitive, a struct name, or an array (``[]T``) of either."""

    name: str
    element: FieldType | None = None

    @classmethod
    def parse(cls, text: str) -> FieldType:
        if text.startswith("[]"):
            inner = text[2:]
            if inner.startswith("[]") or not inner:
                raise ValueError(f"arrays hold primitives or structs: {text!r}")
            return cls(text, cls.parse(inner))
        if text in PRIMITIVES or STRUCT_NAME.match(text):
            return cls(text)
        raise ValueError(f"unknown type {text!r}")

    @property
    def is_array(self) -> bool:
        return self.element is not None

    @property
    def is_struct(self) -> bool:
        return self.element is None and self.name not in PRIMITIVES

    @property
    def is_struct_array(self) -> bool:
        return self.element is not None and self.element.is_struct

    @property
    def is_fixed(self) -> bool:
        return self.name in FIXED

    @property
    def is_integer(self) -> bool:
        return self.name in INT_RANGES

    @property
    def struct_name(self) -> str | None:
        """The struct this type names, directly or as an array's element."""
        if self.is_struct:
            return self.name
        if self.element is not None and self.element.is_struct:
            return self.element.name
        return None

    @property
    def can_be_nullable(self) -> bool:
        return self.is_array or self.is_struct or self.name in VARIABLE

    @property
    def can_be_flexible(self) -> bool:
        """Whether a field-level flexibleVersions may override the encoding."""
        return self.name in ("string", "bytes")

    def __str__(self) -> str:
        return self.name
