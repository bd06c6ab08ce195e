"""The side-by-side benchmark against Kafka runs end to end on small figures."""

from __future__ import annotations

import os

import pytest
from kafkagen.bench.kafka import (
    RECORD_SIZE,
    Figure,
    _create_topic,
    _sink,
    main,
    rss_mb,
    run,
    table,
)


@pytest.mark.slow
def test_a_small_run_measures_both_servers_in_both_shapes() -> None:
    said: list[str] = []
    figures = run(records=500, repeat=1, java=False, say=said.append, latency_records=50)
    by_what = {(f.what, f.unit): f for f in figures}
    start = by_what[("start to first Metadata answer", "s")]
    assert 0 < start.kafkagen < start.kafka
    for shape in ("1 broker, rf 1", "3 brokers, rf 3"):
        one = shape.startswith("1 ")
        for acks in ("1", "all"):
            f = by_what[(f"produce acks={acks} confluent-kafka ({shape})", "msgs/s")]
            assert f.kafkagen > 0 and f.kafka > 0
            # The sink is one broker: it has a figure on that shape only.
            assert (f.sink is not None and f.sink > 0) if one else f.sink is None
        consumed = by_what[(f"consume confluent-kafka ({shape})", "msgs/s")]
        assert consumed.kafkagen > 0 and consumed.kafka > 0
        assert (consumed.sink is not None and consumed.sink > 0) if one else consumed.sink is None
        p50 = by_what[(f"end-to-end latency p50, acks=all ({shape})", "ms")]
        p99 = by_what[(f"end-to-end latency p99, acks=all ({shape})", "ms")]
        assert 0 < p50.kafkagen <= p99.kafkagen and 0 < p50.kafka <= p99.kafka
        memory = by_what[(f"resident memory after the runs ({shape})", "MiB")]
        assert memory.kafkagen > 10 and memory.kafka > 10
    assert len(said) == 2 + 2 * 2 + 1
    assert "ratio" in table(figures) and "sink/Kafka" in table(figures)


@pytest.mark.slow
def test_the_sink_acknowledges_in_order_and_serves_as_many_records_back() -> None:
    """A real producer and consumer against the sink: offsets run on from one produce to
    the next, and a consumer from the start reads exactly that many 1 KiB records."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    with _sink() as bootstrap:
        _create_topic(bootstrap, 1, "sunk")
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
        offsets: list[int] = []
        for rounds in (7, 5):
            for i in range(rounds):
                p.produce(
                    "sunk",
                    b"v%d" % i,
                    partition=1,
                    on_delivery=lambda e, m: offsets.append(-1 if e else m.offset()),
                )
            assert p.flush(30) == 0
        assert offsets == list(range(12))
        c = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "sunk", "enable.auto.commit": False}
        )
        try:
            c.assign([TopicPartition("sunk", 1, OFFSET_BEGINNING)])
            read: list[tuple[int, int]] = []
            for _ in range(50):
                read += [
                    (m.offset(), len(m.value() or b""))
                    for m in c.consume(100, timeout=0.2)
                    if m.error() is None
                ]
                if len(read) >= 12:
                    break
        finally:
            c.close()
        assert read == [(o, RECORD_SIZE) for o in range(12)]


@pytest.mark.parametrize("brokers", ["0", "4", "1,x", ""])
def test_cluster_sizes_outside_one_to_three_are_refused(
    brokers: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--brokers", brokers])
    assert stopped.value.code == 2
    assert f"--brokers {brokers!r}" in capsys.readouterr().err


def test_ratios_put_kafkagen_ahead_above_one() -> None:
    assert Figure("t", 1.0, 10.0, "s", False).ratio == 10.0
    assert Figure("p", 50.0, 100.0, "msgs/s", True).ratio == 0.5


def test_the_ceiling_is_the_sinks_figure_over_kafkas() -> None:
    assert Figure("p", 50.0, 100.0, "msgs/s", True, 160.0).ceiling == 1.6
    assert Figure("p", 50.0, 100.0, "msgs/s", True).ceiling is None


def test_resident_memory_of_this_process() -> None:
    assert rss_mb([os.getpid()]) > 10


@pytest.mark.slow
def test_a_request_the_sink_cannot_read_closes_its_connection_only() -> None:
    import socket
    import struct

    with _sink() as bootstrap:
        host, port = bootstrap.split(":")
        # A Metadata v1 header whose client id claims 500 bytes of a 12-byte frame.
        with socket.create_connection((host, int(port)), timeout=10) as bad:
            frame = struct.pack(">hhih", 3, 1, 7, 500) + b"ab"
            bad.sendall(struct.pack(">i", len(frame)) + frame)
            assert bad.recv(64) == b""  # closed, not answered
        _create_topic(bootstrap, 1, "still-served")  # a new connection is answered
