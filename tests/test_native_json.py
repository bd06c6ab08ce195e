"""The accelerator's JSON converters (runtime/_native.c, JsonForm) against the generated ones.

Every ``to_json`` / ``from_json`` the accelerator installs must give the generated Python
converter's result exactly: dicts with the same keys in the same order holding values of
the same types, structs built alike, and the same exception type and text for anything
malformed. Each JsonForm keeps the Python pair (``python_json``), so both run here in one
process on the same input.
"""

from __future__ import annotations

import array
import copy
import json
import math
import os
import struct
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafkagen.fuzz.builders import random_message
from kafkagen.generated.alter_client_quotas import AlterClientQuotasRequest
from kafkagen.generated.describe_cluster import DescribeClusterResponse
from kafkagen.generated.fetch import FetchRequest, FetchResponse
from kafkagen.generated.metadata import MetadataRequest, MetadataResponse
from kafkagen.generated.produce import ProduceRequest
from kafkagen.runtime import message as runtime
from kafkagen.runtime.message import Message, Struct, python_json, uses_native_json
from memory import growth
from test_native import CLASSES, IDS, PURE, difference, native_only, outcome, versions

# --------------------------------------------------------------------------- comparisons


def json_difference(a: Any, b: Any, path: str = "$") -> str | None:
    """Where two JSON forms differ: types compared exactly (bool is not int, float is
    not int), dict keys in order, floats bit for bit."""
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            found = json_difference(a[k], b[k], f"{path}.{k}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = json_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(a, float):
        same = struct.pack(">d", a) == struct.pack(">d", b)
        return None if same else f"{path}: {a!r} != {b!r}"
    if isinstance(a, Struct):
        return difference(a, b, path)
    return None if a is b or a == b else f"{path}: {a!r} != {b!r}"


def converters(cls: type[Struct]) -> tuple[Callable[[Any, int], Any], Callable[[Any, int], Any]]:
    return python_json(cls)


def both_to_json(cls: type[Struct], m: Any, version: int) -> None:
    py_to, _ = converters(cls)
    native, python = outcome(lambda: m.to_json(version)), outcome(lambda: py_to(m, version))
    assert native[0] == python[0], f"to_json: native {native} but Python {python}"
    if native[0] == "error":
        assert native[1] == python[1]
    else:
        found = json_difference(native[1], python[1])
        assert found is None, f"to_json: {found}"


def both_from_json(cls: type[Struct], j: Any, version: int) -> tuple[str, Any]:
    _, py_from = converters(cls)
    native = outcome(lambda: cls.from_json(j, version))
    python = outcome(lambda: py_from(j, version))
    assert native[0] == python[0], f"from_json: native {native} but Python {python}"
    if native[0] == "error":
        assert native[1] == python[1], f"from_json: native {native[1]} but Python {python[1]}"
    else:
        found = difference(native[1], python[1])
        assert found is None, f"from_json: {found}"
    return native


def fallbacks() -> int:
    assert runtime.native is not None
    count: int = runtime.native.json_fallbacks()
    return count


# --------------------------------------------------------------------------- in use


@native_only
def test_the_json_form_of_every_message_at_every_version_is_compiled() -> None:
    missing = [
        f"{cls.__name__} v{v}"
        for cls in CLASSES
        for v in versions(cls)
        if not uses_native_json(cls, v)
    ]
    assert not missing, f"Python JSON converters still in use: {missing}"


@pytest.mark.skipif(not PURE, reason="checks the KAFKAGEN_PURE_PYTHON=1 mode")
def test_the_environment_switch_keeps_the_python_json_converters() -> None:
    assert not any(uses_native_json(cls, v) for cls in CLASSES for v in versions(cls))


@pytest.mark.slow
@native_only
def test_the_pure_python_switch_keeps_python_json_converters_in_a_fresh_process() -> None:
    code = (
        "from kafkagen.runtime import message; from kafkagen.generated.fetch import "
        "FetchResponse as F; print(message.uses_native_json(F, 12), "
        "F._to_json.__name__, F._from_json.__name__)"
    )
    env = {**os.environ, "KAFKAGEN_PURE_PYTHON": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "_tj_FetchResponse", "_fj_FetchResponse"]


def tiny_struct(name: str) -> type[Message]:
    """A one-field message with hand-written codecs and JSON converters."""

    def dec(buf: Any, pos: int, end: int) -> tuple[Any, int]:
        o: Any = runtime.new_instance(cls)
        o.a = struct.unpack_from(">i", buf, pos)[0]
        o.unknown_tagged_fields = ()
        return o, pos + 4

    def enc(o: Any, w: Callable[[bytes], Any]) -> None:
        w(struct.pack(">i", o.a))

    def to_json(o: Any, version: int) -> dict[str, Any]:
        return {"a": o.a}

    def from_json(obj: Any, version: int) -> Any:
        o: Any = runtime.new_instance(cls)
        o.a = obj["a"]
        o.unknown_tagged_fields = ()
        return o

    cls = type(name, (Message,), {"__slots__": ("a", "unknown_tagged_fields")})
    runtime.bind_codecs(cls, to_json, from_json, (0, 0, dec, enc))
    return cls


@native_only
def test_a_table_the_accelerator_cannot_pair_keeps_the_python_converters() -> None:
    good, bad_key, no_field, no_codec = (tiny_struct(n) for n in ("G", "BadKey", "NoF", "NoC"))
    rows = {good: ("a", "a"), bad_key: ("a", 5), no_field: ("b", "b")}
    for cls, (attr, key) in rows.items():
        plan = (cls, False, (("int32", "a", 4),), (), cls.__name__, ())
        runtime.bind_native(cls, (cls, ((attr, key, False, False, None),), 0), (0, 0, plan))
    runtime.bind_native(no_codec, (no_codec, (("a", "a", False, False, None),), 0))
    assert uses_native_json(good, 0)
    assert not any(uses_native_json(c, 0) for c in (bad_key, no_field, no_codec))
    for cls in (good, bad_key, no_field, no_codec):
        m: Any = cls.from_json({"a": 7}, 0)
        assert m.a == 7 and m.to_json(0) == {"a": 7}
    # A version with no compiled layout runs the Python converter.
    before = fallbacks()
    odd_version: Any = good.from_json({"a": 8}, 3)
    assert odd_version.a == 8
    assert fallbacks() == before + 1


# --------------------------------------------------------------------------- agreement


@native_only
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_random_messages_convert_alike_at_every_version(cls: type[Message]) -> None:
    """to_json gives the Python converter's dict exactly, and from_json of it (and of the
    same form read back from JSON text) the Python converter's struct, with no call
    handed to Python."""
    py_to, py_from = converters(cls)
    for version in versions(cls):
        for seed in range(6):
            m = random_message(cls, version, seed)
            before = fallbacks()
            j = m.to_json(version)
            found = json_difference(j, py_to(m, version))
            assert found is None, f"v{version} seed {seed} to_json: {found}"
            text = json.loads(json.dumps(j))
            for form in (j, text):
                back = cls.from_json(form, version)
                found = difference(back, py_from(form, version))
                assert found is None, f"v{version} seed {seed} from_json: {found}"
            assert fallbacks() == before, "a valid message fell back to Python"


@pytest.mark.slow
@native_only
def test_many_random_messages_convert_alike() -> None:
    for cls in CLASSES:
        py_to, py_from = converters(cls)
        for version in versions(cls):
            for seed in range(6, 40):
                m = random_message(cls, version, seed)
                j = m.to_json(version)
                assert json_difference(j, py_to(m, version)) is None, (cls, version, seed)
                found = difference(cls.from_json(j, version), py_from(j, version))
                assert found is None, f"{cls.__name__} v{version} seed {seed}: {found}"


def mutable_parts(v: Any) -> Iterator[Any]:
    """Every list and struct in a built value, outermost first."""
    if isinstance(v, list):
        yield v
        for item in v:
            yield from mutable_parts(item)
    elif isinstance(v, Struct):
        yield v
        slots: tuple[str, ...] = type(v).__slots__
        for slot in slots:
            yield from mutable_parts(getattr(v, slot))


@native_only
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_from_json_builds_fresh_lists_and_structs(cls: type[Message]) -> None:
    """Defaults of absent and missing fields included: no two results share a list or a
    struct, as with the Python converter."""
    for version in versions(cls):
        j = random_message(cls, version, 2).to_json(version)
        first, second = cls.from_json(j, version), cls.from_json(j, version)
        shared = {id(p) for p in mutable_parts(first)} & {id(p) for p in mutable_parts(second)}
        assert not shared, f"v{version}: {len(shared)} lists or structs shared"


# --------------------------------------------------------------------------- malformed JSON


class DictSub(dict[str, Any]):
    pass


class ListSub(list[Any]):
    pass


class IntSub(int):
    pass


class StrSub(str):
    pass


def replacements(value: Any) -> list[Any]:
    """Values put in place of one JSON value: wrong types, odd containers and numbers,
    bad base64 and uuid text, and some that the Python readers still take."""
    out: list[Any] = [
        None,
        "text",
        "",
        1.5,
        2.0,
        float("nan"),
        True,
        False,
        7,
        -(2**70),
        2**70,
        [],
        {},
        [None],
        [1],
        ["x"],
        [{}],
        {"a": 1},
        IntSub(3),
        StrSub("s"),
        # base64 text: bad characters, lengths and padding, and valid odd spellings
        "!!!!",
        "AAA",
        "AA=A",
        "A===",
        "AAAA=",
        "AAAA==",
        "AB==",
        "AAB=",
        "QUJD",
        "ÄÄÄÄ",
        "AA\nA",
        "====",
        "QQ",
        "QQ=",
        "QQ==",
        # uuid text: wrong lengths, padding, characters, and '+' or '/' spellings
        "A" * 21,
        "A" * 23,
        "A" * 21 + "=",
        "A" * 20 + "+/",
        "A" * 20 + "-_",
        "A" * 21 + "!",
        "Ä" * 22,
        "A" * 21 + "B",
        "_" * 22,
    ]
    if isinstance(value, dict):
        out += [DictSub(value), list(value.items())]
    if isinstance(value, list):
        out += [ListSub(value), tuple(value), value + [None], value + ["x"], value + [1.5]]
        if value:
            out += [value[:1] * 2]
    if isinstance(value, int) and not isinstance(value, bool):
        out += [float(value), str(value), value + 1]
    return out


def sites(j: Any, depth: int = 0) -> Iterator[tuple[Any, Any, int]]:
    """(container, key or index, depth) of every value in a JSON form."""
    if isinstance(j, dict):
        for k in list(j):
            yield j, k, depth
            yield from sites(j[k], depth + 1)
    elif isinstance(j, list):
        for i in range(len(j)):
            yield j, i, depth
            yield from sites(j[i], depth + 1)


def site_path(root: Any, target: Any) -> list[Any] | None:
    """The keys leading from ``root`` to the container ``target``."""
    if root is target:
        return []
    items = (
        root.items()
        if isinstance(root, dict)
        else enumerate(root) if isinstance(root, list) else ()
    )
    for k, v in items:
        if isinstance(v, dict | list):
            found = site_path(v, target)
            if found is not None:
                return [k, *found]
    return None


def mutated(j: Any, path: list[Any], key: Any, how: str, value: Any = None) -> Any:
    out = copy.deepcopy(j)
    container = out
    for k in path:
        container = container[k]
    if how == "delete":
        del container[key]
    elif how == "extra":
        container["unknownExtraKey"] = 1
    else:
        container[key] = value
    return out


JSON_CASES = [
    (MetadataResponse, 12),
    (MetadataRequest, 4),
    (FetchResponse, 4),
    (FetchResponse, 16),
    (FetchRequest, 15),
    (ProduceRequest, 9),
    (DescribeClusterResponse, 1),
]


@native_only
@pytest.mark.parametrize("cls, version", JSON_CASES)
def test_malformed_json_raises_the_python_converters_errors(
    cls: type[Message], version: int
) -> None:
    """Each kind of irregular value at every place of the form, at every depth."""
    j = random_message(cls, version, 5).to_json(version)
    depths: set[int] = set()
    ok = errors = 0
    for container, key, depth in list(sites(j)):
        path = site_path(j, container)
        assert path is not None
        cases: list[tuple[str, Any]] = [("set", r) for r in replacements(container[key])]
        if isinstance(container, dict):
            cases += [("delete", None), ("extra", None)]
        for how, value in cases:
            bad = mutated(j, path, key, how, value)
            result = both_from_json(cls, bad, version)
            ok += result[0] == "ok"
            errors += result[0] == "error"
        depths.add(depth)
    assert len(depths) >= 3 and ok > 0 and errors > 0


@native_only
@pytest.mark.parametrize("cls, version", JSON_CASES[:3])
def test_irregular_top_level_input_and_versions_behave_alike(
    cls: type[Message], version: int
) -> None:
    j = random_message(cls, version, 1).to_json(version)
    odd: list[Any] = [None, [], "x", 3, DictSub(j), list(j.items()), {}]
    for obj in odd:
        both_from_json(cls, obj, version)
    for v in (-1, cls.HIGHEST_VERSION + 1, 10**30, True):
        both_from_json(cls, j, v)
        both_to_json(cls, random_message(cls, version, 1), v)


def wrong_json_values() -> list[Any]:
    return [
        None,
        "text",
        b"raw",
        bytearray(b"ab"),
        memoryview(b"abc"),
        memoryview(b"abcd")[::2],
        memoryview(array.array("i", [1, 2])),
        2**70,
        -1,
        1.5,
        float("nan"),
        True,
        object(),
        [],
        (),
        [None],
        ["x"],
        [b"x"],
        uuid.UUID(int=5),
        IntSub(4),
        StrSub("q"),
    ]


def structs_of(m: Any) -> Iterator[Any]:
    for part in mutable_parts(m):
        if isinstance(part, Struct):
            yield part


@native_only
@pytest.mark.parametrize("cls, version", JSON_CASES)
def test_wrong_values_in_structs_convert_or_fail_alike(cls: type[Message], version: int) -> None:
    """to_json of a struct holding wrong values, at every depth: the same dict or the
    same error as the Python converter."""
    m = random_message(cls, version, 5)
    for target in list(structs_of(m))[:12]:
        for slot in type(target).__slots__:
            saved = getattr(target, slot)
            for value in wrong_json_values():
                setattr(target, slot, value)
                both_to_json(cls, m, version)
            delattr(target, slot)
            both_to_json(cls, m, version)
            setattr(target, slot, saved)
    huge = uuid.UUID(int=1)
    object.__setattr__(huge, "int", 2**130)  # no 16-byte form: uuid_to_json raises
    fetch = random_message(FetchRequest, 13, 0)
    assert fetch.topics
    fetch.topics[-1].topic_id = huge
    both_to_json(FetchRequest, fetch, 13)


# --------------------------------------------------------------------------- references


def all_refcounts(v: Any) -> list[tuple[str, int]]:
    """The reference count of every value in a struct tree or a JSON form."""
    counts: list[tuple[str, int]] = []
    seen: set[int] = set()

    def walk(x: Any) -> None:
        if id(x) in seen:
            return
        seen.add(id(x))
        # Shared singletons (None, small ints, the empty tuple...) count uses elsewhere.
        shared = x is None or isinstance(x, bool) or (type(x) is int and -5 <= x <= 256)
        if not shared and not (isinstance(x, tuple | str | bytes) and len(x) == 0):
            counts.append((type(x).__name__, sys.getrefcount(x)))
        if isinstance(x, Struct):
            slots: tuple[str, ...] = type(x).__slots__
            for slot in slots:
                walk(getattr(x, slot))
        elif isinstance(x, list | tuple):
            for item in x:
                walk(item)
        elif isinstance(x, dict):
            for item in x.values():
                walk(item)

    walk(v)
    return counts


@native_only
@pytest.mark.parametrize("cls, version", [(MetadataResponse, 12), (FetchResponse, 16)])
def test_conversions_hold_exactly_the_python_converters_references(
    cls: type[Message], version: int
) -> None:
    m = random_message(cls, version, 3)
    py_to, py_from = converters(cls)
    j = m.to_json(version)
    before_m, before_j = all_refcounts(m), all_refcounts(j)
    assert len(before_m) > 20
    for _ in range(50):
        m.to_json(version)
        cls.from_json(j, version)
        bad = copy.deepcopy(j)
        bad.popitem()
        with pytest.raises(ValueError):
            cls.from_json(bad, version)
    del bad  # its deep copies share the leaves of j
    assert all_refcounts(m) == before_m, "to_json changed reference counts in the struct"
    assert all_refcounts(j) == before_j, "from_json changed reference counts in its input"
    native, python = cls.from_json(j, version), py_from(j, version)
    assert [c for _, c in all_refcounts(native)] == [c for _, c in all_refcounts(python)]
    native_j, python_j = m.to_json(version), py_to(m, version)
    assert [c for _, c in all_refcounts(native_j)] == [c for _, c in all_refcounts(python_j)]


@native_only
def test_repeated_failing_and_succeeding_conversions_do_not_grow_memory() -> None:
    m = random_message(MetadataResponse, 12, 3)
    j = m.to_json(12)
    broken = copy.deepcopy(j)
    broken["topics"][0]["topicId"] = "A" * 21
    wrong = random_message(MetadataResponse, 12, 4)
    wrong.topics[0].topic_id = "not a uuid"  # type: ignore[assignment]

    def run() -> None:
        for _ in range(5):
            MetadataResponse.from_json(m.to_json(12), 12)
            for bad_in, bad_out in ((broken, wrong),):
                with pytest.raises(ValueError):
                    MetadataResponse.from_json(bad_in, 12)
                with pytest.raises(AttributeError):
                    bad_out.to_json(12)

    grown = growth(run, 20)
    assert grown < 64 * 1024, f"memory grew by {grown} bytes over 20 rounds"


@native_only
def test_floats_and_uuids_convert_bit_for_bit() -> None:
    """Special floats keep their bits, an int where a float belongs reads as a float, and
    uuids are Kafka's unpadded base64url text (read back from '+' and '/' too)."""
    m = random_message(AlterClientQuotasRequest, 1, 0)
    ops = [op for entry in m.entries for op in entry.ops]
    assert ops
    for value in (0.0, -0.0, math.inf, -math.inf, float("nan"), 5e-324, 2**60, -3):
        for op in ops:
            op.value = value
        both_to_json(AlterClientQuotasRequest, m, 1)
        j = m.to_json(1)
        assert both_from_json(AlterClientQuotasRequest, j, 1)[0] == "ok"
        back = AlterClientQuotasRequest.from_json(j, 1).entries[0].ops[0].value
        assert type(back) is float
        assert struct.pack(">d", back) == struct.pack(">d", float(value))
    f = random_message(FetchRequest, 13, 0)
    assert f.topics
    for topic in f.topics:
        topic.topic_id = uuid.UUID("ffffffff-0000-4000-8000-00000000003e")
    j = f.to_json(13)
    assert j["topics"][0]["topicId"] == "_____wAAQACAAAAAAAAAPg"
    j["topics"][0]["topicId"] = "/////wAAQACAAAAAAAAAPg"
    fetch = FetchRequest.from_json(j, 13)
    assert fetch.topics[0].topic_id == f.topics[0].topic_id
    assert fetch.topics[0].topic_id.is_safe is uuid.SafeUUID.unknown
    both_from_json(FetchRequest, j, 13)
