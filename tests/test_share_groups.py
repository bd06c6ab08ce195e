"""Share groups (KIP-932) with Kafka's own share consumer: Java's KafkaShareConsumer 4.4.0
against three kafkagen brokers, and the same program against a three-node Apache Kafka
4.4.0 for comparison.

The program (``tools/client_programs/java/src/ShareScenario.java``) has a first consumer
hold records past their lock, then two workers race for one partition's records,
releasing, rejecting and accepting them by key; this test decides whether what they saw
is right: every record delivered and finished, an accepted or rejected record never seen
again, a released or expired one seen again with a higher delivery count.
"""

from __future__ import annotations

import collections
import uuid
from collections.abc import Iterator

import pytest
from broker_helpers import BrokerProcess
from kafkagen.client_programs import java_program, run_scenario
from kafkagen.reference import KafkaReference

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

N = 300
LOCK_MS = 5000
CONFIGS = {
    "group.share.record.lock.duration.ms": str(LOCK_MS),
    "group.share.min.record.lock.duration.ms": "1000",
}


@pytest.fixture(scope="module", params=["kafkagen", "kafka"])
def bootstrap(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "kafkagen":
        configs = [f"{k}={v}" for k, v in CONFIGS.items()]
        with BrokerProcess(*configs, "offsets.topic.num.partitions=5", brokers=3) as b:
            yield b.bootstrap
            assert b.alive(), b.stderr_text()
    else:
        with KafkaReference(nodes=3, configs=CONFIGS) as kafka:
            yield kafka.bootstrap
            assert kafka.running, kafka.log_tail()


def test_share_consumers_race_for_one_partition(bootstrap: str) -> None:
    suffix = uuid.uuid4().hex[:8]
    summary = run_scenario(
        java_program("ShareScenario")
        + [bootstrap, f"share-{suffix}", f"share-group-{suffix}", str(N), str(LOCK_MS)],
        timeout=300,
    )
    assert summary["errors"] == [], summary["errors"]
    assert summary["state"] == "Stable"
    # Each offset's deliveries, in the order their counts say they happened.
    seen: dict[int, list[tuple[int, str, str]]] = collections.defaultdict(list)
    for consumer, offset, key, count, action in summary["deliveries"]:
        assert offset == key, "the records are the partition's, produced in key order"
        seen[offset].append((count, action, consumer))
    stalled = {offset: count for offset, _, count in summary["stalled"]}
    assert stalled, "the stalling consumer got no records"
    assert sorted(seen) == list(range(N)), "a record was never delivered to a worker"
    for offset, deliveries in seen.items():
        deliveries.sort()
        counts = [c for c, _, _ in deliveries]
        # Delivery counts rise with each delivery, past the stalled one if any. They may
        # skip: a share consumer's client acquires records in the background, and the
        # stalling one's, asleep, can take a record whose lock ran out and give it back
        # unseen when it closes (Kafka 4.4, once: offset 0 stalled at 1, accepted at 3).
        assert counts == sorted(set(counts)), (offset, deliveries)
        assert counts[0] > stalled.get(offset, 0), (offset, deliveries)
        actions = [a for _, a, _ in deliveries]
        # A record is finished (accepted or rejected) once, by its last delivery.
        assert actions[-1] in ("accept", "reject"), (offset, deliveries)
        assert all(a == "release" for a in actions[:-1]), (offset, deliveries)
        if offset % 10 == 3 and offset not in stalled:
            assert actions[0] == "release", (offset, deliveries)
            assert len(actions) >= 2, f"released record {offset} was not delivered again"
        if offset % 10 == 7:
            assert actions == ["reject"], (offset, deliveries)
    for offset, count in stalled.items():
        assert count == 1
        assert seen[offset][0][0] >= 2, f"expired record {offset} came back without a higher count"
