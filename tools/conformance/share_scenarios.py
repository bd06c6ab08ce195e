"""Share groups (KIP-932): ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch,
ShareAcknowledge and the share offsets APIs (Describe/Alter/DeleteShareGroupOffsets, with
DeleteGroups and DescribeGroups of share groups), their ordinary paths and their errors."""

from __future__ import annotations

import asyncio
from typing import Any

from kafkagen.generated.alter_share_group_offsets import AlterShareGroupOffsetsRequest
from kafkagen.generated.delete_groups import DeleteGroupsRequest
from kafkagen.generated.delete_share_group_offsets import DeleteShareGroupOffsetsRequest
from kafkagen.generated.delete_share_group_state import DeleteShareGroupStateRequest
from kafkagen.generated.describe_configs import DescribeConfigsRequest
from kafkagen.generated.describe_groups import DescribeGroupsRequest
from kafkagen.generated.describe_share_group_offsets import DescribeShareGroupOffsetsRequest
from kafkagen.generated.initialize_share_group_state import InitializeShareGroupStateRequest
from kafkagen.generated.list_groups import ListGroupsRequest
from kafkagen.generated.read_share_group_state import ReadShareGroupStateRequest
from kafkagen.generated.read_share_group_state_summary import ReadShareGroupStateSummaryRequest
from kafkagen.generated.share_acknowledge import ShareAcknowledgeRequest
from kafkagen.generated.share_fetch import ShareFetchRequest
from kafkagen.generated.share_group_describe import ShareGroupDescribeRequest
from kafkagen.generated.share_group_heartbeat import ShareGroupHeartbeatRequest
from kafkagen.generated.write_share_group_state import WriteShareGroupStateRequest
from kafkagen.runtime.jsonform import uuid_to_json

from .core import Session, scenario
from .group_scenarios import (
    GROUP_RESOURCE,
    consumer_protocol_member,
    group_configs,
    set_group_configs,
)
from .messages import batch, produce
from .txn_scenarios import _end, _settled, _txn

#: Member ids: a share consumer names itself.
MEMBER = "share-member-0000000001"
ACCEPT, RELEASE, RENEW = 1, 2, 4
#: FindCoordinator's key type of a share partition (its share coordinator).
SHARE_KEY = 2
NOT_COORDINATOR, LOADING = 16, 14
#: How long the first fetch after producing may wait: Kafka's can complete before it sees
#: records the producer was just told are written.
FIRST_FETCH_WAIT_MS = 2000


def _heartbeat(group: str, topic: str | None, member: str = MEMBER, epoch: int = 0) -> Any:
    return ShareGroupHeartbeatRequest(
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        subscribed_topic_names=[topic] if topic is not None else None,
    )


async def _joined(s: Session, group: str, topic: str, member: str = MEMBER) -> Any:
    """The member in the group, holding its partitions (heartbeats not recorded): Kafka
    assigns a partition once its share state is initialised, a heartbeat or two after the
    join. None if it could not join."""
    node = await s.coordinator(group)
    r = await s.setup(_heartbeat(group, topic, member), node=node)
    for _ in range(50):
        if r.error_code != 0:
            return None
        if r.assignment is not None and any(t.partitions for t in r.assignment.topic_partitions):
            return r
        await asyncio.sleep(0.2)
        r = await s.setup(_heartbeat(group, None, member, r.member_epoch), node=node)
    return None


def _fetch(
    s: Session,
    group: str,
    topic: str | None,
    epoch: int,
    acks: list[tuple[int, int, int]] = (),  # type: ignore[assignment]
    member: str = MEMBER,
    wait_ms: int = 0,
) -> ShareFetchRequest:
    F = ShareFetchRequest
    topics = []
    if topic is not None:
        topics = [
            F.FetchTopic(
                topic_id=s.topic_uuids[topic],
                partitions=[
                    F.FetchPartition(
                        partition_index=0,
                        acknowledgement_batches=[
                            F.AcknowledgementBatch(
                                first_offset=a, last_offset=b, acknowledge_types=[t]
                            )
                            for a, b, t in acks
                        ],
                    )
                ],
            )
        ]
    return F(
        group_id=group,
        member_id=member,
        share_session_epoch=epoch,
        max_wait_ms=wait_ms,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=100,
        batch_size=100,
        topics=topics,
        forgotten_topics_data=[],
    )


