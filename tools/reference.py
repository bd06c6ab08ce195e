"""A real Apache Kafka (KRaft) on 127.0.0.1, started from Maven Central's jars.

The reference broker the conformance suite and the benchmarks compare kafkagen with::

    from kafkagen.reference import KafkaReference
    with KafkaReference(nodes=3) as kafka:     # three combined broker+controller nodes
        print(kafka.bootstrap)                 # 127.0.0.1:PORT,127.0.0.1:PORT,...

Each node is one ``java kafka.Kafka`` process in its own process group, with its data and
``server.log`` in a temporary directory. Storage is formatted first (``StorageTool``), as
Kafka 4.x needs. The nodes are ready when every one answers ApiVersions and Metadata lists
them all with a controller; a start that takes longer than ``timeout`` stops every node
and raises `ReferenceError` with the tail of the logs. `stop` kills each process group and
removes the directory; an interpreter that exits with a reference still running stops it.

``python -m kafkagen.reference --nodes 3`` runs one until interrupted.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kafkagen.maven import classpath

__all__ = [
    "DEFAULT_CONFIGS",
    "KAFKA_VERSION",
    "KafkaReference",
    "ReferenceError",
    "broker_classpath",
    "main",
    "metadata_brokers",
]

KAFKA_VERSION = "4.4.0"
#: Binds Kafka's slf4j 1.7 logging to log4j2, so each node writes a ``server.log``.
_LOG_BINDING = "org.apache.logging.log4j:log4j-slf4j-impl:2.25.5"
#: Fast JVM start on a small machine: the client compiler only, a serial collector.
DEFAULT_JVM_OPTIONS = ("-Xmx512m", "-Xms128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
#: Broker configs every reference gets unless overridden. Internal topics follow the
#: cluster size; the rest are Kafka's defaults made explicit where kafkagen's differ.
DEFAULT_CONFIGS: Mapping[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
}
_LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
logger.state.name = state.change.logger
logger.state.level = warn
"""


class ReferenceError(RuntimeError):
    """The reference Kafka could not be started; the text has the reason and the logs."""


