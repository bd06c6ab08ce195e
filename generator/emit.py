"""From the model to the plan the templates render: one op list per struct and version.

A plan op is plain data (kind, attribute, reader, struct format...). Versions whose op
lists are equal share one function, so a message with 13 versions and 4 distinct layouts
gets 4 decoders and 4 encoders, each straight-line: no version test runs at run time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .model import Field, Message, Struct
from .types import FIXED

# ---------------------------------------------------------------- plan data


@dataclass(frozen=True)
class FixedRun:
    """Consecutive fixed-width fields read or written with one precompiled struct."""

    attrs: tuple[str, ...]
    fmt: str  # without the byte-order prefix
    size: int
    kind: str = "fixed"

    @property
    def const(self) -> str:
        return "_S_" + self.fmt.replace("?", "o")


@dataclass(frozen=True)
class Op:
    """One non-fused field: its kind decides the template macro."""

    kind: str  # uuid | string | bytes | records | struct | array | absent
    attr: str
    name: str  # spec name, for error messages
    reader: str = ""  # runtime reader (string/bytes/records), or element reader
    writer: str = ""
    nullable: bool = False  # nullable at this version
    compact: bool = False
    struct_fn: str = ""  # function stem of the nested struct (struct fields, struct arrays)
    fn: str = ""  # decode/encode function suffix of the nested struct at this version
    elem: str = ""  # array element kind: fixed | uuid | string | bytes | struct
    code: str = ""  # fixed element struct code
    size: int = 0
    keyed: bool = False
    ignorable: bool = False

    @property
    def _array_stem(self) -> str:
        return (
            self.code.replace("?", "o")
            + ("_c" if self.compact else "")
            + ("_n" if self.nullable else "")
        )

    @property
    def array_reader(self) -> str:
        return "_read_" + self._array_stem

    @property
    def array_writer(self) -> str:
        return "_write_" + self._array_stem


@dataclass(frozen=True)
class TaggedOp:
    tag: int
    op: Op | FixedRun
    attr: str


@dataclass(frozen=True)
class OtherTag:
    """A tag that a field of the struct has at other versions only. Kafka's readers refuse
    it at this version rather than keep it as an unknown tagged field; so do kafkagen's."""

    tag: int
    path: str  # "Message.Struct.Field", in the error
    versions: str  # where the tag is valid, in the error


@dataclass(frozen=True)
class VersionPlan:
    ops: tuple[Op | FixedRun, ...]
    flexible: bool
    tagged: tuple[TaggedOp, ...]
    #: Tagged fields that exist in the struct but not at this version (set to default).
    absent_tagged: tuple[Op, ...] = ()
    #: At a flexible version, the tags of ``absent_tagged``, refused when read.
    other_tags: tuple[OtherTag, ...] = ()


@dataclass
class StructPlan:
    struct: Struct
    alias: str  # module-level name of the class
    qualname: str
    fname: str  # stem of its function names
    #: version -> function suffix; functions: suffix -> plan
    by_version: dict[int, str] = field(default_factory=dict)
    functions: dict[str, VersionPlan] = field(default_factory=dict)
    fields: list[dict[str, Any]] = field(default_factory=list)
    is_root: bool = False
    children: list[StructPlan] = field(default_factory=list)
    doc: str = ""
    #: Whether some field defaults to this struct (so comparisons need a default instance).
    used_as_default: bool = False

    @property
    def first_free_tag(self) -> int:
        """The lowest tag no field of this struct uses (for unknown tagged fields)."""
        tags = [f.tag for f in self.struct.fields if f.tag is not None]
        return max(tags) + 1 if tags else 0

    @property
    def layouts(self) -> list[tuple[int, int, str]]:
        """(first, last, suffix) for each run of consecutive versions sharing a layout."""
        runs: list[tuple[int, int, str]] = []
        for v, sfx in sorted(self.by_version.items()):
            if runs and runs[-1][2] == sfx and runs[-1][1] == v - 1:
                runs[-1] = (runs[-1][0], v, sfx)
            else:
                runs.append((v, v, sfx))
        return runs

    defaults: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: attr -> whether the field is nullable in some version
    nullable_attrs: dict[str, bool] = field(default_factory=dict)


def _string_rw(compact: bool, nullable: bool, base: str) -> tuple[str, str]:
    name = ("compact_" if compact else "") + ("nullable_" if nullable else "") + base
    return "read_" + name, "write_" + name


