"""The fuzz's compiled random builders against its Python ones.

For a :class:`RandomGen` over ``random.Random``, ``builder(cls)`` is the compiled builder
(``kafkagen.fuzz._builders.RandomBuilder``); it must build exactly the object the Python
walk of the same field tables builds from the same generator state, and leave the PRNG,
the array budget and the unknown-tag count exactly as the Python builder leaves them,
since fuzz replays regenerate messages from seeds in either mode.
"""

from __future__ import annotations

import gc
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from kafkagen.fuzz import randomgen
from kafkagen.fuzz.builders import builder, compiled, python_builder, uses_compiled_builder
from kafkagen.fuzz.randomgen import RandomGen
from kafkagen.generated.alter_client_quotas import AlterClientQuotasRequest
from kafkagen.generated.describe_client_quotas import DescribeClientQuotasResponse
from kafkagen.generated.fetch import FetchRequest, FetchResponse
from kafkagen.generated.metadata import MetadataResponse
from kafkagen.runtime.errors import UnsupportedVersionError
from kafkagen.runtime.message import Message, Struct
from memory import growth
from test_native import CLASSES, IDS, PURE, difference, reference_counts, versions

native_only = pytest.mark.skipif(compiled is None, reason="needs the compiled builders")

#: Budgets cycled through per message: none, the fuzzer's usual ones, and a large one.
BUDGETS = (0, 6, 24, 400, 6, 200)
MESSAGES = 200


def same_state(a: RandomGen, b: RandomGen) -> bool:
    return (a.rng.getstate(), a.budget, a.unknown) == (b.rng.getstate(), b.budget, b.unknown)


def census(value: Any, seen: Counter[str]) -> None:
    """Counts the rare shapes a message holds, to show the comparisons reached them."""
    if isinstance(value, Struct):
        if value.unknown_tagged_fields:
            seen["unknown tags"] += 1
        for slot in type(value).__slots__[:-1]:
            census(getattr(value, slot), seen)
    elif isinstance(value, list):
        if len(value) >= 127:
            seen["127+ items"] += 1
        for item in value:
            census(item, seen)
    elif isinstance(value, str):
        if not value.isascii():
            seen["non-ASCII text"] += 1
        if any(ord(c) > 0xFFFF for c in value):
            seen["4-byte characters"] += 1
        if len(value) > 12:
            seen["long strings"] += 1
    elif isinstance(value, bytes) and len(value) > 16:
        seen["long bytes"] += 1
    elif value is None:
        seen["null"] += 1


# --------------------------------------------------------------------------- in use


@native_only
def test_every_generated_class_builds_through_the_accelerator() -> None:
    assert compiled is not None
    assert all(uses_compiled_builder(cls) for cls in CLASSES)
    nested = FetchResponse.PartitionData
    assert uses_compiled_builder(nested)
    for cls in (FetchResponse, nested):
        python = python_builder(cls)
        assert not isinstance(python, compiled.RandomBuilder)
        assert builder(cls) is not python


@pytest.mark.skipif(not PURE, reason="checks the KAFKAGEN_PURE_PYTHON=1 mode")
def test_the_pure_python_mode_builds_with_the_python_builders() -> None:
    assert not any(uses_compiled_builder(cls) for cls in CLASSES)
    assert python_builder(FetchResponse) is builder(FetchResponse)


# --------------------------------------------------------------------------- agreement


@native_only
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_native_and_python_builders_build_the_same_messages(cls: type[Message]) -> None:
    """Message after message from one generator, so any drift in the PRNG, the budget or
    the unknown-tag count shows up in the messages that follow, not only in the state."""
    build, python = builder(cls), python_builder(cls)
    for version in versions(cls):
        seed = hash((cls.__name__, version)) & 0xFFFFFFFF
        a, b = RandomGen(seed), RandomGen(seed)
        for i in range(MESSAGES):
            if i % 3:
                a.reset(BUDGETS[i % len(BUDGETS)])
                b.reset(BUDGETS[i % len(BUDGETS)])
            else:  # no reset: the unknown-tag count and a spent budget carry over
                a.budget = b.budget = a.budget + 2
            native, expected = build(a, version), python(b, version)
            found = difference(native, expected)
            assert found is None, f"v{version} message {i}: {found}"
            assert same_state(a, b), f"v{version} message {i}: generator states differ"


