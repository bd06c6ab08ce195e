"""Partition reassignment (AlterPartitionReassignments, ListPartitionReassignments) on a
multi-broker cluster, over real sockets with the generated codecs.

New replicas copy the log through the replica fetcher; once every target replica is in the
ISR the reassignment completes and the removed replicas go. Produces with acks=all keep
working throughout, and the data is intact afterwards on every final replica.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from broker_helpers import WireClient
from kafkagen.generated.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest as AlterReq,
)
from kafkagen.generated.fetch import FetchRequest
from kafkagen.generated.incremental_alter_configs import IncrementalAlterConfigsRequest as IncReq
from kafkagen.generated.list_partition_reassignments import (
    ListPartitionReassignmentsRequest as ListReq,
)
from kafkagen.generated.metadata import MetadataRequest
from kafkagen.generated.produce import ProduceRequest
from kafkagen.runtime.broker.cluster import BackgroundCluster, Cluster
from kafkagen.runtime.broker.config.store import ConfigStore
from kafkagen.runtime.broker.storage.replication_quota import ReplicationQuota
from kafkagen.runtime.broker.types import PartitionInfo
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.records import Record, build_batch, iter_records
from kafkagen.runtime.topic_partition import TopicPartition

pytestmark = pytest.mark.timeout(90)

ALTER, LIST, PRODUCE, FETCH, METADATA, INCREMENTAL_ALTER_CONFIGS = 45, 46, 0, 1, 3, 44
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4


@pytest.fixture
def five() -> Iterator[BackgroundCluster]:
    with BackgroundCluster(
        5,
        configs={
            "unstable.api.versions.enable": "true",
            "offsets.topic.num.partitions": "1",
        },
    ) as c:
        yield c


def _cl(c: BackgroundCluster) -> Cluster:
    assert c.cluster is not None
    return c.cluster


def _wait(cond: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _info(c: BackgroundCluster, topic: str, index: int = 0) -> PartitionInfo:
    def snap() -> PartitionInfo:
        p = _cl(c).metadata.partition(topic, index)
        assert p is not None
        return PartitionInfo(
            p.topic, p.index, list(p.replicas), p.leader, p.leader_epoch, list(p.isr)
        )

    out: PartitionInfo = c.call(snap)
    return out


def _address(c: BackgroundCluster, node: int) -> str:
    b = _cl(c).brokers[node].info
    return f"{b.host}:{b.port}"


def _alter(
    w: WireClient,
    moves: dict[tuple[str, int], list[int] | None],
    version: int = 0,
    **kw: Any,
) -> dict[Any, int]:
    topics: dict[str, list[AlterReq.ReassignablePartition]] = {}
    for (topic, index), replicas in moves.items():
        topics.setdefault(topic, []).append(
            AlterReq.ReassignablePartition(partition_index=index, replicas=replicas)
        )
    req = AlterReq(
        timeout_ms=10_000,
        topics=[AlterReq.ReassignableTopic(name=n, partitions=ps) for n, ps in topics.items()],
        **kw,
    )
    r = w.call(ALTER, version, req)
    assert r.error_code == 0
    # v1 echoes whether the replication factor may change (true when not asked).
    assert r.allow_replication_factor_change == kw.get("allow_replication_factor_change", True)
    return {(t.name, p.partition_index): p.error_code for t in r.responses for p in t.partitions}


def _list(w: WireClient, version: int = 0, **kw: Any) -> Any:
    return w.call(LIST, version, ListReq(**kw))


def _listed(r: Any) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
    return {
        (t.name, p.partition_index): (
            list(p.replicas),
            list(p.adding_replicas),
            list(p.removing_replicas),
        )
        for t in r.topics
        for p in t.partitions
    }


def _produce_request(topic: str, batch: bytes) -> ProduceRequest:
    """acks=all produce of ``batch`` to partition 0 of ``topic``."""
    return ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)],
            )
        ],
    )


def _produce(c: BackgroundCluster, topic: str, start: int, n: int) -> None:
    """acks=all produce of ``n`` records through the current leader's listener."""
    leader = _info(c, topic).leader
    req = _produce_request(
        topic, build_batch([Record(-1, 1000 + i, b"k", b"v%d" % (start + i)) for i in range(n)])
    )
    for _ in range(50):
        with WireClient(_address(c, leader)) as w:
            r = w.call(PRODUCE, 10, req)
        p = r.responses[0].partition_responses[0]
        if p.error_code != ErrorCode.NOT_LEADER_OR_FOLLOWER:
            break
        # Leadership moved under the request: ask the new leader, as a client would.
        time.sleep(0.05)
        leader = _info(c, topic).leader
    assert p.error_code == 0, f"produce to {topic} failed with {p.error_code}"


