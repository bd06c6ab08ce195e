"""Streams groups (KIP-1071): the sticky task assignor and the topology's configuration as
functions, then StreamsGroupHeartbeat and StreamsGroupDescribe over real sockets with the
generated codecs (join with a topology, internal topics created, statuses, revocation
before reassignment, fencing, leave, session expiry, ListGroups, offsets with member
epochs, DeleteGroups), and the group rebuilt from its records in ``__consumer_offsets`` by
the coordinator that takes over."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from broker_helpers import WireClient, assert_kafka_reads_coordinator_records, set_group_configs
from kafkagen.generated.api_versions import ApiVersionsRequest
from kafkagen.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest as ConsumerHbReq,
)
from kafkagen.generated.delete_groups import DeleteGroupsRequest
from kafkagen.generated.describe_groups import DescribeGroupsRequest
from kafkagen.generated.list_groups import ListGroupsRequest
from kafkagen.generated.offset_commit import OffsetCommitRequest
from kafkagen.generated.streams_group_describe import StreamsGroupDescribeRequest as DescReq
from kafkagen.generated.streams_group_heartbeat import StreamsGroupHeartbeatRequest as HbReq
from kafkagen.generated.streams_group_topology_description_update import (
    StreamsGroupTopologyDescriptionUpdateRequest as TopologyUpdate,
)
from kafkagen.generated.update_features import UpdateFeaturesRequest
from kafkagen.pytest_plugin import KafkaCluster, SyncControl
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.broker.group.sticky_task_assignor import AssignorMember, Tasks, assign
from kafkagen.runtime.broker.group.streams_group import (
    InternalTopic,
    MemberState,
    Status,
    StreamsGroup,
    StreamsMember,
    Subtopology,
    Topology,
    configure,
    java_hash_order,
)
from kafkagen.runtime.broker.group.streams_group_records import (
    decode_group,
    decode_state_key,
    encode_group,
    encode_member,
)
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.handlers.api_93_streams_group_topology_description_update import NO_PLUGIN
from kafkagen.runtime.records import iter_batches
from kafkagen.runtime.topic_partition import TopicPartition

pytestmark = pytest.mark.timeout(120)
HB, DESCRIBE, LIST, COMMIT, DELETE, TOPOLOGY_UPDATE = 88, 89, 16, 8, 42, 93
SESSION_MS = 1500

# -- the assignor ---------------------------------------------------------------------


def _members(n: int, processes: int | None = None) -> dict[str, AssignorMember]:
    return {f"m{i}": AssignorMember(f"p{i % (processes or n)}", Tasks()) for i in range(n)}


def _active(out: dict[str, Tasks]) -> dict[str, set[tuple[str, int]]]:
    return {m: {(s, p) for s, ps in t.active.items() for p in ps} for m, t in out.items()}


@pytest.mark.parametrize("members,tasks", [(2, 8), (3, 8), (4, 3), (5, 17)])
def test_assignor_gives_every_task_once_and_balances(members: int, tasks: int) -> None:
    out = assign(_members(members), {"0": tasks, "1": 2}, 0)
    active = _active(out)
    every = [t for ts in active.values() for t in ts]
    assert sorted(every) == sorted({("0", p) for p in range(tasks)} | {("1", 0), ("1", 1)})
    sizes = [len(ts) for ts in active.values()]
    assert max(sizes) - min(sizes) <= 1


def test_assignor_is_sticky_when_a_member_joins() -> None:
    first = assign(_members(2), {"0": 6}, 0)
    members = {m: AssignorMember(a.process_id, first[m]) for m, a in _members(2).items()} | {
        "m2": AssignorMember("p2", Tasks())
    }
    second = _active(assign(members, {"0": 6}, 0))
    before = _active(first)
    assert [len(second[m]) for m in ("m0", "m1", "m2")] == [2, 2, 2]
    # Only what the newcomer needs moves: the old members keep a subset of what they had.
    assert second["m0"] <= before["m0"] and second["m1"] <= before["m1"]


def test_a_member_keeping_half_keeps_a_slice_of_every_subtopology() -> None:
    # m0 held all four tasks of two subtopologies; m1 joins. As Kafka 4.4.0 answered in
    # `kafkagen conformance --only group-standby-replicas`, m0 keeps partition 0 of both
    # subtopologies, not the whole of subtopology 0.
    everything = Tasks(active={"0": {0, 1}, "1": {0, 1}})
    members = {"m0": AssignorMember("p0", everything), "m1": AssignorMember("p1", Tasks())}
    out = _active(assign(members, {"0": 2, "1": 2}, 0))
    assert out == {"m0": {("0", 0), ("1", 0)}, "m1": {("0", 1), ("1", 1)}}


def test_standbys_only_for_stateful_subtopologies() -> None:
    # Subtopology 0 is stateless (no changelog): Kafka plans no standby for its tasks.
    out = assign(_members(2), {"0": 2, "1": 2}, 1, stateful={"1"})
    standby = {(s, p) for t in out.values() for s, ps in t.standby.items() for p in ps}
    assert standby == {("1", 0), ("1", 1)}
    for t in out.values():
        assert not set(t.standby.get("1", ())) & set(t.active.get("1", ()))


def test_standbys_never_share_a_process_with_their_active() -> None:
    members = _members(4, processes=2)  # m0, m2 in p0; m1, m3 in p1
    out = assign(members, {"0": 4, "1": 4}, 1)
    for m, tasks in out.items():
        for sub, ps in tasks.standby.items():
            for p in ps:
                owner = next(o for o, t in out.items() if p in t.active.get(sub, ()))
                assert members[owner].process_id != members[m].process_id
    assert sum(len(ps) for t in out.values() for ps in t.standby.values()) == 8


def test_standbys_are_left_out_when_one_process_is_all_there_is() -> None:
    out = assign(_members(3, processes=1), {"0": 3}, 2)
    assert all(not t.standby for t in out.values())


def test_standbys_go_to_members_reporting_the_tasks_state() -> None:
    # m0 holds the one task; m1 and m2 (other processes, equal load) could take the standby.
    plain = assign(_members(3), {"0": 1}, 1)
    assert plain["m1"].standby == {"0": {0}}  # no state reported: the first by id
    members = _members(3)
    members["m2"] = AssignorMember("p2", Tasks(), {"0": {0: 50}})
    assert assign(members, {"0": 1}, 1)["m2"].standby == {"0": {0}}
    # Both report it: the higher offset (more of the state) wins.
    members["m1"] = AssignorMember("p1", Tasks(), {"0": {0: 80}})
    out = assign(members, {"0": 1}, 1)
    assert out["m1"].standby == {"0": {0}} and not out["m2"].standby
    # Nobody gets warm-up tasks: Kafka 4.4's assignor plans none either.
    assert all(not t.warmup for t in out.values())


# -- the topology's configuration -----------------------------------------------------


def _word_count(repartition_partitions: int = 0) -> Topology:
    return Topology(
        0,
        (
            Subtopology("0", ("words",), ("app-rep",), (), (), ()),
            Subtopology(
                "1",
                (),
                (),
                (InternalTopic("app-changelog", 0, 1),),
                (InternalTopic("app-rep", repartition_partitions, 1),),
                (),
            ),
        ),
    )


def test_configure_counts_tasks_and_lists_internal_topics() -> None:
    c = configure(_word_count(), {"words": 4})
    assert c.status is not None and c.status[0] is Status.MISSING_INTERNAL_TOPICS
    assert {n: p for n, (p, _) in c.to_create.items()} == {"app-changelog": 4, "app-rep": 4}
    ready = configure(_word_count(), {"words": 4, "app-rep": 4, "app-changelog": 4})
    assert ready.task_counts == {"0": 4, "1": 4} and ready.status is None


def test_configure_reports_missing_and_misfit_topics() -> None:
    missing = configure(_word_count(), {})
    assert missing.status is not None and missing.status[0] is Status.MISSING_SOURCE_TOPICS
    assert "words" in missing.status[1]
    wrong = configure(_word_count(), {"words": 4, "app-rep": 2, "app-changelog": 4})
    assert wrong.status is not None
    assert wrong.status[0] is Status.INCORRECTLY_PARTITIONED_TOPICS
    joined = Topology(0, (Subtopology("0", ("a", "b"), (), (), (), (("a", "b"),)),))
    misfit = configure(joined, {"a": 2, "b": 3})
    assert misfit.status is not None
    assert misfit.status[0] is Status.INCORRECTLY_PARTITIONED_TOPICS


def test_missing_internal_topics_are_named_in_kafkas_order_three_at_most() -> None:
    """Kafka 4.4 collects the missing topics in a Java HashMap and names the first three
    it iterates; the orders below are what Java 17's HashMap gave for these names (two
    with one hash, and more than twelve, so its table grew)."""
    names = (
        "apple banana cherry date elderberry fig grape kc07101d-1-rep kc07101d-1-changelog "
        "a b c dd ee ff Aa BB xyz-0-rep xyz-1-changelog zz résumé 日本"
    ).split()
    java = (
        "banana,date,dd,ee,ff,Aa,BB,zz,cherry,a,b,xyz-1-changelog,c,résumé,fig,"
        "kc07101d-1-changelog,kc07101d-1-rep,grape,日本,elderberry,apple,xyz-0-rep"
    ).split(",")
    assert java_hash_order(names) == java
    c = configure(_word_count(), {"words": 4})
    assert c.status == (
        Status.MISSING_INTERNAL_TOPICS,
        "Internal topics are missing: app-rep, app-changelog",
    )
    changelogs = tuple(InternalTopic(f"store-{i}-changelog", 0, 1) for i in range(5))
    many = Topology(0, (Subtopology("0", ("words",), (), changelogs, (), ()),))
    status = configure(many, {"words": 2}).status
    assert status is not None
    named = status[1].removeprefix("Internal topics are missing: ")
    assert (
        named == "store-3-changelog, store-2-changelog, store-0-changelog and 2 additional topics"
    )


# -- over the wire --------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster() -> Iterator[BackgroundCluster]:
    with BackgroundCluster(
        1,
        configs={
            "offsets.topic.num.partitions": "1",
            "group.streams.session.timeout.ms": str(SESSION_MS),
            "group.streams.heartbeat.interval.ms": "200",
            # Low bounds, for a group's own configs to be set near these.
            "group.streams.min.heartbeat.interval.ms": "100",
            "group.streams.min.session.timeout.ms": "1000",
            "group.streams.initial.rebalance.delay.ms": "0",
            "group.streams.assignment.interval.ms": "0",
            "group.streams.num.standby.replicas": "1",
        },
    ) as c:
        assert c.cluster is not None
        md = c.cluster.metadata
        gc = c.cluster.brokers[0].group_coordinator

        def setup() -> None:
            md.create_topic("words", 4, 1)
            gc.ensure_offsets_topic()

        c.call(setup)
        yield c


@pytest.fixture()
def w(cluster: BackgroundCluster) -> Iterator[WireClient]:
    with WireClient(cluster.bootstrap) as client:
        yield client


def _topology(app: str, source: str = "words") -> HbReq.Topology:
    info = HbReq.TopicInfo
    return HbReq.Topology(
        epoch=0,
        subtopologies=[
            HbReq.Subtopology(
                subtopology_id="0",
                source_topics=[source],
                repartition_sink_topics=[f"{app}-rep"],
            ),
            HbReq.Subtopology(
                subtopology_id="1",
                state_changelog_topics=[info(name=f"{app}-changelog", replication_factor=1)],
                repartition_source_topics=[info(name=f"{app}-rep", replication_factor=1)],
            ),
        ],
    )


def _tasks(ids: Any) -> set[tuple[str, int]]:
    return {(t.subtopology_id, p) for t in ids or () for p in t.partitions}


def _wire(tasks: set[tuple[str, int]]) -> list[HbReq.TaskIds]:
    by_sub: dict[str, list[int]] = {}
    for s, p in sorted(tasks):
        by_sub.setdefault(s, []).append(p)
    return [HbReq.TaskIds(subtopology_id=s, partitions=ps) for s, ps in by_sub.items()]


class Member:
    """A streams member that heartbeats as Kafka Streams does: it drops revoked tasks at
    once and reports what it owns after every change."""

    def __init__(self, w: WireClient, group: str, topology: HbReq.Topology) -> None:
        self.w, self.group, self.topology = w, group, topology
        self.member_id = str(uuid.uuid4())
        self.process_id = str(uuid.uuid4())
        self.epoch = 0
        self.active: set[tuple[str, int]] = set()
        self.standby: set[tuple[str, int]] = set()
        self.report = True

    def heartbeat(self, **override: Any) -> Any:
        joining = self.epoch == 0
        req = HbReq(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=self.epoch,
            rebalance_timeout_ms=30_000 if joining else -1,
            topology=self.topology if joining else None,
            process_id=self.process_id if joining else None,
            active_tasks=_wire(self.active) if self.report else None,
            standby_tasks=_wire(self.standby) if self.report else None,
            warmup_tasks=[] if self.report else None,
        )
        for k, v in override.items():
            setattr(req, k, v)
        r = self.w.call(HB, 0, req)
        if r.error_code:
            return r
        self.report = False
        if r.active_tasks is not None:
            self.active, self.standby = _tasks(r.active_tasks), _tasks(r.standby_tasks)
            self.report = True
        self.epoch = r.member_epoch
        return r


def _converge(members: list[Member], rounds: int = 20) -> None:
    for _ in range(rounds):
        for m in members:
            assert m.heartbeat().error_code == 0
    assert len({m.epoch for m in members}) == 1


def test_join_creates_internal_topics_then_assigns(
    cluster: BackgroundCluster, w: WireClient
) -> None:
    m = Member(w, "app-join", _topology("app-join"))
    first = m.heartbeat()
    assert first.error_code == 0 and first.member_epoch > 0
    assert [s.status_code for s in first.status] == [Status.MISSING_INTERNAL_TOPICS]
    assert _tasks(first.active_tasks) == set()
    assert cluster.cluster is not None
    md = cluster.cluster.metadata
    created = cluster.call(lambda: {n: len(md.topics[n].partitions) for n in md.topics})
    assert created["app-join-rep"] == 4 and created["app-join-changelog"] == 4
    second = m.heartbeat()
    assert second.status == [] and second.member_epoch > first.member_epoch
    assert m.active == {(s, p) for s in "01" for p in range(4)}


def test_missing_source_topic_is_a_status(w: WireClient) -> None:
    m = Member(w, "app-missing", _topology("app-missing", source="absent"))
    r = m.heartbeat()
    assert r.error_code == 0
    assert [s.status_code for s in r.status] == [Status.MISSING_SOURCE_TOPICS]
    assert "absent" in r.status[0].status_detail
    assert _tasks(r.active_tasks) == set()


def test_a_task_moves_only_after_its_owner_revoked_it(w: WireClient) -> None:
    a = Member(w, "app-move", _topology("app-move"))
    _converge([a])
    assert len(a.active) == 8
    b = Member(w, "app-move", _topology("app-move"))
    r = b.heartbeat()
    assert r.error_code == 0 and b.active == set()  # a still holds everything
    a.heartbeat()  # a is told to give half up
    assert len(a.active) == 4
    held = set(a.active)
    b.heartbeat()
    assert b.active == set()  # a has not said yet that it let them go
    a.heartbeat()  # it reports the revocation
    b.heartbeat()
    assert b.active.isdisjoint(held) and len(b.active) == 4
    _converge([a, b])
    assert a.active.isdisjoint(b.active) and len(a.active | b.active) == 8
    # One standby per stateful task (subtopology 1 keeps a store; 0 has no state),
    # never on the member (another process) that runs it.
    assert a.standby == {t for t in b.active if t[0] == "1"}
    assert b.standby == {t for t in a.active if t[0] == "1"}


def test_errors_unknown_member_fenced_epoch_and_bad_requests(w: WireClient) -> None:
    m = Member(w, "app-errors", _topology("app-errors"))
    _converge([m])
    ghost = m.heartbeat(member_id="nobody", member_epoch=1)
    assert ghost.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    fenced = m.heartbeat(member_epoch=m.epoch + 5)
    assert fenced.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    no_topology = Member(w, "app-errors", _topology("app-errors")).heartbeat(topology=None)
    assert no_topology.error_code == ErrorCode.INVALID_REQUEST
    newer = m.heartbeat(
        member_epoch=0,
        topology=HbReq.Topology(epoch=1, subtopologies=[]),
        rebalance_timeout_ms=1000,
        active_tasks=[],
        standby_tasks=[],
        warmup_tasks=[],
    )
    assert newer.error_code == ErrorCode.INVALID_REQUEST  # as Kafka 4.4: no topology updates
    changelog = _topology("app-errors")
    changelog.subtopologies[1].state_changelog_topics[0].partitions = 3
    bad = Member(w, "app-bad", changelog).heartbeat()
    assert bad.error_code == ErrorCode.STREAMS_INVALID_TOPOLOGY
    pointing = _topology("app-bad")
    pointing.subtopologies[0].copartition_groups = [HbReq.CopartitionGroup(source_topics=[7])]
    nowhere = Member(w, "app-bad", pointing).heartbeat()
    assert nowhere.error_code == ErrorCode.STREAMS_INVALID_TOPOLOGY


def test_leave_and_session_expiry_free_the_tasks(w: WireClient) -> None:
    a = Member(w, "app-leave", _topology("app-leave"))
    b = Member(w, "app-leave", _topology("app-leave"))
    _converge([a, b])
    r = a.heartbeat(member_epoch=-1)
    assert r.error_code == 0 and r.member_epoch == -1
    _converge([b])
    assert len(b.active) == 8
    c = Member(w, "app-leave", _topology("app-leave"))
    _converge([b, c])
    deadline = time.monotonic() + SESSION_MS / 1000 * 4
    while time.monotonic() < deadline and len(b.active) < 8:
        time.sleep(0.2)
        assert b.heartbeat().error_code == 0  # c is silent: its session ends
    assert len(b.active) == 8


def test_a_groups_standby_count_is_bounded_by_the_brokers_maximum(w: WireClient) -> None:
    """`streams.num.standby.replicas` above `group.streams.max.standby.replicas` (2) is
    refused with Kafka 4.4's error and words; the maximum itself is taken."""
    from kafkagen.generated.incremental_alter_configs import IncrementalAlterConfigsRequest as I

    def alter(value: str) -> Any:
        config = I.AlterableConfig(
            name="streams.num.standby.replicas", config_operation=0, value=value
        )
        resource = I.AlterConfigsResource(
            resource_type=32, resource_name="app-bound", configs=[config]
        )
        (r,) = w.call(44, 1, I(resources=[resource])).responses
        return r

    refused = alter("3")
    assert refused.error_code == ErrorCode.INVALID_CONFIG
    assert refused.error_message == "streams.num.standby.replicas must be less than or equal to 2"
    assert alter("2").error_code == 0