@native_only
def test_the_comparisons_reach_the_rare_branches() -> None:
    """The shapes the odds make rare all occur in messages both builders agree on."""
    seen: Counter[str] = Counter()
    for cls in (FetchResponse, FetchRequest, MetadataResponse):
        a, b = RandomGen(11), RandomGen(11)
        for i in range(600):
            budget = 400 if i % 2 else 0
            a.reset(budget)
            b.reset(budget)
            m = builder(cls)(a, cls.HIGHEST_VERSION)
            assert difference(m, python_builder(cls)(b, cls.HIGHEST_VERSION)) is None
            assert same_state(a, b)
            census(m, seen)
    wanted = ["unknown tags", "127+ items", "non-ASCII text", "4-byte characters"]
    wanted += ["long strings", "long bytes", "null"]
    assert all(seen[k] > 0 for k in wanted), seen


@native_only
@pytest.mark.parametrize("cls", [AlterClientQuotasRequest, DescribeClientQuotasResponse])
def test_float_fields_agree_through_edges_and_uniform_draws(cls: type[Message]) -> None:
    """The only float64 fields: both paths of RandomGen.float, edges and uniform()."""
    kinds: Counter[str] = Counter()
    for version in versions(cls):
        a, b = RandomGen(5, 400), RandomGen(5, 400)
        for _ in range(100):
            a.reset(24)
            b.reset(24)
            m = builder(cls)(a, version)
            assert difference(m, python_builder(cls)(b, version)) is None
            assert same_state(a, b)
            for value in floats(m):
                kinds["edge" if value in randomgen._EDGE_FLOATS else "uniform"] += 1
    assert kinds["edge"] > 0 and kinds["uniform"] > 0, kinds


def floats(value: Any) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, Struct):
        return [f for slot in type(value).__slots__ for f in floats(getattr(value, slot))]
    if isinstance(value, list):
        return [f for item in value for f in floats(item)]
    return []


@native_only
def test_versions_without_a_layout_are_refused_by_both_builders() -> None:
    cls = FetchResponse
    for version in (cls.HIGHEST_VERSION + 1, 10**6, -1):
        a, b = RandomGen(3), RandomGen(3)
        for gen, build in ((a, builder(cls)), (b, python_builder(cls))):
            with pytest.raises(UnsupportedVersionError, match=f"no version {version}"):
                build(gen, version)
        assert same_state(a, b)


# --------------------------------------------------------------------------- other generators


class CountingGen(RandomGen):
    """A RandomGen subclass: its overrides only run if the Python builder serves it."""

    __slots__ = ("calls",)

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.calls = 0

    def is_null(self) -> bool:
        self.calls += 1
        return super().is_null()


class CountingRandom(random.Random):
    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.calls = 0

    def random(self) -> float:
        self.calls += 1
        return super().random()


@native_only
def test_other_generators_and_prngs_get_the_python_builder() -> None:
    cls, version = FetchResponse, 12
    gen = CountingGen(1)
    for _ in range(20):
        builder(cls)(gen, version)
    assert gen.calls > 0
    a, b = RandomGen(CountingRandom(4)), RandomGen(CountingRandom(4))
    m = builder(cls)(a, version)
    assert difference(m, python_builder(cls)(b, version)) is None
    assert isinstance(a.rng, CountingRandom) and isinstance(b.rng, CountingRandom)
    assert a.rng.calls == b.rng.calls > 0
    # budgets past a C long long, or not a plain int: Python decides what they mean
    for budget in (2**70, True):
        a, b = RandomGen(2), RandomGen(2)
        a.budget = b.budget = budget
        assert difference(builder(cls)(a, version), python_builder(cls)(b, version)) is None
        assert same_state(a, b) and type(a.budget) is type(b.budget)


