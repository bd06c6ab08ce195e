"""Real spec directories that no one here wrote: Kafka releases from 2.4 to 4.4, and the one
kafka-python ships.

Each one generates with ``kafkagen generate`` (warning exactly where Kafka's own generator of
a later release would have refused the file), imports, and round-trips a random message of
every API, kind and version. Every version a release shipped as stable must also be read by
the built-in package byte for byte: that is what "decodes traffic of any Kafka client or
broker from 0.8 to 4.4" rests on. The jars come from Maven Central through
``kafkagen.maven`` (Maven's local repository caches them).
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from kafkagen.fuzz.builders import random_message
from kafkagen.fuzz.randomgen import RandomGen
from kafkagen.generated import message_type, other_type
from kafkagen.maven import jar

pytestmark = pytest.mark.slow

_SCRIPT = Path(sys.executable).with_name("kafkagen")
KAFKAGEN = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "kafkagen"]

#: Releases tried, with the files each is expected to warn about and why.
_FLEXIBLE_MISSING = "flexibleVersions is missing"
_TRAILING = "text after the spec's closing brace"
RELEASES: dict[str, dict[str, str]] = {
    "2.4.0": {
        "OffsetDeleteRequest.json": _FLEXIBLE_MISSING,
        "OffsetDeleteResponse.json": _FLEXIBLE_MISSING,
    },
    "2.8.2": {
        name: _FLEXIBLE_MISSING
        for name in (
            "BeginQuorumEpochRequest.json",
            "BeginQuorumEpochResponse.json",
            "ConsumerProtocolAssignment.json",
            "ConsumerProtocolSubscription.json",
            "EndQuorumEpochRequest.json",
            "EndQuorumEpochResponse.json",
            "OffsetDeleteRequest.json",
            "OffsetDeleteResponse.json",
            "SaslHandshakeRequest.json",
            "SaslHandshakeResponse.json",
        )
    }
    | {"DescribeProducersRequest.json": _TRAILING},
    "3.0.0": {},
    "3.9.1": {},
    "4.0.0": {},
    "4.4.0": {},
}
#: How many spec files each release's jar carries.
FILES = {"2.4.0": 98, "2.8.2": 136, "3.0.0": 144, "3.9.1": 186, "4.0.0": 186, "4.4.0": 203}
SEEDS = 2  # random messages per API, kind and version


def kafkagen(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KAFKAGEN, *map(str, args)], capture_output=True, text=True, timeout=600)


def release_specs(release: str, folder: Path) -> Path:
    """The spec files of a release's kafka-clients jar, copied out as they are."""
    folder.mkdir(parents=True)
    with zipfile.ZipFile(jar(f"org.apache.kafka:kafka-clients:{release}")) as z:
        for name in z.namelist():
            if name.startswith("common/message/") and name.endswith(".json"):
                (folder / Path(name).name).write_bytes(z.read(name))
    return folder


def kafka_python_specs() -> Path:
    spec = importlib.util.find_spec("kafka")
    assert spec is not None and spec.origin is not None, "kafka-python is a dev dependency"
    folder = Path(spec.origin).parent / "protocol" / "schemas" / "resources"
    assert folder.is_dir(), folder
    return folder


def warned_files(stderr: str) -> dict[str, str]:
    """File name -> the rule, for every ``warning:`` line of the generator."""
    out = {}
    for line in stderr.splitlines():
        if line.startswith("warning: "):
            file, _, rest = line.removeprefix("warning: ").partition(": ")
            rule = next(r for r in (_FLEXIBLE_MISSING, _TRAILING) if r in rest)
            out[file] = rule
    return out


@pytest.fixture
def imported(tmp_path: Path) -> Iterator[list[str]]:
    """Package names a test imports from ``tmp_path/site``; removed again afterwards."""
    names: list[str] = []
    site = str(tmp_path / "site")
    sys.path.insert(0, site)
    try:
        yield names
    finally:
        sys.path.remove(site)
        for name in list(sys.modules):
            if name.split(".")[0] in names:
                del sys.modules[name]