def test_a_groups_own_configs_override_the_brokers(w: WireClient) -> None:
    """`streams.*` group configs: the heartbeat interval members are told, the session
    after which a silent member goes, and the standby count, whose change moves the group
    epoch at the next heartbeat (Kafka 4.4 compares it with the last target's)."""
    a = Member(w, "app-own", _topology("app-own"))
    b = Member(w, "app-own", _topology("app-own"))
    _converge([a, b])
    assert a.heartbeat().heartbeat_interval_ms == 200  # the broker's
    # One standby of each of subtopology 1's four tasks; the stateless ones have none.
    assert {t for m in (a, b) for t in m.standby} == {("1", p) for p in range(4)}
    epoch = a.epoch
    set_group_configs(
        w,
        "app-own",
        streams_heartbeat_interval_ms="700",
        streams_num_standby_replicas="0",
        streams_session_timeout_ms="6000",
    )
    r = a.heartbeat()
    assert r.heartbeat_interval_ms == 700
    _converge([a, b])
    assert a.epoch > epoch
    assert a.standby == b.standby == set() and len(a.active | b.active) == 8
    # b falls silent: after the broker's 1.5 s session it is still a member, after the
    # group's 6 s it is gone.
    time.sleep(SESSION_MS / 1000 * 2)
    assert a.heartbeat().error_code == 0
    assert len(a.active) == 4
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and len(a.active) < 8:
        time.sleep(0.3)
        assert a.heartbeat().error_code == 0
    assert len(a.active) == 8


