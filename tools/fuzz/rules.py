"""What the specs say about writing a message at another version: the fuzz's oracle.

The cross-version check must not trust the codec to know when ``encode(w)`` should fail,
so the expectation is computed here from the spec model (``kafkagen.generator.model``).
The driver turns the model into a compact, picklable table of plain tuples
(:func:`build_table`); executors only need this module and the table, not the specs or the
generator, which a zipped package could not read from disk anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple, cast

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
    #: The versions Kafka's own classes (and the peers modelled on Kafka) may judge: None
    #: for every version Kafka has; for another package than the built-in, those whose
    #: schema is the built-in's (kafkagen.fuzz.packages).
    kafka_versions: tuple[int, ...] | None = None

    def judged(self, version: int) -> bool:
        return self.kafka_versions is None or version in self.kafka_versions

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

# Plan ops, built once per (message, struct, v, w): what to look at in an instance.
_ABSENT, _NONNULL, _CHILD, _TAGS = 0, 1, 2, 3
# Expectation ops: fields written at v that w lacks must decode to their default; fields
# with such a field below them are compared item by item; the rest (_SAME) must be equal.
_DROPPED, _SAME = 4, 5
Ops = tuple[tuple[Any, ...], ...]
#: A compiled plan: ``check(obj)`` (the violation walk) or ``compare(decoded, obj)`` (the
#: expectation), each returning None or where and why, as text.
Plan = Callable[..., Any]


class _Compiler:
    """Turns op plans into straight-line Python functions.

    The cross-version check runs a walk and often a comparison per message and other
    version; interpreting the op tuples cost a Python call and a dispatch per op and per
    array item. Each plan becomes the source of one function (nested plans are functions
    it calls), compiled once; plans with the same source and constants share it, which
    most (v, w) pairs of a message do.
    """

    def __init__(self, is_default: Callable[[Any, str, Any, int], bool]) -> None:
        self._is_default = is_default
        self._cache: dict[tuple[Any, ...], Plan] = {}

    def _default_test(self, kind: str, default: Any, child: int, v: str, env: list[Any]) -> str:
        """An expression true when ``v`` holds the field's default."""
        if kind == VALUE:
            env.append(default)
            return f"{v} == K[{len(env) - 1}]"
        if kind == NULL:
            return f"{v} is None"
        if kind == EMPTY:
            return f"({v} is not None and len({v}) == 0)"
        env.append(child)
        return f"is_default({v}, 'struct', None, K[{len(env) - 1}])"

    def _build(self, lines: list[str], env: list[Any], args: str) -> Plan:
        source = f"def plan({args}):\n" + "".join(f"    {line}\n" for line in lines)
        key = (source, tuple((type(c), c) for c in env))
        fn = self._cache.get(key)
        if fn is None:
            scope: dict[str, Any] = {"K": tuple(env), "is_default": self._is_default}
            exec(compile(source, "<fuzz oracle>", "exec"), scope)  # noqa: S102 - our own source
            fn = self._cache[key] = scope["plan"]
        return fn

    def walk(self, ops: Ops, path: str) -> Plan:
        """``check(obj)``: the first reason ``obj`` cannot be written, or None."""
        lines: list[str] = []
        env: list[Any] = []
        for op in ops:
            code = op[0]
            if code == _ABSENT:
                test = self._default_test(op[2], op[3], op[4], "v", env)
                why = f"{path}.{op[1]} holds a non-default value and does not exist"
                lines += [f"v = o.{op[1]}", f"if not {test}:", f"    return {why!r}"]
            elif code == _NONNULL:
                why = f"{path}.{op[1]} is null and not nullable"
                lines += [f"if o.{op[1]} is None:", f"    return {why!r}"]
            elif code == _CHILD:
                env.append(self.walk(op[3], op[4]))
                call = f"K[{len(env) - 1}]"
                lines += [f"v = o.{op[1]}", "if v is not None:"]
                if op[2]:
                    lines += ["    for x in v:", f"        r = {call}(x)"]
                    lines += ["        if r is not None:", "            return r"]
                else:
                    lines += [f"    r = {call}(v)", "    if r is not None:", "        return r"]
            else:
                why = f"{path} carries unknown tagged fields and the version is not flexible"
                lines += ["if o.unknown_tagged_fields:", f"    return {why!r}"]
        lines.append("return None")
        return self._build(lines, env, "o")

    def compare(self, ops: Ops) -> Plan:
        """``compare(d, m)``: where ``d`` differs from ``m``'s expectation, as a field path
        relative to the struct (the caller puts its own path in front), or None."""
        lines: list[str] = []
        env: list[Any] = []
        for op in ops:
            code = op[0]
            if code == _SAME:
                for attr in op[1]:
                    lines += [f"x = d.{attr}", f"y = m.{attr}", "if x != y:"]
                    lines += [f"    return f'.{attr}: {{x!r:.80}} != {{y!r:.80}}'"]
            elif code == _DROPPED:
                test = self._default_test(op[2], op[3], op[4], "x", env)
                why = f".{op[1]} does not exist here but decoded to a non-default value"
                lines += [f"x = d.{op[1]}", f"if not {test}:", f"    return {why!r}"]
            else:  # _CHILD
                env.append(self.compare(op[3]))
                call = f"K[{len(env) - 1}]"
                lines += [f"x = d.{op[1]}", f"y = m.{op[1]}", "if x is None or y is None:"]
                lines += ["    if x is not y:"]
                lines += [f"        return f'.{op[1]}: {{x!r:.80}} != {{y!r:.80}}'"]
                if op[2]:
                    lines += ["elif len(x) != len(y):"]
                    lines += [f"    return f'.{op[1]}: {{len(x)}} items != {{len(y)}}'"]
                    lines += ["else:", "    for i, (a, b) in enumerate(zip(x, y)):"]
                    lines += [f"        r = {call}(a, b)", "        if r is not None:"]
                    lines += [f"            return f'.{op[1]}[{{i}}]' + r"]
                else:
                    lines += ["else:", f"    r = {call}(x, y)", "    if r is not None:"]
                    lines += [f"        return '.{op[1]}' + r"]
        lines.append("return None")
        return self._build(lines, env, "d, m")


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
        self._plans: dict[tuple[int, int, int], Ops | None] = {}
        self._expect: dict[tuple[int, int, int], Ops | None] = {}
        self._shapes: dict[int, tuple[Any, ...]] = {}
        self._compiled: dict[tuple[str, int, int], Plan | None] = {}
        self._compiler = _Compiler(self._is_default)

    def violation(self, obj: Any, v: int, w: int) -> str | None:
        """The first reason ``obj`` (valid at ``v``) cannot be written at ``w``, or None."""
        plan = self.plan(v, w)
        return None if plan is None else self.walk(obj, plan)

    def plan(self, v: int, w: int) -> Plan | None:
        """The compiled violation check of (v, w) for :meth:`walk`; None: nothing can fail."""
        key = ("walk", v, w)
        if key not in self._compiled:
            ops = self._plan(0, v, w)
            self._compiled[key] = (
                None if ops is None else self._compiler.walk(ops, self.rules.structs[0].name)
            )
        return self._compiled[key]

    def walk(self, obj: Any, plan: Plan) -> str | None:
        """:meth:`violation` with the plan already looked up."""
        return cast(str | None, plan(obj))

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
        key = ("compare", v, w)
        if key not in self._compiled:
            ops = self._expectation(0, v, w)
            self._compiled[key] = None if ops is None else self._compiler.compare(ops)
        return self._compiled[key]

    def mismatch(self, decoded: Any, obj: Any, plan: Plan) -> str | None:
        """Where ``decoded`` (read at w) differs from ``obj`` (built at v) with the fields
        ``w`` lacks at their defaults, as a field path; None when it does not."""
        where = plan(decoded, obj)
        return None if where is None else self.rules.structs[0].name + where

    def _plan(self, index: int, v: int, w: int) -> Ops | None:
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

    def _expectation(self, index: int, v: int, w: int) -> Ops | None:
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
        plan = ((_SAME, tuple(same)), *ops)
        self._expect[key] = plan
        return plan

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
