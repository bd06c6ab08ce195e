"""Derive the config catalogue (``runtime/broker/config/catalogue.json``) from Kafka's jars.

``python -m kafkagen.configs_from_jars`` runs a small Java program (``catalogue/ConfigFacts.java``,
in Java's source-file mode) on Kafka 4.4.0's broker classpath; it reads Kafka's own
definitions (``LogConfig``, ``AbstractKafkaConfig.CONFIG_DEF``, ``DynamicConfig.Broker``,
``DynamicBrokerConfig``, ``ServerTopicConfigSynonyms``) and prints every topic and broker
config's type, default, validator, importance, dynamic update mode and synonyms. The table
keeps kafkagen's own columns (``doc``, in kafkagen's words, never Kafka's text, and
``behaves``) across re-derivations;
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

__all__ = [
    "PROGRAM",
    "TABLE",
    "committed_columns",
    "facts",
    "main",
    "page",
    "probes",
    "render",
    "table",
]

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
    # Each answer is "ok" or "ExceptionClass: message".
    return {
        name: [
            (v, a if a == "ok" else a.partition(": ")[2])
            for v, a in zip(values, answers, strict=True)
        ]
        for name, answers in data["probes"].items()
    }


#: The columns that are kafkagen's, kept across re-derivations: a short doc in kafkagen's
#: words, and whether the config changes what kafkagen does (else it is stored and reported).
OWN_COLUMNS = {"doc": "", "behaves": False}


def _entry(raw: dict[str, Any], own: dict[str, Any], broker: bool) -> dict[str, Any]:
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
    out.update({column: own.get(column, empty) for column, empty in OWN_COLUMNS.items()})
    return out


def table(data: dict[str, Any], own: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The committed table from Kafka's facts and kafkagen's columns (by section and name)."""
    return {
        "derived_by": "python -m kafkagen.configs_from_jars",
        "from": f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}",
        **{
            section: {
                name: _entry(raw, own.get(section, {}).get(name, {}), section == "broker")
                for name, raw in sorted(data[section].items())
            }
            for section in ("topic", "broker")
        },
    }


def committed_columns() -> dict[str, dict[str, Any]]:
    """kafkagen's own columns of the committed table, by section and name."""
    if not TABLE.exists():
        return {}
    old = json.loads(TABLE.read_text("utf-8"))
    return {
        s: {n: {c: e[c] for c in OWN_COLUMNS if c in e} for n, e in old[s].items()}
        for s in ("topic", "broker")
    }


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


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|") if text else "-"


def _rows(defs: Any, broker: bool) -> list[str]:
    head = "| config | type | default | " + ("dynamic | " if broker else "") + "what it is |"
    rule = "|---|---|---|" + ("---|" if broker else "") + "---|"
    rows = [head, rule]
    for d in defs:
        mode = f"{d.mode} | " if broker else ""
        rows.append(f"| `{d.name}` | {d.type.name} | {_cell(d.default)} | {mode}{_cell(d.doc)} |")
    return rows


def page() -> str:
    """docs/configs.md, from the table (and kafkagen's own configs beside it)."""
    from kafkagen.runtime.broker.config.definitions import (
        BROKER_CONFIGS,
        KAFKAGEN_CONFIGS,
        KAFKAGEN_DEFAULTS,
        TOPIC_CONFIGS,
    )

    kafka_defaults = {n: e["default"] for n, e in json.loads(TABLE.read_text())["broker"].items()}

    own = {d.name for d in KAFKAGEN_CONFIGS}
    kafka_broker = [d for n, d in sorted(BROKER_CONFIGS.items()) if n not in own]
    topic = sorted(TOPIC_CONFIGS.values(), key=lambda d: d.name)
    lines = [PAGE_HEAD.strip(), ""]
    lines += ["## Defaults kafkagen keeps different", ""]
    lines += ["| config | kafkagen | Kafka | why |", "|---|---|---|---|"]
    for name, (value, why) in sorted(KAFKAGEN_DEFAULTS.items()):
        lines.append(f"| `{name}` | {_cell(value)} | {_cell(kafka_defaults[name])} | {why} |")
    sections = [
        ("Topic configs that change what kafkagen does", [d for d in topic if d.behaves], False),
        ("Topic configs stored and reported only", [d for d in topic if not d.behaves], False),
        (
            "Broker configs that change what kafkagen does",
            [d for d in kafka_broker if d.behaves],
            True,
        ),
        (
            "Broker configs stored and reported only",
            [d for d in kafka_broker if not d.behaves],
            True,
        ),
        ("kafkagen's own broker configs", list(KAFKAGEN_CONFIGS), True),
    ]
    for title, defs, broker in sections:
        lines += ["", f"## {title} ({len(defs)})", "", *_rows(defs, broker)]
    return "\n".join(lines) + "\n"


PAGE_HEAD = """
# Configs

kafkagen knows every topic config and every broker config of Kafka 4.4.0, with Kafka's
types, defaults, validators, dynamic scopes and synonyms. They come from one table,
`runtime/broker/config/catalogue.json`, derived from Kafka's own jars; this page is made
from it (`python -m kafkagen.configs_from_jars --page docs/configs.md`), and a test fails
when the two disagree.

```sh not-run
python -m kafkagen.configs_from_jars          # re-derive the table from Kafka's jars
python -m kafkagen.configs_from_jars --check  # exit 1 if the table is not what the jars say
```

Every config Kafka accepts is accepted, by CreateTopics, AlterConfigs,
IncrementalAlterConfigs and `kafkagen serve --config`, with Kafka's checks and Kafka's
error texts. A bad topic value is INVALID_CONFIG, a bad broker one INVALID_REQUEST, as in
Kafka:

```python
from kafkagen.runtime.broker.config.definitions import TOPIC_CONFIGS, ConfigError

try:
    TOPIC_CONFIGS["retention.ms"].parse("abc")
except ConfigError as e:
    assert str(e) == "Invalid value abc for configuration retention.ms: Not a number of type LONG"
```

DescribeConfigs reports what Kafka reports: the 37 topic configs (sorted by name: Kafka's
order is a hash map's), the broker configs but Kafka's internal ones and the replication
quotas while unset, sources, read-only flags, sensitive values as null, types, and the
synonyms by Kafka's rule: for each level, per-broker first, then the cluster default,
the static configs and the built-in defaults, the names of the config's chain set there,
dropping those before the chain's first name. So `retention.ms` at defaults has no
synonym (its chain starts at `log.retention.ms`, which has no default; the 168 hours of
`log.retention.hours` supply the value).

What kafkagen does not do: it loads no class a CLASS config names and does not check the
controller quorum's addresses (it runs no plug-ins and has no controller quorum), so those
are stored as given. The cluster-level `min.insync.replicas` that Kafka 4.4 writes when a
cluster is formatted is not written. The broker resource also lists kafkagen's own configs.

A config that is "stored and reported only" is accepted, kept (across restarts with
`--log-dir`), described and inherited exactly as in Kafka, but kafkagen's in-memory broker
does nothing with it: flushing, preallocation, indexes, remote storage, compression
levels, thread pools, and the like.
"""


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kafkagen.configs_from_jars", description=__doc__)
    p.add_argument("--check", action="store_true", help="exit 1 if the table is stale")
    p.add_argument("--page", type=Path, help="write the configs page (from the table) here")
    args = p.parse_args(argv)
    if args.page is not None:
        args.page.write_text(page(), "utf-8")
        print(f"wrote {args.page}")
        return 0
    text = render(table(facts(), committed_columns()))
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