def _ack(
    s: Session, group: str, topic: str, epoch: int, acks: list[tuple[int, int, int]]
) -> ShareAcknowledgeRequest:
    A = ShareAcknowledgeRequest
    return A(
        group_id=group,
        member_id=MEMBER,
        share_session_epoch=epoch,
        topics=[
            A.AcknowledgeTopic(
                topic_id=s.topic_uuids[topic],
                partitions=[
                    A.AcknowledgePartition(
                        partition_index=0,
                        acknowledgement_batches=[
                            A.AcknowledgementBatch(
                                first_offset=a, last_offset=b, acknowledge_types=[t]
                            )
                            for a, b, t in acks
                        ],
                    )
                ],
            )
        ],
    )


async def _started(s: Session, group: str, topic: str) -> tuple[int, int]:
    """A member holding the partition (its share state initialised at the latest offset,
    the default) with a share session open on the leader, and then 3 records produced; the
    leader and the session's next epoch."""
    await _joined(s, group, topic)
    node = await s.leader(topic)
    # Kafka initialises the partition's share state on the first fetch, in the background:
    # a second fetch (waiting a little) comes after it.
    await s.setup(_fetch(s, group, topic, 0), node=node)
    await s.setup(_fetch(s, group, topic, 1, wait_ms=500), node=node)
    await s.produced(topic, batch(3))
    return node, 2


async def _acquired(s: Session) -> tuple[str, str, int, int]:
    """`_started` on a new topic and group, then a fetch acquiring the 3 records (recorded);
    the group, topic, leader and the session's next epoch."""
    t = await s.create_topic()
    g = s.name("g")
    node, epoch = await _started(s, g, t)
    await s.call(_fetch(s, g, t, epoch, wait_ms=FIRST_FETCH_WAIT_MS), node=node)
    return g, t, node, epoch + 1


# ---------------------------------------------------------------------- ShareGroupHeartbeat


