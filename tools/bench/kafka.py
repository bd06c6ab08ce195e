"""``kafkagen serve`` against Apache Kafka 4.4.0 in one run: start-up, produce, consume,
latency and memory.

Both servers run on this machine, one after the other, driven by the same clients:

- start-up: from launching the server to its first Metadata answer, one broker each
  (Kafka's time includes formatting its storage, which a new Kafka needs);
- produce throughput: 1 KiB records to a topic of three partitions, on one broker with one
  replica and on three brokers with three replicas (each shape against a Kafka of as many
  nodes), with acks=1 and with acks=all, sent by Kafka's own
  ``org.apache.kafka.tools.ProducerPerformance`` and by confluent-kafka (librdkafka);
- consume throughput: a confluent-kafka consumer reading everything produced, from the
  start of the three partitions;
- end-to-end latency: 1 KiB records produced one at a time (acks=all) until a consumer
  has each, p50 and p99;
- resident memory of the servers after the runs;
- the clients' ceiling on one broker: the same produce and consume runs against a sink, a
  broker that acknowledges every batch and keeps nothing but a count, answering fetches
  from batches made once (``clients sink``, built from the project's Go sources). What a
  client reaches there is the most any broker could let it reach on this machine, so
  sink / Kafka is the highest ratio a row could show.

The load average is printed from before and after: figures of a loaded machine are not
those of a quiet one.

Every figure is printed with the ratio kafkagen / Kafka (above 1 is kafkagen faster or,
for start-up and memory, Kafka / kafkagen: above 1 is kafkagen quicker or smaller).
Kafka runs with its distribution's JVM settings (1 GiB heap, G1). Record counts and every
wait are bounded.

Each produce and consume row is the median of ``--runs`` runs (3 by default), interleaved.

Run: kafkagen bench kafka [--records N] [--runs N] [--latency-records N] [--brokers 1,3]
[--skip-java] [--skip-sink] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from kafkagen.maven import classpath
from kafkagen.reference import KAFKA_VERSION, KafkaReference, metadata_brokers

__all__ = ["main"]

#: Kafka's own start script's settings (KAFKA_HEAP_OPTS and KAFKA_JVM_PERFORMANCE_OPTS).
KAFKA_JVM = ("-Xmx1g", "-Xms1g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20")
RECORD_SIZE = 1024
TOPIC = "bench-produce"
#: Bounds on every wait of the benchmark (s).
START_LIMIT_S = 180.0
RUN_LIMIT_S = 600.0


@dataclass
class Figure:
    what: str
    kafkagen: float
    kafka: float
    unit: str
    #: True when more is better (throughput); False for times and memory.
    higher_is_better: bool
    #: The same run against the sink (one broker's throughput rows), else None.
    sink: float | None = None

    @property
    def ratio(self) -> float:
        if self.higher_is_better:
            return self.kafkagen / self.kafka if self.kafka else float("inf")
        return self.kafka / self.kafkagen if self.kafkagen else float("inf")

    @property
    def ceiling(self) -> float | None:
        """sink / Kafka: the ratio a broker doing no work at all would show."""
        if self.sink is None:
            return None
        return self.sink / self.kafka if self.kafka else float("inf")


# ---------------------------------------------------------------------- servers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: The server may write and read its compiled bytecode, as an installed kafkagen does (pip
#: compiles it at install): a shell that sets PYTHONDONTWRITEBYTECODE would otherwise time
#: Python compiling some 60 modules on every start.
_BYTECODE_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


@contextmanager
def _kafkagen(brokers: int, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """``kafkagen serve`` with a log directory of its own, as Kafka has."""
    with tempfile.TemporaryDirectory(prefix="kafkagen-bench-") as log_dir:
        with _serve(brokers, port, log_dir) as proc:
            yield proc


@contextmanager
def _serve(brokers: int, port: int, log_dir: str) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafkagen.cli.serve",
            "--brokers",
            str(brokers),
            "--port",
            str(port),
            "--log-dir",
            log_dir,
            "--config",
            "group.initial.rebalance.delay.ms=0",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=_BYTECODE_ENV,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)


@contextmanager
def _sink() -> Iterator[str]:
    """The sink on a free port; yields its bootstrap address."""
    from kafkagen.client_programs import command

    proc = subprocess.Popen(
        [*command("go"), "sink", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], START_LIMIT_S)
        said = proc.stdout.readline() if ready else ""
        if not said.startswith("listening "):
            raise RuntimeError(f"the sink did not start: {said!r}, exit {proc.poll()}")
        yield f"127.0.0.1:{int(said.split()[1])}"
    finally:
        proc.kill()
        proc.wait(5)


def _wait_metadata(port: int, brokers: int, started: float, proc: subprocess.Popen[bytes]) -> float:
    while metadata_brokers(port) != brokers:
        if proc.poll() is not None:
            raise RuntimeError(f"kafkagen serve exited with status {proc.returncode}")
        if time.monotonic() - started > START_LIMIT_S:
            raise RuntimeError("kafkagen serve did not answer Metadata in time")
        time.sleep(0.005)
    return time.monotonic() - started


def startup_kafkagen(repeat: int) -> float:
    """Median seconds from launching ``kafkagen serve`` to its first Metadata answer, after
    one untimed start that leaves the bytecode written (as Kafka's first start resolves its
    jars untimed)."""
    times = []
    for i in range(repeat + 1):
        port = _free_port()
        started = time.monotonic()
        with _kafkagen(1, port) as proc:
            elapsed = _wait_metadata(port, 1, started, proc)
        if i:
            times.append(elapsed)
    return statistics.median(times)


def startup_kafka(repeat: int) -> tuple[float, float]:
    """Median (seconds to the first Metadata answer, of which formatting storage)."""
    KafkaReference(1, jvm_options=KAFKA_JVM).start(START_LIMIT_S).stop()  # resolve once
    runs = []
    for _ in range(repeat):
        kafka = KafkaReference(1, jvm_options=KAFKA_JVM).start(START_LIMIT_S)
        kafka.stop()
        assert kafka.startup_s is not None and kafka.format_s is not None
        runs.append((kafka.startup_s, kafka.format_s))
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def rss_mb(pids: Sequence[int]) -> float:
    """Resident memory of the processes and their children, in MiB."""
    total = 0
    seen = set()
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            continue
        m = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
        total += int(m.group(1)) if m else 0
        todo.extend(int(c) for c in children)
    return total / 1024


# ---------------------------------------------------------------------- producers


def _create_topic(bootstrap: str, replicas: int, name: str = TOPIC, partitions: int = 3) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, replicas)], request_timeout=30)
    futures[name].result(timeout=60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # every partition led before anything is timed
        md = admin.list_topics(name, timeout=10)
        parts = md.topics[name].partitions
        if len(parts) == partitions and all(
            p.leader >= 0 and len(p.isrs) == replicas for p in parts.values()
        ):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{name} has no leaders with {replicas} in-sync replicas")


def produce_confluent(bootstrap: str, records: int, acks: str) -> tuple[float, float]:
    """(messages/s, MB/s) of a confluent-kafka producer sending ``records`` records."""
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "linger.ms": 5,
            "batch.size": 1 << 20,
            "queue.buffering.max.messages": 200_000,
            "enable.idempotence": False,
        }
    )
    value = b"x" * RECORD_SIZE
    failed = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            failed.append(err)

    started = time.monotonic()
    for i in range(records):
        while True:
            try:
                p.produce(TOPIC, value, partition=i % 3, on_delivery=delivered)
                break
            except BufferError:
                p.poll(0.01)
        if time.monotonic() - started > RUN_LIMIT_S:
            raise RuntimeError("confluent-kafka produce run did not finish in time")
    left = p.flush(RUN_LIMIT_S)
    took = time.monotonic() - started
    if left or failed:
        raise RuntimeError(
            f"confluent-kafka: {left} undelivered, {len(failed)} failed ({failed[:1]})"
        )
    return records / took, records * RECORD_SIZE / took / 1e6


def produce_java(bootstrap: str, records: int, acks: str, cp: str) -> tuple[float, float]:
    """(messages/s, MB/s) reported by Kafka's ProducerPerformance."""
    cmd = [
        "java",
        "-Xmx512m",
        "-cp",
        cp,
        "org.apache.kafka.tools.ProducerPerformance",
        "--topic",
        TOPIC,
        "--num-records",
        str(records),
        "--record-size",
        str(RECORD_SIZE),
        "--throughput",
        "-1",
        "--command-property",
        f"bootstrap.servers={bootstrap}",
        f"acks={acks}",
        "linger.ms=5",
        "batch.size=1048576",
        "enable.idempotence=false",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_LIMIT_S)
    # Interim lines come every 5 s; the last line is the whole run's.
    found = re.findall(
        r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\)", done.stdout, re.M
    )
    if done.returncode != 0 or not found or int(found[-1][0]) != records:
        raise RuntimeError(f"ProducerPerformance failed: {(done.stdout + done.stderr)[-800:]}")
    _, per_s, mib_per_s = found[-1]
    return float(per_s), float(mib_per_s) * 1.048576  # it counts MiB