def _read_all(c: BackgroundCluster, topic: str) -> list[bytes]:
    """Every record value below the high watermark, fetched from the leader."""
    leader = _info(c, topic).leader
    values: list[bytes] = []
    offset = 0
    with WireClient(_address(c, leader)) as w:
        for _ in range(200):
            req = FetchRequest(
                replica_id=-1,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=1 << 20,
                topics=[
                    FetchRequest.FetchTopic(
                        topic=topic,
                        partitions=[
                            FetchRequest.FetchPartition(
                                partition=0, fetch_offset=offset, partition_max_bytes=1 << 20
                            )
                        ],
                    )
                ],
            )
            r = w.call(FETCH, 12, req)
            p = r.responses[0].partitions[0]
            assert p.error_code == 0
            got = list(iter_records(p.records or b""))
            if not got:
                return values
            values += [rec.value or b"" for rec in got]
            offset = got[-1].offset + 1
    raise AssertionError("fetching did not end")


def _local_values(c: BackgroundCluster, node: int, tp: TopicPartition) -> list[bytes] | None:
    def read() -> list[bytes] | None:
        p = _cl(c).brokers[node].replica_manager.partitions.get(tp)
        if p is None:
            return None
        return [r.value or b"" for b in p.log.batches for r in iter_records(b.data)]

    out: list[bytes] | None = c.call(read)
    return out


def _holds(
    c: BackgroundCluster, node: int, tp: TopicPartition, values: list[bytes]
) -> Callable[[], bool]:
    """A condition: broker ``node``'s replica of ``tp`` holds exactly ``values``."""
    return lambda: _local_values(c, node, tp) == values


def _values(start: int, n: int) -> list[bytes]:
    return [b"v%d" % i for i in range(start, start + n)]


# ------------------------------------------------------------------ tests


def test_grow_replication_factor_from_one_to_three(five: BackgroundCluster) -> None:
    _cl_md = _cl(five).metadata
    five.call(lambda: _cl_md.create_topic("grow", assignments={0: [2]}))
    tp = TopicPartition("grow", 0)
    for i in range(10):
        _produce(five, "grow", 10 * i, 10)
    with WireClient(five.bootstrap) as w:
        assert _alter(w, {("grow", 0): [2, 3, 4]}) == {("grow", 0): 0}
        _wait(lambda: _info(five, "grow").replicas == [2, 3, 4] and not _list(w).topics)
    info = _info(five, "grow")
    assert info.leader == 2
    _wait(lambda: sorted(_info(five, "grow").isr) == [2, 3, 4], what="full ISR")
    for node in (2, 3, 4):
        _wait(_holds(five, node, tp, _values(0, 100)), what=f"node {node}")
    assert _read_all(five, "grow") == _values(0, 100)
    with WireClient(five.bootstrap) as w:
        md = w.call(
            METADATA,
            12,
            MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="grow")]),
        )
    part = md.topics[0].partitions[0]
    assert list(part.replica_nodes) == [2, 3, 4]
    assert sorted(part.isr_nodes) == [2, 3, 4]