def broker_classpath(version: str = KAFKA_VERSION) -> list[Path]:
    """The jars of a Kafka broker (with log4j2 logging), resolved once and cached."""
    return classpath([f"org.apache.kafka:kafka_2.13:{version}", _LOG_BINDING])


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _kafka_uuid() -> str:
    """A random id in Kafka's text form (url-safe base64 of 16 bytes, no padding). Like
    Kafka's own ids it never starts with '-', which a command line would take for an
    option."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


_LIVE: weakref.WeakSet[KafkaReference] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


@atexit.register
def _stop_all() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for ref in live:
        ref.stop()


class KafkaReference:
    """``nodes`` Kafka nodes, each broker and controller, forming one KRaft cluster."""

    def __init__(
        self,
        nodes: int = 1,
        *,
        configs: Mapping[str, str] | None = None,
        version: str = KAFKA_VERSION,
        jvm_options: Sequence[str] = DEFAULT_JVM_OPTIONS,
        java: str | None = None,
    ) -> None:
        if nodes < 1:
            raise ValueError("a reference cluster needs at least one node")
        self.nodes = nodes
        self.version = version
        self.configs = {**DEFAULT_CONFIGS, **(configs or {})}
        self.jvm_options = list(jvm_options)
        self.java = java or shutil.which("java") or "java"
        self.ports: list[int] = []
        self.cluster_id = ""
        self.dir: Path | None = None
        self._procs: list[subprocess.Popen[bytes]] = []
        self._cp = ""
        self._props: list[Path] = []
        #: Seconds from `start` to the first Metadata answer listing every node, and the
        #: part of them spent formatting storage (and resolving the classpath).
        self.startup_s: float | None = None
        self.format_s: float | None = None

    # ------------------------------------------------------------------ the life cycle

    @property
    def bootstrap(self) -> str:
        if not self.ports:
            raise ReferenceError("the reference Kafka is not running")
        return ",".join(f"127.0.0.1:{p}" for p in self.ports)

    @property
    def running(self) -> bool:
        return bool(self._procs) and all(p.poll() is None for p in self._procs)

    def start(self, timeout: float = 180.0) -> KafkaReference:
        """Format storage, start every node and wait until the cluster answers."""
        if self._procs:
            raise ReferenceError("the reference Kafka is already running")
        started = time.monotonic()
        jars = broker_classpath(self.version)
        cp = os.pathsep.join(str(j) for j in jars)
        self.dir = Path(tempfile.mkdtemp(prefix="kafkagen-kafka-"))
        ports = _free_ports(2 * self.nodes)
        self.ports, controller_ports = ports[: self.nodes], ports[self.nodes :]
        self.cluster_id = _kafka_uuid()
        voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in enumerate(controller_ports))
        props = [
            self._write_properties(i, self.ports[i], controller_ports[i], voters)
            for i in range(self.nodes)
        ]
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            # One JVM per node for the formatter: in parallel, they take one start's time.
            with ThreadPoolExecutor(self.nodes) as pool:
                list(pool.map(lambda p: self._format(cp, p, started + timeout), props))
            self.format_s = time.monotonic() - started
            self._cp, self._props = cp, props
            for i, p in enumerate(props):
                self._procs.append(self._launch(cp, i, p))
            self._wait_ready(started + timeout)
        except BaseException:
            tail = self.log_tail()
            self.stop()
            if isinstance(sys.exc_info()[1], ReferenceError):
                raise ReferenceError(f"{sys.exc_info()[1]}\n{tail}") from None
            raise
        self.startup_s = time.monotonic() - started
        return self

    def stop(self, grace: float = 5.0) -> None:
        """Stop every node (SIGTERM, then SIGKILL after ``grace`` s) and remove the data."""
        procs, self._procs = self._procs, []
        for p in procs:
            self._signal(p, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for p in procs:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for p in procs:
            self._signal(p, signal.SIGKILL)  # the whole group: nothing a node forked stays
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:  # pragma: no cover - a kernel that ignores KILL
                pass
        with _LIVE_LOCK:
            _LIVE.discard(self)
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        self.ports = []

    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def restart(self, node: int) -> None:
        """Start node ``node`` again on its data (after a crash or a kill: it recovers its
        log as Kafka does); a node still running is killed first."""
        if not self._procs:
            raise ReferenceError("the reference Kafka is not running")
        old = self._procs[node]
        if old.poll() is None:
            self._signal(old, signal.SIGKILL)
            old.wait(10)
        self._procs[node] = self._launch(self._cp, node, self._props[node])

    def __enter__(self) -> KafkaReference:
        return self.start() if not self._procs else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ the parts

    def _write_properties(self, node: int, port: int, controller_port: int, voters: str) -> Path:
        assert self.dir is not None
        home = self.dir / f"node-{node}"
        (home / "data").mkdir(parents=True)
        rf = str(min(3, self.nodes))
        lines = {
            "process.roles": "broker,controller",
            "node.id": str(node),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(home / "data"),
            "offsets.topic.replication.factor": rf,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": str(min(2, self.nodes)),
            **self.configs,
        }
        path = home / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        (home / "log4j2.properties").write_text(_LOG4J2.format(log=home / "server.log"))
        return path

    def _jvm(self, cp: str, props: Path) -> list[str]:
        return [
            self.java,
            *self.jvm_options,
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={props.parent / 'log4j2.properties'}",
            "-cp",
            cp,
        ]

    def _format(self, cp: str, props: Path, deadline: float) -> None:
        cmd = [
            *self._jvm(cp, props),
            "kafka.tools.StorageTool",
            "format",
            "--cluster-id",
            self.cluster_id,
            "--config",
            str(props),
        ]
        try:
            done = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=max(1.0, deadline - time.monotonic()),
            )
        except subprocess.TimeoutExpired:
            raise ReferenceError(f"formatting {props.parent.name}'s storage timed out") from None
        if done.returncode != 0:
            raise ReferenceError(
                f"formatting {props.parent.name}'s storage failed (exit {done.returncode}): "
                + (done.stderr.strip() or done.stdout.strip())[-2000:]
            )

    def _launch(self, cp: str, node: int, props: Path) -> subprocess.Popen[bytes]:
        out = open(props.parent / "console.log", "wb")  # noqa: SIM115 - the child keeps it
        try:
            return subprocess.Popen(
                [*self._jvm(cp, props), "kafka.Kafka", str(props)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop kills all of it
            )
        finally:
            out.close()

    def _wait_ready(self, deadline: float) -> None:
        pending = set(range(self.nodes))
        while pending:
            for i, p in enumerate(self._procs):
                if p.poll() is not None:
                    raise ReferenceError(f"Kafka node {i} exited with status {p.returncode}")
            if time.monotonic() > deadline:
                raise ReferenceError(f"Kafka nodes {sorted(pending)} did not become ready in time")
            for i in sorted(pending):
                if metadata_brokers(self.ports[i]) == self.nodes:
                    pending.discard(i)
            if pending:
                time.sleep(0.2)

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of every node's logs (for failure reports)."""
        if self.dir is None:
            return ""
        out = []
        for home in sorted(self.dir.glob("node-*")):
            for name in ("server.log", "console.log"):
                f = home / name
                if f.is_file():
                    text = f.read_text(errors="replace").splitlines()[-lines:]
                    if text:
                        out.append(f"--- {home.name}/{name}\n" + "\n".join(text))
        return "\n".join(out)

    @staticmethod
    def _signal(p: subprocess.Popen[bytes], sig: int) -> None:
        if p.poll() is not None:
            return
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass


