"""Random messages of any generated class, built from its field table and layouts.

Generated modules carry, per struct, a field table (its fields in spec order) and, per
wire layout, a plan (which fields a version has, of what kind, nullable or not); the
runtime keeps them on the class (``_field_table``, ``_plans``). The fuzz builds random
messages by walking those: a field the version lacks takes its default without a draw,
a tagged field asks ``gen.present()`` first, a nullable one ``gen.is_null()``, then one
generator call per value, and flexible versions end with ``gen.unknown_tags(first free
tag)``. The generator is a :class:`~kafkagen.fuzz.randomgen.RandomGen` (seeded volume
fuzzing) or :class:`~kafkagen.fuzz.strategies.HypothesisGen` (shrinking examples).

Where the compiled accelerator is in use, the compiled builder of
``kafkagen.fuzz._builders`` walks the same tables in C for a RandomGen over
``random.Random``, drawing exactly what the Python walk draws, and hands any other
generator to it. Nothing here is imported by the runtime or the generated package.
"""

from __future__ import annotations

import importlib
import os
import random
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar, cast

from kafkagen.runtime.errors import UnsupportedVersionError
from kafkagen.runtime.message import KeyedList, Struct, native, new_instance, stale_native

from .randomgen import RandomGen

S = TypeVar("S", bound=Struct)
#: A builder of one struct at one version: generator -> instance.
Build = Callable[[Any], Any]
#: A class's builder for all its versions: (generator, version) -> instance.
ClassBuild = Callable[[Any, int], Any]

_INT_KINDS = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})


def _load_builders() -> ModuleType | None:
    """The compiled builders, when the accelerator is in use and they match their source."""
    if native is None:
        return None
    try:
        # by name: an import of the extension from the package reads as one of the package
        _builders = importlib.import_module("kafkagen.fuzz._builders")
    except ImportError:
        return None
    here = os.path.dirname(__file__)
    runtime = os.path.dirname(cast(str, native.__file__))
    sources = [os.path.join(here, "_builders.c"), os.path.join(runtime, "_native.h")]
    refusal = stale_native(_builders, sources)
    if refusal is not None:
        # the Python walk draws the same messages, only slower
        warnings.warn(
            refusal.replace("pure-Python codecs", "Python random builders"), RuntimeWarning, 2
        )
        return None
    from . import randomgen

    try:
        _builders.configure(randomgen)
    except NotImplementedError:
        return None  # RandomGen's tables changed shape: every builder stays in Python
    return _builders


#: The compiled builders module, or None when every message is built in Python.
compiled: ModuleType | None = _load_builders()


def _default_of(spec: tuple[Any, ...]) -> Callable[[], Any]:
    """A fresh default from a plan's default: ("value", v), ("list",), ("keyed",) or
    ("struct", class, shared default instance)."""
    kind = spec[0]
    if kind == "value":
        value = spec[1]
        return lambda: value
    if kind == "list":
        return list
    if kind == "keyed":
        return KeyedList
    return cast(Callable[[], Any], spec[1])


def _scalar(kind: Any, sub_table: Any) -> Build:
    """A builder of one value of an op or array element kind (a nested plan: a struct)."""
    if not isinstance(kind, str):
        return _struct_builder(sub_table, kind)
    if kind in _INT_KINDS:
        return lambda g: g.int(kind)
    if kind == "float64":
        return lambda g: g.float()
    if kind == "bool":
        return lambda g: g.bool()
    if kind == "uuid":
        return lambda g: g.uuid()
    if kind == "string":
        return lambda g: g.str()
    if kind == "bytes":
        return lambda g: g.bytes()
    raise ValueError(f"no random values of kind {kind!r}")


def _value(op: tuple[Any, ...], sub_table: Any) -> Build:
    """A builder of one field's value at one layout, null drawn first where allowed."""
    kind = op[0]
    nullable = False
    if kind == "struct":
        make = _scalar(op[3], sub_table)
        nullable = op[2]
    elif kind == "array":
        item = _scalar(op[4], sub_table)
        nullable = op[3]
        if op[5]:

            def make(g: Any) -> Any:
                return KeyedList([item(g) for _ in range(g.count())])

        else:

            def make(g: Any) -> Any:
                return [item(g) for _ in range(g.count())]

    else:
        make = _scalar(kind, sub_table)
        nullable = kind in ("string", "bytes") and op[3]
    if not nullable:
        return make
    return lambda g: None if g.is_null() else make(g)


