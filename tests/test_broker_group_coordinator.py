"""The group coordinator on a manual clock: joins, syncs, sessions, rebalances, offsets."""

from __future__ import annotations

import pytest
from broker_helpers import Harness
from hypothesis import given, settings
from hypothesis import strategies as st
from kafkagen.generated import other_type
from kafkagen.runtime.broker.group.group_coordinator import GroupCoordinator
from kafkagen.runtime.broker.group.group_model import (
    GroupState,
    JoinResult,
    OffsetEntry,
    SyncResult,
)
from kafkagen.runtime.broker.types import OFFSETS_TOPIC, _java_hash, hash_partition, java_hash
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.topic_partition import TopicPartition

SESSION = 10_000
REBALANCE = 30_000
PROTOCOLS = [("range", b"meta")]


class Groups(Harness):
    def __init__(self, brokers: int = 1, **configs: str) -> None:
        defaults = {
            "group_initial_rebalance_delay_ms": "0",
            "offsets_topic_num_partitions": "1",
        }
        super().__init__(brokers, **{**defaults, **configs})
        self.gc: GroupCoordinator = self.cluster.brokers[0].group_coordinator
        assert self.gc.ensure_offsets_topic()
        self.md.create_topic("t", 3, 1)

    def join(
        self,
        member_id: str = "",
        instance: str | None = None,
        protocols: list[tuple[str, bytes]] | None = None,
        session: int = SESSION,
        group: str = "g",
        skip: bool = False,
    ) -> list[JoinResult]:
        got: list[JoinResult] = []
        self.gc.join_group(
            group,
            member_id,
            instance,
            True,
            "client",
            "/127.0.0.1",
            REBALANCE,
            session,
            "consumer",
            PROTOCOLS if protocols is None else protocols,
            got.append,
            supports_skip_assignment=skip,
        )
        return got

    def new_member(self, instance: str | None = None) -> str:
        """A member id, through the MEMBER_ID_REQUIRED round trip (static ones skip it)."""
        if instance is not None:
            return ""
        [r] = self.join()
        assert r.error == ErrorCode.MEMBER_ID_REQUIRED
        return r.member_id

    def sync(
        self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None
    ) -> list[SyncResult]:
        got: list[SyncResult] = []
        self.gc.sync_group(
            "g", generation, member_id, None, "consumer", "range", assignments or {}, got.append
        )
        return got

    def commit(
        self, offsets: dict[TopicPartition, int], generation: int = -1, member: str = ""
    ) -> list[dict[TopicPartition, int]]:
        got: list[dict[TopicPartition, int]] = []
        entries = {tp: OffsetEntry(o, -1, "", 0) for tp, o in offsets.items()}
        self.gc.offsets.commit("g", generation, member, None, entries, got.append)
        return got

    def stable_pair(self) -> tuple[str, str, int]:
        """Two members in a Stable group: (leader, follower, generation)."""
        a = self.new_member()
        ja = self.join(a)
        self.advance(0)
        assert ja and ja[0].error == 0
        b = self.new_member()
        jb = self.join(b)
        ja = self.join(a)  # the leader rejoins for the rebalance
        assert len(ja) == 1 and len(jb) == 1, (ja, jb)
        gen = ja[0].generation_id
        leader = ja[0].leader
        follower = b if leader == a else a
        self.sync(leader, gen, {a: b"A", b: b"B"})
        assert self.gc.groups["g"].state is GroupState.STABLE
        return leader, follower, gen


@pytest.fixture
def g() -> Groups:
    return Groups()


def test_java_string_hash_and_partition() -> None:
    assert java_hash("") == 0
    assert java_hash("Aa") == java_hash("BB") == 2112
    assert java_hash("hello") == 99162322
    # The one string whose hash is Integer.MIN_VALUE: Kafka's abs() makes it 0.
    assert java_hash("polygenelubricants") == -(2**31)
    assert hash_partition("polygenelubricants", 50) == 0
    assert hash_partition("hello", 50) == 99162322 % 50
    # Past the BMP a character counts as its UTF-16 surrogate pair, as in Java.
    assert java_hash("\U0001f600") == 31 * 0xD83D + 0xDE00
    # A lone surrogate (a str can hold one, as a Java String can) is its own code unit.
    assert java_hash("\udc00a") == 31 * 0xDC00 + ord("a")


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=80))
def test_the_compiled_java_hash_is_the_python_one(s: str) -> None:
    assert java_hash(s) == _java_hash(s)