def test_describe_list_and_commit(w: WireClient) -> None:
    m = Member(w, "app-describe", _topology("app-describe"))
    _converge([m])
    d = w.call(DESCRIBE, 1, DescReq(group_ids=["app-describe", "no-such-group"]))
    group, unknown = d.groups
    assert group.error_code == 0 and group.group_state == "Stable"
    assert group.assignor_name == "sticky" and group.topology.epoch == 0
    assert [s.subtopology_id for s in group.topology.subtopologies] == ["0", "1"]
    # Configured: the internal topics with the partition counts they were given.
    store = group.topology.subtopologies[1]
    assert [t.partitions for t in store.state_changelog_topics] == [4]
    assert [t.partitions for t in store.repartition_source_topics] == [4]
    (member,) = group.members
    assert member.member_id == m.member_id and member.process_id == m.process_id
    assert _tasks(member.assignment.active_tasks) == m.active
    assert unknown.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    listed = w.call(LIST, 5, ListGroupsRequest(types_filter=["streams"]))
    assert ("app-describe", "streams", "Stable") in {
        (g.group_id, g.group_type, g.group_state) for g in listed.groups
    }
    part = OffsetCommitRequest.OffsetCommitRequestPartition
    topic = OffsetCommitRequest.OffsetCommitRequestTopic(
        name="words", partitions=[part(partition_index=0, committed_offset=5)]
    )
    good = w.call(
        COMMIT,
        9,
        OffsetCommitRequest(
            group_id="app-describe",
            generation_id_or_member_epoch=m.epoch,
            member_id=m.member_id,
            topics=[topic],
        ),
    )
    assert good.topics[0].partitions[0].error_code == 0
    stale = w.call(
        COMMIT,
        9,
        OffsetCommitRequest(
            group_id="app-describe",
            generation_id_or_member_epoch=m.epoch + 3,
            member_id=m.member_id,
            topics=[topic],
        ),
    )
    assert stale.topics[0].partitions[0].error_code == ErrorCode.STALE_MEMBER_EPOCH