@native_only
def test_the_hypothesis_generator_keeps_the_python_builder() -> None:
    from hypothesis import given, settings
    from kafkagen.fuzz.strategies import message_strategy

    built: list[Any] = []

    @settings(max_examples=20, database=None)
    @given(message_strategy(FetchResponse, 12, min_unknown_tags=1))
    def run(m: Any) -> None:
        built.append(m)

    run()
    # one or more unknown tags on every message: HypothesisGen's answers, not RandomGen's
    assert len(built) >= 10
    assert all(isinstance(m, FetchResponse) and m.unknown_tagged_fields for m in built)


# --------------------------------------------------------------------------- errors


class Broken(Exception):
    pass


def failing_after(rng: random.Random, name: str, n: int) -> list[int]:
    """Makes ``rng.<name>`` raise Broken on its n-th call (an instance attribute, which both
    builders look up); returns the call counter."""
    real = getattr(rng, name)
    calls = [0]

    def method(*args: Any) -> Any:
        calls[0] += 1
        if calls[0] >= n:
            raise Broken(name)
        return real(*args)

    setattr(rng, name, method)
    return calls


@native_only
@pytest.mark.parametrize("name", ["random", "getrandbits", "uniform"])
def test_an_error_in_a_draw_propagates_and_leaves_the_python_state(name: str) -> None:
    cls: type[Message] = DescribeClientQuotasResponse if name == "uniform" else MetadataResponse
    version = cls.HIGHEST_VERSION
    for n in (1, 2, 5, 30):
        a, b = RandomGen(9, 400), RandomGen(9, 400)
        calls_a = failing_after(a.rng, name, n)
        calls_b = failing_after(b.rng, name, n)
        outcomes: list[str | None] = []
        for gen, build in ((a, builder(cls)), (b, python_builder(cls))):
            try:
                for _ in range(50):
                    build(gen, version)
                outcomes.append(None)
            except Broken as e:
                outcomes.append(str(e))
        assert outcomes[0] == outcomes[1]
        assert calls_a == calls_b
        assert (a.budget, a.unknown) == (b.budget, b.unknown)


# --------------------------------------------------------------------------- references


@native_only
@pytest.mark.parametrize("cls, version", [(MetadataResponse, 12), (FetchResponse, 16)])
def test_built_objects_hold_exactly_the_python_builders_references(
    cls: type[Message], version: int
) -> None:
    a, b = RandomGen(21, 400), RandomGen(21, 400)
    native, python = builder(cls)(a, version), python_builder(cls)(b, version)
    native_counts, python_counts = reference_counts(native), reference_counts(python)
    assert len(native_counts) > 10
    assert native_counts == python_counts


@native_only
def test_shared_values_keep_their_reference_counts() -> None:
    shared = [randomgen._ZERO_UUID, *randomgen._EDGE_FLOATS, True, False, None]
    shared += [e for edges, *_ in randomgen._INTS.values() for e in edges]
    gen = RandomGen(8)
    things = [gen, gen.rng, FetchResponse, MetadataResponse, *shared]

    def run() -> None:
        for _ in range(300):
            gen.reset(400)
            builder(FetchResponse)(gen, 16)
            builder(MetadataResponse)(gen, 12)

    run()  # warm caches
    # Instances of a class hold a reference to it: collect what earlier tests left behind
    # before each count, or their collection shows as a change.
    gc.collect()
    before = [sys.getrefcount(x) for x in things]
    run()
    gc.collect()
    assert [sys.getrefcount(x) for x in things] == before


