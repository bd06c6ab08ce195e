"""Kafka 4.4.0's own command-line tools, run against two clusters side by side.

A tool runs as ``java -cp <kafka-tools + kafka_2.13> <main class> args...`` (the
``kafka-*.sh`` scripts do no more), with a quiet log configuration so that stderr holds
only what the tool itself prints. A `Side` is one cluster seen by one scenario: it runs
tools and small set-up steps there, and normalises what each broker chooses for itself
(ids, hosts and ports, times, leader placement) out of what the tools print, so that the
two sides' `Output` compare equal where the brokers behave alike.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

KAFKA = "4.4.0"
#: The fastest start on two cores: client compiler only, serial GC, the CDS archive. No
#: perf-data file: a tool whose pid's file another process still held printed a JVM
#: warning among its output, which then differed from the same tool's against Kafka.
JVM_OPTIONS = (
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xshare:auto",
    "-Xmx256m",
    "-XX:-UsePerfData",
)
#: The scripts' names and the classes they run (kafka-tools 4.4.0).
MAIN_CLASSES = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-e2e-latency": "org.apache.kafka.tools.EndToEndLatency",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
}
#: Every tool's log output off: stderr keeps what the tool prints for its user.
_LOG4J2 = "status = error\nrootLogger.level = off\n"
#: Lines on stderr that are the JVM's or the logging library's, not the tool's.
_NOISE = re.compile(r"^(SLF4J: |WARNING: |OpenJDK .*warning|Picked up )")


@cache
def classpath() -> str:
    """kafka-tools and kafka_2.13 with their dependencies, resolved once (cached by Maven)."""
    from kafkagen.maven import classpath as resolve

    jars = resolve(
        [f"org.apache.kafka:kafka-tools:{KAFKA}", f"org.apache.kafka:kafka_2.13:{KAFKA}"]
    )
    return os.pathsep.join(map(str, jars))


@dataclass(frozen=True)
class Output:
    """What one tool invocation showed its user, normalised: exit status, stdout's lines
    (sorted: rows of a table come in whatever order the tool met them) and stderr's."""

    exit: int
    stdout: tuple[str, ...]
    stderr: tuple[str, ...]

    def describe(self) -> str:
        return "\n".join(
            [f"exit {self.exit}"]
            + [f"  out| {ln}" for ln in self.stdout]
            + [f"  err| {ln}" for ln in self.stderr]
        )