@scenario("ShareGroupHeartbeat", "join", "a new member subscribing to a topic of two partitions")
async def sg_join(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    g = s.name("g")
    await s.call(_heartbeat(g, t), node=await s.coordinator(g))


@scenario("ShareGroupHeartbeat", "leave", "a member holding its partition leaves (epoch -1)")
async def sg_leave(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    if await _joined(s, g, t) is not None:
        await s.call(_heartbeat(g, None, epoch=-1), node=await s.coordinator(g))


@scenario(
    "ShareGroupHeartbeat",
    "share-version-0",
    "a join, a describe, a fetch and an offsets reset while share.version is 0 (then set back)",
)
async def sg_share_version_off(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    node = await s.coordinator(g)
    previous = await s.set_feature_level("share.version", 0, node)
    try:
        await s.call(_heartbeat(g, t), node=node)
        await s.call(ShareGroupDescribeRequest(group_ids=[g]), node=node)
        await s.call(_fetch(s, g, t, 0), node=node)
        await s.call(AlterShareGroupOffsetsRequest(group_id=g, topics=[]), node=node)
    finally:
        await s.set_feature_level("share.version", previous, node)


@scenario("ShareGroupHeartbeat", "empty-member-id", "a join without a member id")
async def sg_empty_member(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await s.call(_heartbeat(g, t, member=""), node=await s.coordinator(g))


@scenario("ShareGroupHeartbeat", "no-subscription", "a join that subscribes to nothing")
async def sg_no_subscription(s: Session) -> None:
    g = s.name("g")
    await s.call(_heartbeat(g, None), node=await s.coordinator(g))


@scenario("ShareGroupHeartbeat", "fenced-epoch", "a heartbeat at an epoch the member never had")
async def sg_fenced(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    r = await _joined(s, g, t)
    if r is not None:
        await s.call(_heartbeat(g, None, epoch=r.member_epoch + 10), node=await s.coordinator(g))


@scenario("ShareGroupHeartbeat", "unknown-member", "epoch 5 of a member that never joined")
async def sg_unknown(s: Session) -> None:
    g = s.name("g")
    await s.call(_heartbeat(g, None, epoch=5), node=await s.coordinator(g))


@scenario("ShareGroupHeartbeat", "consumer-group-id", "joining a consumer-protocol group's id")
async def sg_consumer_group(s: Session) -> None:
    t, g, node = await consumer_protocol_member(s)
    await s.call(_heartbeat(g, t), node=node)


# ---------------------------------------------------------------------- ShareGroupDescribe


@scenario("ShareGroupDescribe", "one-member", "a group of one member and its partitions")
async def sg_describe(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    g = s.name("g")
    await _joined(s, g, t)
    await s.call(ShareGroupDescribeRequest(group_ids=[g]), node=await s.coordinator(g))


@scenario("ShareGroupDescribe", "unknown-group", "a group id no group has")
async def sg_describe_unknown(s: Session) -> None:
    g = s.name("g")
    await s.call(ShareGroupDescribeRequest(group_ids=[g]), node=await s.coordinator(g))


@scenario("ListGroups", "share-group", "a share group, listed by type")
async def sg_list(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await _joined(s, g, t)

    def mine(data: Any) -> Any:
        data["groups"] = [x for x in data["groups"] if x["groupId"] == g]
        return data

    await s.call(ListGroupsRequest(types_filter=["share"]), node=await s.coordinator(g), keep=mine)


# ---------------------------------------------------------------------- ShareFetch


@scenario("ShareFetch", "acquire-and-accept", "acquire three records, accept them, fetch again")
async def sf_acquire(s: Session) -> None:
    g, t, node, epoch = await _acquired(s)
    await s.call(_fetch(s, g, t, epoch, acks=[(0, 2, ACCEPT)]), node=node)


@scenario("ShareFetch", "release-redelivers", "released records come back with delivery count 2")
async def sf_release(s: Session) -> None:
    g, t, node, epoch = await _acquired(s)
    await s.call(_fetch(s, g, t, epoch, acks=[(0, 2, RELEASE)]), node=node)
    await s.call(_fetch(s, g, t, epoch + 1, wait_ms=FIRST_FETCH_WAIT_MS), node=node)


@scenario("ShareFetch", "no-session", "an incremental fetch (epoch 3) without a session")
async def sf_no_session(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await s.call(_fetch(s, g, t, 3), node=await s.leader(t))


@scenario("ShareFetch", "open-with-acks", "a fetch opening a session (epoch 0) that acknowledges")
async def sf_open_acks(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await _joined(s, g, t)
    await s.call(_fetch(s, g, t, 0, acks=[(0, 0, ACCEPT)]), node=await s.leader(t))


@scenario("ShareFetch", "wrong-epoch", "a session opened, then a fetch at epoch 5")
async def sf_wrong_epoch(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await _joined(s, g, t)
    node = await s.leader(t)
    await s.setup(_fetch(s, g, t, 0), node=node)
    await s.call(_fetch(s, g, t, 5), node=node)


@scenario("ShareFetch", "close-unknown-session", "closing (epoch -1) a session never opened")
async def sf_close_unknown(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await s.call(_fetch(s, g, None, -1), node=await s.leader(t))


# ---------------------------------------------------------------------- ShareAcknowledge


@scenario("ShareAcknowledge", "accept", "accepting acquired records in the session")
async def sa_accept(s: Session) -> None:
    g, t, node, epoch = await _acquired(s)
    await s.call(_ack(s, g, t, epoch, [(0, 2, ACCEPT)]), node=node)


@scenario("ShareAcknowledge", "not-acquired", "accepting an offset the member does not hold")
async def sa_not_acquired(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    node, epoch = await _started(s, g, t)
    await s.call(_ack(s, g, t, epoch, [(0, 0, ACCEPT)]), node=node)


@scenario("ShareAcknowledge", "initial-epoch", "an acknowledgement at epoch 0")
async def sa_initial_epoch(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await s.call(_ack(s, g, t, 0, [(0, 0, ACCEPT)]), node=await s.leader(t))


@scenario("ShareAcknowledge", "no-session", "an acknowledgement at epoch 1 without a session")
async def sa_no_session(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await s.call(_ack(s, g, t, 1, [(0, 0, ACCEPT)]), node=await s.leader(t))


@scenario(
    "ShareAcknowledge",
    "read-committed",
    "share.isolation.level=read_committed: records of an aborted transaction are never "
    "acquired; the committed ones and both markers are",
)
async def sa_read_committed(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    leader = await s.leader(t)
    await set_group_configs(
        s,
        g,
        [leader, await s.coordinator(g)],
        share_isolation_level="read_committed",
        share_auto_offset_reset="earliest",
    )
    # Offsets 0-1 committed, 2 their marker, 3-4 aborted, 5 their marker.
    for part, commit in (("committed", True), ("aborted", False)):
        x = await _txn(s, part)
        await x.add(t, record=False)
        await s.setup(produce(t, x.batch(), transactional_id=x.tid), node=leader)
        await s.setup(_end(x.tid, x.pid, x.epoch, commit), node=x.node)
        await _settled(s, t, leader)
    await _joined(s, g, t)
    # Kafka starts the partition's share state in the background and may acquire the six
    # offsets over more than one fetch: fetch (bounded) until the last one is acquired.
    epoch = 0
    for _ in range(10):
        r = await s.setup(_fetch(s, g, t, epoch, wait_ms=FIRST_FETCH_WAIT_MS), node=leader)
        epoch += 1
        got = [a for tp in r.responses for p in tp.partitions for a in p.acquired_records]
        if any(a.last_offset >= 5 for a in got):
            break
    await s.call(_ack(s, g, t, epoch, [(3, 4, ACCEPT)]), node=leader)
    await s.call(_ack(s, g, t, epoch + 1, [(0, 2, ACCEPT), (5, 5, ACCEPT)]), node=leader)


@scenario(
    "ShareAcknowledge",
    "renew-disabled",
    "share.renew.acknowledge.enable=false: renewing acquired records' locks, then accepting",
)
async def sa_renew_disabled(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    nodes = [await s.leader(t), await s.coordinator(g)]
    await set_group_configs(s, g, nodes, share_renew_acknowledge_enable="false")
    node, epoch = await _started(s, g, t)
    await s.setup(_fetch(s, g, t, epoch, wait_ms=FIRST_FETCH_WAIT_MS), node=node)
    renew = _ack(s, g, t, epoch + 1, [(0, 2, RENEW)])
    renew.is_renew_ack = True
    await s.call(renew, node=node)
    await s.call(_ack(s, g, t, epoch + 2, [(0, 2, ACCEPT)]), node=node)


# ---------------------------------------------------------------------- share offsets


def _describe_offsets(group: str, topics: list[tuple[str, list[int]]] | None) -> Any:
    D = DescribeShareGroupOffsetsRequest
    return D(
        groups=[
            D.DescribeShareGroupOffsetsRequestGroup(
                group_id=group,
                topics=(
                    None
                    if topics is None
                    else [
                        D.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=parts)
                        for t, parts in topics
                    ]
                ),
            )
        ]
    )


def _alter_offsets(group: str, topics: list[tuple[str, list[tuple[int, int]]]]) -> Any:
    A = AlterShareGroupOffsetsRequest
    return A(
        group_id=group,
        topics=[
            A.AlterShareGroupOffsetsRequestTopic(
                topic_name=t,
                partitions=[
                    A.AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o)
                    for p, o in parts
                ],
            )
            for t, parts in topics
        ],
    )


def _delete_offsets(group: str, topics: list[str]) -> Any:
    D = DeleteShareGroupOffsetsRequest
    return D(
        group_id=group, topics=[D.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics]
    )


async def _accepted(s: Session) -> tuple[str, str, int]:
    """`_started` on a new topic and group, the 3 records acquired and accepted (none of
    it recorded): the group, topic and the group's coordinator."""
    t = await s.create_topic()
    g = s.name("g")
    node, epoch = await _started(s, g, t)
    await s.setup(_fetch(s, g, t, epoch, wait_ms=FIRST_FETCH_WAIT_MS), node=node)
    await s.setup(_ack(s, g, t, epoch + 1, [(0, 2, ACCEPT)]), node=node)
    return g, t, await s.coordinator(g)


async def _emptied(s: Session) -> tuple[str, str, int]:
    """`_accepted`, then the member leaves: an empty group with state for the topic."""
    g, t, node = await _accepted(s)
    await s.setup(_heartbeat(g, None, epoch=-1), node=node)
    return g, t, node


@scenario("DescribeShareGroupOffsets", "after-accept", "a group that accepted 3 records")
async def dso_after_accept(s: Session) -> None:
    g, t, node = await _accepted(s)
    await s.call(_describe_offsets(g, [(t, [0])]), node=node)


@scenario("DescribeShareGroupOffsets", "whole-group", "topics null: every partition with state")
async def dso_whole_group(s: Session) -> None:
    g, _t, node = await _accepted(s)
    await s.call(_describe_offsets(g, None), node=node)


@scenario("DescribeShareGroupOffsets", "unknown-group", "a group id no group has, a real topic")
async def dso_unknown_group(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await s.call(_describe_offsets(g, [(t, [0])]), node=await s.coordinator(g))


@scenario("DescribeShareGroupOffsets", "unknown-topic", "a topic that does not exist")
async def dso_unknown_topic(s: Session) -> None:
    g = s.name("g")
    await s.call(_describe_offsets(g, [(s.name("none"), [0, 1])]), node=await s.coordinator(g))


@scenario("DescribeShareGroupOffsets", "no-topics", "an empty topic list")
async def dso_no_topics(s: Session) -> None:
    g = s.name("g")
    await s.call(_describe_offsets(g, []), node=await s.coordinator(g))


@scenario("AlterShareGroupOffsets", "empty-group", "reset an empty group to offset 1, describe")
async def aso_empty(s: Session) -> None:
    g, t, node = await _emptied(s)
    await s.call(_alter_offsets(g, [(t, [(0, 1)])]), node=node)
    await s.call(_describe_offsets(g, [(t, [0])]), node=node)


@scenario("AlterShareGroupOffsets", "non-empty-group", "reset a group that has a member")
async def aso_non_empty(s: Session) -> None:
    g, t, node = await _accepted(s)
    await s.call(_alter_offsets(g, [(t, [(0, 0)])]), node=node)


@scenario("AlterShareGroupOffsets", "unknown-group", "reset a group id no group has")
async def aso_unknown_group(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await s.call(_alter_offsets(g, [(t, [(0, 0)])]), node=await s.coordinator(g))


@scenario(
    "AlterShareGroupOffsets", "unknown-partitions", "an unknown topic and a partition past the end"
)
async def aso_unknown_partitions(s: Session) -> None:
    g, t, node = await _emptied(s)
    await s.call(_alter_offsets(g, [(s.name("none"), [(0, 0)]), (t, [(0, 2), (5, 0)])]), node=node)


@scenario("DeleteShareGroupOffsets", "empty-group", "delete an empty group's offsets, describe")
async def dlo_empty(s: Session) -> None:
    g, t, node = await _emptied(s)
    await s.call(_delete_offsets(g, [t]), node=node)
    await s.call(_describe_offsets(g, [(t, [0])]), node=node)


@scenario("DeleteShareGroupOffsets", "non-empty-group", "delete offsets of a group with a member")
async def dlo_non_empty(s: Session) -> None:
    g, t, node = await _accepted(s)
    await s.call(_delete_offsets(g, [t]), node=node)


@scenario("DeleteShareGroupOffsets", "unknown-group", "delete offsets of a group id no group has")
async def dlo_unknown_group(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await s.call(_delete_offsets(g, [t]), node=await s.coordinator(g))


@scenario(
    "DeleteShareGroupOffsets", "no-state", "an unknown topic and one the group never consumed"
)
async def dlo_no_state(s: Session) -> None:
    g, _t, node = await _emptied(s)
    other = await s.create_topic("o")
    await s.call(_delete_offsets(g, [s.name("none"), other]), node=node)


@scenario("DeleteGroups", "share-group", "delete an empty share group, then describe it")
async def dg_share(s: Session) -> None:
    g, _t, node = await _emptied(s)
    await s.call(DeleteGroupsRequest(groups_names=[g]), node=node)
    await s.call(ShareGroupDescribeRequest(group_ids=[g]), node=node)


@scenario("DeleteGroups", "non-empty-share-group", "delete a share group that has a member")
async def dg_share_non_empty(s: Session) -> None:
    g, _t, node = await _accepted(s)
    await s.call(DeleteGroupsRequest(groups_names=[g]), node=node)


@scenario("DescribeGroups", "share-group", "DescribeGroups of a share group's id")
async def dg_describe_share(s: Session) -> None:
    g, _t, node = await _accepted(s)
    await s.call(DescribeGroupsRequest(groups=[g]), node=node)


# ---------------------------------------------------------------------- group configs


@scenario(
    "IncrementalAlterConfigs",
    "share-group-earliest",
    "share.auto.offset.reset=earliest on a group: records from before the join are delivered",
)
async def gc_earliest(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    nodes = [await s.leader(t), await s.coordinator(g)]
    await set_group_configs(s, g, nodes, record=True, share_auto_offset_reset="earliest")
    await s.produced(t, batch(3))
    await _joined(s, g, t)
    node = await s.leader(t)
    await s.setup(_fetch(s, g, t, 0), node=node)
    await s.setup(_fetch(s, g, t, 1, wait_ms=FIRST_FETCH_WAIT_MS), node=node)
    # The records before the member joined were acquired (by whichever fetch: Kafka
    # starts the partition in the background): accepting them succeeds.
    await s.call(_ack(s, g, t, 2, [(0, 2, ACCEPT)]), node=node)


@scenario("DescribeConfigs", "group", "a group's configs after two are set")
async def gc_describe(s: Session) -> None:
    g = s.name("g")
    await set_group_configs(
        s, g, [None], share_record_lock_duration_ms="20000", share_isolation_level="read_committed"
    )
    D = DescribeConfigsRequest
    describe = D(
        resources=[
            D.DescribeConfigsResource(
                resource_type=GROUP_RESOURCE, resource_name=g, configuration_keys=None
            )
        ],
        include_synonyms=True,
    )
    await s.call(describe)


@scenario("IncrementalAlterConfigs", "group-bad-values", "group configs Kafka refuses")
async def gc_bad(s: Session) -> None:
    g = s.name("g")
    await s.call(group_configs(g, share_record_lock_duration_ms="100"))
    await s.call(group_configs(g, share_session_timeout_ms="1000"))
    await s.call(group_configs(g, share_unknown="1"))


# ---------------------------------------------------------------------- share-group state


def _state_request(cls: Any, group: str, topic_id: Any, **partition: Any) -> Any:
    """One of the share-group state requests for partition 0 of ``topic_id``."""
    topic = next(
        n
        for n in vars(cls).values()
        if isinstance(n, type) and n.__name__.endswith("Data") and n is not cls.PartitionData
    )
    return cls(
        group_id=group,
        topics=[topic(topic_id=topic_id, partitions=[cls.PartitionData(partition=0, **partition)])],
    )


async def _state_node(s: Session) -> tuple[str, Any, int]:
    """A new topic and group, and the share coordinator of their partition 0 once it
    serves it (Kafka's loads ``__share_group_state`` after answering FindCoordinator)."""
    t = await s.create_topic()
    g = s.name("g")
    topic_id = s.topic_uuids[t]
    node = await s.coordinator(f"{g}:{uuid_to_json(topic_id)}:0", SHARE_KEY)
    for _ in range(100):
        r = await s.setup(_summary(g, topic_id), node=node)
        if r.results[0].partitions[0].error_code not in (NOT_COORDINATOR, LOADING):
            break
        await asyncio.sleep(0.2)
    return g, topic_id, node


def _initialize(g: str, topic_id: Any, epoch: int, start: int) -> Any:
    return _state_request(
        InitializeShareGroupStateRequest, g, topic_id, state_epoch=epoch, start_offset=start
    )


def _summary(g: str, topic_id: Any) -> Any:
    return _state_request(ReadShareGroupStateSummaryRequest, g, topic_id, leader_epoch=0)


def _write(
    g: str, topic_id: Any, state_epoch: int, batches: list[tuple[int, int, int, int]]
) -> Any:
    W = WriteShareGroupStateRequest
    return _state_request(
        W,
        g,
        topic_id,
        state_epoch=state_epoch,
        leader_epoch=0,
        start_offset=5,
        delivery_complete_count=1,
        state_batches=[
            W.StateBatch(first_offset=a, last_offset=b, delivery_state=c, delivery_count=d)
            for a, b, c, d in batches
        ],
    )


@scenario("InitializeShareGroupState", "new", "initialise a share partition at 5, then read it")
async def ss_initialize(s: Session) -> None:
    g, topic_id, node = await _state_node(s)
    await s.call(_initialize(g, topic_id, 0, 5), node=node)
    await s.call(_summary(g, topic_id), node=node)


@scenario("InitializeShareGroupState", "older-epoch", "initialise at state epoch 1 after 3")
async def ss_initialize_fenced(s: Session) -> None:
    g, topic_id, node = await _state_node(s)
    await s.setup(_initialize(g, topic_id, 3, 5), node=node)
    await s.call(_initialize(g, topic_id, 1, 0), node=node)


@scenario("ReadShareGroupState", "initialized", "read a share partition initialised at 5")
async def ss_read(s: Session) -> None:
    g, topic_id, node = await _state_node(s)
    await s.setup(_initialize(g, topic_id, 0, 5), node=node)
    await s.call(_state_request(ReadShareGroupStateRequest, g, topic_id, leader_epoch=0), node=node)


@scenario("ReadShareGroupState", "uninitialized", "read a share partition that has no state")
async def ss_read_none(s: Session) -> None:
    g, topic_id, node = await _state_node(s)
    await s.call(_state_request(ReadShareGroupStateRequest, g, topic_id, leader_epoch=0), node=node)


@scenario("WriteShareGroupState", "write-and-read", "write two batches, then read the state")
async def ss_write(s: Session) -> None:
    g, topic_id, node = await _state_node(s)
    await s.setup(_initialize(g, topic_id, 0, 5), node=node)
    await s.call(_write(g, topic_id, 0, [(5, 6, 2, 1), (7, 9, 0, 2)]), node=node)
    await s.call(_state_request(ReadShareGroupStateRequest, g, topic_id, leader_epoch=0), node=node)


@scenario("WriteShareGroupState", "uninitialized", "write to a share partition with no state")
async def ss_write_none(s: Session) -> None:
    g, topic_id, node = await _state_node(s)
    await s.call(_write(g, topic_id, 0, [(5, 6, 2, 1)]), node=node)


@scenario("WriteShareGroupState", "older-state-epoch", "write at state epoch 1 after 3")
async def ss_write_fenced(s: Session) -> None:
    g, topic_id, node = await _state_node(s)
    await s.setup(_initialize(g, topic_id, 3, 5), node=node)
    await s.call(_write(g, topic_id, 1, [(5, 6, 2, 1)]), node=node)


@scenario("DeleteShareGroupState", "delete-and-summary", "delete a share partition's state")
async def ss_delete(s: Session) -> None:
    g, topic_id, node = await _state_node(s)
    await s.setup(_initialize(g, topic_id, 0, 5), node=node)
    await s.call(_state_request(DeleteShareGroupStateRequest, g, topic_id), node=node)
    await s.call(_summary(g, topic_id), node=node)


@scenario("ReadShareGroupStateSummary", "uninitialized", "the summary of a partition without state")
async def ss_summary_none(s: Session) -> None:
    g, topic_id, node = await _state_node(s)
    await s.call(_summary(g, topic_id), node=node)


@scenario(
    "ReadShareGroupState",
    "share-version-0",
    "the five share-state APIs on an initialised partition while share.version is 0",
)
async def ss_share_version_off(s: Session) -> None:
    g, topic_id, node = await _state_node(s)
    await s.setup(_initialize(g, topic_id, 0, 5), node=node)
    previous = await s.set_feature_level("share.version", 0, node)
    try:
        await s.call(
            _state_request(ReadShareGroupStateRequest, g, topic_id, leader_epoch=0), node=node
        )
        await s.call(_write(g, topic_id, 0, [(5, 6, 2, 1)]), node=node)
        await s.call(_summary(g, topic_id), node=node)
        await s.call(_initialize(g, topic_id, 1, 0), node=node)
        await s.call(_state_request(DeleteShareGroupStateRequest, g, topic_id), node=node)
    finally:
        await s.set_feature_level("share.version", previous, node)
