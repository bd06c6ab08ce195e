"""The fuzz on Spark: a few large tasks, each generating and checking its own messages.

The driver builds the plan (:mod:`kafkagen.fuzz.plan`) and the spec oracle's table, zips
the imported ``kafkagen`` package and ships it with ``addPyFile`` (so executors need no
install), and runs ``spark.range(tasks)`` through ``mapInArrow``: each task receives only
its task number and returns one row per (API, kind, version) it checked plus its findings.
Spark keeps the output of successful attempts only, so a task that dies and is retried
counts its messages once.

Progress: tasks send small UDP datagrams (task, attempt, messages done, failures) to the
driver, which prints one status line with the counts of Spark's status tracker.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import functools
import importlib.util
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple
from urllib.parse import urlparse

from kafkagen.oracle import (
    RecordsPaths,
    build,
    records_paths,
)

from .checks import (
    CHECKS,
    INJECT_ENV,
    ComboStats,
    Fuzzer,
    FuzzOptions,
    apply_injection,
    clear_injection,
)
from .packages import Package, load_shipped
from .peers import ORACLES, PEER_COUNTS, PEERS, column
from .plan import Combo, default_tasks, run_task, task_size
from .rules import Table

#: Per-peer counts (``kafka_python_agree``, ...) and each oracle's seconds in stats rows.
PEER_FIELDS = tuple(column(p, what) for p in PEERS for what in PEER_COUNTS)
SECONDS_FIELDS = tuple(column(o, "seconds") for o in ORACLES)
#: Output rows of a task: ``rec`` says which columns mean something.
SCHEMA_DDL = (
    "rec string, task int, attempt int, api int, kind string, version int, "
    "messages bigint, bytes bigint, failures bigint, disagreements bigint, "
    "cross_checks bigint, cross_raised bigint, forward_checks bigint, mutations bigint, "
    "mutations_decoded bigint, native_checks bigint, seconds double, "
    "kafka_checks bigint, kafka_known bigint, kafka_skipped bigint, "
    + "".join(f"by_{c} bigint, " for c in CHECKS)
    + "".join(f"{c} bigint, " for c in PEER_FIELDS)
    + "".join(f"{c} double, " for c in SECONDS_FIELDS)
    + "id string, idx bigint, check_name string, error string, hex string, origin string, "
    + "oracle string, diff string, json string, peer_findings bigint, peer_unjudged bigint, "
    + "cpu_seconds double"
)
STAT_FIELDS = (
    *(f"by_{c}" for c in CHECKS),
    "messages",
    "bytes",
    "failures",
    "disagreements",
    "cross_checks",
    "cross_raised",
    "forward_checks",
    "mutations",
    "mutations_decoded",
    "native_checks",
    "kafka_checks",
    "kafka_known",
    "kafka_skipped",
    *PEER_FIELDS,
)
#: Subpackages the executors need, zipped with the package root.
SHIPPED = ("fuzz", "generated", "runtime", "generator")

LOG4J2 = """\
# kafkagen fuzz: keep Spark's logging out of the user's way.
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
# A task that fails and is retried is Spark doing its job; the driver reports real errors.
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = fatal
logger.tsm.name = org.apache.spark.scheduler.TaskSetManager
logger.tsm.level = fatal
logger.runner.name = org.apache.spark.api.python
logger.runner.level = fatal
"""


def _arrow_schema(ddl: str = SCHEMA_DDL) -> Any:
    """The Arrow schema of a Spark DDL of plain columns (the tasks' output rows)."""
    import pyarrow as pa  # type: ignore[import-untyped]

    types = {
        "string": pa.string(),
        "int": pa.int32(),
        "bigint": pa.int64(),
        "double": pa.float64(),
        "binary": pa.binary(),
    }
    cols = [c.strip().split() for c in ddl.split(",")]
    return pa.schema([(name, types[t]) for name, t in cols])


# ---------------------------------------------------------------- shipping the package


def package_dirs() -> dict[str, Path]:
    """Archive folder -> source folder of the package root and each shipped subpackage.

    In an editable checkout the subpackages live in sibling folders mapped by the build
    backend, so each is located through its imported module, not under the root.
    """
    import kafkagen

    dirs = {"kafkagen": Path(kafkagen.__file__).resolve().parent}
    for sub in SHIPPED:
        spec = importlib.util.find_spec(f"kafkagen.{sub}")
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(f"kafkagen.{sub} is not importable here")
        dirs[f"kafkagen/{sub}"] = Path(list(spec.submodule_search_locations)[0]).resolve()
    return dirs


def _add_module(z: zipfile.ZipFile, name: str, source: bytes) -> None:
    """A Python file and a bytecode file compiled here, so the executors do not compile
    the generated codecs again in every worker process (zipimport cannot cache them)."""
    import importlib.util as iu
    import marshal

    z.writestr(name, source)
    code = compile(source, name, "exec", dont_inherit=True)
    # Unchecked hash-based pyc (PEP 552): valid wherever the magic number matches.
    flags = (1).to_bytes(4, "little")
    z.writestr(name + "c", iu.MAGIC_NUMBER + flags + iu.source_hash(source) + marshal.dumps(code))


def build_zip(dest: Path) -> Path:
    """Zip the package's Python files, each with its bytecode (see :func:`_add_module`)."""
    dirs = package_dirs()
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, src in dirs.items():
            for path in sorted(src.rglob("*.py")):
                rel = path.relative_to(src)
                if "__pycache__" in rel.parts:
                    continue
                if arc == "kafkagen" and len(rel.parts) > 1 and rel.parts[0] in SHIPPED:
                    continue  # zipped from its own folder
                _add_module(z, f"{arc}/{rel.as_posix()}", path.read_bytes())
            for data in ("py.typed",):
                if (src / data).exists():
                    z.write(src / data, f"{arc}/{data}")
    return dest


_shipped: dict[int, Path] = {}
#: (SparkContext, package name) of the generated packages shipped.
_shipped_packages: set[tuple[int, str]] = set()


def ship(sc: Any, package: Package | None = None) -> Path:
    """Zip the package and add it to ``sc`` once per SparkContext, and with it a generated
    ``package`` other than the built-in (once per package). The zips stay until the
    process exits: executors that join later fetch them from the driver."""
    key = id(sc._jsc)
    if key not in _shipped:
        path = build_zip(_scratch() / "kafkagen.zip")
        sc.addPyFile(str(path))
        for compiled in compiled_files():
            # Not importable from the zip: kafkagen.fuzz loads them from SparkFiles.
            sc.addFile(str(compiled))
        _shipped[key] = path
    if package is not None and package.folder is not None:
        if (key, package.name) not in _shipped_packages:
            sc.addPyFile(str(zip_package(package, _scratch())))
            _shipped_packages.add((key, package.name))
    return _shipped[key]


def zip_package(package: Package, dest_dir: Path) -> Path:
    """A generated package's folder zipped under its import name, with bytecode."""
    assert package.folder is not None
    dest = dest_dir / f"{package.name}.zip"
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(package.folder.glob("*.py")):
            _add_module(z, f"{package.name}/{path.name}", path.read_bytes())
    return dest


def _scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="kafkagen-fuzz-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def native_file() -> Path | None:
    """The compiled codec accelerator this process uses, or None (pure Python)."""
    from kafkagen.runtime import message

    return _file_of(getattr(message, "native", None))


def compiled_files() -> list[Path]:
    """The compiled extensions this process uses: the accelerator and, over it, the
    random builders (none in pure Python)."""
    from . import builders

    found = (native_file(), _file_of(builders.compiled))
    return [path for path in found if path is not None]


def _file_of(module: Any) -> Path | None:
    where = getattr(module, "__file__", None)
    return Path(where) if where and Path(where).is_file() else None


# ---------------------------------------------------------------- the Spark session


def _loopback(master: str) -> bool:
    if master.startswith("local"):
        return True
    host = urlparse(master).hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")


#: Where the driver JVM's own output goes (its warnings would otherwise reach the terminal).
#: Removed when the process exits, unless :func:`keep_jvm_log` was called (a failed job).
JVM_LOG = Path(tempfile.gettempdir()) / f"kafkagen-fuzz-jvm-{os.getpid()}.log"
_keep_log = False


def keep_jvm_log() -> Path:
    global _keep_log
    _keep_log = True
    return JVM_LOG


def _drop_jvm_log() -> None:
    if not _keep_log:
        with contextlib.suppress(OSError):
            JVM_LOG.unlink()


def _quiet_start(builder: Any) -> Any:
    """getOrCreate with the JVM's stderr sent to JVM_LOG when this call launches the JVM:
    it inherits file descriptor 2 at launch, so it is swapped only for that moment."""
    from pyspark import SparkContext

    if SparkContext._gateway is not None:
        return builder.getOrCreate()
    sys.stderr.flush()
    atexit.register(_drop_jvm_log)
    saved = os.dup(2)
    try:
        with open(JVM_LOG, "ab") as log:
            os.dup2(log.fileno(), 2)
        return builder.getOrCreate()
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@contextlib.contextmanager
def spark_session(master: str, conf: dict[str, str] | None = None) -> Iterator[Any]:
    """A quiet SparkSession for ``master``: loopback binding for local masters, the
    running interpreter for the workers, Spark's logging at error level."""
    if _loopback(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    confdir = None
    if "SPARK_CONF_DIR" not in os.environ:
        confdir = tempfile.mkdtemp(prefix="kafkagen-spark-conf-")
        Path(confdir, "log4j2.properties").write_text(LOG4J2)
        os.environ["SPARK_CONF_DIR"] = confdir
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkContext._active_spark_context
    if active is not None and active.master != master:
        # getOrCreate would hand back that context and silently ignore ``master``.
        raise RuntimeError(
            f"a SparkContext for {active.master} is already running in this process: "
            f"stop it, or pass its session to run on it, before using {master}"
        )
    builder = SparkSession.builder.master(master).appName("kafkagen-fuzz")
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.python.worker.reuse": "true",
        "spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
    }
    if os.environ.get("SPARK_LOCAL_IP") == "127.0.0.1":
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = _quiet_start(builder)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield spark
    finally:
        if active is None:  # only what this call started
            spark.stop()
        if confdir is not None:
            os.environ.pop("SPARK_CONF_DIR", None)
            with contextlib.suppress(OSError):
                Path(confdir, "log4j2.properties").unlink()
                os.rmdir(confdir)


# ---------------------------------------------------------------- the task


class Fault(NamedTuple):
    """A fault to inject (tests): ``task`` dies halfway through its first attempt, by an
    exception or by killing its Python worker process."""

    task: int
    mode: str = "raise"  # "raise" | "exit"


class JobConfig(NamedTuple):
    table: Table
    combos: list[Combo]
    options: FuzzOptions
    tasks: int
    progress: tuple[str, int] | None = None
    fault: Fault | None = None
    #: A codec bug to inject in the tasks (tests): see ``checks.INJECT_ENV``.
    inject: str | None = None
    #: --oracle kafka: where the specs have records fields (Kafka renders them apart), and
    #: the names of the oracle's jars the driver shipped with ``addFile`` (Spark; empty:
    #: the task's process builds them).
    records: RecordsPaths | None = None
    oracle_jars: tuple[str, ...] = ()


def _stat_row(st: ComboStats, task: int, attempt: int) -> dict[str, Any]:
    row: dict[str, Any] = {
        "rec": "stats",
        "task": task,
        "attempt": attempt,
        "api": st.api,
        "kind": st.kind,
        "version": st.version,
        "seconds": st.seconds,
    }
    for name in STAT_FIELDS:
        if name.startswith("by_"):
            row[name] = st.by_check.get(name[3:], 0)
        elif name in st.oracle or name in PEER_FIELDS:
            row[name] = int(st.oracle.get(name, 0))
        else:
            row[name] = getattr(st, name)
    for name in SECONDS_FIELDS:
        row[name] = st.oracle.get(name, 0.0)
    return row


def _codecs() -> str:
    """Which codecs this process runs: "native" (the compiled accelerator) or "python"."""
    from kafkagen.runtime import message

    return "native" if getattr(message, "native", None) is not None else "python"


def _builders() -> str:
    """Which random builders this process runs: "compiled" or "python"."""
    from . import builders

    return "compiled" if builders.compiled is not None else "python"


def task_rows(config: JobConfig, task: int, attempt: int) -> Iterator[dict[str, Any]]:
    """Run one task and describe it as output rows (also used without Spark)."""
    import kafkagen

    sock = None
    progress: Callable[[int, int], None] | None = None
    if config.progress is not None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        address = config.progress

        def progress(done: int, failures: int) -> None:
            with contextlib.suppress(OSError):
                sock.sendto(f"{task} {attempt} {done} {failures}".encode(), address)

    fault = None
    if config.fault is not None and config.fault.task == task and attempt == 0:
        half = task_size(config.combos, config.tasks, task) // 2
        mode = config.fault.mode

        def fault(done: int) -> None:
            if done >= half:
                if mode == "exit":
                    os._exit(17)  # a killed worker: no cleanup, no exception
                raise RuntimeError(f"injected fault in task {task}, attempt {attempt}")

    began, cpu = time.perf_counter(), time.process_time()
    if config.inject:
        apply_injection(config.inject, config.options.package)
    fuzzer = None
    if "kafka" in config.options.oracles:
        fuzzer = Fuzzer(config.table, config.options)
        fuzzer.records = config.records
        if config.oracle_jars:
            from pyspark import SparkFiles

            fuzzer.kafka_classpath = [SparkFiles.get(name) for name in config.oracle_jars]
    try:
        stats = run_task(
            config.table,
            config.combos,
            config.options,
            config.tasks,
            task,
            progress,
            fault,
            fuzzer,
        )
    finally:
        if fuzzer is not None:
            fuzzer.close()
        if config.inject:
            clear_injection()  # Python workers are reused by later jobs
        if sock is not None:
            sock.close()
    yield from _result_rows(stats, task, attempt)
    yield {
        "rec": "task",
        "task": task,
        "attempt": attempt,
        "messages": sum(st.messages for st in stats),
        "seconds": time.perf_counter() - began,
        "cpu_seconds": time.process_time() - cpu,
        "origin": f"{kafkagen.__file__} pid={os.getpid()} "
        f"codecs={_codecs()} builders={_builders()} "
        f"package={load_shipped(config.options.package).__file__}",
    }


def _result_rows(stats: Iterable[ComboStats], task: int, attempt: int) -> Iterator[dict[str, Any]]:
    for st in stats:
        yield _stat_row(st, task, attempt)
        # Peer disagreements by group: counts once judged, a reproducer where it was made.
        for key in {**st.peer_groups, **st.peer_repros}:
            peer, check, kind = key
            findings, unjudged = st.peer_groups.get(key, (0, 0))
            repro = st.peer_repros.get(key)
            yield {
                "rec": "peer",
                "task": task,
                "attempt": attempt,
                "api": st.api,
                "kind": st.kind,
                "version": st.version,
                "oracle": peer,
                "check_name": check,
                "diff": kind,
                "peer_findings": findings,
                "peer_unjudged": unjudged,
                "id": repro.id if repro else None,
                "error": repro.detail if repro else None,
                "hex": repro.hex if repro else None,
                "json": repro.json if repro else None,
            }
        for f in st.findings:
            yield {
                "rec": "failure",
                "task": task,
                "attempt": attempt,
                "api": f.api,
                "kind": f.kind,
                "version": f.version,
                "id": f.id,
                "idx": f.index,
                "check_name": f.check,
                "error": f.error,
                "hex": f.hex,
            }


def arrow_task(config: JobConfig, batches: Iterable[Any]) -> Iterator[Any]:
    """The mapInArrow function: input rows are task numbers."""
    import pyarrow as pa
    from pyspark import TaskContext

    ctx = TaskContext.get()
    attempt = ctx.attemptNumber() if ctx is not None else 0
    schema = _arrow_schema()
    for batch in batches:
        for task in batch.column(0).to_pylist():
            rows = list(task_rows(config, int(task), attempt))
            # Column by column: an order of magnitude quicker than from_pylist's row walk.
            columns = [pa.array([r.get(f.name) for r in rows], type=f.type) for f in schema]
            yield pa.RecordBatch.from_arrays(columns, schema=schema)


# ---------------------------------------------------------------- progress on the driver


class Progress:
    """Collects the tasks' datagrams and prints a status line until stopped."""

    def __init__(self, total: int, sc: Any, out: IO[str] | None, host: str) -> None:
        self.total = total
        self.sc = sc
        self.out = out
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, 0))
        self.sock.settimeout(0.2)
        self.address: tuple[str, int] = self.sock.getsockname()[:2]
        self.latest: dict[int, tuple[int, int, int]] = {}  # task -> (attempt, done, failures)
        self.began = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fuzz-progress", daemon=True)
        self._tty = bool(out is not None and out.isatty())
        self._printed = 0.0
        self.tasks = 0  # set by the driver loop: tasks planned, and finished so far
        self.finished_tasks = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()
        if self.out is not None and self._tty:
            self.out.write("\n")
            self.out.flush()

    def _run(self) -> None:
        while not self._stop.is_set():
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline:
                try:
                    raw = self.sock.recv(256)
                except (TimeoutError, OSError):
                    break
                with contextlib.suppress(ValueError):
                    task, attempt, done, failures = (int(x) for x in raw.split())
                    old = self.latest.get(task)
                    # A retry restarts its count: the latest attempt is the one that counts.
                    if old is None or attempt >= old[0]:
                        self.latest[task] = (attempt, done, failures)
            self._show()

    def line(self) -> str:
        done = sum(d for _, d, _ in self.latest.values())
        failures = sum(f for _, _, f in self.latest.values())
        took = time.monotonic() - self.began
        rate = done / took if took > 0 else 0.0
        tasks = ""
        if self.tasks:
            running = retried = 0
            with contextlib.suppress(Exception):
                tracker = self.sc.statusTracker()
                for sid in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(sid)
                    if info is not None:
                        running += info.numActiveTasks
                        retried += info.numFailedTasks
            tasks = f" | tasks {self.finished_tasks}/{self.tasks} done, {running} running" + (
                f", {retried} failed (retried)" if retried else ""
            )
        pct = 100.0 * done / self.total if self.total else 100.0
        return (
            f"fuzz: {done:,}/{self.total:,} messages ({pct:.0f}%) "
            f"{rate:,.0f} msg/s | failures {failures}{tasks} | {took:.0f}s"
        )

    def _show(self) -> None:
        if self.out is None:
            return
        now = time.monotonic()
        if self._tty:
            self.out.write("\r\x1b[K" + self.line())
            self.out.flush()
        elif now - self._printed >= 10:
            self._printed = now
            self.out.write(self.line() + "\n")
            self.out.flush()


