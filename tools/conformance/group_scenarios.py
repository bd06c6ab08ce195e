"""Groups: FindCoordinator, the classic protocol, offsets, and the consumer protocol."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any
from uuid import UUID

from kafkagen.generated.consumer_group_describe import ConsumerGroupDescribeRequest
from kafkagen.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from kafkagen.generated.delete_groups import DeleteGroupsRequest
from kafkagen.generated.describe_configs import DescribeConfigsRequest
from kafkagen.generated.describe_groups import DescribeGroupsRequest
from kafkagen.generated.find_coordinator import FindCoordinatorRequest
from kafkagen.generated.heartbeat import HeartbeatRequest
from kafkagen.generated.incremental_alter_configs import IncrementalAlterConfigsRequest
from kafkagen.generated.leave_group import LeaveGroupRequest
from kafkagen.generated.list_groups import ListGroupsRequest
from kafkagen.generated.offset_commit import OffsetCommitRequest
from kafkagen.generated.offset_delete import OffsetDeleteRequest
from kafkagen.generated.offset_fetch import OffsetFetchRequest
from kafkagen.generated.sync_group import SyncGroupRequest

from .core import Session, SetupError, scenario
from .messages import join_group

# ---------------------------------------------------------------------- helpers


def _commit(
    s: Session,
    group: str,
    topic: str,
    offset: int = 5,
    *,
    generation: int = -1,
    member: str = "",
    partition: int = 0,
    metadata: str | None = "m",
) -> OffsetCommitRequest:
    Req = OffsetCommitRequest
    return Req(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        topics=[
            Req.OffsetCommitRequestTopic(
                name=topic,
                # From v10 the topic goes by id: one no topic has where the session knows none.
                topic_id=s.topic_uuids.get(topic, UUID(int=0)),
                partitions=[
                    Req.OffsetCommitRequestPartition(
                        partition_index=partition,
                        committed_offset=offset,
                        committed_metadata=metadata,
                    )
                ],
            )
        ],
    )


def _fetch_offsets(group: str, topic: str | None) -> OffsetFetchRequest:
    Req = OffsetFetchRequest
    topics = (
        None if topic is None else [Req.OffsetFetchRequestTopics(name=topic, partition_indexes=[0])]
    )
    return Req(groups=[Req.OffsetFetchRequestGroup(group_id=group, topics=topics)])


def _sync(group: str, generation: int, member: str, assign: bool = True) -> SyncGroupRequest:
    S = SyncGroupRequest
    return S(
        group_id=group,
        generation_id=generation,
        member_id=member,
        protocol_type="consumer",
        protocol_name="range",
        assignments=(
            [S.SyncGroupRequestAssignment(member_id=member, assignment=b"\x00\x01")]
            if assign
            else []
        ),
    )


async def _member(s: Session, group: str) -> tuple[int, str, int]:
    """Join ``group`` as its only member (set-up); (coordinator, member id, generation)."""
    node = await s.coordinator(group)
    first = await s.setup(join_group(group), node=node)
    joined = await s.setup(join_group(group, first.member_id), node=node)
    if joined.error_code != 0:
        raise RuntimeError(f"joining {group}: error {joined.error_code}")
    return node, str(joined.member_id), int(joined.generation_id)


async def _stable(s: Session, group: str) -> tuple[int, str, int]:
    node, member, gen = await _member(s, group)
    await s.setup(_sync(group, gen, member), node=node)
    return node, member, gen


def _mine(prefix: str, key: str = "groups", field: str = "groupId") -> Any:
    def keep(data: Any) -> Any:
        data[key] = [g for g in data[key] if str(g[field]).startswith(prefix)]
        return data

    return keep


# ---------------------------------------------------------------------- FindCoordinator


@scenario("FindCoordinator", "group", "the coordinator of a group, batched (v4+)")
async def find_group(s: Session) -> None:
    await s.coordinator(s.name("g"))
    await s.call(FindCoordinatorRequest(key_type=0, coordinator_keys=[s.name("g")]))


@scenario("FindCoordinator", "transaction", "the coordinator of a transactional id")
async def find_txn(s: Session) -> None:
    await s.coordinator(s.name("tx"), 1)
    await s.call(FindCoordinatorRequest(key_type=1, coordinator_keys=[s.name("tx")]))


@scenario("FindCoordinator", "invalid-key-type", "key type 7 names no coordinator")
async def find_bad_type(s: Session) -> None:
    await s.call(FindCoordinatorRequest(key_type=7, coordinator_keys=[s.name("g")]))


@scenario("FindCoordinator", "single-key", "the one-key form (v3)")
async def find_v3(s: Session) -> None:
    await s.coordinator(s.name("g"))
    await s.call(FindCoordinatorRequest(key=s.name("g"), key_type=0), 3)


# ---------------------------------------------------------------------- JoinGroup and friends


@scenario("JoinGroup", "member-id-required", "a first join gets MEMBER_ID_REQUIRED and an id")
async def join_member_id(s: Session) -> None:
    g = s.name("g")
    await s.call(join_group(g), node=await s.coordinator(g))


@scenario("JoinGroup", "ordinary", "join with the given id: leader of generation 1")
async def join_ordinary(s: Session) -> None:
    g = s.name("g")
    node = await s.coordinator(g)
    first = await s.call(join_group(g), node=node)
    await s.call(join_group(g, first.member_id), node=node)


@scenario("JoinGroup", "not-coordinator", "to a broker that does not coordinate it", brokers=2)
async def join_not_coordinator(s: Session) -> None:
    g = s.name("g")
    await s.call(join_group(g), node=s.other_node(await s.coordinator(g)))


@scenario("JoinGroup", "session-timeout-too-small", "a 1 ms session timeout")
async def join_bad_timeout(s: Session) -> None:
    g = s.name("g")
    await s.call(join_group(g, session_timeout_ms=1), node=await s.coordinator(g))


@scenario("JoinGroup", "unknown-member", "a member id the group never issued")
async def join_unknown_member(s: Session) -> None:
    g = s.name("g")
    await s.call(join_group(g, "nobody-1234"), node=await s.coordinator(g))


@scenario("JoinGroup", "inconsistent-protocol", "a second member with another protocol type")
async def join_inconsistent(s: Session) -> None:
    g = s.name("g")
    node, _, _ = await _stable(s, g)
    other = await s.call(join_group(g, protocol_type="connect"), node=node)
    if other is not None and other.member_id:
        await s.call(join_group(g, other.member_id, protocol_type="connect"), node=node)


@scenario("JoinGroup", "no-protocols", "an empty protocol list")
async def join_no_protocols(s: Session) -> None:
    g = s.name("g")
    await s.call(join_group(g, protocols=()), node=await s.coordinator(g))


@scenario("SyncGroup", "ordinary", "the leader's assignment comes back to it")
async def sync_ordinary(s: Session) -> None:
    g = s.name("g")
    node, member, gen = await _member(s, g)
    await s.call(_sync(g, gen, member), node=node)


@scenario("SyncGroup", "illegal-generation", "generation 99 of a group at generation 1")
async def sync_bad_generation(s: Session) -> None:
    g = s.name("g")
    node, member, gen = await _member(s, g)
    await s.call(_sync(g, gen + 98, member), node=node)


@scenario("SyncGroup", "unknown-member", "a member id the group does not have")
async def sync_unknown_member(s: Session) -> None:
    g = s.name("g")
    node, _, gen = await _member(s, g)
    await s.call(_sync(g, gen, "nobody-1234"), node=node)


@scenario("SyncGroup", "unknown-group", "a group nobody joined")
async def sync_unknown_group(s: Session) -> None:
    g = s.name("g")
    await s.call(_sync(g, 1, "nobody-1234"), node=await s.coordinator(g))


@scenario("Heartbeat", "ordinary", "a stable member's heartbeat")
async def heartbeat_ordinary(s: Session) -> None:
    g = s.name("g")
    node, member, gen = await _stable(s, g)
    await s.call(HeartbeatRequest(group_id=g, generation_id=gen, member_id=member), node=node)


@scenario("Heartbeat", "illegal-generation", "the right member at the wrong generation")
async def heartbeat_bad_generation(s: Session) -> None:
    g = s.name("g")
    node, member, gen = await _stable(s, g)
    await s.call(HeartbeatRequest(group_id=g, generation_id=gen + 5, member_id=member), node=node)


@scenario("Heartbeat", "unknown-member", "a member id the group does not have")
async def heartbeat_unknown_member(s: Session) -> None:
    g = s.name("g")
    node, _, gen = await _stable(s, g)
    await s.call(HeartbeatRequest(group_id=g, generation_id=gen, member_id="nobody-1"), node=node)


@scenario("Heartbeat", "unknown-group", "a group nobody joined")
async def heartbeat_unknown_group(s: Session) -> None:
    g = s.name("g")
    req = HeartbeatRequest(group_id=g, generation_id=1, member_id="nobody-1")
    await s.call(req, node=await s.coordinator(g))


@scenario("Heartbeat", "not-coordinator", "to a broker that does not coordinate it", brokers=2)
async def heartbeat_not_coordinator(s: Session) -> None:
    g = s.name("g")
    req = HeartbeatRequest(group_id=g, generation_id=1, member_id="nobody-1")
    await s.call(req, node=s.other_node(await s.coordinator(g)))


def _leave(group: str, member: str) -> LeaveGroupRequest:
    L = LeaveGroupRequest
    return L(group_id=group, members=[L.MemberIdentity(member_id=member)])


@scenario("LeaveGroup", "ordinary", "the only member leaves; the group is empty")
async def leave_ordinary(s: Session) -> None:
    g = s.name("g")
    node, member, _ = await _stable(s, g)
    await s.call(_leave(g, member), node=node)
    await s.call(DescribeGroupsRequest(groups=[g]), node=node)


@scenario("LeaveGroup", "unknown-member", "a member id the group does not have")
async def leave_unknown(s: Session) -> None:
    g = s.name("g")
    node, _, _ = await _stable(s, g)
    await s.call(_leave(g, "nobody-1"), node=node)


@scenario("DescribeGroups", "stable", "a group with one member after SyncGroup")
async def describe_stable(s: Session) -> None:
    g = s.name("g")
    node, _, _ = await _stable(s, g)
    await s.call(DescribeGroupsRequest(groups=[g]), node=node)


@scenario("DescribeGroups", "unknown-group", "a group nobody joined: not found (v6; Dead before)")
async def describe_unknown(s: Session) -> None:
    g = s.name("g")
    await s.call(DescribeGroupsRequest(groups=[g]), node=await s.coordinator(g))


@scenario("ListGroups", "mine", "this scenario's groups among all, with their states")
async def list_groups(s: Session) -> None:
    g = s.name("g")
    node, _, _ = await _stable(s, g)
    await s.call(ListGroupsRequest(), node=node, keep=_mine(s.prefix))


@scenario("ListGroups", "state-filter", "only Empty groups (v4+)")
async def list_groups_filter(s: Session) -> None:
    t, g = await s.create_topic(), s.name("g")
    node = await s.coordinator(g)
    await s.setup(_commit(s, g, t), node=node)
    await s.call(ListGroupsRequest(states_filter=["Empty"]), node=node, keep=_mine(s.prefix))


# ---------------------------------------------------------------------- offsets


@scenario("OffsetCommit", "standalone", "a simple consumer's commit, then OffsetFetch")
async def commit_standalone(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    node = await s.coordinator(g)
    await s.call(_commit(s, g, t), node=node)
    await s.call(_fetch_offsets(g, t), node=node)


@scenario("OffsetCommit", "unknown-topic", "an offset for a topic that does not exist")
async def commit_unknown_topic(s: Session) -> None:
    g = s.name("g")
    await s.call(_commit(s, g, s.name("missing")), node=await s.coordinator(g))


@scenario("OffsetCommit", "unknown-topic-unknown-member", "both wrong: the topic is named")
async def commit_unknown_topic_and_member(s: Session) -> None:
    g = s.name("g")
    req = _commit(s, g, s.name("missing"), generation=3, member=s.name("m"))
    await s.call(req, node=await s.coordinator(g))


@scenario("OffsetCommit", "member-of-generation", "a member's commit at its generation")
async def commit_member(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    node, member, gen = await _stable(s, g)
    await s.call(_commit(s, g, t, generation=gen, member=member), node=node)


@scenario("OffsetCommit", "illegal-generation", "a member's commit at a wrong generation")
async def commit_bad_generation(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    node, member, gen = await _stable(s, g)
    await s.call(_commit(s, g, t, generation=gen + 3, member=member), node=node)


@scenario("OffsetCommit", "unknown-member", "a commit from a member the group lacks")
async def commit_unknown_member(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    node, _, gen = await _stable(s, g)
    await s.call(_commit(s, g, t, generation=gen, member="nobody-1"), node=node)


@scenario("OffsetCommit", "metadata-too-large", "5000 bytes of commit metadata")
async def commit_big_metadata(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await s.call(_commit(s, g, t, metadata="x" * 5000), node=await s.coordinator(g))


@scenario("OffsetCommit", "not-coordinator", "to a broker that does not coordinate it", brokers=2)
async def commit_not_coordinator(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await s.call(_commit(s, g, t), node=s.other_node(await s.coordinator(g)))


@scenario("OffsetFetch", "unknown-group", "a group with no offsets: -1 per partition")
async def fetch_offsets_unknown(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await s.call(_fetch_offsets(g, t), node=await s.coordinator(g))


@scenario("OffsetFetch", "all-topics", "every committed offset of a group (topics null)")
async def fetch_offsets_all(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    node = await s.coordinator(g)
    await s.setup(_commit(s, g, t, 7), node=node)
    await s.call(_fetch_offsets(g, None), node=node)


@scenario("OffsetFetch", "not-coordinator", "to a broker that does not coordinate it", brokers=2)
async def fetch_offsets_not_coordinator(s: Session) -> None:
    g = s.name("g")
    await s.call(_fetch_offsets(g, s.name("t")), node=s.other_node(await s.coordinator(g)))


def _offset_delete(group: str, topic: str) -> OffsetDeleteRequest:
    Req = OffsetDeleteRequest
    return Req(
        group_id=group,
        topics=[
            Req.OffsetDeleteRequestTopic(
                name=topic, partitions=[Req.OffsetDeleteRequestPartition(partition_index=0)]
            )
        ],
    )


@scenario("OffsetDelete", "ordinary", "delete an empty group's offset, then fetch it")
async def offset_delete_ordinary(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    node = await s.coordinator(g)
    await s.setup(_commit(s, g, t), node=node)
    await s.call(_offset_delete(g, t), node=node)
    await s.call(_fetch_offsets(g, t), node=node)


@scenario("OffsetDelete", "unknown-group", "a group that has no offsets")
async def offset_delete_unknown(s: Session) -> None:
    g = s.name("g")
    await s.call(_offset_delete(g, s.name("t")), node=await s.coordinator(g))


@scenario("DeleteGroups", "ordinary", "an empty group with offsets, then an unknown one")
async def delete_groups(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    node = await s.coordinator(g)
    await s.setup(_commit(s, g, t), node=node)
    await s.call(DeleteGroupsRequest(groups_names=[g]), node=node)
    await s.call(DeleteGroupsRequest(groups_names=[g]), node=node)


@scenario("DeleteGroups", "non-empty", "a group that still has a member")
async def delete_groups_non_empty(s: Session) -> None:
    g = s.name("g")
    node, _, _ = await _stable(s, g)
    await s.call(DeleteGroupsRequest(groups_names=[g]), node=node)


# ---------------------------------------------------------------------- consumer protocol


def _heartbeat(group: str, topic: str | None, member: str = "", epoch: int = 0, **kw: Any) -> Any:
    return ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        rebalance_timeout_ms=30000 if epoch == 0 else -1,
        subscribed_topic_names=[topic] if topic is not None and epoch == 0 else None,
        topic_partitions=[] if epoch == 0 else None,
        **kw,
    )


async def consumer_protocol_member(s: Session) -> tuple[str, str, int]:
    """A new topic and a consumer-protocol group with one member in it, for scenarios of
    other group types meeting that group's id: (topic, group, its coordinator)."""
    t = await s.create_topic()
    g = s.name("g")
    node = await s.coordinator(g)
    await s.setup(_heartbeat(g, t, member="consumer-member-000000001"), node=node)
    return t, g, node


