"""Helpers for the broker tests: a raw wire client and a broker in a subprocess."""

from __future__ import annotations

import collections
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

from kafkagen.generated import header_type, header_version, message_type
from kafkagen.runtime.broker.cluster import Cluster
from kafkagen.runtime.broker.storage.replica_manager import (
    FetchInfo,
    FetchParams,
    FetchResult,
    ProduceResult,
    ReplicaManager,
)
from kafkagen.runtime.message import Message
from kafkagen.runtime.timer import ManualClock, Timer
from kafkagen.runtime.topic_partition import TopicPartition

RequestHeader = header_type("request")
ResponseHeader = header_type("response")

#: The wall clock of manual-clock clusters (ms).
NOW = 1_700_000_000_000


def req(api_key: int, **fields: Any) -> Any:
    """A request message of ``api_key`` with ``fields`` set."""
    return message_type(api_key, "request")(**fields)


def txn_commit_offset(
    w: WireClient,
    tid: str,
    group: str,
    pid: int,
    epoch: int,
    offset: int,
    topic: str = "t",
    member: tuple[str, int] = ("", -1),
) -> int:
    """TxnOffsetCommit (v3) of one offset for partition 0 of ``topic``, by a producer outside
    the group or as ``member`` (member id, generation or member epoch); its error code."""
    Req: Any = message_type(28, "request")
    r = w.call(
        28,
        3,
        Req(
            transactional_id=tid,
            group_id=group,
            producer_id=pid,
            producer_epoch=epoch,
            generation_id_or_member_epoch=member[1],
            member_id=member[0],
            group_instance_id=None,
            topics=[
                Req.TxnOffsetCommitRequestTopic(
                    name=topic,
                    partitions=[
                        Req.TxnOffsetCommitRequestPartition(
                            partition_index=0, committed_offset=offset, committed_metadata="txn"
                        )
                    ],
                )
            ],
        ),
    )
    return int(r.topics[0].partitions[0].error_code)


class WireClient:
    """A blocking Kafka wire client over one socket: send requests, read framed answers."""

    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, api_key: int, version: int, request: Message, client_id: str = "test") -> int:
        self.sock.sendall(self.frame(api_key, version, request, client_id))
        return self.correlation_id

    def frame(
        self, api_key: int, version: int, request: Message, client_id: str = "test", pad: int = 0
    ) -> bytes:
        """The next request as a size-prefixed frame, not sent (its correlation id is now
        ``correlation_id``); ``pad`` zero bytes follow the body, which a broker ignores."""
        self.correlation_id += 1
        hv = header_version(api_key, version, "request")
        header = RequestHeader(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=self.correlation_id,
            client_id=client_id,
        ).encode(hv)
        frame = header + request.encode(version) + bytes(pad)
        return struct.pack(">i", len(frame)) + frame

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read(4))[0]
        return self._read(size)

    def receive(self, api_key: int, version: int) -> tuple[int, Any]:
        """(correlation id, decoded response) of the next frame."""
        data = self.read_frame()
        hv = header_version(api_key, version, "response")
        header, pos = ResponseHeader.decode_prefix(data, hv)
        body = message_type(api_key, "response").decode(memoryview(data)[pos:], version)
        return header.correlation_id, body

    def call(self, api_key: int, version: int, request: Message) -> Any:
        cid = self.send(api_key, version, request)
        got, response = self.receive(api_key, version)
        assert got == cid, f"correlation id {got}, expected {cid}"
        return response

    def is_closed(self, wait: float = 5.0) -> bool:
        """True if the broker closed the connection (EOF) within ``wait`` seconds."""
        self.sock.settimeout(wait)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def _read(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)


def set_group_configs(w: WireClient, group: str, **configs: str) -> None:
    """Set a group's own configs (``_`` standing for ``.``) with IncrementalAlterConfigs
    on its GROUP resource; fails the test on a refusal."""
    alter = message_type(44, "request")
    resource = alter.AlterConfigsResource(
        resource_type=32,  # GROUP
        resource_name=group,
        configs=[
            alter.AlterableConfig(name=k.replace("_", "."), config_operation=0, value=v)
            for k, v in configs.items()
        ],
    )
    (r,) = w.call(44, 1, alter(resources=[resource])).responses
    assert r.error_code == 0, r.error_message