def test_reported_task_offsets_are_kept_and_described(w: WireClient) -> None:
    m = Member(w, "app-offsets", _topology("app-offsets"))
    _converge([m])
    epoch = m.epoch
    offset = HbReq.TaskOffset
    r = m.heartbeat(
        task_offsets=[offset(subtopology_id="1", partition=2, offset=40)],
        task_end_offsets=[offset(subtopology_id="1", partition=2, offset=90)],
    )
    assert r.error_code == 0 and r.member_epoch == epoch  # offsets move no epoch
    assert (r.acceptable_recovery_lag_legacy, r.task_offset_interval_ms) == (10_000, 60_000)
    assert m.heartbeat().error_code == 0  # null offsets: the last ones stay

    def described() -> tuple[list[tuple[str, int, int]], list[tuple[str, int, int]]]:
        (member,) = w.call(DESCRIBE, 1, DescReq(group_ids=["app-offsets"])).groups[0].members
        assert not _tasks(member.assignment.warmup_tasks)
        assert not _tasks(member.target_assignment.warmup_tasks)
        return tuple(  # type: ignore[return-value]
            [(o.subtopology_id, o.partition, o.offset) for o in kind]
            for kind in (member.task_offsets, member.task_end_offsets)
        )

    assert described() == ([("1", 2, 40)], [("1", 2, 90)])
    assert m.heartbeat(task_offsets=[]).error_code == 0  # a new list replaces the last
    assert described() == ([], [("1", 2, 90)])


