"""Compaction side by side with Kafka 4.4: the same produce sequence on a compacted topic of
`kafkagen serve` and of a Kafka 4.4 reference, cleaned by each broker's cleaner, read back
by a consumer: the same offsets, keys, values and headers, the same gaps and log offsets.

The records carry explicit timestamps a minute ahead of the clock, 10 s apart, and the
topic rolls segments on ``segment.ms`` (25 s; Kafka 4 takes no ``segment.bytes`` under
1 MiB), so both brokers cut the log into the same segments: every fourth data batch
starts one, a transaction marker (stamped with the broker's clock, before the data's
timestamps) joins the segment it follows, and the first
data batch after a marker starts a new one. The sequence runs in three rounds, each
followed by a wait until both logs stop changing: the first compacts overwritten keys and
drops aborted data, the second (after ``delete.retention.ms``) drops tombstones and
spent markers stamped in the first, the third the markers stamped in the second.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from broker_helpers import BrokerProcess

pytestmark = pytest.mark.slow

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TOPIC = "compacted"
TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.ms": "25000",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "1000",
}
CLEANER_BACKOFF = "log.cleaner.backoff.ms=200"
#: A one-node Kafka needs its internal topics at one replica (kafkagen caps them itself).
KAFKA_CONFIGS = {
    "log.cleaner.backoff.ms": "200",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
}

Row = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]]]


class _Sequence:
    """Producers writing one record per batch with timestamps that step 10 s."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.ts = int(time.time() * 1000) + 60_000
        common = {"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"}
        self.plain = ck.Producer({**common, "enable.idempotence": True})
        self.txn = {
            name: ck.Producer({**common, "transactional.id": f"compaction-{name}"})
            for name in ("commit", "abort")
        }
        for p in self.txn.values():
            p.init_transactions(30)
        self.watcher = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "watcher"})
        #: Offsets written so far (records and markers).
        self.written = 0

    def put(
        self,
        producer: Any,
        key: bytes,
        value: bytes | None,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        errors: list[Any] = []
        producer.produce(
            TOPIC,
            value,
            key,
            partition=0,
            timestamp=self.ts,
            headers=headers,
            on_delivery=lambda err, _msg: errors.append(err),
        )
        assert producer.flush(30) == 0
        assert errors == [None], errors
        self.ts += 10_000
        self.written += 1

    def transaction(self, name: str, records: list[tuple[bytes, bytes]], commit: bool) -> None:
        p = self.txn[name]
        p.begin_transaction()
        for key, value in records:
            self.put(p, key, value)
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
        # Kafka's coordinator writes the marker after answering EndTxn: wait for it, so
        # that the next record lands after it on both brokers.
        self.written += 1
        deadline = time.monotonic() + 30
        tp = ck.TopicPartition(TOPIC, 0)
        while self.watcher.get_watermark_offsets(tp, timeout=10)[1] < self.written:
            assert time.monotonic() < deadline, f"{self.bootstrap}: no marker within 30 s"
            time.sleep(0.05)

    def round_1(self) -> None:
        for i in range(5):
            self.put(self.plain, b"k%d" % i, b"v0-%d" % i)
        for i in range(3):
            self.put(self.plain, b"k%d" % i, b"v1-%d" % i, [("h", b"%d" % i), ("h", b"again")])
        self.put(self.plain, b"k3", None)
        self.transaction("commit", [(b"k5", b"tc-5"), (b"k0", b"tc-0")], commit=True)
        self.transaction("abort", [(b"k6", b"ta-6"), (b"k1", b"ta-1")], commit=False)
        self.put(self.plain, b"k2", b"v2-2")
        self.put(self.plain, b"k4", None)
        self.put(self.plain, b"k7", b"v2-7", [("only", b"")])
        self.filler(b"f", 4)

    def filler(self, key: bytes, n: int) -> None:
        for i in range(n):
            self.put(self.plain, key, b"%s-%d" % (key, i))

    def close(self) -> None:
        for p in (self.plain, *self.txn.values()):
            p.flush(10)
        self.watcher.close()


def _create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(TOPIC, 1, 1, config=TOPIC_CONFIGS)], request_timeout=30)
    fs[TOPIC].result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(TOPIC, timeout=10)
        t = md.topics.get(TOPIC)
        if t is not None and t.error is None and t.partitions and t.partitions[0].leader >= 0:
            return
        time.sleep(0.2)
    raise AssertionError(f"{TOPIC} has no leader at {bootstrap}")


