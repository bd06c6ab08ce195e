"""Streams groups (KIP-1071): StreamsGroupHeartbeat and StreamsGroupDescribe, their
ordinary paths and their errors, DescribeGroups of a streams group, and both streams APIs
while ``streams.version`` is 0."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from kafkagen.generated.describe_groups import DescribeGroupsRequest
from kafkagen.generated.list_groups import ListGroupsRequest
from kafkagen.generated.streams_group_describe import StreamsGroupDescribeRequest
from kafkagen.generated.streams_group_heartbeat import StreamsGroupHeartbeatRequest
from kafkagen.generated.streams_group_topology_description_update import (
    StreamsGroupTopologyDescriptionUpdateRequest,
)

from .core import Session, SetupError, scenario
from .group_scenarios import consumer_protocol_member, group_configs, set_group_configs

H = StreamsGroupHeartbeatRequest
#: A Streams client names itself and its process.
MEMBER = "streams-member-0000000001"
OTHER = "streams-member-0000000002"
PROCESS = "7f0c3a52-5a43-4c5e-9d2b-000000000001"
#: Answers to a set-up join that pass: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
#: COORDINATOR_NOT_AVAILABLE, and UNKNOWN_SERVER_ERROR, which Kafka 4.4 answers while its
#: group coordinator has not yet seen a source topic just created (see missing-source).
_NOT_YET = frozenset({-1, 14, 15, 16})


def _topology(s: Session, source: str, epoch: int = 0, changelog_partitions: int = 0) -> Any:
    """Word count's shape: subtopology 0 reads ``source`` and writes a repartition topic,
    subtopology 1 reads it and keeps a store with a changelog."""
    rep, changelog = s.name("rep"), s.name("changelog")
    return H.Topology(
        epoch=epoch,
        subtopologies=[
            H.Subtopology(
                subtopology_id="0", source_topics=[source], repartition_sink_topics=[rep]
            ),
            H.Subtopology(
                subtopology_id="1",
                state_changelog_topics=[
                    H.TopicInfo(
                        name=changelog,
                        partitions=changelog_partitions,
                        replication_factor=1,
                        topic_configs=[H.KeyValue(key="cleanup.policy", value="compact")],
                    )
                ],
                repartition_source_topics=[H.TopicInfo(name=rep, replication_factor=1)],
            ),
        ],
    )


def _join(group: str, topology: Any, member: str = MEMBER, **override: Any) -> Any:
    req = H(
        group_id=group,
        member_id=member,
        member_epoch=0,
        endpoint_information_epoch=0,
        rebalance_timeout_ms=30000,
        topology=topology,
        active_tasks=[],
        standby_tasks=[],
        warmup_tasks=[],
        process_id=PROCESS,
        user_endpoint=H.Endpoint(host="127.0.0.1", port=9999),
        client_tags=[],
    )
    for k, v in override.items():
        setattr(req, k, v)
    return req


def _beat(group: str, epoch: int, member: str = MEMBER, **override: Any) -> Any:
    req = H(group_id=group, member_id=member, member_epoch=epoch, endpoint_information_epoch=0)
    for k, v in override.items():
        setattr(req, k, v)
    return req


async def _joined(s: Session, group: str, source: str | None = None, **override: Any) -> Any:
    """A member in ``group`` on a new source topic (not recorded), its join changed by
    ``override`` (see `_join`); its join's answer. A
    coordinator that moves, loads or has not seen the topic yet is asked again, for at most
    20 s; a join refused otherwise stops the scenario as a set-up error naming the error,
    rather than letting the recorded steps run against a group that was never made."""
    source = source or await s.create_topic(partitions=2)
    deadline = time.monotonic() + 20.0
    while True:
        join = _join(group, _topology(s, source), **override)
        r = await s.setup(join, node=await s.coordinator(group))
        if r.error_code == 0:
            return r
        if r.error_code not in _NOT_YET or time.monotonic() > deadline:
            raise SetupError(f"streams group {group}: the join answered error {r.error_code}")
        await asyncio.sleep(0.2)


# ---------------------------------------------------------------- StreamsGroupHeartbeat


@scenario("StreamsGroupHeartbeat", "join", "a first member whose internal topics do not exist")
async def st_join(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    g = s.name("g")
    await s.call(_join(g, _topology(s, t)), node=await s.coordinator(g))


@scenario(
    "StreamsGroupHeartbeat",
    "group-configs",
    "a join in a group whose own heartbeat interval and session timeout are set",
)
async def st_group_configs(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    g = s.name("g")
    node = await s.coordinator(g)
    await set_group_configs(
        s, g, [node], streams_heartbeat_interval_ms="7000", streams_session_timeout_ms="50000"
    )
    await s.call(_join(g, _topology(s, t)), node=node)


@scenario("StreamsGroupHeartbeat", "missing-source", "a topology whose source topic is absent")
async def st_missing_source(s: Session) -> None:
    g = s.name("g")
    await s.call(_join(g, _topology(s, s.name("absent"))), node=await s.coordinator(g))


@scenario("StreamsGroupHeartbeat", "leave", "a member leaves (epoch -1)")
async def st_leave(s: Session) -> None:
    g = s.name("g")
    await _joined(s, g)
    await s.call(_beat(g, -1), node=await s.coordinator(g))


@scenario("StreamsGroupHeartbeat", "unknown-member", "epoch 1 of a member the group never saw")
async def st_unknown_member(s: Session) -> None:
    g = s.name("g")
    await _joined(s, g)
    await s.call(_beat(g, 1, member=OTHER), node=await s.coordinator(g))


@scenario("StreamsGroupHeartbeat", "unknown-group", "epoch 5 in a group that does not exist")
async def st_unknown_group(s: Session) -> None:
    g = s.name("g")
    await s.call(_beat(g, 5), node=await s.coordinator(g))


@scenario("StreamsGroupHeartbeat", "fenced-epoch", "a heartbeat at an epoch the member never had")
async def st_fenced(s: Session) -> None:
    g = s.name("g")
    r = await _joined(s, g)
    await s.call(_beat(g, r.member_epoch + 10), node=await s.coordinator(g))


@scenario("StreamsGroupHeartbeat", "empty-group-id", "a join with an empty group id")
async def st_empty_group(s: Session) -> None:
    t = await s.create_topic()
    await s.call(_join("", _topology(s, t)), node=None)  # FindCoordinator refuses ""


@scenario("StreamsGroupHeartbeat", "join-without-topology", "a join (epoch 0) with no topology")
async def st_no_topology(s: Session) -> None:
    g = s.name("g")
    await s.call(_join(g, None), node=await s.coordinator(g))


@scenario("StreamsGroupHeartbeat", "join-without-timeout", "a join without RebalanceTimeoutMs")
async def st_no_timeout(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    await s.call(_join(g, _topology(s, t), rebalance_timeout_ms=-1), node=await s.coordinator(g))


@scenario("StreamsGroupHeartbeat", "join-with-tasks", "a join that says it owns an active task")
async def st_join_with_tasks(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    owned = [H.TaskIds(subtopology_id="0", partitions=[0])]
    await s.call(_join(g, _topology(s, t), active_tasks=owned), node=await s.coordinator(g))


@scenario("StreamsGroupHeartbeat", "some-task-types", "active tasks given, standby tasks null")
async def st_some_task_types(s: Session) -> None:
    g = s.name("g")
    r = await _joined(s, g)
    req = _beat(g, r.member_epoch, active_tasks=[], standby_tasks=None, warmup_tasks=[])
    await s.call(req, node=await s.coordinator(g))


@scenario("StreamsGroupHeartbeat", "topology-later", "a topology on a heartbeat after the join")
async def st_topology_later(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    g = s.name("g")
    r = await _joined(s, g, t)
    req = _beat(g, r.member_epoch, topology=_topology(s, t))
    await s.call(req, node=await s.coordinator(g))


@scenario("StreamsGroupHeartbeat", "changelog-partitions", "a changelog with a partition count")
async def st_changelog_partitions(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    req = _join(g, _topology(s, t, changelog_partitions=3))
    await s.call(req, node=await s.coordinator(g))


@scenario("StreamsGroupHeartbeat", "newer-topology", "a second member with a newer topology epoch")
async def st_newer_topology(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    g = s.name("g")
    await _joined(s, g, t)
    req = _join(g, _topology(s, t, epoch=1), member=OTHER)
    await s.call(req, node=await s.coordinator(g))


@scenario("StreamsGroupHeartbeat", "consumer-group-id", "joining a consumer-protocol group's id")
async def st_consumer_group(s: Session) -> None:
    t, g, node = await consumer_protocol_member(s)
    await s.call(_join(g, _topology(s, t)), node=node)


# ---------------------------------------------------------------- StreamsGroupDescribe


@scenario("StreamsGroupDescribe", "one-member", "a group of one member, its topology and tasks")
async def st_describe(s: Session) -> None:
    g = s.name("g")
    await _joined(s, g)
    await s.call(StreamsGroupDescribeRequest(group_ids=[g]), node=await s.coordinator(g))


@scenario(
    "StreamsGroupDescribe",
    "task-offsets",
    "a member reports its tasks' changelog offsets and end offsets; no warm-up tasks",
)
async def st_describe_task_offsets(s: Session) -> None:
    g = s.name("g")
    joined = await _joined(s, g)
    node = await s.coordinator(g)
    # Heartbeats (not recorded) until the internal topics exist and the initial delay is
    # over, for at most 20 s: the recorded steps then meet a group with its tasks.
    epoch, deadline = joined.member_epoch, time.monotonic() + 20.0
    while True:
        r = await s.setup(_beat(g, epoch), node=node)
        if r.error_code:
            raise SetupError(f"streams group {g}: a heartbeat answered error {r.error_code}")
        epoch = r.member_epoch
        if not r.status and r.active_tasks is not None:
            break
        if time.monotonic() > deadline:
            raise SetupError(f"streams group {g}: no tasks within 20 s ({r.status})")
        await asyncio.sleep(0.3)
    offsets = [H.TaskOffset(subtopology_id="1", partition=1, offset=40)]
    ends = [H.TaskOffset(subtopology_id="1", partition=1, offset=90)]
    await s.call(_beat(g, epoch, task_offsets=offsets, task_end_offsets=ends), node=node)
    await s.call(StreamsGroupDescribeRequest(group_ids=[g]), node=node)


@scenario("StreamsGroupDescribe", "unknown-group", "a group id no group has")
async def st_describe_unknown(s: Session) -> None:
    g = s.name("g")
    await s.call(StreamsGroupDescribeRequest(group_ids=[g]), node=await s.coordinator(g))


@scenario("StreamsGroupDescribe", "empty-group-id", "an empty group id")
async def st_describe_empty(s: Session) -> None:
    await s.call(StreamsGroupDescribeRequest(group_ids=[""]), node=None)


@scenario("ListGroups", "streams-group", "a streams group, listed by type")
async def st_list(s: Session) -> None:
    g = s.name("g")
    await _joined(s, g)

    def mine(data: Any) -> Any:
        data["groups"] = [x for x in data["groups"] if x["groupId"] == g]
        return data

    await s.call(
        ListGroupsRequest(types_filter=["streams"]), node=await s.coordinator(g), keep=mine
    )


@scenario("DescribeGroups", "streams-group-v5", "a streams group at v5: Dead, no error")
async def st_describe_groups_v5(s: Session) -> None:
    g = s.name("g")
    await _joined(s, g)
    await s.call(DescribeGroupsRequest(groups=[g]), 5, node=await s.coordinator(g))


@scenario("DescribeGroups", "streams-group", "a streams group: not a classic group (v6+)")
async def st_describe_groups(s: Session) -> None:
    g = s.name("g")
    await _joined(s, g)
    await s.call(DescribeGroupsRequest(groups=[g]), node=await s.coordinator(g))


# ---------------------------------------------------------------- streams.version 0


@scenario(
    "StreamsGroupHeartbeat",
    "streams-version-0",
    "a join and a describe while streams.version is 0 (then set back)",
)
async def st_streams_version_off(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    node = await s.coordinator(g)
    previous = await s.set_feature_level("streams.version", 0, node)
    try:
        await s.call(_join(g, _topology(s, t)), node=node)
        await s.call(StreamsGroupDescribeRequest(group_ids=[g]), node=node)
    finally:
        await s.set_feature_level("streams.version", previous, node)


# ---------------------------------------------------------------- static members

INSTANCE = "streams-instance-1"


async def _static_joined(s: Session, group: str) -> tuple[Any, int, str]:
    """A static member (instance id ``INSTANCE``) alone in ``group`` on a new source topic
    (not recorded): its join's answer, the coordinator and the topic."""
    source = await s.create_topic(partitions=2)
    r = await _joined(s, group, source, instance_id=INSTANCE)
    return r, await s.coordinator(group), source