def test_a_new_target_waits_for_the_assignment_interval() -> None:
    configs = {
        "offsets.topic.num.partitions": "1",
        "group.streams.initial.rebalance.delay.ms": "0",
        "group.streams.assignment.interval.ms": "5000",
    }
    with BackgroundCluster(1, configs=configs) as c:
        assert c.cluster is not None
        md, gc = c.cluster.metadata, c.cluster.brokers[0].group_coordinator
        c.call(lambda: (md.create_topic("words", 4, 1), gc.ensure_offsets_topic()))
        with WireClient(c.bootstrap) as w:
            a = Member(w, "app-interval", _topology("app-interval"))
            _converge([a], rounds=3)  # the group's first target is computed at once
            assert len(a.active) == 8
            b = Member(w, "app-interval", _topology("app-interval"))
            r = b.heartbeat()
            assert r.error_code == 0 and not b.active
            delayed = (5, "Assignment delayed due to the configured assignment interval.")
            assert delayed in [(st.status_code, st.status_detail) for st in r.status]
            d = _described(w, "app-interval")
            assert (d["groupState"], d["assignmentEpoch"]) == ("Assigning", a.epoch)
            # The coordinator computes it when the interval is over, without a heartbeat.
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                d = _described(w, "app-interval")
                if d["assignmentEpoch"] == d["groupEpoch"]:
                    break
                time.sleep(0.1)
            assert d["assignmentEpoch"] == d["groupEpoch"] > a.epoch
            _converge([a, b])
            assert len(a.active) == len(b.active) == 4


def _describe_update(group: str, member: str) -> TopologyUpdate:
    return TopologyUpdate(
        group_id=group,
        member_id=member,
        topology_epoch=0,
        topology_description=TopologyUpdate.TopologyDescription(subtopologies=[], global_stores=[]),
    )


def test_topology_descriptions_are_not_kept_as_on_kafka_without_a_plugin(w: WireClient) -> None:
    m = Member(w, "app-description", _topology("app-description"))
    _converge([m])
    r = w.call(TOPOLOGY_UPDATE, 0, _describe_update("app-description", m.member_id))
    assert (r.error_code, r.error_message) == (ErrorCode.UNSUPPORTED_VERSION, NO_PLUGIN)
    asked, unasked = (
        w.call(
            DESCRIBE, 1, DescReq(group_ids=["app-description"], include_topology_description=x)
        ).groups[0]
        for x in (True, False)
    )
    assert asked.topology_description is None and asked.topology_description_status == 1
    assert unasked.topology_description is None and unasked.topology_description_status == 0
    assert m.heartbeat().error_code == 0  # the member is untouched


def test_delete_groups_refuses_a_live_streams_group_and_deletes_an_empty_one(
    cluster: BackgroundCluster, w: WireClient
) -> None:
    m = Member(w, "app-delete", _topology("app-delete"))
    _converge([m])
    busy = w.call(DELETE, 2, DeleteGroupsRequest(groups_names=["app-delete"]))
    assert busy.results[0].error_code == ErrorCode.NON_EMPTY_GROUP
    assert m.heartbeat(member_epoch=-1).error_code == 0
    done = w.call(DELETE, 2, DeleteGroupsRequest(groups_names=["app-delete"]))
    assert done.results[0].error_code == 0
    gone = w.call(DESCRIBE, 1, DescReq(group_ids=["app-delete"]))
    assert gone.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    # Its records end in tombstones: a coordinator loading the partition finds no group.
    written = [
        (key, value)
        for key, value in _records_of(cluster, 0)
        if decode_state_key(key)[0] == "app-delete"  # type: ignore[index]
    ]
    assert written and _replayed(written) == {}