def test_first_join_requires_a_member_id_then_completes(g: Groups) -> None:
    member = g.new_member()
    assert member.startswith("client-")
    got = g.join(member)
    assert got == []  # the rebalance completes on the next timer tick
    g.advance(0)
    [r] = got
    assert r.error == 0 and r.generation_id == 1 and r.leader == member
    assert [m for m, _, _ in r.members] == [member]
    assert r.protocol_name == "range"
    [s] = g.sync(member, 1, {member: b"assigned"})
    assert s.error == 0 and s.assignment == b"assigned"


def test_initial_delay_waits_for_more_members() -> None:
    g = Groups(group_initial_rebalance_delay_ms="1000")
    a, b = g.new_member(), g.new_member()
    ja = g.join(a)
    g.advance(500)
    jb = g.join(b)
    g.advance(500)
    assert ja == [] and jb == []  # a member arrived during the delay: wait once more
    g.advance(1000)
    assert ja[0].generation_id == jb[0].generation_id == 1
    assert len(ja[0].members) + len(jb[0].members) == 2


def test_new_member_rebalances_and_assignments_are_handed_out(g: Groups) -> None:
    leader, follower, gen = g.stable_pair()
    assert gen == 2
    [s] = g.sync(follower, gen)
    assert s.error == 0 and s.assignment in (b"A", b"B")
    [s2] = g.sync(leader, gen)
    assert {s.assignment, s2.assignment} == {b"A", b"B"}


def test_follower_sync_waits_for_the_leader(g: Groups) -> None:
    a = g.new_member()
    ja = g.join(a)
    g.advance(0)
    b = g.new_member()
    jb = g.join(b)
    g.join(a)
    gen = jb[0].generation_id
    leader = jb[0].leader
    follower = b if leader == a else a
    parked = g.sync(follower, gen)
    assert parked == []
    g.sync(leader, gen, {a: b"1", b: b"2"})
    assert parked[0].error == 0 and parked[0].assignment == (b"1" if follower == a else b"2")
    assert ja


def test_heartbeat_during_rebalance_says_rejoin(g: Groups) -> None:
    leader, follower, gen = g.stable_pair()
    assert g.gc.heartbeat("g", gen, follower, None) == 0
    g.new_member()
    c = g.new_member()
    g.join(c)
    assert g.gc.heartbeat("g", gen, follower, None) == ErrorCode.REBALANCE_IN_PROGRESS
    assert g.gc.heartbeat("g", gen + 5, follower, None) == ErrorCode.ILLEGAL_GENERATION
    assert g.gc.heartbeat("g", gen, "nobody", None) == ErrorCode.UNKNOWN_MEMBER_ID