def _rejoin(s: Session, group: str, source: str) -> Any:
    """Another member id joining with ``INSTANCE``."""
    return _join(group, _topology(s, source), member=OTHER, instance_id=INSTANCE)


def _who(data: Any) -> Any:
    """A describe cut to who is in the group at which epoch: the group and member epochs
    otherwise depend on when the internal topics and the initial delay let it assign."""
    return [
        sorted((m["memberId"], m["instanceId"], m["memberEpoch"] == -2) for m in g["members"])
        for g in data["groups"]
    ]


def _joined_as(data: Any) -> Any:
    """A join's answer cut to its error and member id (see `_who`)."""
    return {k: data[k] for k in ("errorCode", "errorMessage", "memberId")}


@scenario("StreamsGroupHeartbeat", "static-leave", "a static member leaves at epoch -2")
async def st_static_leave(s: Session) -> None:
    g = s.name("g")
    _, node, _ = await _static_joined(s, g)
    await s.call(_beat(g, -2, instance_id=INSTANCE), node=node)
    await s.call(StreamsGroupDescribeRequest(group_ids=[g]), node=node, keep=_who)


@scenario(
    "StreamsGroupHeartbeat",
    "static-rejoin",
    "a new member id joins with the instance id of a member that left at -2",
)
async def st_static_rejoin(s: Session) -> None:
    g = s.name("g")
    _, node, source = await _static_joined(s, g)
    await s.setup(_beat(g, -2, instance_id=INSTANCE), node=node)
    await s.call(_rejoin(s, g, source), node=node, keep=_joined_as)
    await s.call(StreamsGroupDescribeRequest(group_ids=[g]), node=node, keep=_who)