class Emitter:
    """Builds the template context of one message."""

    def __init__(
        self,
        msg: Message,
        shared_names: frozenset[str],
        rt: Callable[[str], str],
    ) -> None:
        """``shared_names``: struct names that another message of the same module also uses,
        which get the message name as a prefix to stay unique in the module. ``rt``
        records each runtime name the code this emitter writes uses, and returns it."""
        self.msg = msg
        self.rt = rt
        self.formats: set[str] = set()
        #: (code, size, compact, nullable) of every fixed-width array kind used
        self.arrays: set[tuple[str, int, bool, bool]] = set()
        self.plans: dict[str, StructPlan] = {}
        self.plans[msg.root.name] = StructPlan(msg.root, msg.name, msg.name, msg.name, is_root=True)
        for s in msg.structs:
            stem = f"{msg.name}_{s.name}" if s.name in shared_names else s.name
            self.plans[s.name] = StructPlan(s, f"_{stem}", f"{msg.name}.{s.name}", stem)

    # -- defaults -------------------------------------------------------------------

    def default_key(self, f: Field) -> dict[str, Any]:
        """How the template writes ``f``'s default: a kind plus a value."""
        t = f.type
        if f.default_is_null:
            return {"kind": "none"}
        if t.is_array:
            return {"kind": "keyed" if is_keyed(f) else "list"}
        if t.is_struct:
            assert f.struct is not None
            self.plans[f.struct.name].used_as_default = True
            return {"kind": "struct", "alias": self.plans[f.struct.name].alias}
        if t.name == "uuid":
            if f.default.int == 0:
                return {"kind": "zero_uuid"}
            return {"kind": "uuid", "value": f.default.bytes}
        return {"kind": "value", "value": f.default}

    # -- ops ------------------------------------------------------------------------

    def field_op(self, f: Field, version: int) -> Op | FixedRun:
        msg = self.msg
        t = f.type
        nullable = f.nullable_in(version)
        compact = f.compact_in(version, msg.flexible)
        if t.is_fixed and t.name != "uuid":
            code, size = FIXED[t.name]
            self.formats.add(code)
            return FixedRun((f.attr,), code, size)
        if t.name == "uuid":
            return Op("uuid", f.attr, f.name)
        if t.name in ("string", "bytes", "records"):
            r, w = _string_rw(compact, nullable, t.name)
            if f.zero_copy:  # a view of the input, as records are
                r = r.replace("bytes", "records")
            if t.name == "records":
                w = w.replace("records", "bytes")
            return Op(
                t.name, f.attr, f.name, reader=r, writer=w, nullable=nullable, compact=compact
            )
        if t.is_struct:
            assert f.struct is not None
            plan = self.plans[f.struct.name]
            return Op(
                "struct",
                f.attr,
                f.name,
                nullable=nullable,
                struct_fn=plan.fname,
                fn=self.fn_name(f.struct, version),
            )
        assert t.element is not None
        el = t.element
        if el.is_struct:
            assert f.struct is not None
            plan = self.plans[f.struct.name]
            return Op(
                "array",
                f.attr,
                f.name,
                nullable=nullable,
                compact=compact,
                elem="struct",
                struct_fn=plan.fname,
                fn=self.fn_name(f.struct, version),
                keyed=is_keyed(f),
            )
        if el.name == "uuid":
            return Op("array", f.attr, f.name, nullable=nullable, compact=compact, elem="uuid")
        if el.is_fixed:
            code, size = FIXED[el.name]
            self.arrays.add((code, size, compact, nullable))
            return Op(
                "array",
                f.attr,
                f.name,
                nullable=nullable,
                compact=compact,
                elem="fixed",
                code=code,
                size=size,
            )
        # arrays of strings or bytes: elements are never null. The element writer is code
        # every encoder of the array writes, so its names are recorded here.
        r, w = _string_rw(compact, False, el.name)
        if el.name == "string":
            w = self.rt(w)
        else:  # read as bytes, unlike bytes fields; a None item is null
            w = self.rt(_string_rw(compact, True, "bytes")[1])
        return Op(
            "array",
            f.attr,
            f.name,
            nullable=nullable,
            compact=compact,
            elem="var",
            reader=r,
            writer=w,
        )

    def fn_name(self, s: Struct, version: int) -> str:
        return self.struct_versions(s)[version]

    def plan_for(self, s: Struct, version: int) -> VersionPlan:
        msg = self.msg
        flexible = version in msg.flexible
        ops: list[Op | FixedRun] = []
        absent_tagged: list[Op] = []
        for f in s.fields:
            if f.is_tagged and version in f.tagged:
                continue
            if version not in f.versions:
                absent = Op("absent", f.attr, f.name, ignorable=f.ignorable)
                if f.is_tagged:
                    absent_tagged.append(absent)
                else:
                    ops.append(absent)
                continue
            op = self.field_op(f, version)
            prev = ops[-1] if ops else None
            if isinstance(op, FixedRun) and isinstance(prev, FixedRun):
                ops[-1] = FixedRun(prev.attrs + op.attrs, prev.fmt + op.fmt, prev.size + op.size)
            else:
                ops.append(op)
        tagged: list[TaggedOp] = []
        other_tags: list[OtherTag] = []
        if flexible:
            for f in s.tagged_fields_in(version):
                assert f.tag is not None
                tagged.append(TaggedOp(f.tag, self.field_op(f, version), f.attr))
            qualname = self.plans[s.name].qualname
            for f in s.fields:
                valid = f.versions.intersect(f.tagged)  # Kafka's condition, exactly
                if f.tag is not None and not valid.empty and version not in valid:
                    other_tags.append(OtherTag(f.tag, f"{qualname}.{f.name}", str(valid)))
        for op in ops:
            if isinstance(op, FixedRun):
                self.formats.add(op.fmt)
        for t in tagged:
            if isinstance(t.op, FixedRun):
                self.formats.add(t.op.fmt)
        other_tags.sort(key=lambda t: t.tag)
        return VersionPlan(
            tuple(ops), flexible, tuple(tagged), tuple(absent_tagged), tuple(other_tags)
        )

    # -- per struct -----------------------------------------------------------------

    _versions_cache: dict[str, dict[int, str]]

    def struct_versions(self, s: Struct) -> dict[int, str]:
        """version -> function suffix, deduplicating identical plans."""
        cache = self.__dict__.setdefault("_versions_cache", {})
        if s.name in cache:
            return cache[s.name]  # type: ignore[no-any-return]
        plan = self.plans[s.name]
        by_version: dict[int, str] = {}
        cache[s.name] = by_version
        seen: dict[VersionPlan, str] = {}
        for v in self.msg.versions:
            if v not in s.versions:
                continue
            vp = self.plan_for(s, v)
            suffix = seen.get(vp)
            if suffix is None:
                suffix = f"v{v}"
                seen[vp] = suffix
                plan.functions[suffix] = vp
            by_version[v] = suffix
        plan.by_version = by_version
        return by_version

    def field_info(self, s: Struct, f: Field) -> dict[str, Any]:
        t = f.type
        el = t.element
        return {
            "f": f,
            "attr": f.attr,
            "name": f.name,
            "json_key": f.json_key,
            "default": self.default_key(f),
            "annotation": self.param_type(f),
            "mutable_default": mutable_default(f),
            "keyed": is_keyed(f),
            "jtype": self.json_type(f),
            "elem_jtype": self.json_type_name(el.name)
            if el is not None and not el.is_struct
            else ("struct" if el is not None else ""),
            "struct_fn": self.plans[f.struct.name].fname if f.struct else "",
            "versions": f.versions,
            "tagged": f.tagged if f.is_tagged else None,
            "about": " ".join(f.about.split()),
        }

    def json_type_name(self, name: str) -> str:
        if name in ("bytes", "records"):
            return "bytes"
        if name == "uuid":
            return "uuid"
        if name == "float64":
            return "float"
        if name == "bool":
            return "bool"
        if name == "string":
            return "str"
        return "int"

    def json_type(self, f: Field) -> str:
        t = f.type
        if t.is_array:
            return "array"
        if t.is_struct:
            return "struct"
        return self.json_type_name(t.name)

    def param_type(self, f: Field) -> str:
        """The type of ``f``'s parameter of ``__init__``, which every class writes (so its
        names are recorded here). mapKey arrays are KeyedLists once built, but a parameter
        with a default to build accepts any list."""
        t = f.type

        def scalar(name: str) -> str:
            if name == "uuid":
                return self.rt("UUID")
            return {
                "bool": "bool",
                "float64": "float",
                "string": "str",
                "bytes": "bytes | memoryview" if f.zero_copy else "bytes",
                "records": "bytes | memoryview",
            }.get(name, "int")

        if t.is_array:
            assert t.element is not None
            inner = self.plans[f.struct.name].qualname if f.struct else scalar(t.element.name)
            base = f"list[{inner}]"
            if is_keyed(f) and not mutable_default(f):
                base = f"{self.rt('KeyedList')}[{inner}]"
        elif t.is_struct:
            assert f.struct is not None
            base = self.plans[f.struct.name].qualname
        else:
            base = scalar(t.name)
        return f"{base} | None" if f.ever_nullable else base

    # -- plans of the native accelerator -----------------------------------------------

    def native_default(self, p: StructPlan, attr: str) -> str:
        d = p.defaults[attr]
        kind = d["kind"]
        if kind in ("list", "keyed"):
            return f'("{kind}",)'
        if kind == "struct":
            return f'("struct", {d["alias"]}, {d["alias"]}_DEFAULT)'
        if kind == "none":
            value = "None"
        elif kind == "zero_uuid":
            value = self.rt("ZERO_UUID")
        elif kind == "uuid":
            value = f"{self.rt('uuid_from_bytes')}({d['value']!r})"
        else:
            value = repr(d["value"])
        return f'("value", {value})'

    def native_ops(self, p: StructPlan, op: Op | FixedRun) -> list[str]:
        """The accelerator's ops for one plan op. Besides the layout they carry what its
        errors name: the spec name of the field, the byte size of a fused fixed-width run
        on the run's first field (a truncated run is reported where it starts), and
        whether a null value is refused at a version where the field is not nullable."""
        if isinstance(op, FixedRun):
            return [
                f'("{NATIVE_FIXED[c]}", "{a}", {op.size if i == 0 else 0})'
                for i, (a, c) in enumerate(zip(op.attrs, op.fmt, strict=True))
            ]
        a = f'"{op.attr}"'
        name = f'"{op.name}"'
        refuse_null = not op.nullable and p.nullable_attrs.get(op.attr, False)
        if op.kind == "uuid":
            return [f'("uuid", {a})']
        if op.kind == "string":
            return [f'("string", {a}, {op.compact}, {op.nullable}, {name}, {refuse_null})']
        if op.kind in ("bytes", "records"):
            view = "records" in op.reader  # records and zeroCopy bytes: views of the input
            flags = f"{op.compact}, {op.nullable}, {view}"
            return [f'("bytes", {a}, {flags}, {name}, {refuse_null})']
        if op.kind == "struct":
            sub = f"_N_{op.struct_fn}_{op.fn}"
            return [f'("struct", {a}, {op.nullable}, {sub}, {name}, {refuse_null})']
        if op.kind == "array":
            if op.elem == "struct":
                elem = f"_N_{op.struct_fn}_{op.fn}"
            elif op.elem == "fixed":
                elem = f'"{NATIVE_FIXED[op.code]}"'
            elif op.elem == "uuid":
                elem = '"uuid"'
            else:
                elem = '"string"' if "string" in op.reader else '"bytes"'
            flags = f"{op.compact}, {op.nullable}, {elem}, {op.keyed}"
            return [f'("array", {a}, {flags}, {name})']
        assert op.kind == "absent"
        default = self.native_default(p, op.attr)
        return [f'("absent", {a}, {default}, {op.ignorable}, {name})']

    def native_plan(self, p: StructPlan, vp: VersionPlan) -> str:
        ops = [t for op in (*vp.ops, *vp.absent_tagged) for t in self.native_ops(p, op)]
        tags = []
        for t in vp.tagged:
            (text,) = self.native_ops(p, t.op)  # a tagged field is one op
            tags.append(f"({t.tag}, {text}, {self.native_default(p, t.attr)})")
        others = [f'({o.tag}, "{o.path}", "{o.versions}")' for o in vp.other_tags]

        def block(items: list[str]) -> str:
            lines = "".join(f"        {i},\n" for i in items)
            return f"(\n{lines}    )" if items else "()"

        head = f"{p.alias},\n    {vp.flexible},\n    {block(ops)},\n    {block(tags)}"
        return f'(\n    {head},\n    "{p.qualname}",\n    {block(others)},\n)'

    def native_plans(self, structs: list[Struct]) -> list[tuple[str, str]]:
        """(name, plan text) of every layout, nested structs before the structs using them."""
        out: list[tuple[str, str]] = []
        done: set[str] = set()

        def visit(s: Struct) -> None:
            if s.name in done:
                return
            done.add(s.name)
            for f in s.fields:
                if f.struct is not None:
                    visit(f.struct)
            p = self.plans[s.name]
            for sfx, vp in p.functions.items():
                out.append((f"_N_{p.fname}_{sfx}", self.native_plan(p, vp)))

        for s in structs:
            visit(s)
        return out

    # -- field tables of the native accelerator -------------------------------------------

    def native_field_tables(self, structs: list[Struct]) -> list[tuple[str, str]]:
        """(name, table text) of every struct's fields, nested structs first.

        A table is (class, fields, first free tag); the fields in spec order as (attribute,
        JSON key, tagged, ever nullable, nested table). Paired with each layout's plan, which
        says which fields the version has and how to read and write them, it serves the
        accelerator's JSON form and the fuzz's random messages (drawn in spec order, unknown
        tagged fields from the first free tag on).
        """
        out: list[tuple[str, str]] = []
        done: set[str] = set()

        def visit(s: Struct) -> None:
            if s.name in done:
                return
            done.add(s.name)
            for f in s.fields:
                if f.struct is not None:
                    visit(f.struct)
            p = self.plans[s.name]
            rows = []
            for f in s.fields:
                sub = f"_F_{self.plans[f.struct.name].fname}" if f.struct is not None else "None"
                flags = f"{f.is_tagged}, {f.ever_nullable}"
                rows.append(f'        ("{f.attr}", "{f.json_key}", {flags}, {sub}),\n')
            fields = f"(\n{''.join(rows)}    )" if rows else "()"
            table = f"(\n    {p.alias},\n    {fields},\n    {p.first_free_tag},\n)"
            out.append((f"_F_{p.fname}", table))

        for s in structs:
            visit(s)
        return out

    def context(self) -> dict[str, Any]:
        msg = self.msg
        structs = [msg.root, *msg.structs]
        for s in structs:
            self.struct_versions(s)
        for s in structs:
            plan = self.plans[s.name]
            plan.fields = [self.field_info(s, f) for f in s.fields]
            plan.defaults = {fi["attr"]: fi["default"] for fi in plan.fields}
            plan.nullable_attrs = {f.attr: f.ever_nullable for f in s.fields}
        nested = [self.plans[s.name] for s in msg.structs]
        root = self.plans[msg.root.name]
        root.children = nested
        root.doc = msg.about or self.message_doc()
        for s in msg.structs:
            self.plans[s.name].doc = s.about or self.struct_doc(s)
        return {
            "msg": msg,
            "root": root,
            "nested": nested,
            "all_plans": [self.plans[s.name] for s in structs],
            "formats": self.formats,
            "arrays": self.arrays,
            "native_plans": self.native_plans(structs),
            "native_fields": self.native_field_tables(structs),
        }

    def message_doc(self) -> str:
        msg = self.msg
        what = {"request": "request", "response": "response"}.get(msg.kind, f"{msg.kind} record")
        api = msg.name.removesuffix("Request").removesuffix("Response")
        head = f"{api} {what}" + (f" (API key {msg.api_key})" if msg.api_key is not None else "")
        flex = "" if msg.first_flexible is None else f", flexible from v{msg.first_flexible}"
        unstable = ", latest version unstable" if msg.latest_unstable else ""
        return f"{head}: versions {msg.valid}{flex}{unstable}."

    def struct_doc(self, s: Struct) -> str:
        users = [
            f"{p.qualname}.{f.attr}"
            for p in self.plans.values()
            for f in p.struct.fields
            if f.struct is s
        ]
        where = " and ".join(users) if users else self.msg.name
        return f"An item of {where} (versions {s.versions})."


#: struct format character -> the accelerator's name for that fixed-width kind
NATIVE_FIXED = {
    "b": "int8",
    "h": "int16",
    "H": "uint16",
    "i": "int32",
    "I": "uint32",
    "q": "int64",
    "d": "float64",
    "?": "bool",
}


def mutable_default(f: Field) -> bool:
    """Whether ``f``'s default is a new list or struct per instance (built in ``__init__``)."""
    return (f.type.is_array or f.type.is_struct) and not f.default_is_null


def is_keyed(f: Field) -> bool:
    """An array of structs with mapKey fields: decoded into a KeyedList."""
    return f.type.is_struct_array and f.struct is not None and bool(f.struct.map_key_fields)


def module_name(msg_name: str) -> str:
    """``DescribeTopicPartitionsRequest`` -> ``describe_topic_partitions``."""
    base = re.sub(r"(Request|Response)$", "", msg_name)
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", base).lower()
