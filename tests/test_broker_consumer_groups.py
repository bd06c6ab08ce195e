"""The consumer group protocol (KIP-848) over real sockets with the generated codecs:
ConsumerGroupHeartbeat (join, convergence, revocation before reassignment, leave, static
leave, session expiry), offsets with member epochs, the shared group-id namespace with
classic groups, ListGroups, and ConsumerGroupDescribe with its v1 pages."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from broker_helpers import WireClient, set_group_configs
from kafkagen.generated.consumer_group_describe import ConsumerGroupDescribeRequest as DescReq
from kafkagen.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest as HbReq
from kafkagen.generated.join_group import JoinGroupRequest
from kafkagen.generated.list_groups import ListGroupsRequest
from kafkagen.generated.offset_commit import OffsetCommitRequest
from kafkagen.generated.offset_fetch import OffsetFetchRequest
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.pagination import paged_version

pytestmark = pytest.mark.timeout(120)
HB, DESCRIBE, JOIN, LIST, COMMIT, FETCH = 68, 69, 11, 16, 8, 9
SESSION_MS = 1500


@pytest.fixture(scope="module")
def cluster() -> Iterator[BackgroundCluster]:
    with BackgroundCluster(
        1,
        configs={
            "unstable.api.versions.enable": "true",
            "offsets.topic.num.partitions": "1",
            "group.consumer.session.timeout.ms": str(SESSION_MS),
            "group.consumer.heartbeat.interval.ms": "200",
            # Low bounds, for a group's own configs to be set near these.
            "group.consumer.min.heartbeat.interval.ms": "100",
            "group.consumer.min.session.timeout.ms": "1000",
            "group.initial.rebalance.delay.ms": "0",
            # Targets at every change (Kafka's default waits 1 s between two).
            "group.consumer.assignment.interval.ms": "0",
        },
    ) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        gc = c.cluster.brokers[0].group_coordinator

        def setup() -> None:
            md.create_topic("orders", 6, 1)
            md.create_topic("events", 3, 1)
            gc.ensure_offsets_topic()

        c.call(setup)
        yield c


def _topic_ids(c: BackgroundCluster) -> dict[uuid.UUID, str]:
    assert c.cluster is not None
    md = c.cluster.metadata
    out: dict[uuid.UUID, str] = c.call(lambda: dict(md.topic_names))
    return out


def _owned(r: Any, ids: dict[uuid.UUID, str]) -> set[tuple[str, int]]:
    return {(ids[t.topic_id], p) for t in r.assignment.topic_partitions for p in t.partitions}


class Member:
    """One consumer-protocol member driving its own heartbeats, as a client would."""

    def __init__(
        self,
        w: WireClient,
        group: str,
        topics: list[str],
        ids: dict[uuid.UUID, str],
        *,
        instance_id: str | None = None,
        assignor: str | None = None,
    ) -> None:
        self.w = w
        self.group = group
        self.topics = topics
        self.ids = ids
        self.by_name = {n: i for i, n in ids.items()}
        self.instance_id = instance_id
        self.assignor = assignor
        self.member_id = ""
        self.epoch = 0
        self.owned: set[tuple[str, int]] = set()
        self.report = True  # send what we own on the next heartbeat

    def _owned_wire(self) -> list[HbReq.TopicPartitions]:
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(self.owned):
            by_topic.setdefault(t, []).append(p)
        return [
            HbReq.TopicPartitions(topic_id=self.by_name[t], partitions=ps)
            for t, ps in by_topic.items()
        ]

    def heartbeat(self, **override: Any) -> Any:
        joining = self.epoch == 0
        req = HbReq(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=self.epoch,
            instance_id=self.instance_id,
            rebalance_timeout_ms=30_000 if joining else -1,
            subscribed_topic_names=self.topics if joining else None,
            server_assignor=self.assignor if joining else None,
            topic_partitions=[] if joining else (self._owned_wire() if self.report else None),
        )
        for k, v in override.items():
            setattr(req, k, v)
        r = self.w.call(HB, 0, req)
        if r.error_code:
            return r
        self.report = False
        self.member_id = r.member_id
        if r.assignment is not None:
            new = _owned(r, self.ids)
            if new != self.owned:
                # Revoke what is gone, take what is new, and say so on the next heartbeat.
                self.owned = new
                self.report = True
        self.epoch = r.member_epoch
        return r

    def leave(self, epoch: int = -1) -> Any:
        req = HbReq(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=epoch,
            instance_id=self.instance_id,
        )
        return self.w.call(HB, 0, req)


def _converge(members: list[Member], rounds: int = 30) -> None:
    for _ in range(rounds):
        for m in members:
            r = m.heartbeat()
            assert r.error_code == 0, (r.error_code, r.error_message)
        epochs = {m.epoch for m in members}
        if len(epochs) == 1 and all(not m.report for m in members):
            owned = [p for m in members for p in m.owned]
            if len(owned) == len(set(owned)):
                return
    raise AssertionError(f"no convergence: {[(m.epoch, sorted(m.owned)) for m in members]}")


def _describe(w: WireClient, groups: list[str], version: int = 0, **kw: Any) -> Any:
    return w.call(DESCRIBE, version, DescReq(group_ids=groups, **kw))


def _group_state(w: WireClient, group: str) -> Any:
    r = _describe(w, [group])
    assert r.groups[0].error_code == 0, r.groups[0].error_message
    return r.groups[0]


# ------------------------------------------------------------------ heartbeat protocol


def test_first_member_gets_everything_with_a_server_assigned_id(
    cluster: BackgroundCluster,
) -> None:
    ids = _topic_ids(cluster)
    with WireClient(cluster.bootstrap) as w:
        m = Member(w, "solo", ["orders"], ids)
        r = m.heartbeat()
        assert r.error_code == 0
        assert r.member_id and uuid.UUID(r.member_id)
        assert r.member_epoch == 1
        assert r.heartbeat_interval_ms == 200
        assert m.owned == {("orders", i) for i in range(6)}
        # A heartbeat with nothing new carries no assignment.
        m.heartbeat()
        r = m.heartbeat()
        assert r.error_code == 0 and r.assignment is None and r.member_epoch == 1
        g = _group_state(w, "solo")
        assert (g.group_state, g.group_epoch, g.assignment_epoch) == ("Stable", 1, 1)
        assert g.assignor_name == "uniform"
        assert m.leave().member_epoch == -1


def test_three_members_converge_and_revoke_before_reassignment(
    cluster: BackgroundCluster,
) -> None:
    ids = _topic_ids(cluster)
    everything = {("orders", i) for i in range(6)} | {("events", i) for i in range(3)}
    with WireClient(cluster.bootstrap) as w:
        a = Member(w, "trio", ["orders", "events"], ids)
        a.heartbeat()
        assert a.owned == everything and a.epoch == 1
        b = Member(w, "trio", ["orders", "events"], ids)
        rb = b.heartbeat()
        # b joins at the new epoch but gets nothing a still owns.
        assert rb.member_epoch == 2 and b.owned == set()
        g = _group_state(w, "trio")
        assert g.group_state == "Reconciling"
        # a is told to give partitions up and keeps its epoch until it does.
        ra = a.heartbeat()
        assert ra.member_epoch == 1
        assert a.owned < everything and len(a.owned) in (4, 5)
        target_b = everything - a.owned
        # b still gets nothing before a reports the revocation.
        assert b.heartbeat().error_code == 0 and b.owned == set()
        ra = a.heartbeat()  # reports what it owns now: revocation done
        assert ra.member_epoch == 2
        b.heartbeat()
        assert b.owned == target_b
        c = Member(w, "trio", ["orders", "events"], ids)
        c.heartbeat()
        _converge([a, b, c])
        owned = [a.owned, b.owned, c.owned]
        assert set().union(*owned) == everything
        assert sorted(len(o) for o in owned) == [3, 3, 3]
        assert len({a.epoch, b.epoch, c.epoch}) == 1 and a.epoch == 3
        g = _group_state(w, "trio")
        assert g.group_state == "Stable" and g.group_epoch == 3
        members = {m.member_id: m for m in g.members}
        for m in (a, b, c):
            d = members[m.member_id]
            got = {(t.topic_name, p) for t in d.assignment.topic_partitions for p in t.partitions}
            assert got == m.owned
            assert d.member_epoch == m.epoch
            assert list(d.subscribed_topic_names) == ["events", "orders"]
        # One leaves: the others share its partitions at the next epoch.
        assert c.leave().member_epoch == -1
        _converge([a, b])
        assert a.owned | b.owned == everything and {len(a.owned), len(b.owned)} <= {4, 5}
        assert a.epoch == 4


def test_range_assignor_splits_each_topic(cluster: BackgroundCluster) -> None:
    ids = _topic_ids(cluster)
    with WireClient(cluster.bootstrap) as w:
        ms = [Member(w, "ranged", ["orders", "events"], ids, assignor="range") for _ in range(2)]
        for m in ms:
            m.heartbeat()
        _converge(ms)
        first, second = sorted(ms, key=lambda m: m.member_id)
        assert first.owned == {("orders", i) for i in range(3)} | {("events", 0), ("events", 1)}
        assert second.owned == {("orders", i) for i in range(3, 6)} | {("events", 2)}
        assert _group_state(w, "ranged").assignor_name == "range"
        r = Member(w, "ranged", ["orders"], ids, assignor="sticky-nope").heartbeat()
        assert r.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
        for m in ms:
            m.leave()


def test_session_expiry_removes_a_silent_member(cluster: BackgroundCluster) -> None:
    ids = _topic_ids(cluster)
    with WireClient(cluster.bootstrap) as w:
        a = Member(w, "expiry", ["events"], ids)
        b = Member(w, "expiry", ["events"], ids)
        a.heartbeat()
        b.heartbeat()
        _converge([a, b])
        epoch = a.epoch
        # b goes silent; a keeps heartbeating and ends up with everything.
        deadline = time.monotonic() + SESSION_MS / 1000 * 4
        while time.monotonic() < deadline and len(a.owned) < 3:
            assert a.heartbeat().error_code == 0
            time.sleep(0.1)
        assert a.owned == {("events", i) for i in range(3)}
        assert a.epoch > epoch
        g = _group_state(w, "expiry")
        assert [m.member_id for m in g.members] == [a.member_id]
        r = b.heartbeat()
        assert r.error_code == ErrorCode.UNKNOWN_MEMBER_ID
        a.leave()


def test_a_groups_assignment_interval_delays_the_next_target(cluster: BackgroundCluster) -> None:
    """`consumer.assignment.interval.ms` set on the group: as in Kafka 4.4, a member joining
    within the interval after the last target gets nothing and the others keep theirs;
    the first heartbeat after the interval computes the new target."""
    ids = _topic_ids(cluster)
    with WireClient(cluster.bootstrap) as w:
        set_group_configs(w, "paced", consumer_assignment_interval_ms="3000")
        a = Member(w, "paced", ["orders"], ids)
        a.heartbeat()
        _converge([a])
        computed = time.monotonic()
        assert len(a.owned) == 6
        b = Member(w, "paced", ["orders"], ids)
        r = b.heartbeat()
        assert r.error_code == 0 and b.owned == set()
        # Within the interval nobody is asked to move (heartbeats keep the sessions).
        while time.monotonic() < computed + 2.5:
            assert a.heartbeat().error_code == 0 and b.heartbeat().error_code == 0
            assert len(a.owned) == 6 and b.owned == set()
            time.sleep(0.2)
        time.sleep(max(0.0, computed + 3.2 - time.monotonic()))
        assert a.heartbeat().error_code == 0  # the interval is over: a gives half up
        assert len(a.owned) == 3
        _converge([a, b])
        assert len(a.owned) == len(b.owned) == 3
        for m in (a, b):
            m.leave()


def test_a_groups_own_heartbeat_interval_and_session_override_the_brokers(
    cluster: BackgroundCluster,
) -> None:
    """`consumer.heartbeat.interval.ms` and `consumer.session.timeout.ms` set on the group
    (IncrementalAlterConfigs on its GROUP resource) apply to it alone."""
    ids = _topic_ids(cluster)
    with WireClient(cluster.bootstrap) as w:
        set_group_configs(
            w, "own", consumer_heartbeat_interval_ms="700", consumer_session_timeout_ms="6000"
        )
        a = Member(w, "own", ["events"], ids)
        b = Member(w, "own", ["events"], ids)
        assert a.heartbeat().heartbeat_interval_ms == 700
        assert Member(w, "other", ["events"], ids).heartbeat().heartbeat_interval_ms == 200
        b.heartbeat()
        _converge([a, b])
        # b falls silent: past the broker's session it is still a member, past the
        # group's it is gone.
        time.sleep(SESSION_MS / 1000 * 2)
        assert a.heartbeat().error_code == 0
        assert len(_group_state(w, "own").members) == 2
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(a.owned) < 3:
            assert a.heartbeat().error_code == 0
            time.sleep(0.2)
        assert [m.member_id for m in _group_state(w, "own").members] == [a.member_id]


def test_member_that_does_not_revoke_in_time_is_removed(cluster: BackgroundCluster) -> None:
    ids = _topic_ids(cluster)
    everything = {("events", i) for i in range(3)}
    with WireClient(cluster.bootstrap) as w:
        a = Member(w, "stubborn", ["events"], ids)
        a.heartbeat(rebalance_timeout_ms=400)
        assert a.owned == everything
        b = Member(w, "stubborn", ["events"], ids)
        b.heartbeat()
        held = a._owned_wire()
        a.heartbeat()
        assert a.owned < everything  # told to revoke
        # a keeps heartbeating but keeps reporting everything: it never revokes.
        deadline = time.monotonic() + 5
        code = 0
        while time.monotonic() < deadline and code == 0:
            code = a.heartbeat(topic_partitions=held).error_code
            b.heartbeat()
            time.sleep(0.05)
        assert code == ErrorCode.UNKNOWN_MEMBER_ID
        for _ in range(3):
            b.heartbeat()
        assert b.owned == everything
        b.leave()


def test_static_member_leaves_and_returns_to_its_partitions(cluster: BackgroundCluster) -> None:
    ids = _topic_ids(cluster)
    with WireClient(cluster.bootstrap) as w:
        a = Member(w, "static", ["orders"], ids, instance_id="host-a")
        b = Member(w, "static", ["orders"], ids, instance_id="host-b")
        a.heartbeat()
        b.heartbeat()
        _converge([a, b])
        held = set(a.owned)
        group_epoch = _group_state(w, "static").group_epoch
        assert a.leave(-2).member_epoch == -2
        # Still a member; its partitions wait for it and nothing is rebalanced.
        g = _group_state(w, "static")
        assert g.group_epoch == group_epoch and len(g.members) == 2
        # Another process may not take the instance id while... it is released: it may.
        back = Member(w, "static", ["orders"], ids, instance_id="host-a")
        r = back.heartbeat()
        assert r.error_code == 0
        assert back.member_id != a.member_id and back.owned == held
        assert _group_state(w, "static").group_epoch == group_epoch
        # A second join with a live instance id is refused.
        dup = Member(w, "static", ["orders"], ids, instance_id="host-a")
        assert dup.heartbeat().error_code == ErrorCode.UNRELEASED_INSTANCE_ID
        back.leave()
        b.leave()


def test_v1_members_name_themselves_and_may_subscribe_by_regex(cluster: BackgroundCluster) -> None:
    ids = _topic_ids(cluster)
    with WireClient(cluster.bootstrap) as w:
        req = HbReq(
            group_id="regex",
            member_id="",
            member_epoch=0,
            rebalance_timeout_ms=10_000,
            subscribed_topic_regex="ev.*",
            topic_partitions=[],
        )
        assert w.call(HB, 1, req).error_code == ErrorCode.INVALID_REQUEST  # no member id
        req.member_id = "my-own-id"
        r = w.call(HB, 1, req)
        assert r.error_code == 0 and r.member_id == "my-own-id" and r.member_epoch == 1
        assert _owned(r, ids) == {("events", i) for i in range(3)}
        req.member_id = "other"
        req.subscribed_topic_regex = "(unclosed"
        assert w.call(HB, 1, req).error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
        leave = HbReq(group_id="regex", member_id="my-own-id", member_epoch=-1)
        assert w.call(HB, 1, leave).member_epoch == -1


def test_a_regex_takes_in_internal_topics(cluster: BackgroundCluster) -> None:
    # Kafka 4.4.0 assigns __consumer_offsets to a regex that matches it (measured with
    # franz-go's Test848RegexBrokerResolves), so kafkagen does too.
    ids = _topic_ids(cluster)
    assert "__consumer_offsets" in ids.values()
    with WireClient(cluster.bootstrap) as w:
        req = HbReq(
            group_id="regex-internal",
            member_id="internal-reader",
            member_epoch=0,
            rebalance_timeout_ms=10_000,
            subscribed_topic_regex="__consumer_offsets|ev.*",
            topic_partitions=[],
        )
        r = w.call(HB, 1, req)
        assert r.error_code == 0 and r.member_epoch == 1
        assert _owned(r, ids) == {("__consumer_offsets", 0)} | {("events", i) for i in range(3)}
        described = w.call(DESCRIBE, 0, DescReq(group_ids=["regex-internal"])).groups[0]
        assert [m.member_id for m in described.members] == ["internal-reader"]
        assert {ids[t.topic_id] for t in described.members[0].assignment.topic_partitions} == {
            "__consumer_offsets",
            "events",
        }
        leave = HbReq(group_id="regex-internal", member_id="internal-reader", member_epoch=-1)
        assert w.call(HB, 1, leave).member_epoch == -1


def test_bad_heartbeats_get_kafka_errors(cluster: BackgroundCluster) -> None:
    ids = _topic_ids(cluster)
    with WireClient(cluster.bootstrap) as w:

        def hb(**kw: Any) -> Any:
            base: dict[str, Any] = {
                "group_id": "errs",
                "member_id": "",
                "member_epoch": 0,
                "rebalance_timeout_ms": 1000,
                "subscribed_topic_names": ["orders"],
                "topic_partitions": [],
            }
            base.update(kw)
            return w.call(HB, 0, HbReq(**base))

        assert hb(group_id="").error_code == ErrorCode.INVALID_REQUEST
        assert hb(rebalance_timeout_ms=-1).error_code == ErrorCode.INVALID_REQUEST
        assert hb(subscribed_topic_names=None).error_code == ErrorCode.INVALID_REQUEST
        assert hb(member_epoch=-3, member_id="x").error_code == ErrorCode.INVALID_REQUEST
        # No such group yet: only a join (epoch 0) creates it.
        assert hb(member_epoch=5, member_id="ghost").error_code == ErrorCode.GROUP_ID_NOT_FOUND
        assert hb(member_epoch=-1, member_id="ghost").error_code == ErrorCode.GROUP_ID_NOT_FOUND
        m = Member(w, "errs", ["orders"], ids)
        m.heartbeat()
        assert hb(member_epoch=5, member_id="ghost").error_code == ErrorCode.UNKNOWN_MEMBER_ID
        r = hb(member_id=m.member_id, member_epoch=m.epoch + 5, topic_partitions=None)
        assert r.error_code == ErrorCode.FENCED_MEMBER_EPOCH
        m.leave()
        assert m.leave().error_code == ErrorCode.UNKNOWN_MEMBER_ID


# ------------------------------------------------------------------ offsets and namespace


def _commit(w: WireClient, group: str, member_id: str, epoch: int, offset: int) -> int:
    req = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=epoch,
        member_id=member_id,
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(
                name="orders",
                partitions=[
                    OffsetCommitRequest.OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=offset
                    )
                ],
            )
        ],
    )
    r = w.call(COMMIT, 9, req)
    code: int = r.topics[0].partitions[0].error_code
    return code


def test_offset_commit_v10_names_topics_by_id(cluster: BackgroundCluster) -> None:
    ids = _topic_ids(cluster)
    orders = next(i for i, name in ids.items() if name == "orders")
    unknown = uuid.uuid4()
    with WireClient(cluster.bootstrap) as w:
        m = Member(w, "by-id", ["orders"], ids)
        m.heartbeat()
        req = OffsetCommitRequest(
            group_id="by-id",
            generation_id_or_member_epoch=m.epoch,
            member_id=m.member_id,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    topic_id=topic_id,
                    partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(
                            partition_index=0, committed_offset=17
                        )
                    ],
                )
                for topic_id in (orders, unknown)
            ],
        )
        r = w.call(COMMIT, 10, req)
        assert [(t.topic_id, [p.error_code for p in t.partitions]) for t in r.topics] == [
            (orders, [0]),
            (unknown, [ErrorCode.UNKNOWN_TOPIC_ID]),
        ]
        assert _fetch(w, "by-id", m.member_id, m.epoch) == (0, 17)
        req.topics = [req.topics[1]]  # only the unknown id: nothing to commit
        r = w.call(COMMIT, 10, req)
        assert r.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
        m.leave()


def _fetch(w: WireClient, group: str, member_id: str | None, epoch: int) -> tuple[int, int]:
    req = OffsetFetchRequest(
        groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(
                group_id=group,
                member_id=member_id,
                member_epoch=epoch,
                topics=[
                    OffsetFetchRequest.OffsetFetchRequestTopics(
                        name="orders", partition_indexes=[0]
                    )
                ],
            )
        ]
    )
    r = w.call(FETCH, 9, req)
    g = r.groups[0]
    if g.error_code:
        return g.error_code, -1
    return 0, g.topics[0].partitions[0].committed_offset


def test_offsets_check_member_and_epoch(cluster: BackgroundCluster) -> None:
    ids = _topic_ids(cluster)
    with WireClient(cluster.bootstrap) as w:
        m = Member(w, "committer", ["orders"], ids)
        m.heartbeat()
        assert _commit(w, "committer", m.member_id, m.epoch, 42) == 0
        assert _fetch(w, "committer", m.member_id, m.epoch) == (0, 42)
        assert _fetch(w, "committer", None, -1) == (0, 42)  # an admin
        assert _commit(w, "committer", m.member_id, m.epoch + 1, 7) == ErrorCode.STALE_MEMBER_EPOCH
        assert _commit(w, "committer", "stranger", m.epoch, 7) == ErrorCode.UNKNOWN_MEMBER_ID
        assert _commit(w, "committer", "", -1, 7) == ErrorCode.UNKNOWN_MEMBER_ID  # not empty
        assert _fetch(w, "committer", m.member_id, m.epoch + 3)[0] == ErrorCode.STALE_MEMBER_EPOCH
        assert _fetch(w, "committer", "stranger", 1)[0] == ErrorCode.UNKNOWN_MEMBER_ID
        m.leave()
        # Empty now: commits outside group management are fine again, and offsets stay.
        assert _fetch(w, "committer", None, -1) == (0, 42)
        assert _commit(w, "committer", "", -1, 50) == 0
        assert _fetch(w, "committer", None, -1) == (0, 50)


def test_offset_delete_refuses_subscribed_topics(cluster: BackgroundCluster) -> None:
    from kafkagen.generated.offset_delete import OffsetDeleteRequest as Del

    ids = _topic_ids(cluster)
    with WireClient(cluster.bootstrap) as w:
        m = Member(w, "deleter", ["events"], ids)
        m.heartbeat()
        assert _commit(w, "deleter", m.member_id, m.epoch, 9) == 0

        def delete() -> int:
            req = Del(
                group_id="deleter",
                topics=[
                    Del.OffsetDeleteRequestTopic(
                        name="orders",
                        partitions=[Del.OffsetDeleteRequestPartition(partition_index=0)],
                    )
                ],
            )
            r = w.call(47, 0, req)
            assert r.error_code == 0
            code: int = r.topics[0].partitions[0].error_code
            return code

        # "orders" is not subscribed: its offsets may go while the group lives.
        assert delete() == 0
        assert _fetch(w, "deleter", None, -1) == (0, -1)
        m.leave()
        m2 = Member(w, "deleter", ["orders"], ids)
        m2.heartbeat()
        assert delete() == ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
        m2.leave()


def test_delete_groups_removes_only_empty_consumer_groups(cluster: BackgroundCluster) -> None:
    from kafkagen.generated.delete_groups import DeleteGroupsRequest

    ids = _topic_ids(cluster)
    with WireClient(cluster.bootstrap) as w:

        def delete() -> int:
            r = w.call(42, 2, DeleteGroupsRequest(groups_names=["doomed"]))
            code: int = r.results[0].error_code
            return code

        m = Member(w, "doomed", ["orders"], ids)
        m.heartbeat()
        assert _commit(w, "doomed", m.member_id, m.epoch, 3) == 0
        assert delete() == ErrorCode.NON_EMPTY_GROUP
        m.leave()
        assert delete() == 0
        assert _describe(w, ["doomed"]).groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
        assert _fetch(w, "doomed", None, -1) == (0, -1)  # its offsets went with it


def test_delete_groups_v3_answers_as_v2_with_null_messages(cluster: BackgroundCluster) -> None:
    # Kafka 4.4.0 leaves the v3 message null for a group that stays or does not exist.
    from kafkagen.generated.delete_groups import DeleteGroupsRequest

    ids = _topic_ids(cluster)
    with WireClient(cluster.bootstrap) as w:
        m = Member(w, "kept", ["orders"], ids)
        m.heartbeat()
        r = w.call(42, 3, DeleteGroupsRequest(groups_names=["kept", "never-made"]))
        assert {x.group_id: (x.error_code, x.error_message) for x in r.results} == {
            "kept": (ErrorCode.NON_EMPTY_GROUP, None),
            "never-made": (ErrorCode.GROUP_ID_NOT_FOUND, None),
        }
        m.leave()
        r = w.call(42, 3, DeleteGroupsRequest(groups_names=["kept"]))
        assert (r.results[0].error_code, r.results[0].error_message) == (0, None)


def _classic_join(w: WireClient, group: str) -> Any:
    req = JoinGroupRequest(
        group_id=group,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id="",
        protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
    )
    return w.call(JOIN, 3, req)  # before v4, no MEMBER_ID_REQUIRED round trip


def test_classic_and_consumer_groups_share_the_namespace(cluster: BackgroundCluster) -> None:
    ids = _topic_ids(cluster)
    with WireClient(cluster.bootstrap) as w:
        m = Member(w, "shared", ["orders"], ids)
        m.heartbeat()
        assert _classic_join(w, "shared").error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        m.leave()
        # Empty: the classic join takes the id over.
        r = _classic_join(w, "shared")
        assert r.error_code == 0
        other = Member(w, "shared", ["orders"], ids)
        assert other.heartbeat().error_code == ErrorCode.GROUP_ID_NOT_FOUND
        d = _describe(w, ["shared", "never-seen"])
        assert [g.error_code for g in d.groups] == [ErrorCode.GROUP_ID_NOT_FOUND] * 2


def test_describe_v1_says_each_member_speaks_the_consumer_protocol(
    cluster: BackgroundCluster,
) -> None:
    ids = _topic_ids(cluster)
    with WireClient(cluster.bootstrap) as w:
        m = Member(w, "typed", ["orders"], ids)
        m.heartbeat()
        old, new = (_describe(w, ["typed"], v).groups[0].members for v in (0, 1))
        m.leave()
    assert [x.member_id for x in old] == [x.member_id for x in new] == [m.member_id]
    assert (old[0].member_type, new[0].member_type) == (-1, 1)  # v0 does not carry it


def test_list_groups_shows_consumer_groups_by_type(cluster: BackgroundCluster) -> None:
    ids = _topic_ids(cluster)
    with WireClient(cluster.bootstrap) as w:
        m = Member(w, "listed", ["orders"], ids)
        m.heartbeat()
        _classic_join(w, "listed-classic")
        r = w.call(LIST, 5, ListGroupsRequest(types_filter=["consumer"]))
        got = {g.group_id: (g.group_type, g.protocol_type) for g in r.groups}
        assert got["listed"] == ("consumer", "consumer")
        assert "listed-classic" not in got
        r = w.call(LIST, 5, ListGroupsRequest(types_filter=["classic"]))
        assert "listed" not in {g.group_id for g in r.groups}
        assert "listed-classic" in {g.group_id for g in r.groups}
        r = w.call(LIST, 5, ListGroupsRequest(states_filter=["stable"], types_filter=[]))
        assert "listed" in {g.group_id for g in r.groups}
        m.leave()


# ------------------------------------------------------------------ describe pages


@pytest.fixture
def roomy() -> Iterator[BackgroundCluster]:
    """Default (45 s) sessions: 200 members stay while their group is paged through."""
    configs = {"unstable.api.versions.enable": "true", "offsets.topic.num.partitions": "1"}
    with BackgroundCluster(1, configs=configs) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic("orders", 6, 1))
        c.call(lambda: md.create_topic("events", 3, 1))
        gc = c.cluster.brokers[0].group_coordinator
        c.call(gc.ensure_offsets_topic)  # what FindCoordinator would do first
        yield c


@pytest.mark.slow
def test_describe_pages_a_200_member_group(roomy: BackgroundCluster) -> None:
    ids = _topic_ids(roomy)
    with WireClient(roomy.bootstrap) as w:
        small = Member(w, "page-small", ["events"], ids)
        small.heartbeat()
        members = [Member(w, "page-big", ["orders"], ids) for _ in range(200)]
        for m in members:
            assert m.heartbeat().error_code == 0
        everyone = sorted(m.member_id for m in members)
        unpaged = _describe(w, ["page-small", "page-big", "missing"])
        assert [g.error_code for g in unpaged.groups] == [0, 0, ErrorCode.GROUP_ID_NOT_FOUND]
        assert [m.member_id for m in unpaged.groups[1].members] == everyone
        expected = [("page-small", small.member_id)] + [("page-big", i) for i in everyone]
        for limit in (1, 7, 2000):
            got: list[tuple[str, str]] = []
            seen_groups: list[str] = []
            cursor = None
            for _ in range(300):
                r = _describe(
                    w,
                    ["page-small", "page-big", "missing"],
                    paged_version(DESCRIBE),
                    response_pagination_limit=limit,
                    cursor=cursor,
                )
                page = [(g.group_id, m.member_id) for g in r.groups for m in g.members]
                assert len(page) <= limit
                got += page
                seen_groups += [g.group_id for g in r.groups if g.group_id not in seen_groups]
                if r.next_cursor is None:
                    break
                cursor = DescReq.GroupMemberCursor(
                    group_id=r.next_cursor.group_id, member_id=r.next_cursor.member_id
                )
            assert got == expected, f"limit {limit}"
            assert seen_groups == ["page-small", "page-big", "missing"]
        bad = _describe(
            w,
            ["page-small"],
            paged_version(DESCRIBE),
            cursor=DescReq.GroupMemberCursor(group_id="page-big", member_id=""),
        )
        assert [g.error_code for g in bad.groups] == [ErrorCode.INVALID_REQUEST]
        for m in [small, *members]:
            m.leave()


# ------------------------------------------------------------------ a real client


@pytest.mark.slow
def test_librdkafka_consumers_with_group_protocol_consumer() -> None:
    """Three confluent-kafka consumers with group.protocol=consumer share six partitions and
    read each of 300 messages exactly once.

    librdkafka speaks ConsumerGroupHeartbeat v1, which the broker serves as stable, as
    Kafka 4.x does.
    """
    from confluent_kafka import Consumer, Producer

    configs = {
        "offsets.topic.num.partitions": "1",
        "group.consumer.heartbeat.interval.ms": "500",
    }
    with BackgroundCluster(1, configs=configs) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        c.call(lambda: md.create_topic("rd", 6, 1))
        p = Producer({"bootstrap.servers": c.bootstrap})
        for i in range(300):
            p.produce("rd", b"m%d" % i, partition=i % 6)
        assert p.flush(30) == 0
        consumers = [
            Consumer(
                {
                    "bootstrap.servers": c.bootstrap,
                    "group.id": "rd-group",
                    "group.protocol": "consumer",
                    "auto.offset.reset": "earliest",
                }
            )
            for _ in range(3)
        ]
        try:
            for cons in consumers:
                cons.subscribe(["rd"])
            seen: dict[bytes, int] = {}
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                for cons in consumers:
                    for m in cons.consume(100, 0.1):
                        assert not m.error(), m.error()
                        value = m.value()
                        assert value is not None
                        seen[value] = seen.get(value, 0) + 1
                sizes = sorted(len(cons.assignment()) for cons in consumers)
                if len(seen) == 300 and sizes == [2, 2, 2]:
                    break
            assert set(seen) == {b"m%d" % i for i in range(300)}
            assert all(n == 1 for n in seen.values()), "a message was read twice"
            assert sorted(len(cons.assignment()) for cons in consumers) == [2, 2, 2]
            with WireClient(c.bootstrap) as w:
                g = _describe(w, ["rd-group"]).groups[0]
                assert g.error_code == 0 and len(g.members) == 3
                r = w.call(LIST, 5, ListGroupsRequest(types_filter=["consumer"]))
                assert [x.group_id for x in r.groups] == ["rd-group"]
        finally:
            for cons in consumers:
                cons.close()
        # Auto-commits with member epochs went through: every partition is read to its end.
        gc = c.cluster.brokers[0].group_coordinator
        committed = c.call(lambda: gc.offsets.fetch("rd-group", None))
        assert {(tp.topic, tp.partition): e.offset for tp, e in committed.items()} == {
            ("rd", i): 50 for i in range(6)
        }


# ------------------------------------------------------------------ the assignors


def _spec(
    subs: dict[str, set[str]],
    counts: dict[str, int],
    current: dict[str, dict[uuid.UUID, set[int]]] | None = None,
) -> tuple[Any, dict[str, uuid.UUID]]:
    from kafkagen.runtime.broker.group.assignors import AssignmentSpec, TopicSpec

    tids = {n: uuid.uuid5(uuid.NAMESPACE_DNS, n) for n in counts}
    spec = AssignmentSpec(
        subscriptions={m: frozenset(s) for m, s in subs.items()},
        topics={n: TopicSpec(n, tids[n], c) for n, c in counts.items()},
        current=current or {},
    )
    return spec, tids


def test_uniform_assignor_is_balanced_and_sticky() -> None:
    from kafkagen.runtime.broker.group.assignors import UniformAssignor

    counts = {"a": 7, "b": 10}
    subs = {f"m{i}": {"a", "b"} for i in range(4)}
    spec, _ = _spec(subs, counts)
    first = UniformAssignor().assign(spec)
    sizes = sorted(sum(len(p) for p in a.values()) for a in first.values())
    assert sizes == [4, 4, 4, 5]
    every = [(t, p) for a in first.values() for t, ps in a.items() for p in ps]
    assert len(every) == len(set(every)) == 17
    # A fifth member joins: it gets 3 partitions, and nobody else gains or swaps any.
    subs["m4"] = {"a", "b"}
    spec, _ = _spec(subs, counts, first)
    second = UniformAssignor().assign(spec)
    assert sorted(sum(len(p) for p in a.values()) for a in second.values()) == [3, 3, 3, 4, 4]
    for m, a in first.items():
        for t, ps in second[m].items():
            assert ps <= a.get(t, set()), f"{m} gained partitions it did not have"


def test_uniform_assignor_respects_mixed_subscriptions() -> None:
    from kafkagen.runtime.broker.group.assignors import UniformAssignor

    subs = {"x": {"a"}, "y": {"a", "b"}, "z": {"b"}}
    spec, tids = _spec(subs, {"a": 6, "b": 6})
    out = UniformAssignor().assign(spec)
    assert sorted(sum(len(p) for p in a.values()) for a in out.values()) == [4, 4, 4]
    assert set(out["x"]) <= {tids["a"]} and set(out["z"]) <= {tids["b"]}
    for name in ("a", "b"):
        owned = [p for a in out.values() for p in a.get(tids[name], set())]
        assert sorted(owned) == list(range(6))


def test_range_assignor_gives_consecutive_ranges_per_topic() -> None:
    from kafkagen.runtime.broker.group.assignors import RangeAssignor

    subs = {"m1": {"a", "b"}, "m2": {"a", "b"}, "m3": {"a"}}
    spec, tids = _spec(subs, {"a": 7, "b": 3})
    out = RangeAssignor().assign(spec)
    assert out["m1"] == {tids["a"]: {0, 1, 2}, tids["b"]: {0, 1}}
    assert out["m2"] == {tids["a"]: {3, 4}, tids["b"]: {2}}
    assert out["m3"] == {tids["a"]: {5, 6}}


# ------------------------------------------------------------------ coordinator failover


def _coordinator(c: BackgroundCluster) -> int:
    assert c.cluster is not None
    md = c.cluster.metadata

    def leader() -> int:
        t = md.topic("__consumer_offsets")
        assert t is not None
        return t.partitions[0].leader

    out: int = c.call(leader)
    return out


def _address(c: BackgroundCluster, node: int) -> str:
    assert c.cluster is not None
    info = c.cluster.brokers[node].info
    return f"{info.host}:{info.port}"


@pytest.mark.slow
def test_a_new_coordinator_rebuilds_the_group_from_its_records() -> None:
    configs = {
        "offsets.topic.num.partitions": "1",
        "offsets.topic.replication.factor": "3",
        "group.consumer.session.timeout.ms": "2000",
        "group.consumer.assignment.interval.ms": "0",
    }
    with BackgroundCluster(3, configs=configs) as c:
        assert c.cluster is not None
        cl = c.cluster
        c.call(lambda: cl.metadata.create_topic("orders", 6, 1))
        c.call(cl.brokers[0].group_coordinator.ensure_offsets_topic)
        ids = _topic_ids(c)
        old = _coordinator(c)
        with WireClient(_address(c, old)) as w:
            a = Member(w, "moved", ["orders"], ids, instance_id="a")
            b = Member(w, "moved", ["orders"], ids)
            a.heartbeat()
            b.heartbeat()
            _converge([a, b])
            assert _commit(w, "moved", a.member_id, a.epoch, 11) == 0
            before = _group_state(w, "moved")
        c.run(cl.pause_broker(old), timeout=30)
        try:
            new = _coordinator(c)
            assert new != old
            with WireClient(_address(c, new)) as w:
                after = _group_state(w, "moved")
                assert (after.group_epoch, after.assignment_epoch) == (
                    before.group_epoch,
                    before.assignment_epoch,
                )
                assert {m.member_id: m.member_epoch for m in after.members} == {
                    m.member_id: m.member_epoch for m in before.members
                }
                # The members carry on with their epochs and partitions.
                for m in (a, b):
                    m.w = w
                    held = set(m.owned)
                    r = m.heartbeat()
                    assert r.error_code == 0 and m.owned == held
                assert _fetch(w, "moved", a.member_id, a.epoch) == (0, 11)
                # Sessions restarted on load: b goes quiet and expires, a takes everything.
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and len(a.owned) < 6:
                    assert a.heartbeat().error_code == 0
                    time.sleep(0.1)
                assert a.owned == {("orders", i) for i in range(6)}
                assert [m.member_id for m in _group_state(w, "moved").members] == [a.member_id]
        finally:
            c.run(cl.resume_broker(old), timeout=30)


@pytest.mark.slow
def test_librdkafka_consumers_survive_a_coordinator_failover() -> None:
    from confluent_kafka import Consumer, Producer

    caps = "Metadata:12,ListOffsets:10,OffsetFetch:9,DescribeGroups:5,ListGroups:5"
    configs = {
        "unstable.api.versions.enable": "true",
        "kafkagen.api.version.max": caps,
        "offsets.topic.num.partitions": "1",
        "offsets.topic.replication.factor": "3",
        "group.consumer.heartbeat.interval.ms": "300",
    }
    with BackgroundCluster(3, configs=configs) as c:
        assert c.cluster is not None
        cl = c.cluster
        c.call(lambda: cl.metadata.create_topic("fo", 6, 3))
        p = Producer({"bootstrap.servers": c.bootstrap})

        def produce(start: int) -> None:
            for i in range(start, start + 300):
                p.produce("fo", b"m%d" % i, partition=i % 6)
            assert p.flush(30) == 0

        produce(0)
        consumers = [
            Consumer(
                {
                    "bootstrap.servers": c.bootstrap,
                    "group.id": "fo-group",
                    "group.protocol": "consumer",
                    "auto.offset.reset": "earliest",
                }
            )
            for _ in range(3)
        ]
        seen: dict[bytes, int] = {}

        def pump(until: int, seconds: float) -> None:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and len(seen) < until:
                for cons in consumers:
                    for m in cons.consume(100, 0.1):
                        assert not m.error(), m.error()
                        value = m.value()
                        assert value is not None
                        seen[value] = seen.get(value, 0) + 1

        try:
            for cons in consumers:
                cons.subscribe(["fo"])
            pump(300, 60)
            assert len(seen) == 300
            old = _coordinator(c)
            c.run(cl.pause_broker(old), timeout=30)
            try:
                produce(300)
                pump(600, 60)
            finally:
                c.run(cl.resume_broker(old), timeout=30)
            assert set(seen) == {b"m%d" % i for i in range(600)}
            assert all(n == 1 for n in seen.values()), "a message was read twice"
        finally:
            for cons in consumers:
                cons.close()


def test_state_records_round_trip() -> None:
    from kafkagen.runtime.broker.group.consumer_group import (
        ConsumerGroup,
        ConsumerMember,
        MemberState,
        decode_group,
        decode_state_key,
        encode_group,
    )

    t = uuid.uuid4()
    g = ConsumerGroup("grp é")
    g.group_epoch, g.assignment_epoch, g.assignor_name = 7, 7, "range"
    g.subscription_metadata = {"orders": (t, 6)}
    m = ConsumerMember(
        "m-1",
        "inst",
        "rack-a",
        "client",
        "/127.0.0.1",
        5000,
        ["orders"],
        None,
        "range",
        member_epoch=6,
        previous_member_epoch=5,
        state=MemberState.UNREVOKED_PARTITIONS,
        assigned={t: {0, 1}},
        pending_revocation={t: {2}},
    )
    g.members["m-1"] = m
    g.static_members["inst"] = "m-1"
    g.target["m-1"] = {t: {0, 1, 3}}
    records = encode_group(g)
    by_slot = {}
    for key, value in records.items():
        decoded = decode_state_key(key)
        assert decoded is not None and decoded[0] == "grp é"
        by_slot[decoded[1], decoded[2]] = value
    # Kafka's record types: group, topics, target epoch; per member subscription, target,
    # current assignment.
    assert set(by_slot) == {("", 3), ("", 4), ("", 6), ("m-1", 5), ("m-1", 7), ("m-1", 8)}
    back = decode_group("grp é", by_slot)
    assert encode_group(back) == records
    assert back.members["m-1"].state is MemberState.UNREVOKED_PARTITIONS
    assert back.members["m-1"].pending_revocation == {t: {2}}
    assert back.target == {"m-1": {t: {0, 1, 3}}} and back.static_members == {"inst": "m-1"}
    assert back.subscription_metadata == {"orders": (t, 6)}
    assert decode_state_key(b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00") is None  # an offset key
    without_assignment = {k: v for k, v in by_slot.items() if k != ("m-1", 8)}
    with pytest.raises(ValueError, match="'m-1' has no ConsumerGroupCurrentMemberAssignmentValue"):
        decode_group("grp é", without_assignment)


def test_groups_come_back_after_a_restart(tmp_path: Any) -> None:
    configs = {
        "log.dirs": str(tmp_path),
        "offsets.topic.num.partitions": "1",
        "group.consumer.assignment.interval.ms": "0",
    }
    with BackgroundCluster(1, configs=configs) as c:
        assert c.cluster is not None
        cl = c.cluster
        c.call(lambda: cl.metadata.create_topic("orders", 6, 1))
        c.call(cl.brokers[0].group_coordinator.ensure_offsets_topic)
        ids = _topic_ids(c)
        with WireClient(c.bootstrap) as w:
            a = Member(w, "durable", ["orders"], ids, instance_id="a")
            b = Member(w, "durable", ["orders"], ids)
            a.heartbeat()
            b.heartbeat()
            _converge([a, b])
            assert _commit(w, "durable", b.member_id, b.epoch, 5) == 0
            before = _group_state(w, "durable")
    with BackgroundCluster(1, configs=configs) as c:
        with WireClient(c.bootstrap) as w:
            deadline = time.monotonic() + 10
            while True:
                d = _describe(w, ["durable"]).groups[0]
                if d.error_code == 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert d.error_code == 0, d.error_message
            assert (d.group_epoch, d.assignment_epoch, d.group_state) == (
                before.group_epoch,
                before.assignment_epoch,
                "Stable",
            )
            assert [m.member_id for m in d.members] == [m.member_id for m in before.members]
            for m in (a, b):
                m.w = w
                held = set(m.owned)
                assert m.heartbeat().error_code == 0 and m.owned == held
            assert _fetch(w, "durable", b.member_id, b.epoch) == (0, 5)


def test_an_emptied_groups_offsets_and_the_group_expire_on_the_coordinators_timer() -> None:
    """On a running broker the clean-up is a timer (every offsets.retention.check.interval.ms):
    once the group is empty and its offsets older than offsets.retention.minutes, both go
    with no request in between; a group with a member stays."""
    configs = {
        "offsets.topic.num.partitions": "1",
        "offsets.retention.minutes": "1",
        "offsets.retention.check.interval.ms": "100",
        "group.consumer.session.timeout.ms": "600000",
        "group.consumer.assignment.interval.ms": "0",
    }
    with BackgroundCluster(1, configs=configs) as c, WireClient(c.bootstrap) as w:
        assert c.cluster is not None
        md, node = c.cluster.metadata, c.cluster.brokers[0].node_id
        gc = c.cluster.brokers[0].group_coordinator
        c.call(lambda: (md.create_topic("orders", 1, 1), gc.ensure_offsets_topic()))
        ids = _topic_ids(c)
        leaving, staying = Member(w, "leaving", ["orders"], ids), Member(
            w, "staying", ["orders"], ids
        )
        for m in (leaving, staying):
            m.heartbeat()
            assert _commit(w, m.group, m.member_id, m.epoch, 42) == 0
        leaving.leave()
        time.sleep(0.5)  # several checks: nothing is old enough yet
        assert _fetch(w, "leaving", None, -1) == (0, 42)

        def listed() -> set[str]:
            r = w.call(LIST, 5, ListGroupsRequest(types_filter=[]))
            return {g.group_id for g in r.groups}

        assert listed() == {"leaving", "staying"}
        c.call(lambda: c.cluster.faults.skew_clock(node, 61_000))  # type: ignore[union-attr]
        deadline = time.monotonic() + 10
        while "leaving" in listed():
            assert time.monotonic() < deadline, "the empty group did not expire"
            time.sleep(0.05)
        assert _fetch(w, "leaving", None, -1) == (0, -1)
        # A member subscribed to the topic keeps the group and its offset.
        assert listed() == {"staying"}
        assert _fetch(w, "staying", None, -1) == (0, 42)