def _read(bootstrap: str, isolation: str) -> tuple[list[Row], tuple[int, int]]:
    """Every record of the partition, from the log start, and (log start, end offset)."""
    c = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{isolation}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    try:
        tp = ck.TopicPartition(TOPIC, 0, ck.OFFSET_BEGINNING)
        low, high = c.get_watermark_offsets(tp, timeout=10)
        c.assign([tp])
        rows: list[Row] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = c.poll(1.0)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == ck.KafkaError._PARTITION_EOF:
                    break
                raise AssertionError(f"{bootstrap}: {msg.error()}")
            rows.append((msg.offset(), msg.key(), msg.value(), list(msg.headers() or [])))
        else:
            raise AssertionError(f"{bootstrap}: no end of partition within 30 s")
        return rows, (low, high)
    finally:
        c.close()


def _settled(bootstrap: str) -> tuple[list[Row], tuple[int, int]]:
    """Read until three reads a second apart agree (the cleaner has nothing left to do),
    within 60 s."""
    last: Any = None
    same = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = _read(bootstrap, "read_uncommitted")
        same = same + 1 if now == last else 0
        if same == 2:
            return now
        last = now
        time.sleep(1.0)
    raise AssertionError(f"{bootstrap}: the log kept changing for 60 s")


@pytest.fixture
def both() -> Iterator[dict[str, str]]:
    from kafkagen.reference import KafkaReference

    with BrokerProcess(CLEANER_BACKOFF, startup=60) as ours:
        with KafkaReference(nodes=1, configs=KAFKA_CONFIGS) as kafka:
            yield {"kafkagen": ours.bootstrap, "kafka": kafka.bootstrap}


def _run(both: dict[str, str], steps: list[Callable[[_Sequence], None]]) -> dict[str, list[Any]]:
    """Each step on both brokers, then a settled read of each after each step."""
    seqs = {}
    for name, bootstrap in both.items():
        _create_topic(bootstrap)
        seqs[name] = _Sequence(bootstrap)
    seen: dict[str, list[Any]] = {name: [] for name in both}
    for step in steps:
        for seq in seqs.values():
            step(seq)
        for name, bootstrap in both.items():
            settled = _settled(bootstrap)
            committed = _read(bootstrap, "read_committed")
            seen[name].append((settled, committed))
    for seq in seqs.values():
        seq.close()
    return seen


def test_a_compacted_log_reads_as_on_kafka(both: dict[str, str]) -> None:
    def later_round(key: bytes) -> Callable[[_Sequence], None]:
        def step(seq: _Sequence) -> None:
            time.sleep(1.5)  # past delete.retention.ms of what the last pass stamped
            seq.filler(key, 4)

        return step

    seen = _run(both, [_Sequence.round_1, later_round(b"g"), later_round(b"h")])
    ours, theirs = seen["kafkagen"], seen["kafka"]
    for n, (mine, kafka) in enumerate(zip(ours, theirs, strict=True), 1):
        (rows, offsets), (committed, _) = mine
        (k_rows, k_offsets), (k_committed, _) = kafka
        assert rows == k_rows, f"round {n}: read_uncommitted differs"
        assert committed == k_committed, f"round {n}: read_committed differs"
        assert offsets == k_offsets, f"round {n}: log start/end offsets differ"
    # The comparison means something: keys were overwritten and compacted away, with
    # gaps; aborted data is gone; the tombstones went in a later round.
    (first, _), _ = ours[0]
    (last, (start, end)), (last_committed, _) = ours[-1]
    offsets = [r[0] for r in last]
    assert offsets != list(range(start, end)), "no gaps: nothing was compacted"
    keys = [r[1] for r in last]
    assert keys.count(b"k0") == keys.count(b"k1") == 1, "overwritten keys still there"
    assert b"ta-6" not in [r[2] for r in first]
    assert any(r[1] == b"k3" and r[2] is None for r in first), "tombstone kept in round 1"
    assert not any(r[1] in (b"k3", b"k4") for r in last), "tombstones still there"
    assert (b"k5", b"tc-5") in [(r[1], r[2]) for r in last_committed]