def test_a_streams_group_id_is_not_a_consumer_group(w: WireClient) -> None:
    Member(w, "app-namespace", _topology("app-namespace")).heartbeat()
    r = w.call(
        68,
        0,
        ConsumerHbReq(
            group_id="app-namespace",
            member_id="",
            member_epoch=0,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=["words"],
            topic_partitions=[],
        ),
    )
    assert r.error_code == ErrorCode.GROUP_ID_NOT_FOUND


# -- the group's records and a coordinator that moves ------------------------------------


def _records_of(
    cluster: BackgroundCluster | KafkaCluster, node: int, *, settled: bool = True
) -> list[tuple[bytes, bytes | None]]:
    """The streams-group records (key, value or None) in ``__consumer_offsets``-0 of
    ``node`` below its high watermark; ``settled`` waits until that is the log end (all
    replicated), else they are the records written at this moment."""

    def read() -> list[tuple[bytes, bytes | None]] | None:
        assert cluster.cluster is not None
        rm = cluster.cluster.brokers[node].replica_manager
        partition = rm.partitions[TopicPartition("__consumer_offsets", 0)]
        if settled and partition.high_watermark < partition.log.log_end_offset:
            return None
        return [
            (bytes(r.key), None if r.value is None else bytes(r.value))
            for b in partition.log.batches
            if b.last_offset < partition.high_watermark
            for batch in iter_batches(b.data, verify_crc=False)
            if not batch.is_control
            for r in batch
            if r.key is not None and decode_state_key(bytes(r.key)) is not None
        ]

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        records = cluster.call(read)
        if records is not None:
            return list(records)
        time.sleep(0.05)
    raise AssertionError("the offsets topic's records were not replicated within 10 s")


def _replayed(records: list[tuple[bytes, bytes | None]]) -> dict[tuple[str, int], bytes]:
    """(member id, record type) -> the last value, as a coordinator replays the records."""
    state: dict[tuple[str, int], bytes] = {}
    for key, value in records:
        _, member_id, record_type = decode_state_key(key)  # type: ignore[misc]
        if value is None:
            state.pop((member_id, record_type), None)
        else:
            state[member_id, record_type] = value
    return state


def _described(w: WireClient, group_id: str) -> dict[str, Any]:
    out: dict[str, Any] = w.call(DESCRIBE, 1, DescReq(group_ids=[group_id])).to_json(1)
    (group,) = out["groups"]
    assert group["errorCode"] == 0
    return dict(group)


@pytest.mark.slow
@pytest.mark.kafka_cluster(
    brokers=3,
    configs={
        "offsets.topic.num.partitions": 1,
        "offsets.topic.replication.factor": 3,
        "group.streams.session.timeout.ms": 10_000,
        "group.streams.heartbeat.interval.ms": 200,
        "group.streams.initial.rebalance.delay.ms": 0,
        "group.streams.assignment.interval.ms": 0,
        "group.streams.num.standby.replicas": 1,
    },
)
def test_a_new_coordinator_rebuilds_the_streams_group_from_its_records(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl
) -> None:
    kafka_cluster.create_topic("words", 4, 3)
    brokers = kafka_cluster.cluster.brokers
    kafka_cluster.call(brokers[0].group_coordinator.ensure_offsets_topic)
    addresses = kafka_cluster.bootstrap_servers.split(",")
    _, old = kafka_control.coordinator_of("moving-app")
    with WireClient(addresses[old]) as w:
        a, b, c = (Member(w, "moving-app", _topology("moving-app")) for _ in range(3))
        _converge([a, b, c])
        assert c.heartbeat(member_epoch=-1).error_code == 0  # c leaves: its records go
        _converge([a, b])
        assert a.active and b.active and a.active.isdisjoint(b.active)
        before = _described(w, "moving-app")
    records = _records_of(kafka_cluster, old)
    # The state as written decodes to the group the coordinator holds.
    assert any(v is None for _, v in records)  # c's tombstones
    group, _ = decode_group("moving-app", _replayed(records))
    assert sorted(group.members) == sorted([a.member_id, b.member_id])
    assert {m.member_id: m.member_epoch for m in group.members.values()} == {
        a.member_id: a.epoch,
        b.member_id: b.epoch,
    }
    kafka_control.stop_broker(old)
    _, new = kafka_control.coordinator_of("moving-app")
    assert new not in (old, -1)
    with WireClient(addresses[new]) as w:
        for m in (a, b):
            m.w = w
            epoch, active, standby = m.epoch, set(m.active), set(m.standby)
            r = m.heartbeat()
            # The same epoch and tasks: no rebalance at the new coordinator.
            assert r.error_code == 0 and r.member_epoch == epoch
            assert (m.active, m.standby) == (active, standby)
        _converge([a, b], rounds=3)
        after = _described(w, "moving-app")
        assert after == before
        # The group goes on: a member that leaves here frees its tasks for the other.
        assert b.heartbeat(member_epoch=-1).error_code == 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(a.active) < 8:
            assert a.heartbeat().error_code == 0
            time.sleep(0.05)
        assert len(a.active) == 8  # 4 partitions x 2 subtopologies


