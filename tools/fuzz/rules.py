"""What the specs say about writing a message at another version: the fuzz's oracle.

The cross-version check must not trust the codec to know when ``encode(w)`` should fail,
so the expectation is computed here from the spec model (``kafkagen.generator.model``).
The driver turns the model into a compact, picklable table of plain tuples
(:func:`build_table`); executors only need this module and the table, not the specs or the
generator, which a zipped package could not read from disk anyway.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

#: Field rule default kinds.
VALUE, NULL, EMPTY, STRUCT = "value", "null", "empty", "struct"


class FieldRule(NamedTuple):
    attr: str
    #: Inclusive version range the field exists in.
    low: int
    high: int
    #: Inclusive range the field may be null in; (1, 0) when never.
    null_low: int
    null_high: int
    ignorable: bool
    #: VALUE (compare with ``default``), NULL, EMPTY (empty array) or STRUCT (all defaults).
    default_kind: str
    default: Any
    #: Index of the nested struct in ``MessageRules.structs``, or -1.
    child: int
    array: bool
    tag: int | None


class StructRules(NamedTuple):
    name: str
    fields: tuple[FieldRule, ...]
    #: The lowest tag no field of the struct uses: tags from here on are unknown to readers.
    first_free_tag: int


class MessageRules(NamedTuple):
    name: str
    api_key: int
    kind: str
    lowest: int
    highest: int
    #: Inclusive flexible range, or None when no version is flexible.
    flex_low: int | None
    flex_high: int | None
    structs: tuple[StructRules, ...]  # index 0 is the message itself

    def flexible(self, version: int) -> bool:
        return self.flex_low is not None and self.flex_low <= version <= (self.flex_high or 0)

    @property
    def versions(self) -> range:
        return range(self.lowest, self.highest + 1)


#: (api key, "request" | "response") -> rules
Table = dict[tuple[int, str], MessageRules]


def build_table(spec_dirs: Iterable[Path] | None = None) -> Table:
    """The rules of every request and response in the specs (default: the built-in ones)."""
    from kafkagen.generator.generate import BUILTIN_SPECS, load_messages

    messages = load_messages(list(spec_dirs) if spec_dirs is not None else [BUILTIN_SPECS])
    table: Table = {}
    for msg in messages:
        if msg.kind not in ("request", "response") or msg.api_key is None:
            continue
        structs = [msg.root, *msg.structs]
        index = {s.name: i for i, s in enumerate(structs)}
        rules = []
        for s in structs:
            fields = []
            for f in s.fields:
                t = f.type
                if f.default_is_null:
                    kind, default = NULL, None
                elif t.is_array:
                    kind, default = EMPTY, None
                elif t.is_struct:
                    kind, default = STRUCT, None
                else:
                    kind, default = VALUE, f.default
                n = f.nullable
                fields.append(
                    FieldRule(
                        attr=f.attr,
                        low=f.versions.lowest,
                        high=f.versions.highest,
                        null_low=n.lowest,
                        null_high=n.highest,
                        ignorable=f.ignorable,
                        default_kind=kind,
                        default=default,
                        child=index[f.struct.name] if f.struct is not None else -1,
                        array=t.is_array,
                        tag=f.tag,
                    )
                )
            tags = [f.tag for f in s.fields if f.tag is not None]
            rules.append(StructRules(s.name, tuple(fields), max(tags) + 1 if tags else 0))
        flex = msg.flexible
        table[(msg.api_key, msg.kind)] = MessageRules(
            name=msg.name,
            api_key=msg.api_key,
            kind=msg.kind,
            lowest=msg.valid.lowest,
            highest=msg.valid.highest,
            flex_low=None if flex.empty else flex.lowest,
            flex_high=None if flex.empty else flex.highest,
            structs=tuple(rules),
        )
    return table


# ---------------------------------------------------------------- the oracle

# Plan ops, compiled once per (message, struct, v, w): what to look at in an instance.
_ABSENT, _NONNULL, _CHILD, _TAGS = 0, 1, 2, 3
# Expectation ops: fields written at v that w lacks must decode to their default; fields
# with such a field below them are compared item by item; the rest compare as one tuple.
_DROPPED, _SAME = 4, 5
Plan = tuple[tuple[Any, ...], ...]


class Oracle:
    """Whether writing a message built at version ``v`` must fail at version ``w``, and
    what it must decode to when it does not.

    Kafka's rule: ``encode(w)`` fails exactly when a field that does not exist at ``w``
    and is not ignorable holds a non-default value, when a field is null where ``w`` does
    not allow null, or when a struct written at ``w`` carries unknown tagged fields and
    ``w`` is not flexible. Otherwise decoding at ``w`` gives the message back with the
    fields ``w`` lacks at their defaults. Plans are compiled per (message, v, w) from the
    rules and only visit the parts of an instance that can break, so most pairs cost
    nothing.
    """

    def __init__(self, rules: MessageRules) -> None:
        self.rules = rules
        self._plans: dict[tuple[int, int, int], Plan | None] = {}
        self._expect: dict[tuple[int, int, int], Plan | None] = {}
        self._shapes: dict[int, tuple[Any, ...]] = {}

    def violation(self, obj: Any, v: int, w: int) -> str | None:
        """The first reason ``obj`` (valid at ``v``) cannot be written at ``w``, or None."""
        plan = self._plan(0, v, w)
        if plan is None:
            return None
        return self._walk(obj, plan, self.rules.structs[0].name)

    def plan(self, v: int, w: int) -> Plan | None:
        """The compiled violation check of (v, w) for :meth:`walk`; None: nothing can fail."""
        return self._plan(0, v, w)

    def walk(self, obj: Any, plan: Plan) -> str | None:
        """:meth:`violation` with the plan already looked up."""
        return self._walk(obj, plan, self.rules.structs[0].name)

    def shape(self, w: int) -> tuple[Any, ...]:
        """Everything the rules say about version ``w`` that a check at ``w`` depends on:
        which fields exist, which may be null, whether it is flexible. Two versions with
        the same shape get the same plans from every (v, w) method here."""
        shape = self._shapes.get(w)
        if shape is None:
            rules = self.rules
            shape = self._shapes[w] = (
                rules.flexible(w),
                *(
                    (f.low <= w <= f.high, f.null_low <= w <= f.null_high)
                    for s in rules.structs
                    for f in s.fields
                ),
            )
        return shape

    def expectation(self, v: int, w: int) -> Plan | None:
        """The compiled comparison of a message built at ``v`` with its decoding at ``w``
        (see :meth:`mismatch`); None when no field written at ``v`` is missing at ``w``,
        so the decoding must simply equal the message."""
        return self._expectation(0, v, w)

    def mismatch(self, decoded: Any, obj: Any, plan: Plan) -> str | None:
        """Where ``decoded`` (read at w) differs from ``obj`` (built at v) with the fields
        ``w`` lacks at their defaults, as a field path; None when it does not."""
        return self._compare(decoded, obj, plan, self.rules.structs[0].name)

    def _plan(self, index: int, v: int, w: int) -> Plan | None:
        key = (index, v, w)
        if key in self._plans:
            return self._plans[key]
        self._plans[key] = None  # recursion guard: structs do not nest themselves
        rules = self.rules
        ops: list[tuple[Any, ...]] = []
        for f in rules.structs[index].fields:
            at_v = f.low <= v <= f.high
            at_w = f.low <= w <= f.high
            if not at_w:
                # A field absent at v holds its default (the round trip at v proves it).
                if at_v and not f.ignorable:
                    ops.append((_ABSENT, f.attr, f.default_kind, f.default, f.child))
                continue
            nullable_w = f.null_low <= w <= f.null_high
            if not nullable_w and (f.null_low <= f.null_high or f.default_kind == NULL):
                ops.append((_NONNULL, f.attr))
            if f.child >= 0:
                child = self._plan(f.child, v, w)
                if child is not None:
                    name = rules.structs[f.child].name
                    ops.append((_CHILD, f.attr, f.array, child, name))
        if rules.flexible(v) and not rules.flexible(w):
            ops.append((_TAGS,))
        plan = tuple(ops) if ops else None
        self._plans[key] = plan
        return plan

    def _expectation(self, index: int, v: int, w: int) -> Plan | None:
        key = (index, v, w)
        if key in self._expect:
            return self._expect[key]
        self._expect[key] = None  # recursion guard, as in _plan
        rules = self.rules
        ops: list[tuple[Any, ...]] = []
        same: list[str] = []
        for f in rules.structs[index].fields:
            if f.low <= v <= f.high and not f.low <= w <= f.high:
                ops.append((_DROPPED, f.attr, f.default_kind, f.default, f.child))
                continue
            child = self._expectation(f.child, v, w) if f.child >= 0 else None
            if child is None:
                same.append(f.attr)
            else:
                ops.append((_CHILD, f.attr, f.array, child, rules.structs[f.child].name))
        if not ops:
            self._expect[key] = None
            return None
        same.append("unknown_tagged_fields")
        plan = ((_SAME, operator.attrgetter(*same), tuple(same)), *ops)
        self._expect[key] = plan
        return plan

    def _compare(self, d: Any, m: Any, plan: Plan, path: str) -> str | None:
        for op in plan:
            code = op[0]
            if code == _SAME:
                if op[1](d) != op[1](m):
                    for attr in op[2]:
                        x, y = getattr(d, attr), getattr(m, attr)
                        if x != y:
                            return f"{path}.{attr}: {x!r:.80} != {y!r:.80}"
            elif code == _DROPPED:
                if not self._is_default(getattr(d, op[1]), op[2], op[3], op[4]):
                    return f"{path}.{op[1]} does not exist here but decoded to a non-default value"
            else:  # _CHILD
                x, y = getattr(d, op[1]), getattr(m, op[1])
                if x is None or y is None:
                    if x is not y:
                        return f"{path}.{op[1]}: {x!r:.80} != {y!r:.80}"
                    continue
                if op[2]:
                    if len(x) != len(y):
                        return f"{path}.{op[1]}: {len(x)} items != {len(y)}"
                    for i, (a, b) in enumerate(zip(x, y, strict=True)):
                        why = self._compare(a, b, op[3], f"{path}.{op[1]}[{i}]")
                        if why is not None:
                            return why
                else:
                    why = self._compare(x, y, op[3], f"{path}.{op[1]}")
                    if why is not None:
                        return why
        return None

    def _walk(self, obj: Any, plan: Plan, path: str) -> str | None:
        for op in plan:
            code = op[0]
            if code == _ABSENT:
                value = getattr(obj, op[1])
                if not self._is_default(value, op[2], op[3], op[4]):
                    return f"{path}.{op[1]} holds a non-default value and does not exist"
            elif code == _NONNULL:
                if getattr(obj, op[1]) is None:
                    return f"{path}.{op[1]} is null and not nullable"
            elif code == _CHILD:
                value = getattr(obj, op[1])
                if value is None:
                    continue
                items = value if op[2] else (value,)
                for item in items:
                    why = self._walk(item, op[3], op[4])
                    if why is not None:
                        return why
            elif obj.unknown_tagged_fields:
                return f"{path} carries unknown tagged fields and the version is not flexible"
        return None

    def _is_default(self, value: Any, kind: str, default: Any, child: int) -> bool:
        if kind == VALUE:
            return bool(value == default)
        if kind == NULL:
            return value is None
        if kind == EMPTY:
            return value is not None and len(value) == 0
        # A struct is at its default when every field is and it has no unknown tags.
        if value is None:
            return False
        if value.unknown_tagged_fields:
            return False
        return all(
            self._is_default(getattr(value, f.attr), f.default_kind, f.default, f.child)
            for f in self.rules.structs[child].fields
        )


__all__ = ["FieldRule", "MessageRules", "Oracle", "StructRules", "Table", "build_table"]