@scenario("StreamsGroupHeartbeat", "instance-id-held", "a join with a present member's instance id")
async def st_instance_held(s: Session) -> None:
    g = s.name("g")
    _, node, source = await _static_joined(s, g)
    await s.call(_rejoin(s, g, source), node=node)


@scenario(
    "StreamsGroupHeartbeat",
    "instance-id-fenced",
    "a heartbeat from the member whose instance id a new member took over",
)
async def st_instance_fenced(s: Session) -> None:
    g = s.name("g")
    r, node, source = await _static_joined(s, g)
    await s.setup(_beat(g, -2, instance_id=INSTANCE), node=node)
    await s.setup(_rejoin(s, g, source), node=node)
    await s.call(_beat(g, r.member_epoch, instance_id=INSTANCE), node=node)


# ---------------------------------------------------------------- topology descriptions

TD = StreamsGroupTopologyDescriptionUpdateRequest


def _description(s: Session, source: str) -> Any:
    """What word count's first subtopology looks like to a Streams client: a source node
    reading ``source`` and a sink writing the repartition topic."""
    node = TD.TopologyDescriptionNode
    return TD.TopologyDescription(
        subtopologies=[
            TD.TopologyDescriptionSubtopology(
                subtopology_id="0",
                nodes=[
                    node(
                        name="KSTREAM-SOURCE-0",
                        node_type=0,
                        source_topics=[source],
                        stores=[],
                        successors=["KSTREAM-SINK-1"],
                    ),
                    node(
                        name="KSTREAM-SINK-1",
                        node_type=2,
                        source_topics=[],
                        sink_topic=s.name("rep"),
                        stores=[],
                        successors=[],
                    ),
                ],
            )
        ],
        global_stores=[],
    )


