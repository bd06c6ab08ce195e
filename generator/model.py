"""The spec model: the only thing templates see.

Built from a validated, normalized spec document. Every fact the emitters need (wire
type, versions, nullability, tags, defaults) is computed here once, so templates stay
free of spec logic.
"""

from __future__ import annotations

import base64
import keyword
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from .errors import SpecError
from .types import FieldType
from .versions import NONE, Versions

_CAMEL_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

#: Names a field must not take in Python because the generated class uses them.
RESERVED_ATTRS = frozenset(
    {"encode", "decode", "to_json", "from_json", "unknown_tagged_fields"}
)


def snake_case(name: str) -> str:
    """``ThrottleTimeMs`` -> ``throttle_time_ms``;
    ``IsKRaftController`` -> ``is_k_raft_controller``."""
    snake = _CAMEL_BREAK.sub("_", name).lower()
    if keyword.iskeyword(snake) or snake in RESERVED_ATTRS:
        snake += "_"
    return snake


def json_key(name: str) -> str:
    """Kafka's JSON converter key: the spec name with its first letter lower-cased."""
    return name[:1].lower() + name[1:]


@dataclass(eq=False)
class Field:
    name: str
    attr: str
    json_key: str
    type: FieldType
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    flexible_override: Versions | None
    ignorable: bool
    default_text: str | None
    map_key: bool
    entity_type: str | None
    zero_copy: bool
    about: str
    struct: Struct | None = None
    #: Python value of the default; for structs and arrays a marker, see ``default_kind``.
    default: Any = None

    @property
    def is_tagged(self) -> bool:
        return self.tag is not None

    def nullable_in(self, version: int) -> bool:
        return version in self.nullable

    @property
    def ever_nullable(self) -> bool:
        return not self.nullable.empty

    @property
    def default_is_null(self) -> bool:
        return self.default_text == "null"

    def compact_in(self, version: int, flexible: Versions) -> bool:
        """Whether lengths use the compact (varint) form at ``version``."""
        if self.flexible_override is not None:
            return version in self.flexible_override
        return version in flexible


@dataclass(eq=False)
class Struct:
    """A struct: the message itself, a nested struct or a common struct."""

    name: str
    fields: list[Field]
    versions: Versions
    about: str = ""
    is_common: bool = False
    #: Fields of this struct forming a mapKey, in order (empty if none).
    map_key_fields: list[Field] = field(default_factory=list)

    def fields_in(self, version: int) -> list[Field]:
        return [f for f in self.fields if version in f.versions]

    def tagged_fields_in(self, version: int) -> list[Field]:
        return sorted(
            (f for f in self.fields if f.is_tagged and version in f.tagged),
            key=lambda f: f.tag or 0,
        )


@dataclass(eq=False)
class Message:
    """One spec file: a request, response, header, data message or record."""

    file: str
    name: str
    kind: str  # request | response | header | data | metadata
    api_key: int | None
    valid: Versions
    flexible: Versions
    latest_unstable: bool
    listeners: list[str]
    root: Struct
    #: Every struct but the root, in first-definition order (nested, then common).
    structs: list[Struct]
    about: str = ""

    @property
    def versions(self) -> range:
        return range(self.valid.lowest, self.valid.highest + 1)

    @property
    def first_flexible(self) -> int | None:
        return None if self.flexible.empty else max(self.flexible.lowest, self.valid.lowest)


def parse_default(f: Field, file: str, path: str) -> Any:
    """The Python value of a field's default (Kafka's rules for each type)."""
    text = f.default_text
    t = f.type
    if text == "null":
        return None
    if t.is_array or t.is_struct:
        return None  # a fresh empty list / default struct, built by the emitters
    name = t.name
    try:
        if t.is_integer:
            if not text:
                return 0
            neg = text.startswith("-")
            body = text[1:] if neg else text
            value = int(body, 16) if body.lower().startswith("0x") else int(body, 10)
            return -value if neg else value
        if name == "bool":
            if not text:
                return False
            if text not in ("true", "false"):
                raise ValueError(text)
            return text == "true"
        if name == "float64":
            return float(text) if text else 0.0
        if name == "string":
            return text or ""
        if name in ("bytes", "records"):
            if text:
                raise ValueError(text)
            return b""
        if name == "uuid":
            if not text:
                return uuid.UUID(int=0)
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            return uuid.UUID(bytes=raw)
    except ValueError as e:
        raise SpecError(file, path, f"default does not fit type {name}", text) from e
    raise SpecError(file, path, "unknown type", name)


