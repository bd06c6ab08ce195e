"""Jars from Maven Central for the JVM parts of the tooling, resolved once and cached.

Kafka's own classes (the spec files in ``kafka-clients``, the reference broker, the
coordinator record specs) reach kafkagen only through here. Resolution runs the machine's
``mvn`` on a throw-away POM, so Maven's local repository is the download cache, and the
resulting classpath is remembered under ``$KAFKAGEN_CACHE`` (default
``~/.cache/kafkagen``): a second call costs a file read, not a JVM start.

    from kafkagen.maven import classpath, jar
    jar("org.apache.kafka:kafka-clients:4.4.0")          # that jar alone
    classpath(["org.apache.kafka:kafka_2.13:4.4.0"])     # it and its runtime dependencies
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import escape

#: How long one resolution may take; a cold Kafka broker classpath downloads ~100 MB.
RESOLVE_TIMEOUT_S = 900


class MavenError(RuntimeError):
    """An artifact could not be resolved; the message says which and what Maven said."""


def cache_dir() -> Path:
    return Path(os.environ.get("KAFKAGEN_CACHE") or Path.home() / ".cache" / "kafkagen")


def _parse(coord: str) -> tuple[str, str, str, str | None]:
    parts = coord.split(":")
    if len(parts) not in (3, 4) or not all(parts):
        raise MavenError(f"artifact {coord!r}: expected group:artifact:version[:classifier]")
    group, artifact, version = parts[:3]
    return group, artifact, version, parts[3] if len(parts) == 4 else None


def _pom(coords: Sequence[str], transitive: bool) -> str:
    deps = []
    for coord in coords:
        group, artifact, version, classifier = _parse(coord)
        lines = [
            f"<groupId>{escape(group)}</groupId>",
            f"<artifactId>{escape(artifact)}</artifactId>",
            f"<version>{escape(version)}</version>",
        ]
        if classifier:
            lines.append(f"<classifier>{escape(classifier)}</classifier>")
        if not transitive:
            lines.append(
                "<exclusions><exclusion><groupId>*</groupId>"
                "<artifactId>*</artifactId></exclusion></exclusions>"
            )
        deps.append("<dependency>" + "".join(lines) + "</dependency>")
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">'
        "<modelVersion>4.0.0</modelVersion>"
        "<groupId>kafkagen.resolve</groupId><artifactId>resolve</artifactId>"
        "<version>0</version><packaging>pom</packaging>"
        f"<dependencies>{''.join(deps)}</dependencies></project>"
    )


def classpath(coords: Sequence[str], *, transitive: bool = True) -> list[Path]:
    """The jars of ``coords`` (with their runtime dependencies unless ``transitive`` is
    false), downloading what Maven's local repository lacks."""
    if not coords:
        return []
    key = hashlib.sha256(("\n".join(coords) + f"\n{transitive}").encode()).hexdigest()[:16]
    memo = cache_dir() / f"classpath-{key}.txt"
    if memo.exists():
        jars = [Path(p) for p in memo.read_text().split(os.pathsep) if p]
        if jars and all(p.is_file() for p in jars):
            return jars
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MavenError(f"resolving {', '.join(coords)} needs Maven ('mvn') on PATH")
    with tempfile.TemporaryDirectory(prefix="kafkagen-mvn-") as tmp:
        pom = Path(tmp) / "pom.xml"
        pom.write_text(_pom(coords, transitive))
        out = Path(tmp) / "classpath.txt"
        cmd = [
            mvn,
            "-q",
            "-B",
            "-f",
            str(pom),
            "dependency:build-classpath",
            "-Dmdep.includeScope=runtime",
            f"-Dmdep.outputFile={out}",
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            raise MavenError(
                f"resolving {', '.join(coords)}: Maven did not finish in {RESOLVE_TIMEOUT_S} s"
            ) from e
        if proc.returncode != 0 or not out.exists():
            said = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "ERROR" in ln]
            raise MavenError(
                f"resolving {', '.join(coords)} failed (mvn exit {proc.returncode}): "
                + (" | ".join(said[:3]) or "no error text")
            )
        jars = [Path(p) for p in out.read_text().strip().split(os.pathsep) if p]
    memo.parent.mkdir(parents=True, exist_ok=True)
    tmp_memo = memo.with_suffix(f".{os.getpid()}.tmp")
    tmp_memo.write_text(os.pathsep.join(str(p) for p in jars))
    tmp_memo.replace(memo)
    return jars


def jar(coord: str) -> Path:
    """The one jar named by ``coord``, without its dependencies."""
    jars = classpath([coord], transitive=False)
    _, artifact, version, classifier = _parse(coord)
    name = f"{artifact}-{version}" + (f"-{classifier}" if classifier else "") + ".jar"
    for path in jars:
        if path.name == name:
            return path
    raise MavenError(f"resolving {coord}: Maven returned no {name}")
