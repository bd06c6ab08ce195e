"""CoordinatorLog: an internal topic as one broker's coordinator sees it."""

from __future__ import annotations

import uuid

import pytest
from broker_helpers import Harness
from kafkagen.runtime.broker.coordinator.coordinator_log import CoordinatorLog, coordinator_error
from kafkagen.runtime.broker.share.share_coordinator import coordinator_key
from kafkagen.runtime.broker.types import (
    OFFSETS_TOPIC,
    TXN_STATE_TOPIC,
    hash_partition,
)
from kafkagen.runtime.errors import (
    CoordinatorNotAvailableError,
    ErrorCode,
    NotCoordinatorError,
    error_for_code,
)
from kafkagen.runtime.records import Record, iter_batches

PARTITIONS = 4


def harness(brokers: int = 1) -> Harness:
    return Harness(
        brokers,
        offsets_topic_num_partitions=str(PARTITIONS),
        offsets_topic_replication_factor="1",
    )


def log_of(h: Harness, broker: int) -> CoordinatorLog:
    return h.cluster.brokers[broker].group_coordinator.log


def test_before_the_topic_exists_every_key_is_refused_and_nothing_is_written() -> None:
    h = harness()
    log = log_of(h, 0)
    with pytest.raises(NotCoordinatorError, match=f"{OFFSETS_TOPIC} does not exist yet"):
        log.check_owner("g")
    assert log.owner_error("g") == ErrorCode.NOT_COORDINATOR
    got: list[int] = []
    log.append("g", [Record(-1, 0, b"k", b"v")], got.append)
    assert got == [ErrorCode.NOT_COORDINATOR]
    assert h.md.topic(OFFSETS_TOPIC) is None
    # Before the topic exists the configured partition count decides.
    assert log.partition_of("g") == hash_partition("g", PARTITIONS)


def test_creating_the_topic_makes_the_leader_own_its_partitions() -> None:
    h = harness()
    log = log_of(h, 0)
    assert log.coordinator_for("g") == 0  # creates the topic on first use
    topic = h.md.topic(OFFSETS_TOPIC)
    assert topic is not None and topic.internal and len(topic.partitions) == PARTITIONS
    assert set(log.owned) == set(range(PARTITIONS))
    assert log.owns("g") and log.owner_error("g") == 0
    # The transaction coordinator's log of the same broker follows its own topic only.
    assert h.cluster.brokers[0].txn_coordinator.log.topic == TXN_STATE_TOPIC
    assert not h.cluster.brokers[0].txn_coordinator.log.owned


def test_an_append_lands_on_the_keys_partition() -> None:
    h = harness()
    log = log_of(h, 0)
    assert log.ensure_topic()
    got: list[int] = []
    log.append("g", [Record(-1, 5, b"key", b"value")], got.append)
    assert got == [0]
    partition = h.rm(0).partitions[(OFFSETS_TOPIC, log.partition_of("g"))]
    [batch] = [b for stored in partition.log.batches for b in iter_batches(stored.data)]
    [record] = list(batch)
    assert (bytes(record.key or b""), bytes(record.value or b"")) == (b"key", b"value")
    assert not batch.is_transactional


def test_a_transactional_append_carries_the_producer() -> None:
    h = harness()
    log = log_of(h, 0)
    assert log.ensure_topic()
    got: list[int] = []
    log.append("g", [Record(-1, 5, b"key", b"value")], got.append, producer=(7000, 3))
    assert got == [0]
    partition = h.rm(0).partitions[(OFFSETS_TOPIC, log.partition_of("g"))]
    [batch] = [b for stored in partition.log.batches for b in iter_batches(stored.data)]
    assert batch.is_transactional and (batch.producer_id, batch.producer_epoch) == (7000, 3)


def test_losing_and_regaining_leadership_unloads_and_reloads_the_partitions() -> None:
    h = harness()
    log = log_of(h, 0)
    assert log.ensure_topic()
    h.md.broker_down(0)  # the only replica: its partitions have no leader now
    assert log.owned == {}
    with pytest.raises(NotCoordinatorError, match="broker 0 does not coordinate 'g'"):
        log.check_owner("g")
    h.md.broker_up(0)
    assert set(log.owned) == set(range(PARTITIONS)) and log.owner_error("g") == 0


def test_a_shut_down_coordinator_refuses_every_key() -> None:
    h = harness()
    log = log_of(h, 0)
    assert log.ensure_topic()
    h.cluster.brokers[0].group_coordinator.shutdown()
    with pytest.raises(CoordinatorNotAvailableError):
        log.check_owner("g")


@pytest.mark.parametrize(
    ("append_error", "reported"),
    [
        (None, 0),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
        (ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NOT_COORDINATOR),
        (ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_COORDINATOR),
        (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE),
        (ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE),
        (ErrorCode.INVALID_FETCH_SIZE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE),
        (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.INVALID_PRODUCER_EPOCH),
        (ErrorCode.CORRUPT_MESSAGE, ErrorCode.UNKNOWN_SERVER_ERROR),
    ],
)
def test_append_errors_are_reported_as_kafkas_coordinators_report_them(
    append_error: int | None, reported: int
) -> None:
    error = None if append_error is None else error_for_code(append_error)()
    assert coordinator_error(error) == reported


def test_share_partition_keys_land_where_kafka_puts_them() -> None:
    """A share-partition key names any topic id a request carries; it is hashed like a
    group id, and coordinators keep no cache of the keys they were asked (random requests
    used to fill one, 65,536 entries of about 250 bytes)."""
    h = harness()
    share = h.cluster.brokers[0].share_coordinator
    for i in range(50):
        key = ("group", uuid.UUID(int=i + 1), i % 5)
        partitions = share.log.num_partitions
        assert share.partition_of(key) == hash_partition(coordinator_key(key), partitions)
