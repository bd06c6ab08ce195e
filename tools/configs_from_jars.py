"""Derive the config catalogue (``runtime/broker/config/catalogue.json``) from Kafka's jars.

``python -m kafkagen.configs_from_jars`` runs a small Java program (``catalogue/ConfigFacts.java``,
in Java's source-file mode) on Kafka 4.4.0's broker classpath; it reads Kafka's own
definitions (``LogConfig``, ``AbstractKafkaConfig.CONFIG_DEF``, ``DynamicConfig.Broker``,
``DynamicBrokerConfig``, ``ServerTopicConfigSynonyms``) and prints every topic and broker
config's type, default, validator, importance, dynamic update mode and synonyms. The table
keeps its ``doc`` column (written for kafkagen, never Kafka's text) across re-derivations;
``--check`` only compares. The program also answers a fixed set of probe values per config
with Kafka's verdict, which the tests hold kafkagen's parser to (`probes`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafkagen.runtime.broker.config import definitions as _definitions

__all__ = ["PROGRAM", "TABLE", "facts", "main", "probes", "render", "table"]

TABLE = Path(_definitions.__file__).with_name("catalogue.json")
PROGRAM = Path(__file__).with_name("catalogue") / "ConfigFacts.java"
KAFKA_VERSION = "4.4.0"
#: One JVM start on a busy two-core machine takes ~20 s; resolving the classpath is cached.
TIMEOUT_S = 300


def facts(version: str = KAFKA_VERSION) -> dict[str, Any]:
    """What Kafka's jars say: {"topic": {...}, "broker": {...}, "probes": {...}}."""
    import os
    import shutil

    from kafkagen.reference import broker_classpath

    java = shutil.which("java")
    if java is None:
        raise RuntimeError("deriving the config catalogue needs java (17 or newer) on PATH")
    cp = os.pathsep.join(map(str, broker_classpath(version)))
    proc = subprocess.run(
        [java, "-cp", cp, str(PROGRAM)], capture_output=True, text=True, timeout=TIMEOUT_S
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{PROGRAM.name} failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def probes(data: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Config name -> (probe value, Kafka's verdict: "ok" or its error message)."""
    values = data["probe_values"]
    return {
        name: [(v, a.partition(": ")[2] if a != "ok" else "ok") for v, a in zip(values, answers)]
        for name, answers in data["probes"].items()
    }


def _entry(raw: dict[str, Any], doc: str, broker: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": raw["type"],
        "default": raw["default"],
        "importance": raw["importance"],
    }
    if raw["validator"] is not None:
        out["validator"] = raw["validator"]
    if broker:
        out["mode"] = raw["mode"]
    if raw["internal"]:
        out["internal"] = True
    out["synonyms"] = raw["synonyms"]
    out["doc"] = doc
    return out


def table(data: dict[str, Any], docs: dict[str, dict[str, str]]) -> dict[str, Any]:
    """The committed table from Kafka's facts and kafkagen's docs (by section and name)."""
    return {
        "derived_by": "python -m kafkagen.configs_from_jars",
        "from": f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}",
        **{
            section: {
                name: _entry(raw, docs.get(section, {}).get(name, ""), section == "broker")
                for name, raw in sorted(data[section].items())
            }
            for section in ("topic", "broker")
        },
    }


def committed_docs() -> dict[str, dict[str, str]]:
    if not TABLE.exists():
        return {}
    old = json.loads(TABLE.read_text("utf-8"))
    return {s: {n: e["doc"] for n, e in old[s].items()} for s in ("topic", "broker")}


def render(data: dict[str, Any]) -> str:
    """One config a line, so a change of Kafka's facts reads as a short diff."""
    lines = ["{"]
    lines.append(f'  "derived_by": {json.dumps(data["derived_by"])},')
    lines.append(f'  "from": {json.dumps(data["from"])},')
    for i, section in enumerate(("topic", "broker")):
        lines.append(f'  "{section}": {{')
        items = list(data[section].items())
        for j, (name, entry) in enumerate(items):
            comma = "," if j < len(items) - 1 else ""
            lines.append(f"    {json.dumps(name)}: {json.dumps(entry)}{comma}")
        lines.append("  }" + ("," if i == 0 else ""))
    lines += ["}", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kafkagen.configs_from_jars", description=__doc__)
    p.add_argument("--check", action="store_true", help="exit 1 if the table is stale")
    args = p.parse_args(argv)
    text = render(table(facts(), committed_docs()))
    if args.check:
        if TABLE.read_text("utf-8") != text:
            print(
                f"{TABLE.name} is stale: run python -m kafkagen.configs_from_jars", file=sys.stderr
            )
            return 1
        return 0
    TABLE.write_text(text, "utf-8")
    data = json.loads(text)
    print(
        f"wrote {TABLE.name}: {len(data['topic'])} topic and {len(data['broker'])} broker configs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