@native_only
def test_repeated_builds_and_failures_do_not_grow_memory() -> None:
    gen = RandomGen(4)
    broken = RandomGen(4)
    failing_after(broken.rng, "getrandbits", 40)

    def run() -> None:
        for _ in range(30):
            gen.reset(400)
            builder(FetchResponse)(gen, 16)
            builder(MetadataResponse)(gen, 12)
            try:
                builder(FetchResponse)(broken, 16)
            except Broken:
                pass

    grown = growth(run, 10)
    assert grown < 64 * 1024, f"memory grew by {grown} bytes over 10 rounds"


# --------------------------------------------------------------------------- both modes

DIGEST = """
import hashlib, sys
from kafkagen.generated import APIS, message_type
from kafkagen.fuzz.builders import RandomGen, builder
h = hashlib.sha256()
for key in sorted(APIS):
    for kind in ("request", "response"):
        cls = message_type(key, kind)
        for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
            gen = RandomGen(key * 100 + v)
            for i in range(8):
                gen.reset((0, 6, 400)[i % 3])
                h.update(repr(builder(cls)(gen, v)).encode())
            h.update(repr(gen.rng.getstate()).encode())
print(h.hexdigest())
"""


@pytest.mark.slow
@native_only
def test_the_same_seeds_give_the_same_messages_in_pure_python_mode() -> None:
    def digest(pure: bool) -> str:
        env = {**os.environ, "KAFKAGEN_PURE_PYTHON": "1" if pure else "0"}
        out = subprocess.run(
            [sys.executable, "-c", DIGEST], env=env, capture_output=True, text=True, check=True
        )
        return out.stdout.strip()

    assert digest(pure=False) == digest(pure=True)


# --------------------------------------------------------------------------- what users import

USER_CODE = """
import sys
from kafkagen.generated import header_type, message_type
MetadataResponse = message_type(3, "response")
m = MetadataResponse(topics=[MetadataResponse.MetadataResponseTopic(name="orders")])
for version in (0, 9, 12):
    wire = m.encode(version)
    assert MetadataResponse.decode(wire, version) == m
    assert MetadataResponse.from_json(m.to_json(version), version) == m
header_type("request").decode(b"\\x00\\x03\\x00\\x0c\\x00\\x00\\x00\\x01\\x00\\x00\\x00", 2)
print("\\n".join(sorted(sys.modules)))
"""


@pytest.mark.parametrize("pure", [False, True], ids=["accelerator", "pure-python"])
def test_using_a_generated_package_imports_nothing_random(pure: bool) -> None:
    env = {**os.environ, "KAFKAGEN_PURE_PYTHON": "1" if pure else "0"}
    out = subprocess.run(
        [sys.executable, "-c", USER_CODE], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    modules = out.stdout.split()
    assert "kafkagen.runtime.message" in modules and "kafkagen.generated.metadata" in modules
    if pure:
        assert "kafkagen.runtime._native" not in modules
    unwanted = [
        m
        for m in modules
        if "random" in m or m.startswith(("kafkagen.fuzz", "hypothesis", "_hypothesis"))
    ]
    assert unwanted == []


def test_the_generated_package_and_the_runtime_hold_no_random_builder() -> None:
    import kafkagen.generated
    import kafkagen.runtime
    from kafkagen.runtime import message

    for package in (kafkagen.generated, kafkagen.runtime):
        for folder in package.__path__:
            sources = [p for p in Path(folder).rglob("*") if p.suffix in (".py", ".c", ".h")]
            assert len(sources) > 5
            for path in sources:
                text = path.read_text(encoding="utf-8")
                assert "_rnd_" not in text and "RandomGen" not in text, path
                if package is kafkagen.generated:
                    assert "random" not in text.lower(), path
    assert not hasattr(message.Struct, "random") and not hasattr(message.Struct, "_random")
    if message.native is not None:
        assert not hasattr(message.native, "RandomBuilder")
        assert not hasattr(message.native, "configure_random")
