"""The broker's network layer: framing, ordering, limits, bad input, ApiVersions."""

from __future__ import annotations

import random
import socket
import ssl
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_helpers import WireClient
from kafkagen.generated import APIS, message_type
from kafkagen.runtime.broker import server as server_module
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.handlers import load_handlers, supported_versions
from kafkagen.runtime.records import Record, build_batch
from kafkagen.runtime.topic_partition import TopicPartition
from tls_helpers import make_pki

ApiVersionsRequest = message_type(18, "request")
MetadataRequest = message_type(3, "request")

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def cluster() -> Iterator[BackgroundCluster]:
    with BackgroundCluster(configs={"max.connections": "50"}) as c:
        yield c


def _still_serves(bootstrap: str) -> None:
    with WireClient(bootstrap) as c:
        r = c.call(18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
        assert r.error_code == 0


def test_api_versions_lists_exactly_the_registered_handlers(cluster: BackgroundCluster) -> None:
    expected = supported_versions(False)
    with WireClient(cluster.bootstrap) as c:
        for version in range(6):
            req = ApiVersionsRequest(client_software_name="t", client_software_version="1.0")
            r = c.call(18, version, req)
            got = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
            assert r.error_code == 0
            assert got == expected


def test_every_registered_handler_serves_versions_its_codec_has() -> None:
    for key, h in load_handlers().items():
        assert h.request_type.LOWEST_VERSION <= h.min_version <= h.max_version
        assert h.max_unstable_version <= h.request_type.HIGHEST_VERSION, key


def test_paged_handlers_serve_their_paged_version_as_unstable_top() -> None:
    paged_apis = 0
    for key, h in load_handlers().items():
        paged = getattr(sys.modules[h.handle.__module__], "PAGED", None)
        if paged is not None:
            paged_apis += 1
            assert h.max_version < paged == h.max_unstable_version, key
    assert paged_apis == 13


_FIRST_METADATA = """
import sys
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.reference import metadata_brokers
with BackgroundCluster() as c:
    port = int(c.bootstrap.rpartition(":")[2])
    assert metadata_brokers(port) == 1
    print(" ".join(sorted(sys.modules)))
"""


def test_a_broker_imports_only_the_handlers_and_codecs_it_was_asked_for() -> None:
    # Start-up speed: a fresh broker answering Metadata has loaded that handler alone.
    out = subprocess.run(
        [sys.executable, "-c", _FIRST_METADATA],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    handlers = {m for m in out if m.startswith("kafkagen.runtime.handlers.api_")}
    assert handlers == {"kafkagen.runtime.handlers.api_03_metadata"}
    api_codecs = {f"kafkagen.generated.{module}" for module, _, _ in APIS.values()}
    assert api_codecs & set(out) == {"kafkagen.generated.metadata"}
    # Slow imports that wait for the first record batch or release preset.
    assert not {"crc32c", "cramjam", "importlib.metadata", "importlib.resources"} & set(out)


def test_too_new_api_versions_gets_v0_error_with_ranges_and_connection_stays(
    cluster: BackgroundCluster,
) -> None:
    with WireClient(cluster.bootstrap) as c:
        # A v9 request: header v2 then an unknown body; the answer uses the v0 layout.
        cid = c.send(18, 2, ApiVersionsRequest())  # prime the correlation counter
        c.receive(18, 2)
        header = struct.pack(">hhi", 18, 9, 77) + b"\x00\x04test\x00"
        frame = header + b"\x02\x01x\x02\x011\x00"
        c.send_raw(struct.pack(">i", len(frame)) + frame)
        got, r = c.receive(18, 0)
        assert got == 77 and cid == 1
        assert r.error_code == 35
        assert {k.api_key for k in r.api_keys} == set(supported_versions(False))
        # The client retries at a version it found, on the same connection.
        req = ApiVersionsRequest(client_software_name="t", client_software_version="1")
        assert c.call(18, 3, req).error_code == 0


def test_unstable_versions_only_advertised_when_enabled() -> None:
    stable = supported_versions(False)
    unstable = supported_versions(True)
    assert stable.keys() == unstable.keys()
    assert all(unstable[k][1] >= stable[k][1] for k in stable)
    with BackgroundCluster(configs={"unstable.api.versions.enable": "true"}) as c:
        with WireClient(c.bootstrap) as w:
            r = w.call(18, 2, ApiVersionsRequest())
            assert {k.api_key: (k.min_version, k.max_version) for k in r.api_keys} == unstable


def test_pipelined_requests_are_answered_in_order(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as c:
        sent = []
        for i in range(40):
            if i % 2:
                sent.append((c.send(3, 12, MetadataRequest(topics=None)), 3, 12))
            else:
                sent.append((c.send(18, i % 3, ApiVersionsRequest()), 18, i % 3))
        for cid, key, version in sent:
            got, _ = c.receive(key, version)
            assert got == cid


def _fetch(topic: str, min_bytes: int, max_wait_ms: int) -> Any:
    fetch = message_type(1, "request")
    partition = fetch.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
    return fetch(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=1 << 20,
        topics=[fetch.FetchTopic(topic=topic, partitions=[partition])],
    )


def test_a_late_answer_holds_back_the_answers_pipelined_behind_it() -> None:
    """A Fetch waiting in purgatory for bytes that never come is answered after max_wait_ms,
    and the ApiVersions sent behind it on the same connection only after it."""
    with BackgroundCluster() as c:
        assert c.cluster is not None
        c.call(lambda: c.cluster.metadata.create_topic("waiting", 1, 1))  # type: ignore[union-attr]
        with WireClient(c.bootstrap) as w:
            start = time.monotonic()
            request = _fetch("waiting", 1 << 20, 400)
            w.send_raw(w.frame(1, 4, request) + w.frame(18, 0, ApiVersionsRequest()))
            got, answer = w.receive(1, 4)
            assert (got, answer.responses[0].partitions[0].error_code) == (w.correlation_id - 1, 0)
            assert time.monotonic() - start >= 0.35  # it did wait in purgatory
            assert w.receive(18, 0)[0] == w.correlation_id


def test_fetch_answers_a_slow_reader_cannot_take_at_once_all_arrive_whole() -> None:
    """Twelve pipelined fetches of a 900 KB batch: far more than the sockets buffer, so the
    broker's writes are cut short and the rest leaves as the client reads."""
    batch = build_batch([Record(-1, 0, b"k", random.Random(7).randbytes(900_000))])
    produce_type = message_type(0, "request")
    produce = produce_type(
        acks=1,
        timeout_ms=5000,
        topic_data=[
            produce_type.TopicProduceData(
                name="large",
                partition_data=[produce_type.PartitionProduceData(index=0, records=batch)],
            )
        ],
    )
    with BackgroundCluster() as c:
        assert c.cluster is not None
        c.call(lambda: c.cluster.metadata.create_topic("large", 1, 1))  # type: ignore[union-attr]
        with WireClient(c.bootstrap) as w:
            assert w.call(0, 7, produce).responses[0].partition_responses[0].error_code == 0
            w.send_raw(b"".join(w.frame(1, 4, _fetch("large", 1, 0)) for _ in range(12)))
            time.sleep(0.2)  # answers pile up meanwhile; correctness does not depend on it
            for cid in range(2, 14):
                got, answer = w.receive(1, 4)
                records = answer.responses[0].partitions[0].records
                # The broker sets the partition leader epoch (bytes 12-15, outside the CRC).
                assert got == cid and bytes(records[16:]) == batch[16:]


def _produce(topic: str, batch: bytes) -> Any:
    produce_type = message_type(0, "request")
    return produce_type(
        acks=1,
        timeout_ms=5000,
        topic_data=[
            produce_type.TopicProduceData(
                name=topic,
                partition_data=[produce_type.PartitionProduceData(index=0, records=batch)],
            )
        ],
    )


@pytest.fixture
def sent_parts(monkeypatch: pytest.MonkeyPatch) -> list[list[Any]]:
    """Every list of pieces the brokers of this process hand to their connections' writes."""
    seen: list[list[Any]] = []
    write = server_module._Wire.write

    def spy(self: Any, parts: list[Any]) -> None:
        seen.append(list(parts))
        write(self, parts)

    monkeypatch.setattr(server_module._Wire, "write", spy)
    return seen


@pytest.mark.parametrize("tls", [False, True], ids=["plaintext", "ssl"])
def test_fetch_answers_send_the_stored_batches_themselves(
    tls: bool, tmp_path: Path, sent_parts: list[list[Any]]
) -> None:
    """Three 1.5 MiB batches fetched one at a time, pipelined: each answer's pieces hold
    the log's own bytes object of its batch (not a copy joined into the answer), and the
    client reads each batch byte for byte, over plain TCP and over TLS."""
    rng = random.Random(11)
    batches = [build_batch([Record(-1, 0, b"k", rng.randbytes(3 << 19))]) for _ in range(3)]
    configs = {"message.max.bytes": str(2 << 20)}
    if tls:
        pki = make_pki(tmp_path)
        configs["listeners"] = "SSL://127.0.0.1:0"
        configs["ssl.keystore.location"] = str(pki.broker)
    with BackgroundCluster(configs=configs) as c, WireClient(c.bootstrap) as w:
        if tls:
            context = ssl.create_default_context(cafile=str(pki.ca))
            w.sock = context.wrap_socket(w.sock, server_hostname="127.0.0.1")
        assert c.cluster is not None
        c.call(lambda: c.cluster.metadata.create_topic("big", 1, 1))  # type: ignore[union-attr]
        for batch in batches:
            assert (
                w.call(0, 7, _produce("big", batch)).responses[0].partition_responses[0].error_code
                == 0
            )
        fetches = []
        for offset in range(3):
            request = _fetch("big", 1, 0)
            # One byte at most: the broker still sends the first batch whole (min one batch).
            request.topics[0].partitions[0].fetch_offset = offset
            request.max_bytes = request.topics[0].partitions[0].partition_max_bytes = 1
            fetches.append(w.frame(1, 12, request))
        w.send_raw(b"".join(fetches))
        for offset, batch in enumerate(batches):
            got, answer = w.receive(1, 12)
            records = bytes(answer.responses[0].partitions[0].records)
            # The broker sets the partition leader epoch (bytes 12-15, outside the CRC).
            assert records[16:] == batch[16:] and records[:8] == offset.to_bytes(8, "big")
        log = c.cluster.brokers[0].replica_manager.partitions[TopicPartition("big", 0)].log
        stored = [b.data for b in log.batches]
        assert len(stored) == 3
        pieces = [p for parts in sent_parts for p in parts]
        for data in stored:
            assert any(p is data for p in pieces), "a stored batch was copied into its answer"


@pytest.mark.parametrize("queued", ["500", "2"])
def test_requests_in_one_write_are_all_answered_in_order(queued: str) -> None:
    """Many frames arriving together, a large one received over several reads among them;
    with queued.max.requests 2 the connection is read a little at a time."""
    with BackgroundCluster(configs={"queued.max.requests": queued}) as c:
        with WireClient(c.bootstrap) as w:
            data = b"".join(w.frame(18, i % 3, ApiVersionsRequest()) for i in range(100))
            data += w.frame(18, 0, ApiVersionsRequest(), pad=3 << 20)  # 3 MiB of padding
            data += b"".join(w.frame(18, 2, ApiVersionsRequest()) for _ in range(50))
            w.send_raw(data)
            for cid in range(1, 152):
                version = (cid - 1) % 3 if cid <= 100 else 0 if cid == 101 else 2
                got, answer = w.receive(18, version)
                assert (got, answer.error_code) == (cid, 0)


def test_a_large_frame_sent_in_pieces_is_read_whole(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as w:
        data = w.frame(18, 1, ApiVersionsRequest(), pad=1 << 20)
        pieces = [data[i : i + 100_000] for i in range(0, len(data), 100_000)]
        for piece in pieces:
            w.send_raw(piece)
            time.sleep(0.01)
        assert w.receive(18, 1)[0] == w.correlation_id
        assert w.call(18, 0, ApiVersionsRequest()).error_code == 0


def test_frames_over_tls_are_read_whole_and_answered_in_order(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    configs = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(pki.broker)}
    with BackgroundCluster(configs=configs) as c, WireClient(c.bootstrap) as w:
        tls = ssl.create_default_context(cafile=str(pki.ca))
        w.sock = tls.wrap_socket(w.sock, server_hostname="127.0.0.1")
        data = w.frame(18, 1, ApiVersionsRequest(), pad=1 << 20)
        data += b"".join(w.frame(18, 0, ApiVersionsRequest()) for _ in range(20))
        w.send_raw(data)
        for cid in range(1, 22):
            got, answer = w.receive(18, 1 if cid == 1 else 0)
            assert (got, answer.error_code) == (cid, 0)


def test_a_produced_batch_over_tls_arrives_intact(tmp_path: Path) -> None:
    """A 200 KB batch over TLS: the body's bytes past the first TLS record (16 KiB) used to
    be lost on the way into the receive buffer, and the batch failed its CRC."""
    pki = make_pki(tmp_path)
    configs = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(pki.broker)}
    batch = build_batch([Record(-1, 0, b"k", random.Random(5).randbytes(200_000))])
    with BackgroundCluster(configs=configs) as c, WireClient(c.bootstrap) as w:
        tls = ssl.create_default_context(cafile=str(pki.ca))
        w.sock = tls.wrap_socket(w.sock, server_hostname="127.0.0.1")
        assert c.cluster is not None
        c.call(lambda: c.cluster.metadata.create_topic("tls", 1, 1))  # type: ignore[union-attr]
        answer = w.call(0, 7, _produce("tls", batch)).responses[0].partition_responses[0]
        assert answer.error_code == 0
        records = w.call(1, 12, _fetch("tls", 1, 0)).responses[0].partitions[0].records
        assert bytes(records[16:]) == batch[16:]


def test_a_frame_cut_off_inside_its_body_closes_only_that_connection(
    cluster: BackgroundCluster,
) -> None:
    with WireClient(cluster.bootstrap) as w:
        data = w.frame(18, 1, ApiVersionsRequest(), pad=200_000)
        w.send_raw(data[:150_000])
        w.sock.shutdown(socket.SHUT_WR)
        assert w.is_closed()
    _still_serves(cluster.bootstrap)


def test_size_prefix_over_the_limit_closes_only_that_connection(
    cluster: BackgroundCluster,
) -> None:
    with WireClient(cluster.bootstrap) as bad, WireClient(cluster.bootstrap) as good:
        bad.send_raw(struct.pack(">i", 2**31 - 1))
        assert bad.is_closed()
        assert good.call(18, 0, ApiVersionsRequest()).error_code == 0


def test_request_max_bytes_is_enforced_from_the_prefix() -> None:
    with BackgroundCluster(configs={"socket.request.max.bytes": "1000"}) as c:
        with WireClient(c.bootstrap) as w:
            # Only the prefix is sent: the broker must not wait for 1001 bytes.
            w.send_raw(struct.pack(">i", 1001))
            assert w.is_closed()
        _still_serves(c.bootstrap)


def test_negative_size_closes_connection(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as c:
        c.send_raw(struct.pack(">i", -5))
        assert c.is_closed()
    _still_serves(cluster.bootstrap)


def test_frame_too_short_for_a_header_closes_connection(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as c:
        c.send_raw(struct.pack(">i", 3) + b"\x00\x12\x00")
        assert c.is_closed()
    _still_serves(cluster.bootstrap)


def test_unknown_api_key_closes_connection_and_server_keeps_serving(
    cluster: BackgroundCluster,
) -> None:
    with WireClient(cluster.bootstrap) as c:
        frame = struct.pack(">hhi", 999, 0, 1) + b"\x00\x01x"
        c.send_raw(struct.pack(">i", len(frame)) + frame)
        assert c.is_closed()
    _still_serves(cluster.bootstrap)


def test_unserved_version_of_a_known_api_closes_connection(cluster: BackgroundCluster) -> None:
    top = supported_versions(False)[3][1]
    with WireClient(cluster.bootstrap) as c:
        frame = struct.pack(">hhi", 3, top + 1, 1) + b"\x00\x01x\x00\x00\x00\x00"
        c.send_raw(struct.pack(">i", len(frame)) + frame)
        assert c.is_closed()
    _still_serves(cluster.bootstrap)


def test_malformed_body_closes_connection(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as c:
        # Metadata v1: a topic array claiming 1000 topics with no bytes behind it.
        frame = struct.pack(">hhi", 3, 1, 1) + b"\x00\x01x" + struct.pack(">i", 1000)
        c.send_raw(struct.pack(">i", len(frame)) + frame)
        assert c.is_closed()
    _still_serves(cluster.bootstrap)


def test_truncated_frame_then_disconnect_leaves_server_running(
    cluster: BackgroundCluster,
) -> None:
    for _ in range(5):
        with WireClient(cluster.bootstrap) as c:
            c.send_raw(struct.pack(">i", 100) + b"\x00\x12\x00\x00\x00")
    _still_serves(cluster.bootstrap)


def test_random_bytes_never_stop_the_server(cluster: BackgroundCluster) -> None:
    rng = random.Random(1234)
    deadline = time.monotonic() + 10
    with WireClient(cluster.bootstrap) as good:
        for i in range(60):
            if time.monotonic() > deadline:
                break
            with WireClient(cluster.bootstrap, timeout=2) as c:
                blob = rng.randbytes(rng.randrange(1, 300))
                if i % 3 == 0:  # a plausible prefix with garbage behind it
                    blob = struct.pack(">i", len(blob)) + blob
                try:
                    c.send_raw(blob)
                except OSError:
                    pass
            # The steady client keeps working between the attacks.
            assert good.call(18, 1, ApiVersionsRequest()).error_code == 0


def test_connection_limit_refuses_extra_connections() -> None:
    with BackgroundCluster(configs={"max.connections": "2"}) as c:
        host, port = c.bootstrap.rsplit(":", 1)
        a = WireClient(c.bootstrap)
        b = WireClient(c.bootstrap)
        a.call(18, 0, ApiVersionsRequest())
        b.call(18, 0, ApiVersionsRequest())
        extra = WireClient(c.bootstrap)
        assert extra.is_closed()
        extra.close()
        a.close()
        # A slot frees up once a connection goes.
        deadline = time.monotonic() + 5
        while True:
            with WireClient(c.bootstrap) as again:
                try:
                    again.call(18, 0, ApiVersionsRequest())
                    break
                except (ConnectionError, OSError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        b.close()


def test_stop_closes_connections_and_listener() -> None:
    c = BackgroundCluster().start()
    w = WireClient(c.bootstrap)
    w.call(18, 0, ApiVersionsRequest())
    bootstrap = c.bootstrap
    c.stop()
    assert w.is_closed()
    w.close()
    host, port = bootstrap.rsplit(":", 1)
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=2).close()


def test_serve_module_runs_and_stops_on_interrupt() -> None:
    from broker_helpers import BrokerProcess

    with BrokerProcess("num.partitions=2") as p:
        assert p.bootstrap.startswith("127.0.0.1:")
        _still_serves(p.bootstrap)
        code = p.stop()
    assert code == 0, p.stderr_text()


def test_serve_rejects_bad_config() -> None:
    import argparse

    from kafkagen.cli import serve

    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    assert serve.run(parser.parse_args(["--config", "no.such.config=1", "--port", "0"])) == 2
    assert serve.run(parser.parse_args(["--config", "novalue", "--port", "0"])) == 2


def test_api_versions_v5_asks_a_client_that_means_another_cluster_or_broker_to_rebootstrap(
    cluster: BackgroundCluster,
) -> None:
    assert cluster.cluster is not None
    cluster_id = cluster.cluster.metadata.cluster_id
    node_id = cluster.cluster.brokers[0].node_id
    with WireClient(cluster.bootstrap) as c:

        def error(version: int, **kw: object) -> int:
            req = ApiVersionsRequest(client_software_name="t", client_software_version="1", **kw)
            return int(c.call(18, version, req).error_code)

        assert error(5) == 0  # names neither
        assert error(5, cluster_id=cluster_id, node_id=node_id) == 0
        assert error(5, cluster_id="another-cluster") == ErrorCode.REBOOTSTRAP_REQUIRED
        assert (
            error(5, cluster_id=cluster_id, node_id=node_id + 7) == ErrorCode.REBOOTSTRAP_REQUIRED
        )
        # v4 has neither field on the wire: nothing to check.
        assert error(4) == 0


def test_api_versions_v3_rejects_invalid_client_software_name(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as c:
        bad = ApiVersionsRequest(client_software_name="-bad name", client_software_version="1")
        assert c.call(18, 3, bad).error_code == 42


@pytest.mark.slow
def test_confluent_kafka_reads_several_mib_sent_from_the_stored_batches(
    sent_parts: list[list[Any]],
) -> None:
    """librdkafka produces 64 values of 128 KiB (8 MiB) in batches of up to 1 MiB and reads
    them back byte for byte, one batch a fetch (max.partition.fetch.bytes 1: the first
    batch still comes whole), then several batches a fetch; the one-batch fetch answers
    carried the stored batches themselves."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as Tp

    rng = random.Random(3)
    values = [rng.randbytes(128 << 10) for _ in range(64)]

    def consume(bootstrap: str, partition_max_bytes: int) -> list[bytes]:
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "mib",
                "enable.auto.commit": False,
                "max.partition.fetch.bytes": partition_max_bytes,
            }
        )
        consumer.assign([Tp("mib", 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        try:
            while len(got) < len(values) and time.monotonic() < deadline:
                for m in consumer.consume(64, 0.5):
                    assert m.error() is None, m.error()
                    assert m.key() == str(len(got)).encode()
                    got.append(m.value())
        finally:
            consumer.close()
        return got

    with BackgroundCluster() as c:
        assert c.cluster is not None
        c.call(lambda: c.cluster.metadata.create_topic("mib", 1, 1))  # type: ignore[union-attr]
        p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 20, "acks": "all"})
        for i, v in enumerate(values):
            p.produce("mib", value=v, key=str(i).encode(), partition=0)
        assert p.flush(30) == 0
        assert consume(c.bootstrap, 1) == values
        log = c.cluster.brokers[0].replica_manager.partitions[TopicPartition("mib", 0)].log
        stored = {id(b.data) for b in log.batches}
        pieces = [p for parts in sent_parts for p in parts]
        assert len(stored) > 1
        assert stored == {id(p) for p in pieces if id(p) in stored}, "a batch was copied"
        # Several batches a fetch: joined once by the replica manager, then sent unjoined.
        assert consume(c.bootstrap, 8 << 20) == values