# ---------------------------------------------------------------------- readiness


def metadata_brokers(port: int) -> int:
    """How many brokers the node on ``port`` lists in Metadata when it has a controller;
    0 while it does not answer (or answers with no controller yet)."""
    from kafkagen.generated import header_version
    from kafkagen.generated.headers import RequestHeader, ResponseHeader
    from kafkagen.generated.metadata import MetadataRequest, MetadataResponse

    request = MetadataRequest(topics=[], allow_auto_topic_creation=False)
    version = 12
    header = RequestHeader(
        request_api_key=3, request_api_version=version, correlation_id=1, client_id="ready"
    ).encode(header_version(3, version, "request"))
    frame = header + request.encode(version)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0) as s:
            s.sendall(struct.pack(">i", len(frame)) + frame)
            size = struct.unpack(">i", _read(s, 4))[0]
            body = _read(s, size)
    except (OSError, ConnectionError):
        return 0
    _, pos = ResponseHeader.decode_prefix(body, header_version(3, version, "response"))
    response = MetadataResponse.decode(memoryview(body)[pos:], version)
    if response.controller_id < 0:
        return 0
    return len(response.brokers)


def _read(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kafkagen.reference",
        description=f"Run Apache Kafka {KAFKA_VERSION} (KRaft) on 127.0.0.1 until interrupted.",
    )
    parser.add_argument("--nodes", type=int, default=1, help="combined nodes (default 1)")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--timeout", type=float, default=180.0, help="start-up limit, s")
    args = parser.parse_args(argv)
    configs = {}
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--config {item!r}: expected KEY=VALUE")
        configs[key] = value
    ref = KafkaReference(args.nodes, configs=configs)
    try:
        ref.start(args.timeout)
    except ReferenceError as e:
        print(f"kafkagen reference: {e}", file=sys.stderr)
        return 1
    print(
        f"kafka {ref.version}: {args.nodes} node(s) ready in {ref.startup_s:.1f} s, "
        f"bootstrap servers: {ref.bootstrap}",
        flush=True,
    )
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        while not stop.wait(0.5) and ref.running:
            pass
    finally:
        ref.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