# ---------------------------------------------------------------- running the job


@dataclass
class RunResult:
    """Everything a run produced, as plain rows (the report writes them out)."""

    master: str
    tasks: int
    options: FuzzOptions
    combos: list[Combo]
    wall_seconds: float
    stats: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    #: Peer disagreements grouped by (peer, API, kind, version, check, kind of difference):
    #: counts of findings (Kafka agreed with kafkagen) and unjudged, and a reproducer.
    peer_groups: list[dict[str, Any]] = field(default_factory=list)
    task_info: list[dict[str, Any]] = field(default_factory=list)
    #: Stopped by Ctrl-C: only the tasks that finished are in the results.
    interrupted: bool = False
    #: The package under test, as run.json records it (``Package.describe``).
    package: dict[str, Any] = field(default_factory=dict)

    @property
    def messages(self) -> int:
        return sum(int(r["messages"]) for r in self.stats)

    @property
    def failure_count(self) -> int:
        return sum(int(r["failures"]) for r in self.stats)

    @property
    def disagreement_count(self) -> int:
        return sum(int(r["disagreements"]) for r in self.stats)


def collect(rows: Iterable[dict[str, Any]], result: RunResult) -> RunResult:
    """Sum the per-task stats rows by (API, kind, version) and sort the findings out."""
    totals: dict[tuple[int, str, int], dict[str, Any]] = {}
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:
        rec = r["rec"]
        if rec == "stats":
            key = (r["api"], r["kind"], r["version"])
            t = totals.get(key)
            if t is None:
                t = totals[key] = {
                    "api": r["api"],
                    "kind": r["kind"],
                    "version": r["version"],
                    "seconds": 0.0,
                    **{n: 0 for n in STAT_FIELDS},
                    **{n: 0.0 for n in SECONDS_FIELDS},
                }
            for n in STAT_FIELDS:
                t[n] += int(r[n])
            for n in ("seconds", *SECONDS_FIELDS):
                t[n] += float(r[n] or 0.0)
        elif rec == "peer":
            gkey = (r["oracle"], r["api"], r["kind"], r["version"], r["check_name"], r["diff"])
            g = groups.get(gkey)
            if g is None:
                g = groups[gkey] = {
                    "peer": r["oracle"],
                    "api": r["api"],
                    "kind": r["kind"],
                    "version": r["version"],
                    "check": r["check_name"],
                    "difference": r["diff"],
                    "findings": 0,
                    "unjudged": 0,
                    "id": None,
                    "detail": None,
                    "hex": None,
                    "json": None,
                }
            g["findings"] += int(r["peer_findings"] or 0)
            g["unjudged"] += int(r["peer_unjudged"] or 0)
            # The smallest reproducer any task made.
            if r["hex"] is not None and (g["hex"] is None or len(r["hex"]) < len(g["hex"])):
                g.update(id=r["id"], detail=r["error"], hex=r["hex"], json=r["json"])
        elif rec == "failure":
            item = {k: r[k] for k in ("id", "api", "kind", "version", "error", "hex")}
            item["index"] = r["idx"]
            item["check"] = r["check_name"]
            result.failures.append(item)
        elif rec == "task":
            result.task_info.append(
                {
                    k: r[k]
                    for k in ("task", "attempt", "messages", "seconds", "cpu_seconds", "origin")
                }
            )
    result.stats = [totals[k] for k in sorted(totals)]
    result.failures.sort(key=lambda f: (f["api"], f["kind"], f["version"], f["index"]))
    result.peer_groups = [groups[k] for k in sorted(groups)]
    result.task_info.sort(key=lambda t: t["task"])
    return result