def consume_confluent(bootstrap: str, expected: int) -> tuple[float, float]:
    """(messages/s, MB/s) of a confluent-kafka consumer reading ``expected`` records of the
    produce topic from the start (assigned partitions, no group), timed from the first
    record, as Kafka's ConsumerPerformance leaves its start-up out of its fetch time: the
    client's own start (metadata, offsets) took about 0.55 s on both servers."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-consume",
            "enable.auto.commit": False,
            "fetch.max.bytes": 50 << 20,
            # librdkafka stops fetching a partition for this long whenever its local queue
            # is past queued.max.messages.kbytes (64 MiB, 64,000 records here); at the
            # default, a second, the run measured that pause on both servers.
            "fetch.queue.backoff.ms": 10,
        }
    )
    try:
        c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(3)])
        count = size = 0  # after the first record
        began = time.monotonic()
        started: float | None = None
        while started is None or count + 1 < expected:
            if time.monotonic() - began > RUN_LIMIT_S:
                read = count + (started is not None)
                raise RuntimeError(f"consumed {read} of {expected} records in time")
            for m in c.consume(10_000, timeout=1.0):
                if m.error() is not None:
                    continue
                if started is None:
                    started = time.monotonic()  # the clock starts with the first record
                else:
                    count += 1
                    size += len(m.value() or b"")
        took = max(time.monotonic() - started, 1e-9)
    finally:
        c.close()
    return count / took, size / took / 1e6


def latency_confluent(bootstrap: str, count: int, replicas: int) -> tuple[float, float]:
    """(p50, p99) milliseconds from producing a 1 KiB record (acks=all) to a consumer
    receiving it, one record at a time."""
    from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition

    topic = "bench-latency"
    _create_topic(bootstrap, replicas, topic, 1)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-latency"})
    value = b"x" * RECORD_SIZE
    took: list[float] = []
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_END)])
        started = time.monotonic()
        # The consumer finds the end of the log on its own time: probe until it reads.
        while True:
            p.produce(topic, b"probe", key=b"probe")
            p.flush(10)
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                break
            if time.monotonic() - started > START_LIMIT_S:
                raise RuntimeError("the latency consumer never started reading")
        for i in range(-20, count):  # the first 20 warm up the consumer's fetch loop
            key = str(i).encode()
            sent = time.perf_counter()
            p.produce(topic, value, key=key)
            p.poll(0)
            while True:
                if time.monotonic() - started > RUN_LIMIT_S:
                    raise RuntimeError("the latency run did not finish in time")
                m = c.poll(1.0)
                if m is not None and m.error() is None and m.key() == key:
                    break
            if i >= 0:
                took.append((time.perf_counter() - sent) * 1000)
        p.flush(30)
    finally:
        c.close()
    took.sort()
    return took[len(took) // 2], took[min(len(took) - 1, int(len(took) * 0.99))]


@dataclass
class ProduceRun:
    tool: str
    acks: str
    msgs_per_s: float
    mb_per_s: float


def produce_all(
    bootstrap: str, replicas: int, records: int, java_cp: str | None, runs: int = 1
) -> list[ProduceRun]:
    """Each producer and acks setting ``runs`` times, interleaved so that a slow spell of
    the machine falls on every row alike; of each, the run of median messages/s (with its
    MB/s: ``median_high`` of the pairs picks a run, it averages none).

    Every run starts with the machine's written data on disk (``os.sync``, untimed): past
    the kernel's background threshold (a tenth of memory, about 2.3 GB here) it writes
    back while the producers run and slows the writers toward the disk's pace, so later
    runs would measure the disk catching up with the earlier ones, not the server."""
    _create_topic(bootstrap, replicas)
    rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(runs):
        for acks in ("1", "all"):
            if java_cp is not None:
                os.sync()
                rows.setdefault(("ProducerPerformance", acks), []).append(
                    produce_java(bootstrap, records, acks, java_cp)
                )
            os.sync()
            rows.setdefault(("confluent-kafka", acks), []).append(
                produce_confluent(bootstrap, records, acks)
            )
    return [
        ProduceRun(tool, acks, *statistics.median_high(got)) for (tool, acks), got in rows.items()
    ]


def throughput(
    bootstrap: str, replicas: int, records: int, java_cp: str | None, runs: int
) -> tuple[list[ProduceRun], tuple[float, float]]:
    """The produce rows, then the median of ``runs`` consumes of all they wrote."""
    produced = produce_all(bootstrap, replicas, records, java_cp, runs)
    total = records * len(produced) * runs
    consumed = statistics.median_high([consume_confluent(bootstrap, total) for _ in range(runs)])
    return produced, consumed


# ---------------------------------------------------------------------- the run


#: The cluster shapes compared: brokers (each topic with as many replicas).
SHAPES = (1, 3)


def _shape(brokers: int) -> str:
    return f"{brokers} broker{'s' if brokers > 1 else ''}, rf {brokers}"


def run(
    records: int,
    repeat: int,
    java: bool,
    say: Callable[[str], None],
    latency_records: int = 1000,
    shapes: Sequence[int] = SHAPES,
    sink: bool = True,
    runs: int = 1,
) -> list[Figure]:
    figures: list[Figure] = []
    java_cp = (
        os.pathsep.join(
            str(p) for p in classpath([f"org.apache.kafka:kafka-tools:{KAFKA_VERSION}"])
        )
        if java
        else None
    )
    say("start-up: kafkagen serve ...")
    kg_start = startup_kafkagen(repeat)
    say("start-up: Apache Kafka ...")
    kafka_start, kafka_format = startup_kafka(repeat)
    figures.append(Figure("start to first Metadata answer", kg_start, kafka_start, "s", False))
    figures.append(
        Figure(
            "  Kafka without formatting storage", kg_start, kafka_start - kafka_format, "s", False
        )
    )
    if sink and 1 in shapes:
        from kafkagen.client_programs import ClientProgramError, command

        try:
            command("go")  # built now, not between timed runs
        except ClientProgramError as e:
            raise RuntimeError(
                f"the sink cannot be built (--skip-sink runs without it): {e}"
            ) from e
    for brokers in shapes:
        figures += _run_shape(brokers, records, java_cp, say, latency_records, sink, runs)
    return figures


def _run_shape(
    brokers: int,
    records: int,
    java_cp: str | None,
    say: Callable[[str], None],
    latency_records: int,
    sink: bool,
    runs: int,
) -> list[Figure]:
    """Produce, consume (medians of ``runs``), latency and memory on ``brokers`` brokers of
    each server, and on one broker the clients' ceiling (the sink) unless ``sink`` is
    false."""
    shape = _shape(brokers)
    say(f"produce, consume, latency, {shape}: kafkagen serve ({records} records) ...")
    port = _free_ports_from(brokers)
    started = time.monotonic()
    with _kafkagen(brokers, port) as proc:
        _wait_metadata(port, brokers, started, proc)
        bootstrap = ",".join(f"127.0.0.1:{port + i}" for i in range(brokers))
        kg_runs, kg_consume = throughput(bootstrap, brokers, records, java_cp, runs)
        kg_latency = latency_confluent(bootstrap, latency_records, brokers)
        kg_rss = rss_mb([proc.pid])
    sink_runs: list[ProduceRun | None] = [None] * len(kg_runs)
    sink_consume: tuple[float | None, float | None] = (None, None)
    if sink and brokers == 1:
        say(f"produce, consume, {shape}: the sink ({records} records) ...")
        with _sink() as bootstrap:
            done, sink_consume = throughput(bootstrap, brokers, records, java_cp, runs)
        sink_runs = list(done)
    say(f"produce, consume, latency, {shape}: Apache Kafka ({records} records) ...")
    with KafkaReference(brokers, jvm_options=KAFKA_JVM) as kafka:
        kafka_runs, kafka_consume = throughput(kafka.bootstrap, brokers, records, java_cp, runs)
        kafka_latency = latency_confluent(kafka.bootstrap, latency_records, brokers)
        kafka_rss = rss_mb(kafka.pids())
    figures = []
    for a, b, c in zip(kg_runs, kafka_runs, sink_runs, strict=True):
        what = f"produce acks={a.acks} {a.tool} ({shape})"
        msgs, mb = (c.msgs_per_s, c.mb_per_s) if c is not None else (None, None)
        figures.append(Figure(what, a.msgs_per_s, b.msgs_per_s, "msgs/s", True, msgs))
        figures.append(Figure(what, a.mb_per_s, b.mb_per_s, "MB/s", True, mb))
    what = f"consume confluent-kafka ({shape})"
    figures.append(Figure(what, kg_consume[0], kafka_consume[0], "msgs/s", True, sink_consume[0]))
    figures.append(Figure(what, kg_consume[1], kafka_consume[1], "MB/s", True, sink_consume[1]))
    for i, p in enumerate(("p50", "p99")):
        what = f"end-to-end latency {p}, acks=all ({shape})"
        figures.append(Figure(what, kg_latency[i], kafka_latency[i], "ms", False))
    figures.append(
        Figure(f"resident memory after the runs ({shape})", kg_rss, kafka_rss, "MiB", False)
    )
    return figures


def _free_ports_from(n: int) -> int:
    """A port P with P .. P+n-1 free (``kafkagen serve --port P`` takes them all)."""
    for _ in range(50):
        port = _free_port()
        if port + n <= 65536 and all(_port_free(port + i) for i in range(n)):
            return port
    raise RuntimeError(f"no {n} consecutive free ports")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def table(figures: list[Figure]) -> str:
    sinks = any(f.sink is not None for f in figures)
    head = f"{'':<62} {'kafkagen':>12} {'Kafka 4.4':>12}  {'unit':<7} {'ratio':>6}"
    lines = [head + (f" {'sink':>12} {'sink/Kafka':>10}" if sinks else "")]
    for f in figures:
        line = f"{f.what:<62} {f.kafkagen:>12,.2f} {f.kafka:>12,.2f}  {f.unit:<7} {f.ratio:>5.2f}x"
        if f.sink is not None:
            line += f" {f.sink:>12,.2f} {f.ceiling:>9.2f}x"
        lines.append(line)
    lines.append(
        "ratio: kafkagen/Kafka for throughput, Kafka/kafkagen for time and memory "
        "(above 1: kafkagen ahead)"
    )
    if sinks:
        lines.append(
            "sink: the same client against a broker that keeps nothing, its ceiling here; "
            "sink/Kafka is the most any broker could show on that row"
        )
    return "\n".join(lines)


def _load(load: tuple[float, float, float]) -> str:
    return " ".join(f"{x:.2f}" for x in load)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kafkagen bench kafka",
        description="kafkagen serve against Apache Kafka 4.4.0: start-up, produce, memory.",
    )
    parser.add_argument("--records", type=int, default=100_000, help="records per produce run")
    parser.add_argument("--repeat", type=int, default=3, help="start-ups timed per server")
    parser.add_argument(
        "--runs",
        type=int,
        default=3,
        help="runs of each produce and consume row; the median is reported (default 3)",
    )
    parser.add_argument(
        "--latency-records", type=int, default=1000, help="records timed one by one end to end"
    )
    parser.add_argument(
        "--brokers",
        default=",".join(map(str, SHAPES)),
        metavar="N,...",
        help="cluster sizes compared, each topic with as many replicas (default: 1,3)",
    )
    parser.add_argument("--skip-java", action="store_true", help="no ProducerPerformance runs")
    parser.add_argument(
        "--skip-sink", action="store_true", help="no runs against the sink (needs Go to build)"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args(argv)
    if min(args.records, args.repeat, args.runs, args.latency_records) < 1:
        parser.error("--records, --repeat, --runs and --latency-records must be at least 1")
    try:
        shapes = [int(n) for n in args.brokers.split(",")]
    except ValueError:
        shapes = []
    if not shapes or not all(1 <= n <= 3 for n in shapes):
        parser.error(f"--brokers {args.brokers!r}: a comma-separated list of 1, 2 or 3")
    # A terminated run still stops the servers it started (their finally blocks run).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load_before = os.getloadavg()
    figures = run(
        args.records,
        args.repeat,
        not args.skip_java,
        lambda m: print(m, file=sys.stderr, flush=True),
        args.latency_records,
        shapes,
        not args.skip_sink,
        args.runs,
    )
    load_after = os.getloadavg()
    print(table(figures))
    print(f"load average (1, 5, 15 min) before: {_load(load_before)}; after: {_load(load_after)}")
    if args.json:
        report = {
            "figures": [asdict(f) | {"ratio": f.ratio, "ceiling": f.ceiling} for f in figures],
            "load_before": load_before,
            "load_after": load_after,
        }
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