#: The GROUP config resource type.
GROUP_RESOURCE = 32


def group_configs(group: str, **configs: str) -> IncrementalAlterConfigsRequest:
    """Set ``configs`` (``_`` standing for ``.``) on the group's config resource."""
    I = IncrementalAlterConfigsRequest  # noqa: E741 - the message's initial, as elsewhere
    return I(
        resources=[
            I.AlterConfigsResource(
                resource_type=GROUP_RESOURCE,
                resource_name=group,
                configs=[
                    I.AlterableConfig(name=k.replace("_", "."), config_operation=0, value=v)
                    for k, v in configs.items()
                ],
            )
        ],
        validate_only=False,
    )


async def set_group_configs(
    s: Session, group: str, nodes: Iterable[int | None], *, record: bool = False, **configs: str
) -> None:
    """Set ``configs`` on the group (a recorded step with ``record``) and wait, at most 10 s
    a node, until each of ``nodes`` (None: the session's default) describes them as set.
    Kafka's brokers learn a group config from the controller's log a moment after the
    answer to IncrementalAlterConfigs, so a request sent at once may still see the old
    value: the group coordinator's broker, and for share groups the partition leader's,
    must have it before the scenario acts on it."""
    request = group_configs(group, **configs)
    await (s.call(request) if record else s.setup(request))
    D = DescribeConfigsRequest
    want = {k.replace("_", "."): v for k, v in configs.items()}
    describe = D(
        resources=[
            D.DescribeConfigsResource(
                resource_type=GROUP_RESOURCE, resource_name=group, configuration_keys=list(want)
            )
        ]
    )
    for node in set(nodes):
        deadline = time.monotonic() + 10.0
        while True:
            r = await s.setup(describe, node=node)
            seen = {c.name: c.value for res in r.results for c in res.configs}
            if all(seen.get(k) == v for k, v in want.items()):
                break
            if time.monotonic() > deadline:
                raise SetupError(f"group {group}: node {node} did not see {want} within 10 s")
            await asyncio.sleep(0.1)
    # The group coordinator takes the change just after the broker's config view.
    await asyncio.sleep(0.2)