_shipped_oracles: dict[int, tuple[str, ...]] = {}


def ship_oracle(sc: Any) -> tuple[str, ...]:
    """Add the Kafka oracle's jars (built here once) to ``sc`` with ``addFile``; their
    names, which the tasks look up in SparkFiles to start each Python worker's oracle JVM."""
    key = id(sc._jsc)
    if key not in _shipped_oracles:
        jars = build()
        for jar in jars:
            sc.addFile(str(jar))
        _shipped_oracles[key] = tuple(jar.name for jar in jars)
    return _shipped_oracles[key]


def run_spark(
    table: Table,
    combos: list[Combo],
    options: FuzzOptions,
    master: str = "local[*]",
    tasks: int | None = None,
    fault: Fault | None = None,
    out: IO[str] | None = sys.stderr,
    conf: dict[str, str] | None = None,
    spark: Any = None,
    package: Package | None = None,
) -> RunResult:
    """Run the plan on Spark at ``master`` (or on the given session) and return the summed
    results; ``package``: the generated package ``options.package`` names, shipped to the
    executors when it is not the built-in. A codec bug named by
    ``$KAFKAGEN_FUZZ_INJECT`` reaches the tasks too."""
    records = records_paths() if "kafka" in options.oracles else None
    with contextlib.ExitStack() as stack:
        if spark is None:
            spark = stack.enter_context(spark_session(master, conf))
        sc = spark.sparkContext
        ship(sc, package)
        jars = ship_oracle(sc) if records is not None else ()
        total = sum(c.messages for c in combos)
        n_tasks = tasks or default_tasks(sc.defaultParallelism, total)
        host = os.environ.get("SPARK_LOCAL_IP") or sc.getConf().get("spark.driver.host")
        progress = Progress(total, sc, out, host or "127.0.0.1")
        config = JobConfig(
            table,
            combos,
            options,
            n_tasks,
            progress.address,
            fault,
            os.environ.get(INJECT_ENV) or None,
            records,
            jars,
        )
        began = time.perf_counter()
        progress.tasks = n_tasks
        progress.start()
        try:
            tables, interrupted = _run_tasks(spark, config, progress)
        finally:
            progress.stop()
        wall = time.perf_counter() - began
    result = RunResult(sc.master, n_tasks, options, combos, wall, interrupted=interrupted)
    return collect((row for t in tables for row in t.to_pylist()), result)