class BrokerProcess:
    """``python -m kafkagen.cli.serve`` in a subprocess (real parallelism for client tests)."""

    def __init__(
        self,
        *configs: str,
        brokers: int = 1,
        startup: float = 30.0,
        control: bool = False,
        options: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> None:
        args = [
            sys.executable,
            "-m",
            "kafkagen.cli.serve",
            "--brokers",
            str(brokers),
            "--port",
            "0",
            *options,
        ]
        if control:
            args += ["--control-port", "0"]
        for c in configs:
            args += ["--config", c]
        # stderr goes to a file: a pipe nobody reads would block a chatty broker.
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            cwd=cwd,
        )
        deadline = time.monotonic() + startup
        assert self.proc.stdout is not None
        self.bootstrap = ""
        #: The control API's base URL (with ``control=True``).
        self.control_url = ""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.search(r"bootstrap servers?: (\S+)", line)
            if m:
                self.bootstrap = m.group(1)
            m = re.search(r"control API: (\S+)", line)
            if m:
                self.control_url = m.group(1)
            if self.bootstrap and (self.control_url or not control):
                break
        if not self.bootstrap or (control and not self.control_url):
            self.stop()
            raise RuntimeError(f"the broker did not start: {self.stderr_text()}")

    def stderr_text(self) -> str:
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode

    def __enter__(self) -> BrokerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Harness:
    """A cluster that is never started: no sockets, a manual clock, a fixed wall clock."""

    def __init__(self, brokers: int = 1, **configs: str) -> None:
        self.clock = ManualClock(0)
        self.timers: list[Timer] = []
        self.wall = NOW

        def timer() -> Timer:
            t = Timer(self.clock)
            self.timers.append(t)
            return t

        self.cluster = Cluster(
            brokers,
            configs={k.replace("_", "."): v for k, v in configs.items()},
            timer_factory=timer,
            time_ms=lambda: self.wall,
        )
        self.md = self.cluster.metadata

    def rm(self, broker: int = 0) -> ReplicaManager:
        return self.cluster.brokers[broker].replica_manager

    def advance(self, ms: int) -> None:
        now = self.clock.advance(ms)
        for t in self.timers:
            t.advance_clock(now)

    def produce(
        self, tp: TopicPartition, batch: bytes, acks: int = 1, timeout: int = 1000, rm: int = 0
    ) -> list[dict[TopicPartition, ProduceResult]]:
        got: list[dict[TopicPartition, ProduceResult]] = []
        self.rm(rm).append_records({tp: batch}, acks, timeout, got.append, produce_version=9)
        return got

    def fetch(
        self,
        tp: TopicPartition,
        offset: int,
        *,
        min_bytes: int = 1,
        max_wait: int = 0,
        replica_id: int = -1,
        max_bytes: int = 1 << 20,
        rm: int = 0,
    ) -> list[list[tuple[TopicPartition, FetchResult]]]:
        got: list[list[tuple[TopicPartition, FetchResult]]] = []
        # A fetch with a replica id stands for a follower broker of the same process.
        params = FetchParams(replica_id, max_wait, min_bytes, max_bytes, shared=replica_id >= 0)
        self.rm(rm).fetch_messages(params, [(tp, FetchInfo(offset, max_bytes))], got.append)
        return got


def produce_answers(control: Any) -> collections.Counter[int]:
    """The Produce answers kafkagen's control API recorded, counted by partition error code;
    the recording stops."""
    records = control.call("GET", "/records?api=Produce")
    control.call("POST", "/records/stop")
    return collections.Counter(
        p["errorCode"]
        for r in records
        for t in (r["response"] or {}).get("responses", [])
        for p in t["partitionResponses"]
    )


def assert_kafka_reads_coordinator_records(
    records: Mapping[bytes, bytes], names: Mapping[int, str]
) -> None:
    """Each key and value of a coordinator's state ``records`` (record type -> Kafka's
    record name in ``names``), without its two-byte type or version, is read by Kafka 4.4's
    generated record classes to the same JSON form kafkagen reads, and Kafka writes that
    form back to the same bytes."""
    from kafkagen.generated import other_type
    from kafkagen.oracle import KafkaOracle, compare, kafkagen_read

    items, classes = [], []
    for key, value in records.items():
        (record_type,) = struct.unpack_from(">h", key)
        items += [(record_type, "coordinator-key", 0, key[2:])]
        items += [(record_type, "coordinator-value", 0, value[2:])]
        classes += [
            other_type(names[record_type] + "Key"),
            other_type(names[record_type] + "Value"),
        ]
    assert sorted(names) == sorted({item[0] for item in items}), "a record type is missing"
    with KafkaOracle(coordinator_records=True) as kafka:
        theirs = kafka.read(items)
        written = kafka.write(
            [(a, k, 0, t.json) for (a, k, _, _), t in zip(items, theirs, strict=True)]
        )
    assert len(theirs) == 2 * len(records) and all(t.ok for t in theirs)
    for cls, (_, _, version, data), kafka_read in zip(classes, items, theirs, strict=True):
        ours = kafkagen_read(cls, version, data)
        assert compare(ours, kafka_read) is None, (cls.__name__, kafka_read)
    assert [w.data for w in written] == [data for *_, data in items]