def test_move_replicas_off_the_leader_with_acks_all_during_the_move(
    five: BackgroundCluster,
) -> None:
    md = _cl(five).metadata
    five.call(lambda: md.create_topic("move", assignments={0: [0, 1]}))
    tp = TopicPartition("move", 0)
    _produce(five, "move", 0, 50)
    epoch_before = _info(five, "move").leader_epoch
    stop = threading.Event()
    produced = [50]
    errors: list[BaseException] = []

    def keep_producing() -> None:
        try:
            for _ in range(200):  # bounded: at most 200 batches
                if stop.is_set():
                    return
                _produce(five, "move", produced[0], 5)
                produced[0] += 5
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    cl = _cl(five)
    # Broker 4 is down at first, so the move is certainly in progress while we write.
    five.run(cl.pause_broker(4))
    t = threading.Thread(target=keep_producing)
    try:
        with WireClient(_address(five, 0)) as w:
            assert _alter(w, {("move", 0): [3, 4]}) == {("move", 0): 0}
            for _ in range(4):
                _produce(five, "move", produced[0], 5)
                produced[0] += 5
            assert _listed(_list(w)) == {("move", 0): ([3, 4, 0, 1], [3, 4], [0, 1])}
            t.start()
            five.run(cl.resume_broker(4))
            _wait(lambda: _info(five, "move").replicas == [3, 4], what="the move to finish")
    finally:
        stop.set()
        if t.is_alive():
            t.join(30)
        five.run(cl.resume_broker(4))
    assert not errors, errors
    info = _info(five, "move")
    assert info.leader in (3, 4)
    assert info.leader_epoch > epoch_before
    _produce(five, "move", produced[0], 5)
    total = produced[0] + 5
    assert _read_all(five, "move") == _values(0, total)
    # The removed replicas are gone from brokers 0 and 1; the new ones hold everything.
    _wait(lambda: _local_values(five, 0, tp) is None and _local_values(five, 1, tp) is None)
    for node in (3, 4):
        _wait(_holds(five, node, tp, _values(0, total)), what=f"node {node}")


def test_list_shows_an_ongoing_reassignment_and_cancel_restores_the_replicas(
    five: BackgroundCluster,
) -> None:
    md = _cl(five).metadata
    five.call(lambda: md.create_topic("slow", assignments={0: [0]}))
    _produce(five, "slow", 0, 10)
    # Broker 4 is paused: it cannot catch up, so the reassignment stays in progress.
    five.run(_cl(five).pause_broker(4))
    try:
        with WireClient(_address(five, 0)) as w:
            assert _alter(w, {("slow", 0): [0, 4]}) == {("slow", 0): 0}
            for version in (0, 1):
                listed = _listed(_list(w, version))
                assert listed == {("slow", 0): ([0, 4], [4], [])}
            assert _info(five, "slow").replicas == [0, 4]
            # Listing only other partitions leaves it out.
            other = _list(
                w,
                0,
                topics=[
                    ListReq.ListPartitionReassignmentsTopics(name="slow", partition_indexes=[1])
                ],
            )
            assert other.error_code == 0 and not other.topics
            assert _alter(w, {("slow", 0): None}) == {("slow", 0): 0}
            assert not _list(w).topics
            assert _info(five, "slow").replicas == [0]
            assert _alter(w, {("slow", 0): None}) == {
                ("slow", 0): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
            }
    finally:
        five.run(_cl(five).resume_broker(4))
    assert _read_all(five, "slow") == _values(0, 10)


