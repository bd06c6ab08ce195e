"""A Spark standalone cluster on 127.0.0.1 for tests: a master and N workers started from
the pip-installed pyspark (it has no start scripts, so each is a ``spark-class`` process
of its own), each in a process group of its own so a test can kill one worker together
with the executor it launched. Every start is bounded and everything is torn down."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Bounded start of each process (a JVM start is 5-10 s here, more under load).
START_SECONDS = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(
    ready: Callable[[], bool], what: str, procs: list[subprocess.Popen[bytes]], seconds: float
) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what}: a Spark process exited with {p.returncode}")
        with contextlib.suppress(OSError):
            if ready():
                return
        time.sleep(0.5)
    raise TimeoutError(f"{what}: not ready after {seconds:.0f} s")


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process group a test started (the JVM and any executor it launched)."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@dataclass
class Cluster:
    url: str
    ui: int
    master: subprocess.Popen[bytes]
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def status(self) -> dict[str, Any]:
        """The master's JSON status page: workers, their state and cores in use."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=5) as r:
            data: dict[str, Any] = json.load(r)
        return data

    def kill_worker(self, i: int) -> None:
        """SIGKILL worker ``i``'s process group: the worker JVM, the executor JVM it
        launched and that executor's Python workers, with no chance to clean up."""
        os.killpg(self.workers[i].pid, signal.SIGKILL)
        self.workers[i].wait(timeout=30)


@contextlib.contextmanager
def standalone_cluster(base: Path, workers: int = 2, cores: int = 1) -> Iterator[Cluster]:
    """A master and ``workers`` workers of ``cores`` cores each; logs under ``base``."""
    import pyspark
    from kafkagen.fuzz.job import LOG4J2

    home = Path(pyspark.__file__).parent
    (base / "conf").mkdir(parents=True, exist_ok=True)
    (base / "conf" / "log4j2.properties").write_text(LOG4J2)
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_CONF_DIR": str(base / "conf"),
        "SPARK_LOG_DIR": str(base / "logs"),
    }
    spark_class = str(home / "bin" / "spark-class")
    port, ui = free_port(), free_port()
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, args: list[str], extra: dict[str, str]) -> subprocess.Popen[bytes]:
        with open(base / f"{name}.log", "wb") as log:
            proc = subprocess.Popen(
                [spark_class, *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**env, **extra},
                start_new_session=True,  # its own group: killed with what it launches
            )
        procs.append(proc)
        return proc

    try:
        master = start(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui),
            ],  # fmt: skip
            {},
        )

        def listening() -> bool:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True

        wait_until(listening, "master", procs, START_SECONDS)
        cluster = Cluster(f"spark://127.0.0.1:{port}", ui, master)
        for i in range(workers):
            cluster.workers.append(
                start(
                    f"worker-{i}",
                    [
                        "org.apache.spark.deploy.worker.Worker",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(free_port()),
                        "--webui-port",
                        str(free_port()),
                        "--cores",
                        str(cores),
                        "--memory",
                        "2g",
                        cluster.url,
                    ],  # fmt: skip
                    {"SPARK_WORKER_DIR": str(base / f"work-{i}")},
                )
            )

        def all_alive() -> bool:
            return int(cluster.status().get("aliveworkers", 0)) >= workers

        wait_until(all_alive, f"{workers} workers", procs, START_SECONDS)
        yield cluster
    finally:
        for p in reversed(procs):
            stop_group(p)