@dataclass
class Side:
    """One cluster as one scenario sees it: its bootstrap, the names the scenario uses (the
    same on both sides) and the values this cluster chose for itself, to normalise away."""

    bootstrap: str
    prefix: str
    workdir: Path
    timeout: float = 120.0

    def name(self, suffix: str) -> str:
        return f"{self.prefix}-{suffix}"

    # ------------------------------------------------------------------ running tools

    def run(self, tool: str, *args: str, timeout: float | None = None) -> Output:
        """``tool`` (a script name from `MAIN_CLASSES`) with ``args``; ``{bootstrap}`` in
        an argument is this side's bootstrap."""
        done = self.run_raw(tool, *args, timeout=timeout)
        return self.output(done.returncode, done.stdout, done.stderr)

    def run_raw(
        self, tool: str, *args: str, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`run` without the normalisation: for the values a scenario reads back (ids)."""
        java = shutil.which("java") or "java"
        log4j = self.workdir / "log4j2.properties"
        if not log4j.exists():
            log4j.write_text(_LOG4J2)
        argv = [
            java,
            *JVM_OPTIONS,
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            classpath(),
            MAIN_CLASSES[tool],
            *(a.replace("{bootstrap}", self.bootstrap) for a in args),
        ]
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout or self.timeout, cwd=self.workdir
        )

    def file(self, name: str, text: str) -> str:
        """A file in this side's working folder (a reassignment plan, a topic list)."""
        path = self.workdir / name
        path.write_text(text)
        return str(path)

    # ------------------------------------------------------------------ normalising

    def output(self, exit_status: int, stdout: str, stderr: str) -> Output:
        out = [self.normalise(ln) for ln in _meaningful(stdout)]
        err = [self.normalise(ln) for ln in _meaningful(stderr) if not _NOISE.match(ln)]
        return Output(exit_status, tuple(sorted(_mask_columns(out))), tuple(_mask_columns(err)))

    def normalise(self, line: str) -> str:
        if line.startswith(("{", "[")):
            try:
                return json.dumps(_normalise_json(json.loads(self._names(line))), sort_keys=True)
            except ValueError:
                pass
        line = self._names(line)
        for pattern, repl in _RULES:
            line = pattern.sub(repl, line)
        return " ".join(line.split())

    def _names(self, line: str) -> str:
        return line.replace(self.prefix, "<p>")


#: JSON keys whose values a broker chooses for itself: placement, node ids, paths.
_JSON_CHOSEN = {"broker": "<node>", "log_dirs": "<dirs>", "logDir": "<dir>"}


def _normalise_json(value: object) -> object:
    """A tool's JSON (reassignment plans, log dirs) with the chosen values replaced and
    arrays of objects sorted, as the protocol keeps no order in them."""
    if isinstance(value, dict):
        out = {k: _JSON_CHOSEN.get(k) or _normalise_json(v) for k, v in value.items()}
        if isinstance(value.get("replicas"), list):
            out["replicas"] = f"<{len(value['replicas'])} nodes>"
        return out
    if isinstance(value, list):
        items = [_normalise_json(v) for v in value]
        if all(isinstance(v, dict) for v in items):
            items.sort(key=lambda v: json.dumps(v, sort_keys=True))
        return items
    return value


def _meaningful(text: str) -> list[str]:
    # A Java stack trace's frames say where, not what: its first line says what.
    return [
        ln for ln in text.splitlines()
        if ln.strip() and not re.match(r"^\s+at |^\s*\.\.\. \d+ more", ln)
    ]  # fmt: skip


#: Table columns whose values a broker chooses: which node coordinates, producer ids, and
#: how long something has taken.
_CHOSEN_COLUMNS = {"Coordinator", "CoordinatorId", "ProducerId", "TransactionDurationMs"}


def _mask_columns(lines: list[str]) -> list[str]:
    """Rows of a whitespace-separated table with `_CHOSEN_COLUMNS` masked: a header row
    names the columns, and a row of as many fields below it is one of its rows."""
    out, chosen, width = [], set(), 0
    for line in lines:
        fields = line.split(" ")
        if _CHOSEN_COLUMNS & set(fields):
            chosen = {i for i, f in enumerate(fields) if f in _CHOSEN_COLUMNS}
            width = len(fields)
        elif chosen and width - 1 <= len(fields) <= width:  # an empty last column
            line = " ".join("<chosen>" if i in chosen else f for i, f in enumerate(fields))
        out.append(line)
    return out


def _node_list(m: re.Match[str]) -> str:
    ids = [i for i in m.group(2).split(",") if i]
    return f"{m.group(1)}: <{len(ids)} nodes>" if ids else f"{m.group(1)}:"


#: What a broker chooses for itself, in the forms Kafka's tools print it.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"/?(127\.0\.0\.1|localhost):\d+"), "<host:port>"),
    (re.compile(r"/127\.0\.0\.1\b"), "/<host>"),
    (re.compile(r"<host:port>\s+\(\d+\)"), "<host:port> (<node>)"),
    # replica sets: which brokers hold a partition is the controller's free choice
    (
        re.compile(
            r"\b(Replicas|Isr|Elr|LastKnownElr|Adding Replicas|Removing Replicas"
            r"|Replica Ids|replicas)"
            r": ?([\d,]*)"
        ),
        _node_list,
    ),
    (
        re.compile(r"\b(replica set is) ([\d,]+)"),
        lambda m: f"{m.group(1)} <{len(m.group(2).split(','))} nodes>",
    ),
    (
        re.compile(
            r"\b(Leader|leader|Broker|broker|Coordinator \(ID\)|CoordinatorId|NodeId|LeaderId)"
            r": ?\d+\b"
        ),
        r"\1: <node>",
    ),
    # 36-character UUIDs (member and instance ids), then Kafka's 22-character ids
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    # (one letter of another case, a digit, _ or - among them: an id may be letters only)
    (re.compile(r"(?<![\w<>-])(?=[a-z]*[A-Z0-9_-])[A-Za-z0-9_-]{22}(?![\w<>-])"), "<id>"),
    # times: epoch milliseconds, ISO dates, durations
    (re.compile(r"\b1[5-9]\d{11}\b"), "<time>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?"), "<date>"),
)