def _task_job(spark: Any, config: JobConfig, task: int) -> Any:
    """One task as a Spark job of its own: its rows as an Arrow table. With --oracle
    kafka the task's Python worker asks its own oracle JVM as it goes (started by the
    first such task it runs), so only counts and findings leave the task."""
    return (
        spark.range(task, task + 1, 1, 1)
        .mapInArrow(functools.partial(arrow_task, config), SCHEMA_DDL)
        .toArrow()
    )


def _run_tasks(spark: Any, config: JobConfig, progress: Progress) -> tuple[list[Any], bool]:
    """Run every task; return the finished tasks' tables and whether the run was interrupted.

    Each task is a job of its own, all submitted at once, so the executors take them in
    order as cores free up (as they would the tasks of one job) while each task's results
    reach the driver as soon as it ends. On Ctrl-C (PySpark's handler cancels the jobs and
    raises KeyboardInterrupt here) the tasks that finished are kept; a task's failure after
    its retries cancels the rest and is raised.
    """
    tasks = config.tasks
    pool = concurrent.futures.ThreadPoolExecutor(
        max_workers=min(tasks, 64), thread_name_prefix="fuzz-job"
    )
    futures = [pool.submit(_task_job, spark, config, t) for t in range(tasks)]
    interrupted = False
    try:
        for finished in concurrent.futures.as_completed(futures):
            finished.result()  # a failed task: the run fails
            progress.finished_tasks += 1
    except KeyboardInterrupt:
        interrupted = True
    finally:
        for f in futures:
            f.cancel()
        spark.sparkContext.cancelAllJobs()
        # The running jobs end at once when cancelled; bounded all the same.
        concurrent.futures.wait(futures, timeout=60)
        pool.shutdown(wait=False, cancel_futures=True)
    done = [f.result() for f in futures if f.done() and not f.cancelled() and not f.exception()]
    return done, interrupted


def run_plain(table: Table, combos: list[Combo], options: FuzzOptions, tasks: int = 1) -> RunResult:
    """The same tasks in this process, one after another: no Spark (benchmarks, tests)."""
    records = records_paths() if "kafka" in options.oracles else None
    config = JobConfig(table, combos, options, tasks, records=records)
    began = time.perf_counter()
    rows = [r for t in range(tasks) for r in task_rows(config, t, 0)]
    result = RunResult("plain", tasks, options, combos, time.perf_counter() - began)
    return collect(rows, result)


__all__ = [
    "Fault",
    "JobConfig",
    "Progress",
    "RunResult",
    "build_zip",
    "package_dirs",
    "run_plain",
    "run_spark",
    "ship_oracle",
    "spark_session",
    "task_rows",
]
