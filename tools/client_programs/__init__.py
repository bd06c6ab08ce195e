"""The client scenario programs in other languages, built from source on first use.

``tools/client_programs/`` holds one small program per ecosystem: Kafka's Java client
(``java/``, compiled against ``kafka-clients`` from Maven Central), franz-go and IBM
Sarama (``go/``, a Go module), kafkajs (``node/``, an npm package with its lock file) and
the Python clients kafkagen's dev extras install (``python/``).
Each runs the same scenario against a bootstrap address and prints one JSON summary; see
``docs/clients.md``. Builds land under ``$KAFKAGEN_CACHE/clients`` keyed by a hash of
their sources, so a second run reuses them; the toolchains' own caches (``~/.m2``, Go's
module and build caches, npm's cache) hold the downloads.

    from kafkagen.client_programs import command, run_scenario
    summary = run_scenario(command("go") + ["franz", "classic", bootstrap, "t", "2000"])
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kafkagen.maven import cache_dir, classpath

#: The Java client the Java program is built against.
KAFKA_CLIENTS = "org.apache.kafka:kafka-clients:4.4.0"
#: Kafka Streams, for the Streams application among the Java programs.
KAFKA_STREAMS = "org.apache.kafka:kafka-streams:4.4.0"
#: How long one build may take (a cold Go module download is the slowest).
BUILD_TIMEOUT_S = 900

SOURCES = Path(__file__).resolve().parent


class ClientProgramError(RuntimeError):
    """A program could not be built or did not answer; the message says which and why."""


def _tool(name: str, language: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ClientProgramError(
            f"the {language} client programs need '{name}' on PATH "
            f"(tools/client_programs/{language})"
        )
    return path


def _sources(language: str) -> list[Path]:
    root = SOURCES / language
    if not root.is_dir():
        raise ClientProgramError(f"no sources for the {language} client programs at {root}")
    skip = {"node_modules"}
    return sorted(
        p for p in root.rglob("*") if p.is_file() and not skip & set(p.relative_to(root).parts)
    )


def _build(language: str, build: Callable[[Path], None]) -> Path:
    """The output directory of ``build`` for the current sources, building it if missing."""
    digest = hashlib.sha256()
    root = SOURCES / language
    for path in _sources(language):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    out = cache_dir() / "clients" / f"{language}-{digest.hexdigest()[:16]}"
    if out.is_dir():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{language}-", dir=out.parent))
    try:
        build(tmp)
        try:
            tmp.rename(out)
        except OSError:
            if not out.is_dir():  # not a concurrent build that finished first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _run_build(cmd: Sequence[str], cwd: Path, what: str, env: dict[str, str] | None = None) -> None:
    try:
        proc = subprocess.run(
            list(cmd),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
            env={**os.environ, **(env or {})},
        )
    except subprocess.TimeoutExpired as e:
        raise ClientProgramError(f"{what}: not done in {BUILD_TIMEOUT_S} s") from e
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
        raise ClientProgramError(f"{what} failed (exit {proc.returncode}):\n" + "\n".join(tail))


def _java(main: str = "ClientScenario") -> list[str]:
    java, javac = _tool("java", "java"), _tool("javac", "java")
    jars = os.pathsep.join(str(p) for p in classpath([KAFKA_CLIENTS, KAFKA_STREAMS]))

    def build(out: Path) -> None:
        sources = [str(p) for p in _sources("java") if p.suffix == ".java"]
        cmd = [javac, "--release", "17", "-d", str(out), "-cp", jars, *sources]
        _run_build(cmd, SOURCES / "java", "compiling the Java client program")

    out = _build("java", build)
    return [java, "-cp", f"{out}{os.pathsep}{jars}", main]


def _go() -> list[str]:
    go = _tool("go", "go")

    def build(out: Path) -> None:
        cmd = [go, "build", "-mod=readonly", "-o", str(out / "clients"), "."]
        _run_build(cmd, SOURCES / "go", "building the Go client program")

    return [str(_build("go", build) / "clients")]


def _node() -> list[str]:
    node, npm = _tool("node", "node"), _tool("npm", "node")

    def build(out: Path) -> None:
        for path in _sources("node"):
            shutil.copy2(path, out / path.name)
        cmd = [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"]
        _run_build(cmd, out, "installing the kafkajs program's packages (npm ci)")

    return [node, str(_build("node", build) / "scenario.js")]


def _python() -> list[str]:
    # Nothing to build: confluent-kafka and kafka-python are dev extras of kafkagen.
    return [sys.executable, str(SOURCES / "python" / "scenario.py")]


_BUILDERS: dict[str, Callable[[], list[str]]] = {
    "java": _java,
    "go": _go,
    "node": _node,
    "python": _python,
}


def java_program(main_class: str) -> list[str]:
    """The command line of another program of the Java sources (e.g. ``QuorumScenario``)."""
    return _java(main_class)


def command(language: str) -> list[str]:
    """The command line of ``language``'s program (java, go, node, python), built if needed."""
    try:
        return _BUILDERS[language]()
    except KeyError:
        raise ClientProgramError(
            f"no client program for {language!r}; there are {', '.join(_BUILDERS)}"
        ) from None