def _update(s: Session, group: str, member: str, epoch: int, source: str) -> Any:
    return TD(
        group_id=group,
        member_id=member,
        topology_epoch=epoch,
        topology_description=_description(s, source),
    )


def _describe_with_description(group: str) -> Any:
    return StreamsGroupDescribeRequest(group_ids=[group], include_topology_description=True)


@scenario(
    "StreamsGroupTopologyDescriptionUpdate",
    "member",
    "a member sends its topology's description; a describe asking for it follows",
)
async def st_description_member(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    g = s.name("g")
    node = await s.coordinator(g)
    await _joined(s, g, t)

    def description(data: Any) -> Any:
        """Only the description and its status: the rest is the describe scenarios'."""
        keep = ("errorCode", "topologyDescription", "topologyDescriptionStatus")
        data["groups"] = [{k: x[k] for k in keep} for x in data["groups"]]
        return data

    await s.call(_describe_with_description(g), node=node, keep=description)
    await s.call(_update(s, g, MEMBER, 0, t), node=node)
    await s.call(_describe_with_description(g), node=node, keep=description)


@scenario("StreamsGroupTopologyDescriptionUpdate", "unknown-group", "a group that does not exist")
async def st_description_unknown_group(s: Session) -> None:
    g = s.name("g")
    await s.call(_update(s, g, MEMBER, 0, s.name("t")), node=await s.coordinator(g))


@scenario("StreamsGroupTopologyDescriptionUpdate", "unknown-member", "a member the group never saw")
async def st_description_unknown_member(s: Session) -> None:
    g = s.name("g")
    await _joined(s, g)
    await s.call(_update(s, g, OTHER, 0, s.name("t")), node=await s.coordinator(g))


@scenario(
    "StreamsGroupTopologyDescriptionUpdate",
    "other-epoch",
    "a description of a topology epoch the group does not have",
)
async def st_description_other_epoch(s: Session) -> None:
    g = s.name("g")
    await _joined(s, g)
    await s.call(_update(s, g, MEMBER, 7, s.name("t")), node=await s.coordinator(g))


@scenario("StreamsGroupTopologyDescriptionUpdate", "empty-group-id", "an empty group id")
async def st_description_empty_group(s: Session) -> None:
    await s.call(_update(s, "", MEMBER, 0, s.name("t")), node=None)


# ---------------------------------------------------------------- a group's own assignment configs

OTHER_PROCESS = "7f0c3a52-5a43-4c5e-9d2b-000000000002"
#: How long `_settle` heartbeats a group's members before it gives up.
SETTLE_S = 20.0


def _tasks(ids: Any) -> list[tuple[str, list[int]]] | None:
    """Task ids as sorted (subtopology, partitions) pairs; None stays None (unchanged)."""
    if ids is None:
        return None
    return sorted((t.subtopology_id, sorted(t.partitions)) for t in ids)


def _as_task_ids(tasks: list[tuple[str, list[int]]]) -> list[Any]:
    return [H.TaskIds(subtopology_id=sub, partitions=parts) for sub, parts in tasks]


class _Member:
    """One member's side of a group: its epoch and the tasks it was last given, which its
    heartbeats report as owned (as a Streams client reports what it runs)."""

    def __init__(self, member_id: str, process: str, epoch: int) -> None:
        self.member_id, self.process, self.epoch = member_id, process, epoch
        self.active: list[tuple[str, list[int]]] = []
        self.standby: list[tuple[str, list[int]]] = []

    def beat(self, group: str) -> Any:
        return _beat(
            group,
            self.epoch,
            member=self.member_id,
            active_tasks=_as_task_ids(self.active),
            standby_tasks=_as_task_ids(self.standby),
            warmup_tasks=[],
        )

    def take(self, r: Any) -> None:
        """Keep what a heartbeat's answer gave (null task lists: unchanged)."""
        self.epoch = r.member_epoch
        if r.active_tasks is not None:
            self.active = _tasks(r.active_tasks) or []
        if r.standby_tasks is not None:
            self.standby = _tasks(r.standby_tasks) or []


async def _settle(s: Session, group: str, node: int, members: list[_Member]) -> None:
    """Heartbeat every member in turn (not recorded) until a whole round leaves each
    epoch unchanged with no status and tasks given, for at most `SETTLE_S`."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        quiet = True
        for m in members:
            before = (m.epoch, m.active, m.standby)
            r = await s.setup(m.beat(group), node=node)
            if r.error_code:
                raise SetupError(f"streams group {group}: a heartbeat answered {r.error_code}")
            m.take(r)
            quiet = quiet and not r.status and before == (m.epoch, m.active, m.standby)
        if quiet and all(m.active for m in members):
            return
        if time.monotonic() > deadline:
            raise SetupError(f"streams group {group}: not settled within {SETTLE_S:.0f} s")
        await asyncio.sleep(0.3)


async def _first_member(s: Session, group: str) -> tuple[int, _Member, str]:
    """A member alone in ``group`` (its own configs already set) holding its tasks: the
    coordinator, the member and its source topic."""
    source = await s.create_topic(partitions=2)
    joined = await _joined(s, group, source)
    node = await s.coordinator(group)
    first = _Member(MEMBER, PROCESS, joined.member_epoch)
    await _settle(s, group, node, [first])
    return node, first, source


def _second_join(s: Session, group: str, source: str) -> Any:
    """The second member's join: another process, the same topology."""
    return _join(group, _topology(s, source), member=OTHER, process_id=OTHER_PROCESS)


def _placement(names: dict[str, str]) -> Callable[[Any], Any]:
    """A describe cut to the group's state and, per member (by this scenario's name for
    it), its current and target active and standby tasks: where the tasks went, without
    the epochs, which count the steps each broker took to create the internal topics."""

    def keep(data: Any) -> Any:
        def tasks(a: Any) -> Any:
            kinds = ("activeTasks", "standbyTasks", "warmupTasks")
            return {
                k: sorted((t["subtopologyId"], sorted(t["partitions"])) for t in a[k])
                for k in kinds
            }

        return [
            {
                "errorCode": g["errorCode"],
                "groupState": g["groupState"],
                "members": sorted(
                    (
                        names.get(m["memberId"], "?"),
                        tasks(m["assignment"]),
                        tasks(m["targetAssignment"]),
                    )
                    for m in g["members"]
                ),
            }
            for g in data["groups"]
        ]

    return keep


def _answer(since: int) -> Callable[[Any], Any]:
    """A heartbeat's answer cut to its error, status, tasks, and whether its member epoch
    moved past ``since`` (the epochs themselves depend on the set-up's steps)."""

    def keep(data: Any) -> Any:
        out = {k: data[k] for k in ("errorCode", "status", "activeTasks", "standbyTasks")}
        out["epochMoved"] = data["memberEpoch"] > since
        return out

    return keep


@scenario(
    "StreamsGroupHeartbeat",
    "group-standby-replicas",
    "a group's own streams.num.standby.replicas=1: where two members' standbys go, "
    "then set to 0 between heartbeats",
)
async def st_group_standby_replicas(s: Session) -> None:
    g = s.name("g")
    await set_group_configs(
        s,
        g,
        [await s.coordinator(g)],
        streams_num_standby_replicas="1",
        streams_assignment_interval_ms="0",
        streams_initial_rebalance_delay_ms="0",
    )
    node, first, source = await _first_member(s, g)
    second_join = await s.setup(_second_join(s, g, source), node=node)
    second = _Member(OTHER, OTHER_PROCESS, second_join.member_epoch)
    await _settle(s, g, node, [first, second])
    names = {MEMBER: "first", OTHER: "second"}
    describe = StreamsGroupDescribeRequest(group_ids=[g])
    before = await s.call(describe, node=node, keep=_placement(names))
    await set_group_configs(s, g, [node], record=True, streams_num_standby_replicas="0")
    since = first.epoch
    r = await s.call(first.beat(g), node=node, keep=_answer(since))
    if r is None or r.error_code or before is None:
        return
    first.take(r)
    await _settle(s, g, node, [first, second])
    # The changed standby count moves the group epoch (Kafka 4.4 keeps the count its last
    # target was computed with and compares it at each heartbeat).
    epoch = before.groups[0].group_epoch

    def moved(data: Any) -> Any:
        return {
            "groupEpochMoved": [x["groupEpoch"] > epoch for x in data["groups"]],
            "placement": _placement(names)(data),
        }

    await s.call(describe, node=node, keep=moved)


#: The assignment interval of `st_group_assignment_interval`: long enough that the second
#: join surely comes inside it, short enough for a quick scenario.
INTERVAL_MS = 4000


@scenario(
    "StreamsGroupHeartbeat",
    "group-assignment-interval",
    "a group's own streams.assignment.interval.ms: a second member joins inside the "
    "interval, then heartbeats after it",
)
async def st_group_assignment_interval(s: Session) -> None:
    g = s.name("g")
    await set_group_configs(
        s,
        g,
        [await s.coordinator(g)],
        streams_assignment_interval_ms=str(INTERVAL_MS),
        streams_initial_rebalance_delay_ms="0",
    )
    node, first, source = await _first_member(s, g)
    # The first member's target was computed within the last round of `_settle`.
    computed = time.monotonic()
    r = await s.call(_second_join(s, g, source), node=node, keep=_answer(0))
    if r is None or r.error_code:
        return
    second = _Member(OTHER, OTHER_PROCESS, r.member_epoch)
    second.take(r)
    if time.monotonic() - computed > INTERVAL_MS / 1000 / 2:
        raise SetupError(f"streams group {g}: the second join came late in the interval")
    await asyncio.sleep(INTERVAL_MS / 1000 + 1.0)
    # After the interval the target is computed (without a heartbeat): the first member
    # is asked to revoke half of its tasks.
    since = first.epoch
    r = await s.call(first.beat(g), node=node, keep=_answer(since))
    if r is None or r.error_code:
        return
    first.take(r)
    await _settle(s, g, node, [first, second])
    names = {MEMBER: "first", OTHER: "second"}
    await s.call(StreamsGroupDescribeRequest(group_ids=[g]), node=node, keep=_placement(names))


def _config_error(data: Any) -> Any:
    """An IncrementalAlterConfigs answer with its error texts kept as sent: the message
    names the bound broken, which is what this scenario compares."""
    for r in data["responses"]:
        r["text"] = r["errorMessage"]
    return data


@scenario(
    "IncrementalAlterConfigs",
    "group-streams-out-of-range",
    "a group's streams.num.standby.replicas and streams.assignment.interval.ms above "
    "the broker's bounds, and a negative standby count",
)
async def st_group_configs_out_of_range(s: Session) -> None:
    g = s.name("g")
    await s.call(group_configs(g, streams_num_standby_replicas="5"), keep=_config_error)
    await s.call(group_configs(g, streams_num_standby_replicas="-1"), keep=_config_error)
    await s.call(group_configs(g, streams_assignment_interval_ms="20000"), keep=_config_error)