def _versions(raw: dict[str, Any], key: str, fallback: Versions = NONE) -> Versions:
    value = raw.get(key)
    return Versions.parse(value) if value is not None else fallback


class _Builder:
    def __init__(self, doc: dict[str, Any], file: str) -> None:
        self.doc = doc
        self.file = file
        self.structs: dict[str, Struct] = {}
        self.order: list[Struct] = []
        self.common_raw = {c["name"]: c for c in doc.get("commonStructs", [])}

    def build(self) -> Message:
        doc = self.doc
        valid = Versions.parse(doc["validVersions"])
        flexible = _versions(doc, "flexibleVersions")
        root = Struct(doc["name"], [], valid, about=doc.get("about", ""))
        root.fields = [self.field(f, valid, doc["name"]) for f in doc.get("fields", [])]
        # Common structs that no field refers to still belong to the message.
        for name, raw in self.common_raw.items():
            if name not in self.structs:
                self.common(name, raw, doc["name"])
        return Message(
            file=self.file,
            name=doc["name"],
            kind=doc["type"],
            api_key=doc.get("apiKey"),
            valid=valid,
            flexible=flexible,
            latest_unstable=bool(doc.get("latestVersionUnstable", False)),
            listeners=list(doc.get("listeners", [])),
            root=root,
            structs=self.order,
            about=doc.get("about", ""),
        )

    def common(self, name: str, raw: dict[str, Any], path: str) -> Struct:
        versions = Versions.parse(raw["versions"])
        s = Struct(name, [], versions, about=raw.get("about", ""), is_common=True)
        self.structs[name] = s
        self.order.append(s)
        s.fields = [self.field(f, versions, f"{path}.{name}") for f in raw.get("fields", [])]
        s.map_key_fields = [f for f in s.fields if f.map_key]
        return s

    def field(self, raw: dict[str, Any], parent: Versions, path: str) -> Field:
        name = raw["name"]
        here = f"{path}.{name}"
        ftype = FieldType.parse(raw["type"])
        versions = Versions.parse(raw["versions"])
        tagged = _versions(raw, "taggedVersions")
        flex_raw = raw.get("flexibleVersions")
        f = Field(
            name=name,
            attr=snake_case(name),
            json_key=json_key(name),
            type=ftype,
            versions=versions,
            nullable=_versions(raw, "nullableVersions"),
            tagged=tagged,
            tag=raw.get("tag"),
            flexible_override=Versions.parse(flex_raw) if flex_raw is not None else None,
            ignorable=bool(raw.get("ignorable", False)),
            default_text=raw.get("default"),
            map_key=bool(raw.get("mapKey", False)),
            entity_type=raw.get("entityType"),
            zero_copy=bool(raw.get("zeroCopy", False)),
            about=raw.get("about", ""),
        )
        f.default = parse_default(f, self.file, here)
        sname = ftype.struct_name
        if sname is not None:
            if "fields" in raw:
                if sname in self.structs:
                    raise SpecError(self.file, here, "struct defined more than once", sname)
                s = Struct(sname, [], versions, about=raw.get("about", ""))
                self.structs[sname] = s
                self.order.append(s)
                s.fields = [self.field(sub, versions, here) for sub in raw["fields"]]
                s.map_key_fields = [sf for sf in s.fields if sf.map_key]
            elif sname in self.structs:
                s = self.structs[sname]
            elif sname in self.common_raw:
                s = self.common(sname, self.common_raw[sname], self.doc["name"])
            else:
                raise SpecError(self.file, here, "struct type is not defined", sname)
            f.struct = s
        return f


def build_message(doc: dict[str, Any], file: str) -> Message:
    """The model of one normalized, validated spec document."""
    return _Builder(doc, file).build()