def franz_go_suite(bootstrap: str, records: int = 5000, timeout: float = 600.0) -> dict[str, Any]:
    """Run franz-go's own kgo integration tests against ``bootstrap``.

    The tests read the seed brokers from ``KGO_SEEDS``; ``KGO_TEST_RECORDS`` bounds the
    records their produce/consume loops move (500,000 by default). Returns the package's
    outcome and the pass/fail/skip counts of top-level tests and of all (sub)tests, with the
    names of failures and of passed top-level tests, the lines each skipped test logged
    (its reason among them) and the lines each failed test logged (what it found wrong).
    """
    go = _tool("go", "go")
    cmd = [go, "test", "-mod=readonly", "-count=1", f"-timeout={int(timeout) - 30}s", "-json"]
    env = {
        **os.environ,
        "KGO_SEEDS": bootstrap,
        "KGO_TEST_RECORDS": str(records),
        "KGO_LOG_LEVEL": "none",
    }
    try:
        proc = subprocess.run(
            [*cmd, "github.com/twmb/franz-go/pkg/kgo"],
            cwd=SOURCES / "go",
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired as e:
        raise ClientProgramError(f"franz-go's kgo tests: not done in {timeout} s") from e
    counts: dict[str, int] = {}
    top: dict[str, int] = {}
    failed: list[str] = []
    passed: list[str] = []
    skipped: dict[str, str] = {}
    said_by_failed: dict[str, str] = {}
    output: dict[str, list[str]] = {}
    package = "no result"
    for line in proc.stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        test, action = event.get("Test"), event.get("Action")
        if test is None:
            if action in ("pass", "fail"):
                package = action
            continue
        if action == "output":
            output.setdefault(test, []).append(event.get("Output", ""))
        if action not in ("pass", "fail", "skip"):
            continue
        counts[action] = counts.get(action, 0) + 1
        if "/" not in test:
            top[action] = top.get(action, 0) + 1
        if action == "fail":
            failed.append(test)
            said_by_failed[test] = "".join(output.get(test, []))[-4000:]
        elif action == "pass" and "/" not in test:
            passed.append(test)
        elif action == "skip" and "/" not in test:
            # Every line the test logged: deferred clean-up may log after the skip reason.
            said = [ln.strip() for ln in output.get(test, []) if ".go:" in ln]
            skipped[test] = " | ".join(said)
    if package == "no result":
        raise ClientProgramError(f"franz-go's kgo tests did not run:\n{proc.stderr[-3000:]}")
    return {
        "package": package,
        "top_level": top,
        "all": counts,
        "failed": failed,
        "passed": passed,
        "skipped": skipped,
        "failure_output": said_by_failed,
    }


def run_scenario(cmd: Sequence[str], timeout: float = 300.0) -> dict[str, Any]:
    """Run one scenario program and return its JSON summary."""
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise ClientProgramError(f"{' '.join(cmd[-5:])}: no answer in {timeout} s") from e
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise ClientProgramError(
            f"{' '.join(cmd[-5:])} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
        )
    try:
        summary: dict[str, Any] = json.loads(lines[-1])
    except ValueError as e:
        raise ClientProgramError(
            f"{' '.join(cmd[-5:])}: not a JSON summary: {lines[-1][:200]}"
        ) from e
    return summary