def _absent(default: Callable[[], Any]) -> Build:
    """A field the version lacks: its default, without a draw."""
    return lambda _g: default()


def _tagged(make: Build, default: Callable[[], Any]) -> Build:
    return lambda g: make(g) if g.present() else default()


_STRUCTS: dict[tuple[int, int], Build] = {}


def _struct_builder(table: Any, plan: tuple[Any, ...]) -> Build:
    """The builder of one struct at the layout ``plan``, its fields in ``table``'s order."""
    key = (id(table), id(plan))
    known = _STRUCTS.get(key)
    if known is not None:
        return known
    cls, flexible, ops, tags, qualname, _other_tags = plan
    _table_cls, rows, first_free = table
    by_attr = {op[1]: op for op in ops}
    tag_defaults = {op[1]: _default_of(default) for _tag, op, default in tags}
    by_attr.update((op[1], op) for _tag, op, _default in tags)
    steps: list[tuple[str, Build]] = []
    for attr, _json_key, tagged, _ever_nullable, sub_table in rows:
        op = by_attr.get(attr)
        if op is None:
            raise ValueError(f"{qualname}: field table names {attr}, which the layout lacks")
        if op[0] == "absent":
            steps.append((attr, _absent(_default_of(op[2]))))
        elif tagged:
            steps.append((attr, _tagged(_value(op, sub_table), tag_defaults[attr])))
        else:
            steps.append((attr, _value(op, sub_table)))

    def build(g: Any) -> Any:
        o = new_instance(cls)
        for attr, make in steps:
            setattr(o, attr, make(g))
        o.unknown_tagged_fields = g.unknown_tags(first_free) if flexible else ()
        return o

    _STRUCTS[key] = build
    return build


def _python_builder(cls: type[Struct]) -> ClassBuild:
    """``cls``'s Python builder for every version, walking its table and layouts."""
    table = cls._field_table
    plans = cls._plans

    def build(gen: Any, version: int) -> Any:
        plan = plans.get(version)
        if plan is None:
            raise UnsupportedVersionError(
                f"{cls.__name__} has no version {version} "
                f"(supported {min(plans, default=0)}-{max(plans, default=0)})"
            )
        return _struct_builder(table, plan)(gen)

    return build


_BUILDERS: dict[type[Struct], ClassBuild] = {}


def builder(cls: type[Struct]) -> ClassBuild:
    """``cls``'s random builder, ``(gen, version) -> instance``: compiled where it can be,
    the Python walk otherwise (and for any generator but a RandomGen over random.Random)."""
    known = _BUILDERS.get(cls)
    if known is not None:
        return known
    build = _python_builder(cls)
    if compiled is not None:
        codecs = _native_codecs(cls)
        if codecs:
            try:
                build = compiled.RandomBuilder(cls, build, cls._field_table, codecs)
            except NotImplementedError:
                pass  # some layout the compiled walk cannot serve: Python for all
    _BUILDERS[cls] = build
    return build


def _native_codecs(cls: type[Struct]) -> dict[int, Any]:
    """``{version: compiled Codec}`` of the versions ``cls`` decodes through the accelerator."""
    assert native is not None
    out = {}
    for version, decoder in cls._decoders.items():
        codec = getattr(decoder, "__self__", None)
        if isinstance(codec, native.Codec):
            out[version] = codec
    return out


def python_builder(cls: type[Struct]) -> ClassBuild:
    """``cls``'s Python builder, compiled or not (for comparisons and benchmarks)."""
    build = builder(cls)
    if compiled is not None and isinstance(build, compiled.RandomBuilder):
        return cast(ClassBuild, build.python_random)
    return build


def uses_compiled_builder(cls: type[Struct]) -> bool:
    """Whether ``cls``'s random messages are built in C."""
    return compiled is not None and isinstance(builder(cls), compiled.RandomBuilder)


def random_message(cls: type[S], version: int, gen: Any = None) -> S:
    """A random instance of ``cls`` valid at ``version``: every field that version has is
    drawn, every other holds its default, so it encodes at ``version`` and decodes back
    equal. ``gen`` is a seed, a :class:`random.Random`, a :class:`RandomGen` (default:
    seed 0) or any generator of RandomGen's interface (such as the Hypothesis one).
    """
    if gen is None or isinstance(gen, (int, random.Random)):
        gen = RandomGen(0 if gen is None else gen)
    return cast(S, builder(cls)(gen, version))


__all__ = [
    "RandomGen",
    "builder",
    "compiled",
    "python_builder",
    "random_message",
    "uses_compiled_builder",
]