@scenario("ConsumerGroupHeartbeat", "join", "a new member subscribing to a topic")
async def cg_join(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    g = s.name("g")
    await s.call(_heartbeat(g, t), node=await s.coordinator(g))


@scenario(
    "ConsumerGroupHeartbeat",
    "group-configs",
    "a join in a group whose own heartbeat interval and session timeout are set",
)
async def cg_group_configs(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    g = s.name("g")
    node = await s.coordinator(g)
    await set_group_configs(
        s, g, [node], consumer_heartbeat_interval_ms="7000", consumer_session_timeout_ms="50000"
    )
    await s.call(_heartbeat(g, t), node=node)


@scenario("ConsumerGroupHeartbeat", "join-and-leave", "join, heartbeat, leave (epoch -1)")
async def cg_join_leave(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    g = s.name("g")
    node = await s.coordinator(g)
    r = await s.call(_heartbeat(g, t), node=node)
    if r is not None and r.error_code == 0:
        await s.call(_heartbeat(g, t, r.member_id, r.member_epoch), node=node)
        await s.call(_heartbeat(g, t, r.member_id, -1), node=node)


@scenario("ConsumerGroupHeartbeat", "fenced-epoch", "a heartbeat at an epoch the member never had")
async def cg_fenced(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    node = await s.coordinator(g)
    r = await s.call(_heartbeat(g, t), node=node)
    if r is not None and r.error_code == 0:
        await s.call(_heartbeat(g, t, r.member_id, r.member_epoch + 10), node=node)


@scenario("ConsumerGroupHeartbeat", "unknown-member", "epoch 5 of a member id never issued")
async def cg_unknown(s: Session) -> None:
    g = s.name("g")
    await s.call(_heartbeat(g, None, "AAAAAAAAAAAAAAAAAAAAAA", 5), node=await s.coordinator(g))


@scenario("ConsumerGroupHeartbeat", "unknown-assignor", "server_assignor 'nonesuch'")
async def cg_assignor(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await s.call(_heartbeat(g, t, server_assignor="nonesuch"), node=await s.coordinator(g))


@scenario("ConsumerGroupHeartbeat", "not-coordinator", "to another broker", brokers=2)
async def cg_not_coordinator(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await s.call(_heartbeat(g, t), node=s.other_node(await s.coordinator(g)))


@scenario("ConsumerGroupDescribe", "ordinary", "a group with one member")
async def cg_describe(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    g = s.name("g")
    node = await s.coordinator(g)
    await s.setup(_heartbeat(g, t), node=node)
    await s.call(ConsumerGroupDescribeRequest(group_ids=[g]), node=node)


@scenario("ConsumerGroupDescribe", "regex-internal", "a regex that matches __consumer_offsets")
async def cg_describe_regex_internal(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    g = s.name("g")
    node = await s.coordinator(g)  # __consumer_offsets exists from here on
    join = _heartbeat(g, None, s.name("m"), subscribed_topic_regex=f"__consumer_offsets|{t}")
    r = await s.setup(join, node=node)
    # A broker may resolve the regex after the join; heartbeat until the member is assigned.
    for _ in range(40):
        if r.error_code or (r.assignment is not None and r.assignment.topic_partitions):
            break
        await asyncio.sleep(0.25)
        r = await s.setup(_heartbeat(g, None, r.member_id, r.member_epoch), node=node)
    await s.call(ConsumerGroupDescribeRequest(group_ids=[g]), node=node)


@scenario("ConsumerGroupDescribe", "unknown-group", "a group that does not exist")
async def cg_describe_unknown(s: Session) -> None:
    g = s.name("g")
    await s.call(ConsumerGroupDescribeRequest(group_ids=[g]), node=await s.coordinator(g))


@scenario("ConsumerGroupDescribe", "empty-id", "a group id of no characters")
async def cg_describe_empty(s: Session) -> None:
    await s.call(ConsumerGroupDescribeRequest(group_ids=[""]))


@scenario("ConsumerGroupDescribe", "classic-group", "a group of the classic protocol")
async def cg_describe_classic(s: Session) -> None:
    g = s.name("g")
    node, _, _ = await _stable(s, g)
    await s.call(ConsumerGroupDescribeRequest(group_ids=[g]), node=node)


#: The assignment interval of `cg_group_assignment_interval`.
CONSUMER_INTERVAL_MS = 4000


def _consumer_answer(data: Any) -> Any:
    """A heartbeat's answer cut to its error and how many partitions it gives (null:
    unchanged): the epochs count the set-up's steps, the partitions the assignor's
    choice, and only the timing of the target is compared here."""
    a = data["assignment"]
    given = None if a is None else sum(len(t["partitions"]) for t in a["topicPartitions"])
    return {"errorCode": data["errorCode"], "partitions": given}


@scenario(
    "ConsumerGroupHeartbeat",
    "group-assignment-interval",
    "a group's own consumer.assignment.interval.ms: a second member joins inside the "
    "interval, the first heartbeats inside it and after it",
)
async def cg_group_assignment_interval(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    g = s.name("g")
    node = await s.coordinator(g)
    await set_group_configs(s, g, [node], consumer_assignment_interval_ms=str(CONSUMER_INTERVAL_MS))
    first, second = "consumer-member-000000001", "consumer-member-000000002"
    # The first member's target is computed at its join: the recorded steps in the
    # interval must come within its first half (checked before the wait).
    computed = time.monotonic()
    r = await s.setup(_heartbeat(g, t, member=first), node=node)
    if r.error_code or r.assignment is None:
        raise SetupError(f"consumer group {g}: the join answered error {r.error_code}")
    H = ConsumerGroupHeartbeatRequest
    owned = [
        H.TopicPartitions(topic_id=x.topic_id, partitions=x.partitions)
        for x in r.assignment.topic_partitions
    ]
    beat = H(group_id=g, member_id=first, member_epoch=r.member_epoch, topic_partitions=owned)
    await s.call(_heartbeat(g, t, member=second), node=node, keep=_consumer_answer)
    await s.call(beat, node=node, keep=_consumer_answer)
    if time.monotonic() - computed > CONSUMER_INTERVAL_MS / 1000 / 2:
        raise SetupError(f"consumer group {g}: the steps came late in the interval")
    await asyncio.sleep(CONSUMER_INTERVAL_MS / 1000 + 1.0)
    await s.call(beat, node=node, keep=_consumer_answer)