@pytest.mark.slow
@pytest.mark.kafka_cluster(
    brokers=3,
    configs={
        "offsets.topic.num.partitions": 1,
        "offsets.topic.replication.factor": 3,
        "group.streams.initial.rebalance.delay.ms": 0,
    },
)
def test_a_heartbeat_is_answered_once_its_records_are_written(
    kafka_cluster: KafkaCluster, kafka_control: SyncControl
) -> None:
    kafka_cluster.create_topic("words", 4, 3)
    kafka_cluster.call(kafka_cluster.cluster.brokers[0].group_coordinator.ensure_offsets_topic)
    addresses = kafka_cluster.bootstrap_servers.split(",")
    _, leader = kafka_control.coordinator_of("durable-app")
    # The followers' slow disks hold every write of the group (acks=all) for 1.5 s.
    for follower in {0, 1, 2} - {leader}:
        kafka_control.faults.slow_disk(follower, 1500)

    def written(member_id: str) -> dict[int, bytes | None]:
        """Record type -> the member's last value below the high watermark (None: a
        tombstone), read at once."""
        out: dict[int, bytes | None] = {}
        for key, value in _records_of(kafka_cluster, leader, settled=False):
            _, mid, record_type = decode_state_key(key)  # type: ignore[misc]
            if mid == member_id:
                out[record_type] = value
        return out

    try:
        with WireClient(addresses[leader]) as w:
            static = Member(w, "durable-app", _topology("durable-app"))
            dynamic = Member(w, "durable-app", _topology("durable-app"))
            start = time.monotonic()
            assert static.heartbeat(instance_id="s").error_code == 0
            assert time.monotonic() - start >= 1.0
            # Answered: its metadata and assignment records are already replicated.
            joined = written(static.member_id)
            assert len(joined) == 3 and all(v is not None for v in joined.values())
            assert dynamic.heartbeat().error_code == 0
            assert len(written(dynamic.member_id)) == 3
            # A leave (its tombstones) and a static leave (its epoch -2) likewise.
            assert dynamic.heartbeat(member_epoch=-1).error_code == 0
            assert set(written(dynamic.member_id).values()) == {None}
            before = written(static.member_id)
            assert static.heartbeat(member_epoch=-2, instance_id="s").error_code == 0
            after = written(static.member_id)
            assert after != before and all(v is not None for v in after.values())
            group, _ = decode_group(
                "durable-app", _replayed(_records_of(kafka_cluster, leader, settled=False))
            )
            assert group.members[static.member_id].member_epoch == -2
    finally:
        kafka_control.faults.heal()


def _sample_group() -> StreamsGroup:
    topology = Topology(
        3,
        (
            Subtopology("0", ("a", "b"), ("rep",), (), (), (("a", "b"),)),
            Subtopology(
                "1",
                (),
                (),
                (InternalTopic("cl", 0, 1, (("cleanup.policy", "compact"),)),),
                (InternalTopic("rep", 4, -1),),
                (("rep",),),
            ),
        ),
    )
    group = StreamsGroup("g", group_epoch=7, assignment_epoch=6, topology=topology)
    group.members["m1"] = StreamsMember(
        "m1",
        "instance-1",
        "rack",
        "client",
        "/127.0.0.1",
        "process",
        30_000,
        3,
        user_endpoint=("127.0.0.1", 8080),
        client_tags={"zone": "z1"},
        member_epoch=6,
        previous_member_epoch=5,
        state=MemberState.UNREVOKED_TASKS,
        assigned=Tasks({"0": {0, 1}}, {"1": {2}}, {}),
        pending_revocation=Tasks({"1": {3}}, {}, {"0": {4}}),
    )
    group.target["m1"] = Tasks({"0": {0, 1, 2}}, {"1": {0}}, {"1": {1}})
    return group


def test_the_records_round_trip_a_group() -> None:
    """Every field the coordinator keeps comes back from its records."""
    group = _sample_group()
    topology = group.topology
    records = {**encode_group(group), **encode_member(group, group.members["m1"])}
    state = {}
    for key, value in records.items():
        group_id, member_id, record_type = decode_state_key(key)  # type: ignore[misc]
        assert group_id == "g"
        state[member_id, record_type] = value
    assert len(state) == 6  # metadata, target metadata, topology, three of the member
    back, stored_hash = decode_group("g", state)
    assert stored_hash == 0  # the topology was never configured
    assert (back.group_epoch, back.assignment_epoch, back.topology) == (7, 6, topology)
    fields = [f for f in StreamsMember.__slots__ if f not in ("session", "revocation")]
    assert [getattr(back.members["m1"], f) for f in fields] == [
        getattr(group.members["m1"], f) for f in fields
    ]
    assert back.target == group.target


@pytest.mark.slow
def test_kafkas_group_coordinator_classes_read_the_records_as_written() -> None:
    group = _sample_group()
    records = {**encode_group(group), **encode_member(group, group.members["m1"])}
    names = {
        17: "StreamsGroupMetadata",
        19: "StreamsGroupMemberMetadata",
        20: "StreamsGroupTargetAssignmentMetadata",
        21: "StreamsGroupTargetAssignmentMember",
        22: "StreamsGroupCurrentMemberAssignment",
        23: "StreamsGroupTopology",
    }
    assert_kafka_reads_coordinator_records(records, names)


# -- DescribeGroups and streams.version (as a Kafka 4.4 node answered when probed) -------


def test_describe_groups_calls_a_streams_group_not_classic(w: WireClient) -> None:
    Member(w, "app-classic-view", _topology("app-classic-view")).heartbeat()
    request = DescribeGroupsRequest(groups=["app-classic-view"])
    (v5,) = w.call(15, 5, request).groups
    assert (v5.error_code, v5.group_state, v5.protocol_type, v5.members) == (0, "Dead", "", [])
    (v6,) = w.call(15, 6, request).groups
    assert (v6.error_code, v6.error_message, v6.group_state) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group app-classic-view is not a classic group.",
        "Dead",
    )