def test_errors_are_per_partition(five: BackgroundCluster) -> None:
    md = _cl(five).metadata
    five.call(lambda: md.create_topic("err", assignments={0: [0], 1: [1]}))
    with WireClient(five.bootstrap) as w:
        got = _alter(
            w,
            {
                ("missing", 0): [0],
                ("err", 7): [0],
                ("err", 0): [0, 9],
                ("err", 1): [1, 1],
            },
        )
        assert got == {
            ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("err", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("err", 0): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            ("err", 1): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        }
        assert _alter(w, {("err", 0): []}) == {("err", 0): ErrorCode.INVALID_REPLICA_ASSIGNMENT}
        assert _alter(w, {("err", 0): None}) == {("err", 0): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS}
        assert not _list(w).topics
    assert _info(five, "err").replicas == [0]


def test_v1_may_forbid_changing_the_replication_factor(five: BackgroundCluster) -> None:
    md = _cl(five).metadata
    five.call(lambda: md.create_topic("fixed-rf", assignments={0: [0, 1], 1: [1, 2]}))
    with WireClient(five.bootstrap) as w:
        fixed = {"allow_replication_factor_change": False}
        got = _alter(w, {("fixed-rf", 0): [2], ("fixed-rf", 1): [3, 4]}, 1, **fixed)
        assert got == {
            ("fixed-rf", 0): ErrorCode.INVALID_REPLICATION_FACTOR,
            ("fixed-rf", 1): 0,  # same factor, other brokers: allowed
        }
        assert _info(five, "fixed-rf").replicas == [0, 1]
        # Allowed (v1's default, and always at v0), the same move goes ahead.
        assert _alter(w, {("fixed-rf", 0): [2]}, 1) == {("fixed-rf", 0): 0}
    _wait(lambda: _info(five, "fixed-rf").replicas == [2], what="the move to broker 2")


def test_list_pages_by_topic_then_partition(five: BackgroundCluster) -> None:
    cl = _cl(five)
    md = cl.metadata
    five.call(lambda: md.create_topic("pb", assignments={i: [0] for i in range(6)}))
    five.call(lambda: md.create_topic("pa", assignments={i: [1] for i in range(5)}))
    five.run(cl.pause_broker(4))
    try:
        with WireClient(_address(five, 0)) as w:
            moves: dict[tuple[str, int], list[int] | None] = {}
            for i in range(6):
                moves[("pb", i)] = [0, 4]
            for i in range(5):
                moves[("pa", i)] = [1, 4]
            assert set(_alter(w, moves).values()) == {0}
            full = [(t.name, p.partition_index) for t in _list(w, 1).topics for p in t.partitions]
            expected = sorted(moves)
            assert full == expected
            # v0 answers in full even when the request would page at v1.
            assert len(_listed(_list(w, 0))) == 11
            for limit in (1, 4, 11, 50, 0, -3):
                got: list[tuple[str, int]] = []
                cursor = None
                for _ in range(20):
                    r = _list(w, 1, response_pagination_limit=limit, cursor=cursor)
                    assert r.error_code == 0
                    page = [(t.name, p.partition_index) for t in r.topics for p in t.partitions]
                    assert len(page) <= max(limit, 1)
                    got += page
                    if r.next_cursor is None:
                        break
                    cursor = ListReq.Cursor(
                        topic_name=r.next_cursor.topic_name,
                        partition_index=r.next_cursor.partition_index,
                    )
                assert got == expected, f"limit {limit}"
            # An explicit list pages in the same order; the cursor must lie within it.
            asked = [
                ListReq.ListPartitionReassignmentsTopics(name="pb", partition_indexes=[5, 1, 3])
            ]
            r = _list(w, 1, topics=asked, response_pagination_limit=2)
            assert _listed(r).keys() == {("pb", 1), ("pb", 3)}
            assert (r.next_cursor.topic_name, r.next_cursor.partition_index) == ("pb", 5)
            r = _list(w, 1, topics=asked, cursor=ListReq.Cursor(topic_name="pb", partition_index=5))
            assert list(_listed(r)) == [("pb", 5)] and r.next_cursor is None
            bad = _list(
                w, 1, topics=asked, cursor=ListReq.Cursor(topic_name="pb", partition_index=2)
            )
            assert bad.error_code == ErrorCode.INVALID_REQUEST and not bad.topics
            bad = _list(w, 1, cursor=ListReq.Cursor(topic_name="pa", partition_index=-1))
            assert bad.error_code == ErrorCode.INVALID_REQUEST
            for tp in moves:
                moves[tp] = None
            assert set(_alter(w, moves).values()) == {0}
    finally:
        five.run(cl.resume_broker(4))


def test_reassignment_replaced_midway_keeps_the_original_replicas(
    five: BackgroundCluster,
) -> None:
    cl = _cl(five)
    md = cl.metadata
    five.call(lambda: md.create_topic("re", assignments={0: [0, 1]}))
    five.run(cl.pause_broker(4))
    try:
        with WireClient(_address(five, 0)) as w:
            assert _alter(w, {("re", 0): [2, 4]}) == {("re", 0): 0}
            assert _listed(_list(w)) == {("re", 0): ([2, 4, 0, 1], [2, 4], [0, 1])}
            # A new target replaces the old one; the originals are still what a cancel restores.
            assert _alter(w, {("re", 0): [0, 4]}) == {("re", 0): 0}
            assert _listed(_list(w)) == {("re", 0): ([0, 4, 1], [4], [1])}
            assert _alter(w, {("re", 0): None}) == {("re", 0): 0}
            assert _info(five, "re").replicas == [0, 1]
    finally:
        five.run(cl.resume_broker(4))


def test_a_reassignment_in_progress_survives_a_restart(tmp_path: Any) -> None:
    configs = {"log.dirs": str(tmp_path), "offsets.topic.num.partitions": "1"}
    with BackgroundCluster(3, configs=configs) as c:
        cl = _cl(c)
        c.call(lambda: cl.metadata.create_topic("kept", assignments={0: [0]}))
        _produce(c, "kept", 0, 20)
        c.run(cl.pause_broker(2))
        with WireClient(_address(c, 0)) as w:
            assert _alter(w, {("kept", 0): [2]}) == {("kept", 0): 0}
            assert _listed(_list(w)) == {("kept", 0): ([2, 0], [2], [0])}
    with BackgroundCluster(3, configs=configs) as c:
        # The restarted cluster still knows the target: once broker 2 is in sync, the move
        # completes and broker 0 leaves the replica set.
        _wait(lambda: _info(c, "kept").replicas == [2], what="the move to finish")
        assert _info(c, "kept").leader == 2
        with WireClient(_address(c, 0)) as w:
            assert not _list(w).topics
        _wait(_holds(c, 2, TopicPartition("kept", 0), _values(0, 20)), what="node 2")
        assert _read_all(c, "kept") == _values(0, 20)


# ------------------------------------------------------------------ replication throttles

#: Bytes each move copies, and the throttle: a throttled move lasts about 5 s.
MOVED_BYTES = 5_000_000
RATE = 1_000_000
#: What a follower may fetch of one partition at once: the first fetch finds the quota
#: unused and takes this much before the rate is measured (as in Kafka).
FETCH_BYTES = 1024 * 1024


def _try_set_configs(
    w: WireClient, resource_type: int, name: str, **configs: str
) -> tuple[int, str | None]:
    """IncrementalAlterConfigs SET of ``configs`` (underscores stand for dots)."""
    ops = [
        IncReq.AlterableConfig(name=k.replace("_", "."), config_operation=0, value=v)
        for k, v in configs.items()
    ]
    resource = IncReq.AlterConfigsResource(
        resource_type=resource_type, resource_name=name, configs=ops
    )
    (r,) = w.call(INCREMENTAL_ALTER_CONFIGS, 1, IncReq(resources=[resource])).responses
    return r.error_code, r.error_message


def _set_configs(w: WireClient, resource_type: int, name: str, **configs: str) -> None:
    code, message = _try_set_configs(w, resource_type, name, **configs)
    assert code == 0, message


def _fill(c: BackgroundCluster, topic: str, size: int) -> None:
    """acks=all produce of ``size`` bytes of values in 100 kB batches to partition 0."""
    req = _produce_request(
        topic, build_batch([Record(-1, 1000, b"k", bytes(1000)) for _ in range(100)])
    )
    with WireClient(_address(c, _info(c, topic).leader)) as w:
        for _ in range(size // 100_000):
            p = w.call(PRODUCE, 10, req).responses[0].partition_responses[0]
            assert p.error_code == 0


def _log_bytes(c: BackgroundCluster, node: int, tp: TopicPartition) -> int:
    def size() -> int:
        p = _cl(c).brokers[node].replica_manager.partitions.get(tp)
        return -1 if p is None else sum(len(b.data) for b in p.log.batches)

    out: int = c.call(size)
    return out


@pytest.mark.parametrize(
    "side, throttled",
    [("leader", "0:0"), ("follower", "*")],
)
def test_a_throttled_move_takes_its_bytes_over_the_rate_and_others_go_at_full_speed(
    five: BackgroundCluster, side: str, throttled: str
) -> None:
    """Both topics move from broker 0 to broker 1 at once; only one is throttled, on the
    leader's side (broker 0 sends) or the follower's (broker 1 copies)."""
    md = _cl(five).metadata
    for topic in ("throttled", "free"):
        five.call(lambda t=topic: md.create_topic(t, assignments={0: [0]}))
        _fill(five, topic, MOVED_BYTES)
    size = _log_bytes(five, 0, TopicPartition("throttled", 0))
    with WireClient(five.bootstrap) as w:
        # The rate as a cluster-wide default; the replicas named in the topic's config.
        _set_configs(w, BROKER_RESOURCE, "", **{f"{side}_replication_throttled_rate": str(RATE)})
        _set_configs(
            w, TOPIC_RESOURCE, "throttled", **{f"{side}_replication_throttled_replicas": throttled}
        )
        start = time.monotonic()
        assert _alter(w, {("throttled", 0): [1], ("free", 0): [1]}) == {
            ("throttled", 0): 0,
            ("free", 0): 0,
        }
        _wait(lambda: _info(five, "free").replicas == [1], what="the free move")
        free_s = time.monotonic() - start
        _wait(lambda: _info(five, "throttled").replicas == [1], what="the throttled move")
        throttled_s = time.monotonic() - start
    expected_s = size / RATE
    assert throttled_s >= 0.9 * (size - FETCH_BYTES) / RATE, (throttled_s, expected_s)
    assert free_s < expected_s / 5, (free_s, expected_s)
    assert _log_bytes(five, 1, TopicPartition("throttled", 0)) == size


def test_throttled_replicas_take_partition_broker_pairs_or_a_star(five: BackgroundCluster) -> None:
    md = _cl(five).metadata
    five.call(lambda: md.create_topic("pairs", assignments={0: [0], 1: [1]}))
    with WireClient(five.bootstrap) as w:
        for good in ("0:0,1:1", " 0:3 , 1:4", "*", ""):
            assert _try_set_configs(
                w, TOPIC_RESOURCE, "pairs", leader_replication_throttled_replicas=good
            ) == (0, None)
        for bad in ("0", "0:x", "*,0:1", "a:1", "0:1:2", "0 : 3"):
            code, message = _try_set_configs(
                w, TOPIC_RESOURCE, "pairs", follower_replication_throttled_replicas=bad
            )
            assert code == ErrorCode.INVALID_CONFIG, bad
            assert message is not None and "follower.replication.throttled.replicas" in message
        code, message = _try_set_configs(
            w, BROKER_RESOURCE, "1", leader_replication_throttled_rate="-5"
        )
        assert code == ErrorCode.INVALID_REQUEST  # Kafka's code for a bad broker value
        assert message is not None and "leader.replication.throttled.rate" in message


def test_the_quota_measures_bytes_over_its_samples_and_names_its_replicas() -> None:
    configs = ConfigStore({"replication.quota.window.num": "3"})
    configs.set_topic_configs("t", {"follower.replication.throttled.replicas": "0:1,2:1"})
    configs.set_dynamic_broker(1, {"follower.replication.throttled.rate": "1000"})
    quota = ReplicationQuota(configs, 1, "follower")
    assert [quota.throttles(TopicPartition("t", i)) for i in range(3)] == [True, False, True]
    assert not ReplicationQuota(configs, 2, "follower").throttles(TopicPartition("t", 0))
    assert not quota.throttles(TopicPartition("other", 0))
    assert not ReplicationQuota(configs, 1, "leader").throttles(TopicPartition("t", 0))
    quota.record(1500, 0)
    # Less than one sample has passed: the bytes count over a whole sample (1 s).
    assert quota.rate(500) == 1500 and quota.exceeded(500)
    quota.record(500, 1200)
    assert quota.rate(2000) == 1000 and not quota.exceeded(2000)
    # Three samples of 1 s are kept: the first goes at 3 s, the second at 4.2 s.
    assert quota.rate(3100) == pytest.approx(500 / 1.9)
    assert quota.rate(4200) == 0
    configs.set_topic_configs("t", {"follower.replication.throttled.replicas": "*"})
    assert quota.throttles(TopicPartition("t", 1))
    configs.set_dynamic_broker(1, {})
    quota.record(10**9, 5000)
    assert not quota.exceeded(5000)  # no bound set: never over