def generate(specs: Path, tmp_path: Path, name: str, imported: list[str]) -> tuple[ModuleType, str]:
    out = tmp_path / "site" / name
    result = kafkagen("generate", "--specs", specs, "--out", out)
    assert result.returncode == 0, result.stderr
    imported.append(name)
    importlib.invalidate_caches()  # the folder is newer than the import system's view of it
    return importlib.import_module(name), result.stderr


def classes(pkg: Any) -> Iterator[tuple[type[Any], type[Any] | None, bool]]:
    """(class, the built-in class to cross-check it with or None, latest version unstable).

    Requests, responses and headers are cross-checked: they are the traffic. The data specs
    (KRaft records, consumer protocol) are round-tripped only: KRaft's records changed while
    it was a preview (2.8's LeaderChangeMessage had nullable Voters)."""
    for key in sorted(pkg.APIS):
        unstable = bool(pkg.message_type(key, "request").LATEST_VERSION_UNSTABLE)
        for kind in ("request", "response"):
            cls = pkg.message_type(key, kind)
            yield cls, message_type(key, kind), unstable
    for name in sorted(pkg.OTHER_TYPES):
        header = name in ("RequestHeader", "ResponseHeader")
        yield pkg.other_type(name), other_type(name) if header else None, False


def versions_of(pkg: Any) -> int:
    """How many (message, version) pairs a package has."""
    return sum(c.HIGHEST_VERSION - c.LOWEST_VERSION + 1 for c, _, _ in classes(pkg))


def round_trip(pkg: Any) -> tuple[int, int, list[str]]:
    """Random messages of every message and version: (round trips, read by the built-in
    package, problems)."""
    trips = crossed = 0
    problems: list[str] = []
    for cls, builtin, unstable in classes(pkg):
        stable_top = cls.HIGHEST_VERSION - (1 if unstable else 0)
        for version in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
            for seed in range(SEEDS):
                gen = RandomGen(seed)
                m = random_message(cls, version, gen)
                wire = m.encode(version)
                if cls.decode(wire, version) != m:
                    problems.append(f"{cls.__name__} v{version} seed {seed}: round trip differs")
                trips += 1
                # Unknown tags may be tags a later release defined; an unstable latest
                # version may have changed before it shipped.
                if builtin is None or gen.unknown or version > stable_top:
                    continue
                try:
                    again = builtin.decode(wire, version).encode(version)
                except Exception as e:  # noqa: BLE001 - reported with its message and version
                    problems.append(f"{cls.__name__} v{version}: built-in cannot read it: {e}")
                    continue
                if again != wire:
                    problems.append(f"{cls.__name__} v{version}: built-in re-encodes differently")
                crossed += 1
    return trips, crossed, problems


@pytest.mark.parametrize("release", list(RELEASES))
def test_a_kafka_release_generates_imports_and_round_trips(
    release: str, tmp_path: Path, imported: list[str]
) -> None:
    specs = release_specs(release, tmp_path / "specs")
    assert len(list(specs.iterdir())) == FILES[release]
    pkg, stderr = generate(specs, tmp_path, "kafka_" + release.replace(".", "_"), imported)
    assert warned_files(stderr) == RELEASES[release]
    trips, crossed, problems = round_trip(pkg)
    assert problems == []
    assert trips == SEEDS * versions_of(pkg)
    assert crossed > 0.6 * trips, (trips, crossed)  # the rest: unknown tags, unstable


def test_kafka_pythons_shipped_specs_generate_import_and_round_trip(
    tmp_path: Path, imported: list[str]
) -> None:
    # kafka-python 3.0 ships Kafka 4.x spec files; before, their KIP-896 leftovers
    # (ListOffsetsResponse...OldStyleOffsets in version 0 under 1-11) were refused.
    pkg, stderr = generate(kafka_python_specs(), tmp_path, "kafka_python_specs", imported)
    assert warned_files(stderr) == {}
    list_offsets = pkg.message_type(2, "response")
    assert list_offsets.LOWEST_VERSION >= 1
    trips, crossed, problems = round_trip(pkg)
    assert problems == []
    assert trips == SEEDS * versions_of(pkg)
    assert crossed > 0.6 * trips, (trips, crossed)  # the rest: unknown tags, unstable