def test_streams_apis_answer_unsupported_version_while_streams_version_is_0() -> None:
    versions = ApiVersionsRequest(client_software_name="test", client_software_version="1")
    U = UpdateFeaturesRequest

    def set_level(w: WireClient, level: int) -> None:
        upd = U.FeatureUpdateKey(
            feature="streams.version", max_version_level=level, upgrade_type=1 if level else 2
        )
        assert w.call(57, 1, U(feature_updates=[upd])).error_code == 0

    with BackgroundCluster(1, configs={"offsets.topic.num.partitions": "1"}) as c:
        assert c.cluster is not None
        md, gc = c.cluster.metadata, c.cluster.brokers[0].group_coordinator
        c.call(lambda: (md.create_topic("words", 2, 1), gc.ensure_offsets_topic()))
        with WireClient(c.bootstrap) as w:
            set_level(w, 0)
            served = {k.api_key for k in w.call(18, 3, versions).api_keys}
            assert {HB, DESCRIBE} <= served  # still listed, as Kafka 4.4 lists them
            member = Member(w, "app-off", _topology("app-off"))
            r = member.heartbeat()
            assert (r.error_code, r.error_message) == (ErrorCode.UNSUPPORTED_VERSION, None)
            (d,) = w.call(DESCRIBE, 1, DescReq(group_ids=["app-off"])).groups
            assert (d.error_code, d.error_message) == (ErrorCode.UNSUPPORTED_VERSION, None)
            u = w.call(TOPOLOGY_UPDATE, 0, _describe_update("app-off", member.member_id))
            assert (u.error_code, u.error_message) == (ErrorCode.UNSUPPORTED_VERSION, None)
            set_level(w, 1)
            assert member.heartbeat().error_code == 0
            assert member.epoch > 0


@pytest.fixture()
def patient() -> Iterator[WireClient]:
    """A broker of its own whose sessions (60 s) outlast any pause of a loaded machine."""
    with BackgroundCluster(
        1,
        configs={
            "offsets.topic.num.partitions": "1",
            "group.streams.session.timeout.ms": "60000",
            "group.streams.initial.rebalance.delay.ms": "0",
            "group.streams.assignment.interval.ms": "0",
        },
    ) as c:
        assert c.cluster is not None
        md, gc = c.cluster.metadata, c.cluster.brokers[0].group_coordinator
        c.call(lambda: (md.create_topic("words", 4, 1), gc.ensure_offsets_topic()))
        with WireClient(c.bootstrap) as client:
            yield client


def test_a_static_member_keeps_its_tasks_while_it_is_away(patient: WireClient) -> None:
    """A leave at epoch -2 keeps the member, its epoch at -2, and its tasks (nobody else
    gets them); a new member id joining with its instance id takes them over without a new
    group epoch; Kafka 4.4's errors for a held and for a taken-over instance id."""
    w = patient
    group, topology = "app-static", _topology("app-static")
    a, b = Member(w, group, topology), Member(w, group, topology)
    assert a.heartbeat(instance_id="inst-a").error_code == 0
    assert b.heartbeat(instance_id="inst-b").error_code == 0
    _converge([a, b])
    _converge([a, b])
    held, a_tasks = set(b.active), set(a.active)
    assert held and a_tasks and not held & a_tasks
    epoch = _described(w, group)["groupEpoch"]

    assert b.heartbeat(member_epoch=-2, instance_id="inst-b").error_code == 0
    away = _described(w, group)
    assert away["groupEpoch"] == epoch
    (gone,) = [m for m in away["members"] if m["instanceId"] == "inst-b"]
    assert gone["memberEpoch"] == -2
    active = gone["assignment"]["activeTasks"]
    assert {(t["subtopologyId"], p) for t in active for p in t["partitions"]} == held
    for _ in range(3):
        assert a.heartbeat().error_code == 0
    assert a.active == a_tasks

    back = Member(w, group, topology)
    back.process_id = b.process_id
    r = back.heartbeat(instance_id="inst-b")
    assert r.error_code == 0 and back.active == held and r.member_epoch > 0
    now = _described(w, group)
    assert now["groupEpoch"] == epoch
    assert sorted(m["memberId"] for m in now["members"]) == sorted([a.member_id, back.member_id])

    r = b.heartbeat(member_epoch=back.epoch, instance_id="inst-b")
    assert (r.error_code, r.error_message) == (
        ErrorCode.FENCED_INSTANCE_ID,
        f"Static member {b.member_id} with instance id inst-b was fenced by member "
        f"{back.member_id}.",
    )
    r = Member(w, group, topology).heartbeat(instance_id="inst-a")
    assert r.error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    assert f"the instance id is owned by {a.member_id} member." in r.error_message


def test_a_static_member_that_stays_away_loses_its_tasks_with_its_session(
    w: WireClient,
) -> None:
    group, topology = "app-static-gone", _topology("app-static-gone")
    a, b = Member(w, group, topology), Member(w, group, topology)
    assert b.heartbeat(instance_id="inst-b").error_code == 0
    _converge([a, b])
    _converge([a, b])
    assert b.heartbeat(member_epoch=-2, instance_id="inst-b").error_code == 0
    deadline = time.monotonic() + SESSION_MS / 1000 * 4
    while time.monotonic() < deadline and len(a.active) < 8:
        time.sleep(0.2)
        assert a.heartbeat().error_code == 0
    assert len(a.active) == 8
    assert [m["memberId"] for m in _described(w, group)["members"]] == [a.member_id]