def test_session_expiry_removes_the_member_and_rebalances(g: Groups) -> None:
    leader, follower, gen = g.stable_pair()
    for _ in range(3):
        g.advance(SESSION // 2)
        assert g.gc.heartbeat("g", gen, leader, None) in (0, ErrorCode.REBALANCE_IN_PROGRESS)
    group = g.gc.groups["g"]
    assert follower not in group.members
    assert group.state is GroupState.PREPARING_REBALANCE
    [r] = g.join(leader)
    assert r.generation_id == gen + 1 and [m for m, _, _ in r.members] == [leader]


def test_rebalance_timeout_drops_members_that_do_not_rejoin(g: Groups) -> None:
    leader, follower, gen = g.stable_pair()
    c = g.new_member()
    jc = g.join(c)
    jl = g.join(leader)
    # The follower keeps heartbeating but never rejoins.
    for _ in range(REBALANCE // 5000):
        g.advance(5000)
        g.gc.heartbeat("g", gen, follower, None)
    assert jc and jl
    assert {m for m, _, _ in (jl[0].members or jc[0].members)} == {leader, c}
    assert follower not in g.gc.groups["g"].members


def test_leave_group_rebalances_the_rest(g: Groups) -> None:
    leader, follower, gen = g.stable_pair()
    top, errors = g.gc.leave_group("g", [(follower, None), ("ghost", None)])
    assert top == 0 and errors == [0, ErrorCode.UNKNOWN_MEMBER_ID]
    assert g.gc.groups["g"].state is GroupState.PREPARING_REBALANCE
    [r] = g.join(leader)
    assert r.generation_id == gen + 1


def test_last_member_leaving_empties_the_group(g: Groups) -> None:
    m = g.new_member()
    g.join(m)
    g.advance(0)
    g.gc.leave_group("g", [(m, None)])
    group = g.gc.groups["g"]
    assert group.state is GroupState.EMPTY and not group.members


def test_static_member_restart_keeps_its_assignment_without_rebalance(g: Groups) -> None:
    ja = g.join("", instance="i-a")
    g.advance(0)
    [r] = ja
    a = r.member_id
    jb = g.join("", instance="i-b")
    ja2 = g.join(a, instance="i-a")
    [rb], [ra] = jb, ja2
    gen = ra.generation_id
    b = rb.member_id
    leader = ra.leader
    got: list[SyncResult] = []
    g.gc.sync_group(
        "g",
        gen,
        leader,
        "i-a" if leader == a else "i-b",
        None,
        None,
        {a: b"A", b: b"B"},
        got.append,
    )
    assert g.gc.groups["g"].state is GroupState.STABLE
    restarted_instance = "i-b" if leader == a else "i-a"
    old_id = b if leader == a else a
    # The non-leader restarts: a new member id, no rebalance, same generation.
    [again] = g.join("", instance=restarted_instance)
    assert again.error == 0 and again.generation_id == gen and again.member_id != old_id
    assert g.gc.groups["g"].state is GroupState.STABLE
    s: list[SyncResult] = []
    g.gc.sync_group("g", gen, again.member_id, restarted_instance, None, None, {}, s.append)
    assert s[0].assignment == (b"B" if leader == a else b"A")
    # The old incarnation is fenced.
    assert g.gc.heartbeat("g", gen, old_id, restarted_instance) == ErrorCode.FENCED_INSTANCE_ID


def test_static_member_restart_that_cannot_be_stored_keeps_the_old_member(g: Groups) -> None:
    first = g.join("", instance="i-a")
    g.advance(0)
    a = first[0].member_id
    jb = g.join("", instance="i-b")
    ja = g.join(a, instance="i-a")
    [rb], [ra] = jb, ja
    gen, b = ra.generation_id, rb.member_id
    leader_instance = "i-a" if ra.leader == a else "i-b"
    got: list[SyncResult] = []
    g.gc.sync_group(
        "g", gen, ra.leader, leader_instance, None, None, {a: b"A", b: b"B"}, got.append
    )
    group = g.gc.groups["g"]
    assert group.state is GroupState.STABLE
    follower, follower_instance = (b, "i-b") if ra.leader == a else (a, "i-a")
    before = (group.members[follower].client_id, group.members[follower].protocols)
    # The offsets partition now refuses acks=all writes: the replacement cannot be stored.
    g.md.configs.set_topic_configs(OFFSETS_TOPIC, {"min.insync.replicas": "2"})
    [again] = g.join("", instance=follower_instance, protocols=[("range", b"new")])
    assert again.error == ErrorCode.COORDINATOR_NOT_AVAILABLE and again.member_id == ""
    # Undone: the old id is the member again, with what it had, and still in the group.
    assert group.static_members[follower_instance] == follower
    assert follower in group.members and len(group.members) == 2
    assert group.members[follower].member_id == follower
    assert (group.members[follower].client_id, group.members[follower].protocols) == before
    assert g.gc.heartbeat("g", gen, follower, follower_instance) == 0
    assert group.state is GroupState.STABLE and group.generation_id == gen


def test_inconsistent_protocols_are_refused(g: Groups) -> None:
    m = g.new_member()
    g.join(m)
    g.advance(0)
    other = g.join("", protocols=[("roundrobin", b"")])
    assert other[0].error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_session_timeout_outside_bounds_is_refused(g: Groups) -> None:
    [r] = g.join(session=10)
    assert r.error == ErrorCode.INVALID_SESSION_TIMEOUT


def test_shutdown_answers_parked_joins_and_syncs(g: Groups) -> None:
    leader, follower, gen = g.stable_pair()
    c = g.new_member()
    parked = g.join(c)
    assert parked == []
    g.gc.shutdown()
    assert parked[0].error == ErrorCode.NOT_COORDINATOR


# ------------------------------------------------------------------ offsets


T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


def test_standalone_commit_creates_an_empty_group_and_fetch_sees_it(g: Groups) -> None:
    [errors] = g.commit({T0: 42, T1: 7})
    assert errors == {T0: 0, T1: 0}
    found = g.gc.offsets.fetch("g", [T0, TopicPartition("t", 2)])
    assert found[T0] is not None and found[T0].offset == 42
    assert found[TopicPartition("t", 2)] is None
    assert g.gc.groups["g"].state is GroupState.EMPTY


def test_commit_to_unknown_topic_is_refused_per_partition(g: Groups) -> None:
    [errors] = g.commit({T0: 1, TopicPartition("nope", 0): 1})
    assert errors[TopicPartition("nope", 0)] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert errors[T0] == 0


def test_commit_with_oversized_metadata_is_refused_for_that_partition_only(g: Groups) -> None:
    got: list[dict[TopicPartition, int]] = []
    entries = {T0: OffsetEntry(3, -1, "m" * 4097, 0), T1: OffsetEntry(4, -1, "m" * 4096, 0)}
    g.gc.offsets.commit("g", -1, "", None, entries, got.append)
    assert got == [{T0: ErrorCode.OFFSET_METADATA_TOO_LARGE, T1: 0}]
    found = g.gc.offsets.fetch("g", [T0, T1])
    assert found[T0] is None
    assert found[T1] is not None and found[T1].metadata == "m" * 4096


def test_member_commits_are_checked_against_the_generation(g: Groups) -> None:
    leader, follower, gen = g.stable_pair()
    assert g.commit({T0: 5}, gen, leader)[0][T0] == 0
    assert g.commit({T0: 5}, gen - 1, leader)[0][T0] == ErrorCode.ILLEGAL_GENERATION
    assert g.commit({T0: 5}, gen, "ghost")[0][T0] == ErrorCode.UNKNOWN_MEMBER_ID


def test_offsets_are_written_to_the_offsets_topic_in_kafkas_layout(g: Groups) -> None:
    from kafkagen.runtime.broker.group import _group_records as gr
    from kafkagen.runtime.records import iter_records

    g.commit({T0: 99})
    log = g.rm().partitions[TopicPartition(OFFSETS_TOPIC, 0)].log
    records = [r for b in log.batches for r in iter_records(b.data)]
    keys = [gr.decode_key(r.key) for r in records if r.key is not None]
    assert ("offset", "g", "t", 0) in keys
    value = next(r.value for r in records if r.key and gr.decode_key(r.key)[0] == "offset")
    assert value is not None and gr.decode_offset_value(value).offset == 99


def test_offsets_are_cached_only_once_durable() -> None:
    g = Groups(brokers=2, offsets_topic_replication_factor="2")
    offsets_tp = TopicPartition(OFFSETS_TOPIC, 0)
    info = g.md.partition(OFFSETS_TOPIC, 0)
    assert info is not None
    leader = info.leader
    gc = g.cluster.brokers[leader].group_coordinator
    got: list[dict[TopicPartition, int]] = []
    gc.offsets.commit("g", -1, "", None, {T0: OffsetEntry(11, -1, "", 0)}, got.append)
    # Written by the leader, not yet by its follower: no answer, nothing visible.
    assert got == []
    assert gc.offsets.fetch("g", [T0])[T0] is None
    follower = 1 - leader
    fetched = g.fetch(offsets_tp, 0, replica_id=follower, rm=leader)
    g.rm(follower).partitions[offsets_tp].append_as_follower(fetched[0][0][1].batches)
    end = g.rm(follower).partitions[offsets_tp].log.log_end_offset
    g.fetch(offsets_tp, end, replica_id=follower, rm=leader)
    assert got == [{T0: 0}]
    entry = gc.offsets.fetch("g", [T0])[T0]
    assert entry is not None and entry.offset == 11


def test_commit_times_out_as_coordinator_not_available() -> None:
    g = Groups(brokers=2, offsets_topic_replication_factor="2")
    info = g.md.partition(OFFSETS_TOPIC, 0)
    assert info is not None
    gc = g.cluster.brokers[info.leader].group_coordinator
    got: list[dict[TopicPartition, int]] = []
    gc.offsets.commit("g", -1, "", None, {T0: OffsetEntry(1, -1, "", 0)}, got.append)
    g.advance(5000)
    assert got == [{T0: ErrorCode.COORDINATOR_NOT_AVAILABLE}]
    assert gc.offsets.fetch("g", [T0])[T0] is None


def test_not_coordinator_for_groups_of_another_broker() -> None:
    g = Groups(brokers=2, offsets_topic_num_partitions="2")
    topic = g.md.topic(OFFSETS_TOPIC)
    assert topic is not None
    group = "g"
    owner = topic.partitions[hash_partition(group, 2)].leader
    other = g.cluster.brokers[1 - owner].group_coordinator
    got: list[JoinResult] = []
    other.join_group(
        group, "", None, True, "c", "h", REBALANCE, SESSION, "consumer", PROTOCOLS, got.append
    )
    assert got[0].error == ErrorCode.NOT_COORDINATOR


def test_delete_groups(g: Groups) -> None:
    g.commit({T0: 3})
    m = g.new_member()
    g.join(m)
    g.advance(0)
    results: list[dict[str, int]] = []
    g.gc.delete_groups(["g", "unknown"], results.append)
    assert results[-1] == {"g": ErrorCode.NON_EMPTY_GROUP, "unknown": ErrorCode.GROUP_ID_NOT_FOUND}
    g.gc.leave_group("g", [(m, None)])
    g.gc.delete_groups(["g"], results.append)
    assert results[-1] == {"g": 0}
    assert "g" not in g.gc.groups
    assert g.gc.offsets.fetch("g", [T0])[T0] is None


def _subscription(topics: list[str]) -> bytes:
    sub = other_type("ConsumerProtocolSubscription")(topics=topics)
    return (1).to_bytes(2, "big") + sub.encode(1)


def test_offset_delete_refuses_topics_the_group_consumes(g: Groups) -> None:
    g.md.create_topic("other", 1, 1)
    other = TopicPartition("other", 0)
    g.commit({T0: 1, other: 2})
    m = g.new_member()
    g.join(m, protocols=[("range", _subscription(["t"]))])
    g.advance(0)
    g.sync(m, 1, {m: b""})
    got: list[tuple[int, dict[TopicPartition, int]]] = []
    g.gc.offsets.delete("g", [T0, other], lambda e, d: got.append((e, d)))
    assert got[0] == (0, {T0: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, other: 0})
    assert g.gc.offsets.fetch("g", [other])[other] is None
    assert g.gc.offsets.fetch("g", [T0])[T0] is not None


def test_list_and_describe(g: Groups) -> None:
    leader, follower, gen = g.stable_pair()
    [group] = g.gc.list_groups()
    assert group.group_id == "g" and group.state is GroupState.STABLE
    described = g.gc.describe_group("g")
    assert described is not None and set(described.members) == {leader, follower}
    assert g.gc.describe_group("missing") is None


@pytest.mark.parametrize("skip", [False, True])
def test_static_leader_restart_does_not_rebalance(g: Groups, skip: bool) -> None:
    g.join("", instance="i-a")
    g.advance(0)
    group = g.gc.groups["g"]
    leader = group.leader_id
    assert leader is not None and leader.startswith("i-a-")
    g.sync(leader, 1, {leader: b"mine"})
    assert group.state is GroupState.STABLE
    [again] = g.join("", instance="i-a", skip=skip)
    assert again.error == 0 and again.generation_id == 1
    assert group.state is GroupState.STABLE
    if skip:
        # v9+: the leader learns it leads, with the members, and must not assign again.
        assert again.skip_assignment and again.leader == again.member_id
        assert [m for m, _, _ in again.members] == [again.member_id]
    else:
        # Older versions: it is told the old leader id, so it syncs as a follower.
        assert again.leader == leader and not again.members
    [s] = g.sync(again.member_id, 1)
    assert s.assignment == b"mine"


def test_a_reloaded_coordinator_keeps_a_stable_groups_members(g: Groups) -> None:
    leader, follower, gen = g.stable_pair()
    g.md.broker_down(0)  # leadership of the offsets topic goes, and comes back
    assert "g" not in g.gc.groups
    g.md.broker_up(0)
    group = g.gc.groups["g"]
    assert group.state is GroupState.STABLE and group.generation_id == gen
    assert set(group.members) == {leader, follower} and group.leader_id == leader
    assert sorted(m.assignment for m in group.members.values()) == [b"A", b"B"]
    # Both carry on; a rejoin rebalances and waits for the other member, as before.
    assert g.gc.heartbeat("g", gen, follower, None) == 0
    assert g.join(leader) == []
    assert g.gc.heartbeat("g", gen, follower, None) == ErrorCode.REBALANCE_IN_PROGRESS
    [rf] = g.join(follower)
    assert rf.generation_id == gen + 1
    assert g.sync(leader, gen + 1, {leader: b"L", follower: b"F"})[0].error == 0
    # A member that goes quiet expires within its session, counted from the reload.
    g.md.broker_down(0)
    g.md.broker_up(0)
    for _ in range(3):
        g.advance(SESSION // 2)
        assert g.gc.heartbeat("g", gen + 1, leader, None) in (0, ErrorCode.REBALANCE_IN_PROGRESS)
    group = g.gc.groups["g"]
    assert list(group.members) == [leader] and group.state is GroupState.PREPARING_REBALANCE


# -- expiry of offsets and empty groups (offsets.retention.minutes) ---------------------

RETENTION_MS = 60_000


def _records_of(g: Groups, group_id: str) -> list[tuple[tuple[object, ...], bool]]:
    """(decoded key, is a tombstone) of the offsets topic's records of ``group_id``."""
    from kafkagen.runtime.broker.group import _group_records as gr
    from kafkagen.runtime.records import iter_records

    log = g.rm().partitions[TopicPartition(OFFSETS_TOPIC, 0)].log
    out = []
    for b in log.batches:
        for r in iter_records(b.data):
            try:
                key = gr.decode_key(r.key) if r.key is not None else None
            except ValueError:
                continue  # a consumer-protocol group's record
            if key is not None and key[1] == group_id:
                out.append((key, r.value is None))
    return out


def _commit_now(
    g: Groups, offsets: dict[TopicPartition, int], member: str = "", gen: int = -1
) -> None:
    entries = {tp: OffsetEntry(o, -1, "", g.wall) for tp, o in offsets.items()}
    got: list[dict[TopicPartition, int]] = []
    g.gc.offsets.commit("g", gen, member, None, entries, got.append)
    assert got and set(got[0].values()) == {0}, got


def test_a_standalone_groups_offsets_expire_then_the_group_goes() -> None:
    """A consumer committing outside group management: each offset's age counts from its
    commit; once the last one expired the empty group goes, offsets and group tombstoned,
    and a coordinator reading the log back finds nothing."""
    g = Groups(offsets_retention_minutes="1")
    _commit_now(g, {T0: 5})
    g.wall += 30_000
    _commit_now(g, {T1: 6})
    g.wall += RETENTION_MS - 30_000 - 1
    assert g.gc.cleanup_group_metadata() == 0
    g.wall += 1  # T0's retention is over, T1's not yet
    assert g.gc.cleanup_group_metadata() == 1
    assert g.gc.offsets.fetch("g", [T0, T1]) == {
        T0: None,
        T1: OffsetEntry(6, -1, "", g.wall - RETENTION_MS + 30_000),
    }
    assert g.gc.groups["g"].state is GroupState.EMPTY
    g.wall += 30_000
    assert g.gc.cleanup_group_metadata() == 2  # T1 and the group
    assert "g" not in g.gc.groups
    written = _records_of(g, "g")
    assert (("offset", "g", "t", 0), True) in written and (("offset", "g", "t", 1), True) in written
    assert written[-1] == (("group", "g", "", -1), True)
    g.md.broker_down(0)
    g.md.broker_up(0)
    assert "g" not in g.gc.groups and g.gc.offsets.fetch("g", None) == {}


def test_an_empty_groups_offsets_count_from_when_it_became_empty() -> None:
    g = Groups(offsets_retention_minutes="1")
    m = g.new_member()
    joined = g.join(m)
    g.advance(0)
    assert joined and joined[0].error == 0
    g.sync(m, joined[0].generation_id, {m: b""})
    _commit_now(g, {T0: 1}, member=m, gen=joined[0].generation_id)
    g.wall += 10 * RETENTION_MS  # members keep their group's offsets however old
    assert g.gc.cleanup_group_metadata() == 0
    g.gc.leave_group("g", [(m, None)])
    assert g.gc.groups["g"].state is GroupState.EMPTY
    g.wall += RETENTION_MS - 1
    assert g.gc.cleanup_group_metadata() == 0
    g.wall += 1
    assert g.gc.cleanup_group_metadata() == 2
    assert "g" not in g.gc.groups


def test_a_stable_consumer_group_keeps_the_offsets_of_topics_it_subscribes_to() -> None:
    g = Groups(offsets_retention_minutes="1")
    g.md.create_topic("other", 1, 1)
    other = TopicPartition("other", 0)
    _commit_now(g, {T0: 1, other: 2})
    m = g.new_member()
    g.join(m, protocols=[("range", _subscription(["t"]))])
    g.advance(0)
    g.sync(m, 1, {m: b""})
    assert g.gc.groups["g"].state is GroupState.STABLE
    g.wall += RETENTION_MS
    assert g.gc.cleanup_group_metadata() == 1
    assert g.gc.offsets.fetch("g", [T0, other]) == {
        T0: OffsetEntry(1, -1, "", g.wall - RETENTION_MS),
        other: None,
    }
    assert "g" in g.gc.groups


def test_an_open_transactions_offsets_keep_the_group() -> None:
    g = Groups(offsets_retention_minutes="1")
    _commit_now(g, {T0: 1})
    g.gc.offsets.add_pending(7, 0, "g", T1, OffsetEntry(2, -1, "", g.wall))
    g.wall += RETENTION_MS
    assert g.gc.cleanup_group_metadata() == 1  # T0 expires, the group stays
    assert "g" in g.gc.groups
    g.gc.offsets.complete_transaction(7, 0, False)
    assert g.gc.cleanup_group_metadata() == 1
    assert "g" not in g.gc.groups


def test_an_empty_group_with_no_offsets_goes_at_the_next_check() -> None:
    g = Groups()
    m = g.new_member()
    joined = g.join(m)
    g.advance(0)
    assert joined and joined[0].error == 0
    g.sync(m, joined[0].generation_id, {m: b""})
    g.gc.leave_group("g", [(m, None)])
    assert g.gc.cleanup_group_metadata() == 1
    assert "g" not in g.gc.groups


def test_a_deleted_topics_offsets_are_tombstoned() -> None:
    """Kafka's coordinator writes tombstones for the offsets of a deleted topic; without
    them the next coordinator would read the offsets back from the log."""
    g = Groups()
    g.md.create_topic("other", 1, 1)
    other = TopicPartition("other", 0)
    _commit_now(g, {T0: 1, other: 2})
    g.md.delete_topic("other")
    assert g.gc.offsets.fetch("g", [other])[other] is None
    assert _records_of(g, "g")[-1] == (("offset", "g", "other", 0), True)
    g.md.broker_down(0)
    g.md.broker_up(0)
    assert set(g.gc.offsets.fetch("g", None)) == {T0}
