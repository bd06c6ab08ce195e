"""The side-by-side benchmark against Kafka runs end to end on small figures."""

from __future__ import annotations

import os

import pytest
from kafkagen.bench.kafka import Figure, main, rss_mb, run, table


@pytest.mark.slow
def test_a_small_run_measures_both_servers_in_both_shapes() -> None:
    said: list[str] = []
    figures = run(records=500, repeat=1, java=False, say=said.append, latency_records=50)
    by_what = {(f.what, f.unit): f for f in figures}
    start = by_what[("start to first Metadata answer", "s")]
    assert 0 < start.kafkagen < start.kafka
    for shape in ("1 broker, rf 1", "3 brokers, rf 3"):
        for acks in ("1", "all"):
            f = by_what[(f"produce acks={acks} confluent-kafka ({shape})", "msgs/s")]
            assert f.kafkagen > 0 and f.kafka > 0
        consumed = by_what[(f"consume confluent-kafka ({shape})", "msgs/s")]
        assert consumed.kafkagen > 0 and consumed.kafka > 0
        p50 = by_what[(f"end-to-end latency p50, acks=all ({shape})", "ms")]
        p99 = by_what[(f"end-to-end latency p99, acks=all ({shape})", "ms")]
        assert 0 < p50.kafkagen <= p99.kafkagen and 0 < p50.kafka <= p99.kafka
        memory = by_what[(f"resident memory after the runs ({shape})", "MiB")]
        assert memory.kafkagen > 10 and memory.kafka > 10
    assert len(said) == 2 + 2 * 2
    assert "ratio" in table(figures)


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


def test_resident_memory_of_this_process() -> None:
    assert rss_mb([os.getpid()]) > 10
