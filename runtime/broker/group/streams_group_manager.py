"""Streams groups (KIP-1071): the coordinator runs the rebalance of Kafka Streams clients.

Members heartbeat (StreamsGroupHeartbeat) with their process id, endpoint and, when they
join, the topology. The first member's topology initializes the group's; the coordinator
configures it against the cluster's topics (`streams_group.configure`), creates the
repartition and changelog topics it needs, and until the topology is configured answers
with a status (missing source topics, missing internal topics, ...) and no tasks. Then, as
for the consumer protocol, a **group epoch** bumped by membership and partition-count
changes, a **target assignment** from the sticky task assignor, and per member a
**member epoch** reached one step at a time: tasks to revoke first (the member keeps its
epoch until it reports them gone), then new active tasks once their previous owner has
released them. A new group waits ``group.streams.initial.rebalance.delay.ms`` before its
first assignment, and each later target ``group.streams.assignment.interval.ms`` after the
one before (status ASSIGNMENT_DELAYED meanwhile).

Sessions end by the broker's timer (``group.streams.session.timeout.ms``), and a member that
does not revoke within its rebalance timeout is fenced. Every change is written to
``__consumer_offsets`` in Kafka's record formats (`streams_group_records`) before the
heartbeat that made it is answered, and the broker that takes the partition over rebuilds
the groups from them: members keep their epochs and tasks across a coordinator move.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from kafkagen.runtime.errors import (
    FencedInstanceIdError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    InvalidRequestError,
    KafkaError,
    StaleMemberEpochError,
    StreamsInvalidTopologyError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedVersionError,
)
from kafkagen.runtime.purgatory import DelayedOperationPurgatory
from kafkagen.runtime.records import Record
from kafkagen.runtime.timer import Timer

from ..coordinator import record_format
from ..coordinator.coordinator_log import CoordinatorLog
from ..sorted_keys import SortedKeysDict
from .group_model import Group, MemberDeadline
from .sticky_task_assignor import AssignorMember, TaskOffsets, Tasks, TaskSet, assign
from .streams_group import (
    MemberState,
    Status,
    StreamsGroup,
    StreamsMember,
    Topology,
    configure,
    task_partitions,
)
from .streams_group_records import (
    GROUP_METADATA,
    StreamsStateRecords,
    decode_group,
    encode_group,
    encode_member,
    metadata_hash,
)

__all__ = ["HeartbeatResult", "StreamsGroupManager"]

_log = logging.getLogger("kafkagen.broker.groups")

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


#: (host, port) -> the topic partitions of the active and of the standby tasks there.
Endpoints = dict[tuple[str, int], tuple[dict[str, set[int]], dict[str, set[int]]]]


@dataclass(slots=True)
class HeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    acceptable_recovery_lag: int
    task_offset_interval_ms: int
    statuses: list[tuple[int, str]]
    #: The member's tasks when they changed (None: unchanged).
    tasks: Tasks | None
    endpoint_epoch: int
    #: (host, port) -> the topic partitions of the active and of the standby tasks of the
    #: members there, when the member's endpoint information is older than the group's.
    endpoints: Endpoints | None


class StreamsGroupManager:
    """The streams groups of one group coordinator."""

    def __init__(self, log: CoordinatorLog, timer_factory: Callable[[], Timer]) -> None:
        self.log = log
        self.groups: SortedKeysDict[str, StreamsGroup] = SortedKeysDict()
        self._timeouts: DelayedOperationPurgatory[MemberDeadline] = DelayedOperationPurgatory(
            "StreamsGroupHeartbeat", timer_factory()
        )

    def _cfg(self, name: str) -> int:
        return self.log.cfg(name)

    def enabled(self) -> bool:
        """Served while ``group.coordinator.rebalance.protocols`` names ``streams`` and the
        cluster has ``streams.version`` finalized at 1 or more; else the streams APIs answer
        UNSUPPORTED_VERSION, though ApiVersions still lists them, as in Kafka 4.4."""
        value = self.log.configs.broker("group.coordinator.rebalance.protocols", self.log.node_id)
        finalized = self.log.metadata.features.levels.get("streams.version", 0)
        return isinstance(value, list) and "streams" in value and finalized >= 1

    # -- StreamsGroupHeartbeat --------------------------------------------------------

    def heartbeat(
        self,
        *,
        group_id: str,
        member_id: str,
        member_epoch: int,
        endpoint_epoch: int,
        instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        topology: Topology | None,
        owned: Tasks | None,
        process_id: str | None,
        user_endpoint: tuple[str, int] | None,
        client_tags: dict[str, str] | None,
        task_offsets: TaskOffsets | None,
        task_end_offsets: TaskOffsets | None,
        shutdown_application: bool,
        client_id: str,
        client_host: str,
        respond: Callable[[HeartbeatResult | None, int], None],
    ) -> None:
        """One heartbeat (the caller checked `enabled`); raises the Kafka error the response
        must carry.

        ``respond(result, error code)`` runs once the records of every change the heartbeat
        made are written (at once when it changed nothing); a failed write answers with its
        error and no result.
        """
        _validate(
            group_id,
            member_id,
            member_epoch,
            instance_id,
            rack_id,
            rebalance_timeout_ms,
            topology,
            owned,
        )
        self.log.check_owner(group_id)
        if member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            group = self.groups.get(group_id)
            if group is None:
                raise GroupIdNotFoundError(f"Streams group {group_id} not found.")
            leaving = _member(group, member_id)
            if member_epoch == STATIC_LEAVE_EPOCH:
                # Its tasks stay its own for a session, for its instance id to come back to.
                _log.info("streams group %s: static member %s left", group_id, member_id)
                leaving.member_epoch = STATIC_LEAVE_EPOCH
                self._cancel(leaving, "revocation")
                self._schedule(group, leaving, "session")
                left = self._result(group, None, member_id, member_epoch, endpoint_epoch, False)
                self._persist(group, _answer(respond, left))
            else:
                left = self._result(group, None, member_id, member_epoch, endpoint_epoch, False)
                self._remove(group, leaving, "left the group", _answer(respond, left))
            return
        group = self.groups.get(group_id)
        if group is None:
            if member_epoch != 0:
                raise GroupIdNotFoundError(f"Streams group {group_id} not found.")
            group = self.groups[group_id] = StreamsGroup(group_id)
            delay = self.log.group_cfg(group_id, "streams.initial.rebalance.delay.ms")
            group.assign_after_ms = self.log.now_ms() + delay if delay > 0 else 0
        taken_over = instance_id is not None and self._claim_instance(
            group, member_id, member_epoch, instance_id
        )
        member = group.members.get(member_id)
        is_new = member is None
        if member is None:
            if member_epoch != 0:
                raise UnknownMemberIdError(
                    f"Member {member_id} is not a member of group {group_id}."
                )
            if len(group.members) >= self._cfg("group.streams.max.size"):
                raise GroupMaxSizeReachedError(
                    f"The streams group {group_id} has reached its maximum capacity."
                )
        else:
            _check_epoch(member, member_epoch, owned)
            if member_epoch == 0 and not taken_over:  # it dropped its tasks: it starts over
                member.assigned, member.pending_revocation = Tasks(), Tasks()
                member.state, member.member_epoch = MemberState.STABLE, 0
                self._cancel(member, "revocation")
        statuses: list[tuple[int, str]] = []
        bump = False  # one new group epoch for whatever this heartbeat changed
        if topology is not None:
            if group.topology is None:
                group.topology = topology
                bump = True
            elif topology.epoch > group.topology.epoch:
                raise InvalidRequestError("Topology updates are not supported yet.")
            elif topology.epoch < group.topology.epoch:
                statuses.append(
                    (
                        Status.STALE_TOPOLOGY,
                        f"The member's topology epoch {topology.epoch} is behind the group's "
                        f"topology epoch {group.topology.epoch}.",
                    )
                )
        if member is None:
            assert topology is not None and process_id is not None  # checked on joining
            member = StreamsMember(
                member_id,
                instance_id,
                rack_id,
                client_id,
                client_host,
                process_id,
                rebalance_timeout_ms,
                topology.epoch,
            )
            group.members[member_id] = member
            bump = True
            _log.info("streams group %s: member %s joined", group_id, member_id)
        if process_id is not None and process_id != member.process_id:
            member.process_id, bump = process_id, True
        if user_endpoint is not None and user_endpoint != member.user_endpoint:
            member.user_endpoint, bump = user_endpoint, True
            if not is_new:
                group.endpoint_epoch += 1
        if client_tags is not None and client_tags != member.client_tags:
            member.client_tags, bump = dict(client_tags), True
        standbys = self.log.group_cfg(group_id, "streams.num.standby.replicas")
        configs = {"num.standby.replicas": str(standbys)}
        if configs != group.assignment_configs:
            group.assignment_configs, bump = configs, True
        if bump:
            group.group_epoch += 1
        if rack_id is not None:
            member.rack_id = rack_id
        if rebalance_timeout_ms > 0:
            member.rebalance_timeout_ms = rebalance_timeout_ms
        member.client_id, member.client_host = client_id, client_host
        # Reported offsets replace the last ones; they rank standby owners at the next
        # assignment but move no epoch, as in Kafka 4.4.
        if task_offsets is not None:
            member.task_offsets = task_offsets
        if task_end_offsets is not None:
            member.task_end_offsets = task_end_offsets
        if shutdown_application:
            group.shutdown_requested = True
        self._configure(group)
        statuses += self._statuses(group)
        before = member.assigned.copy()
        self._maybe_assign(group)
        if group.assignment_timer is not None:
            statuses.append(
                (
                    Status.ASSIGNMENT_DELAYED,
                    "Assignment delayed due to the configured assignment interval.",
                )
            )
        self._reconcile(group, member, owned)
        self._schedule(group, member, "session")
        send = member_epoch == 0 or before != member.assigned
        if owned is not None and owned != member.assigned:
            send = True
        # A joining member learns the endpoints whatever epoch it names.
        seen = -1 if member_epoch == 0 else endpoint_epoch
        result = self._result(group, member, member_id, member.member_epoch, seen, send, statuses)
        self._persist(group, _answer(respond, result))

    def _claim_instance(
        self, group: StreamsGroup, member_id: str, member_epoch: int, instance_id: str
    ) -> bool:
        """Check a static member's instance id against the member holding it, if another;
        True if ``member_id`` took over that member's place.

        A join (epoch 0) takes over a member that left at epoch -2: its tasks, target and
        records move to the new member id, without a new group epoch. A member holding the
        id that has not left answers UNRELEASED_INSTANCE_ID; a heartbeat from a member id
        that another took over answers FENCED_INSTANCE_ID.
        """
        holder = next((m for m in group.members.values() if m.instance_id == instance_id), None)
        if holder is None or holder.member_id == member_id:
            return False
        if member_epoch != 0:
            raise FencedInstanceIdError(
                f"Static member {member_id} with instance id {instance_id} was fenced by "
                f"member {holder.member_id}."
            )
        if holder.member_epoch != STATIC_LEAVE_EPOCH:
            raise UnreleasedInstanceIdError(
                f"Static member {member_id} with instance id {instance_id} cannot join the "
                f"group because the instance id is owned by {holder.member_id} member."
            )
        _log.info(
            "streams group %s: member %s takes over static member %s",
            group.group_id,
            member_id,
            holder.member_id,
        )
        self._cancel(holder, "session")
        del group.members[holder.member_id]
        target = group.target.pop(holder.member_id, None)
        holder.member_id, holder.member_epoch = member_id, 0
        group.members[member_id] = holder
        if target is not None:
            group.target[member_id] = target
        return True

    def _result(
        self,
        group: StreamsGroup,
        member: StreamsMember | None,
        member_id: str,
        epoch: int,
        endpoint_epoch: int,
        send: bool,
        statuses: list[tuple[int, str]] | None = None,
    ) -> HeartbeatResult:
        endpoints: Endpoints | None = None
        configured = group.configured
        if (
            member is not None
            and endpoint_epoch != group.endpoint_epoch
            and group.topology is not None
            and configured is not None
        ):
            endpoints = {}
            for m in group.members.values():
                if m.user_endpoint is None:
                    continue
                found = endpoints.setdefault(m.user_endpoint, ({}, {}))
                for mine, tasks in zip(
                    found, (m.assigned.active, m.assigned.standby), strict=False
                ):
                    parts = task_partitions(group.topology, configured.source_partitions, tasks)
                    for topic, ps in parts.items():
                        mine.setdefault(topic, set()).update(ps)
        if member is None:  # it left: nothing more to say
            return HeartbeatResult(member_id, epoch, 0, -1, 0, [], None, 0, None)
        return HeartbeatResult(
            member_id,
            epoch,
            self.log.group_cfg(group.group_id, "streams.heartbeat.interval.ms"),
            self._cfg("group.streams.acceptable.recovery.lag"),
            self._cfg("group.streams.task.offset.interval.ms"),
            statuses or [],
            member.assigned.copy() if send else None,
            group.endpoint_epoch,
            endpoints,
        )

    def _statuses(self, group: StreamsGroup) -> list[tuple[int, str]]:
        out: list[tuple[int, str]] = []
        if group.configured is not None and group.configured.status is not None:
            out.append((int(group.configured.status[0]), group.configured.status[1]))
        if group.assign_after_ms and self.log.now_ms() < group.assign_after_ms:
            out.append(
                (
                    Status.ASSIGNMENT_DELAYED,
                    "Assignment delayed due to the configured initial rebalance delay.",
                )
            )
        if group.shutdown_requested:
            out.append(
                (
                    Status.SHUTDOWN_APPLICATION,
                    "A member of the streams group requested a shutdown of the application.",
                )
            )
        return out

    # -- the topology against the cluster's topics ------------------------------------

    def _configure(self, group: StreamsGroup) -> None:
        """(Re)configure the topology when the topics it reads changed; create the
        internal topics it is missing."""
        if group.topology is None:
            return
        configured = configure(group.topology, self._partition_counts())
        if group.configured is not None and configured == group.configured:
            return
        had_tasks = group.configured is not None and group.configured.task_counts is not None
        group.configured = configured
        if configured.task_counts is not None or had_tasks:
            group.group_epoch += 1
        for name, (partitions, topic) in configured.to_create.items():
            try:
                self.log.metadata.create_topic(
                    name,
                    partitions,
                    topic.replication_factor if topic.replication_factor > 0 else -1,
                    configs=dict(topic.configs),
                )
                _log.info("streams group %s: created internal topic %s", group.group_id, name)
            except KafkaError as e:
                _log.warning("streams group %s: cannot create %s: %s", group.group_id, name, e)

    def _partition_counts(self) -> dict[str, int]:
        return {name: len(t.partitions) for name, t in self.log.metadata.topics.items()}

    # -- assignment -------------------------------------------------------------------

    def _maybe_assign(self, group: StreamsGroup) -> None:
        configured = group.configured
        ready = configured is not None and configured.task_counts is not None
        if ready and group.assign_after_ms and self.log.now_ms() >= group.assign_after_ms:
            group.assign_after_ms = 0
            group.group_epoch += 1
        if group.group_epoch <= group.assignment_epoch:
            return
        if configured is None or configured.task_counts is None or group.assign_after_ms:
            # Members get an epoch and no tasks until the topology is configured and the
            # initial delay is over; during the delay the first (empty) target stays.
            if not group.assign_after_ms or not group.assignment_epoch:
                group.target = {}
                group.assignment_epoch = group.group_epoch
            return
        interval = self.log.group_cfg(group.group_id, "streams.assignment.interval.ms")
        now = self.log.now_ms()
        if group.assignment_timestamp_ms and now < group.assignment_timestamp_ms + interval:
            self._assign_later(group, group.assignment_timestamp_ms + interval - now)
            return
        members = {
            m.member_id: AssignorMember(
                m.process_id, group.target.get(m.member_id, Tasks()), m.task_offsets
            )
            for m in group.members.values()
        }
        standbys = self.log.group_cfg(group.group_id, "streams.num.standby.replicas")
        topology = group.topology
        stateful = (
            None
            if topology is None
            else {
                sub.subtopology_id for sub in topology.subtopologies if sub.state_changelog_topics
            }
        )
        group.target = assign(members, configured.task_counts, standbys, stateful)
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp_ms = now
        group.assignment_timer = None

    def _assign_later(self, group: StreamsGroup, delay_ms: int) -> None:
        """Compute the target (and write it) when the assignment interval is over, as
        Kafka's timer does, unless a heartbeat computes it first."""
        if group.assignment_timer is not None:
            return

        def run(op: MemberDeadline) -> None:
            if group.assignment_timer is op and self.groups.get(group.group_id) is group:
                group.assignment_timer = None
                self._maybe_assign(group)
                self._persist(group, _ignore)

        # A deadline that only its timeout ends, as members' sessions.
        group.assignment_timer = MemberDeadline(delay_ms, run)
        self._timeouts.try_complete_else_watch(group.assignment_timer, [(group.group_id, "")])

    def _reconcile(self, group: StreamsGroup, member: StreamsMember, owned: Tasks | None) -> None:
        """Move the member one step toward its target (revoke before assign)."""
        if member.state is MemberState.UNREVOKED_TASKS:
            if owned is None or _overlaps(owned, member.pending_revocation):
                return
            member.pending_revocation = Tasks()
            member.state = MemberState.STABLE
            self._cancel(member, "revocation")
        target_epoch = group.assignment_epoch
        if member.state is MemberState.STABLE and member.member_epoch == target_epoch:
            return
        target = group.target.get(member.member_id, Tasks())
        keep, revoke, grant = Tasks(), Tasks(), Tasks()
        unreleased = False
        owners = group.active_owners()
        for kind, (cur, want, k, r, g) in enumerate(
            zip(
                member.assigned.kinds(),
                target.kinds(),
                keep.kinds(),
                revoke.kinds(),
                grant.kinds(),
                strict=False,
            )
        ):
            for sub in set(cur) | set(want):
                have, wanted = cur.get(sub, set()), want.get(sub, set())
                if have & wanted:
                    k[sub] = have & wanted
                if have - wanted:
                    r[sub] = have - wanted
                for p in wanted - have:
                    holder = owners.get((sub, p)) if kind == 0 else None
                    if holder is None or holder == member.member_id:
                        g.setdefault(sub, set()).add(p)
                    else:
                        unreleased = True
        if not revoke.is_empty():
            member.assigned = keep
            member.pending_revocation = revoke
            member.state = MemberState.UNREVOKED_TASKS
            self._schedule(group, member, "revocation")
            group.endpoint_epoch += 1
            return
        for mine, extra in zip(keep.kinds(), grant.kinds(), strict=False):
            for sub, ps in extra.items():
                mine.setdefault(sub, set()).update(ps)
        if keep != member.assigned:
            group.endpoint_epoch += 1
        member.assigned = keep
        if member.member_epoch != target_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = target_epoch
        member.state = MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE

    def _remove(
        self,
        group: StreamsGroup,
        member: StreamsMember,
        why: str,
        done: Callable[[int], None],
    ) -> None:
        """Take the member out and write the change; ``done(error)`` once written."""
        _log.info("streams group %s: member %s %s", group.group_id, member.member_id, why)
        self._cancel(member, "session")
        self._cancel(member, "revocation")
        group.members.pop(member.member_id, None)
        group.target.pop(member.member_id, None)
        group.group_epoch += 1
        group.endpoint_epoch += 1
        if not group.members:
            group.shutdown_requested = False
        self._maybe_assign(group)
        self._persist(group, done)

    def _persist(self, group: StreamsGroup, done: Callable[[int], None]) -> None:
        """Write the state records that changed since the last write, and tombstones for
        the members gone; ``done(error)`` once they are written (at once if none changed).
        A failed write leaves the next change to write every record again."""
        wanted = {"": encode_group(group)}
        wanted.update((mid, encode_member(group, m)) for mid, m in group.members.items())
        records = record_format.changed_records(group.persisted, wanted, self.log.now_ms())
        group.persisted = wanted
        if not records:
            done(0)
            return

        def written(code: int) -> None:
            if code and group.persisted is wanted:
                group.persisted = {}
            done(code)

        self.log.append(group.group_id, records, written)

    # -- timers -----------------------------------------------------------------------

    def _schedule(self, group: StreamsGroup, member: StreamsMember, what: str) -> None:
        if what == "session":
            delay = self.log.group_cfg(group.group_id, "streams.session.timeout.ms")
        else:
            delay = member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 else 300_000
        member_id = member.member_id
        op = MemberDeadline(delay, lambda op: self._expired(group, member_id, op, what))
        self._cancel(member, what)
        setattr(member, what, op)
        self._timeouts.try_complete_else_watch(op, [(group.group_id, member.member_id)])

    def _cancel(self, member: StreamsMember, what: str) -> None:
        op = getattr(member, what)
        if op is not None:
            setattr(member, what, None)
            op.force_complete()

    def _expired(self, group: StreamsGroup, member_id: str, op: MemberDeadline, what: str) -> None:
        member = group.members.get(member_id)
        if member is None or self.groups.get(group.group_id) is not group:
            return
        if getattr(member, what) is op:
            setattr(member, what, None)
            self._remove(group, member, f"timed out ({what})", _ignore)

    # -- offsets ----------------------------------------------------------------------

    def validate_offset_commit(
        self, group: StreamsGroup, member_id: str, member_epoch: int, api_version: int
    ) -> None:
        """Raise what Kafka answers to a commit into a streams group."""
        if member_epoch < 0 and not group.members:
            return  # an admin, on an empty group
        member = _member(group, member_id)
        if api_version < 9:
            raise UnsupportedVersionError(
                "OffsetCommit version 9 or above must be used by members using the streams "
                "group protocol"
            )
        _check_commit_epoch(member, member_epoch, StaleMemberEpochError)

    def validate_txn_offset_commit(
        self, group: StreamsGroup, member_id: str, member_epoch: int
    ) -> None:
        if member_epoch < 0 and (not group.members or not member_id):
            return
        _check_commit_epoch(_member(group, member_id), member_epoch, IllegalGenerationError)

    def validate_offset_fetch(self, group: StreamsGroup, member_id: str, member_epoch: int) -> None:
        if member_epoch == -1:
            return
        _check_commit_epoch(_member(group, member_id), member_epoch, StaleMemberEpochError)

    def subscribed_topics(self, group: StreamsGroup) -> set[str]:
        configured = group.configured
        return set(configured.source_partitions) if configured is not None else set()

    # -- describe, list, lifecycle ----------------------------------------------------

    def describe(self, group_id: str) -> StreamsGroup:
        self.log.check_owner(group_id)
        group = self.groups.get(group_id)
        if group is None or group.dead:
            raise GroupIdNotFoundError(f"Group {group_id} not found.")
        return group

    def owned_groups(self) -> list[StreamsGroup]:
        owns = self.log.owns
        return [g for g in self.groups.values() if not g.dead and owns(g.group_id)]

    def drop(self, group_id: str, *, persist: bool = True) -> StreamsGroup | None:
        """Forget a group; ``persist`` also tombstones its records (not when unloading)."""
        group = self.groups.pop(group_id, None)
        if group is not None:
            for m in group.members.values():
                self._cancel(m, "session")
                self._cancel(m, "revocation")
            group.dead = True
            keys = [key for values in group.persisted.values() for key in values]
            if persist and keys:
                now = self.log.now_ms()
                self.log.append(group_id, [Record(-1, now, key, None) for key in keys], _ignore)
        return group

    def unload(self, index: int) -> None:
        for group_id in [g for g in self.groups if self.log.partition_of(g) == index]:
            self.drop(group_id, persist=False)

    def load(
        self, states: dict[str, StreamsStateRecords], classic_groups: dict[str, Group]
    ) -> None:
        """Rebuild groups from their last state records (this broker took their partition).

        Offsets were loaded into classic placeholders (``classic_groups``); they move to the
        streams groups. The topology is configured again against the topics; when their
        partition counts hash as the records say, the group keeps its epoch. Every member
        gets a fresh session (and a revocation deadline if it still has tasks to give up),
        as in Kafka.
        """
        for group_id, records in states.items():
            if ("", GROUP_METADATA) not in records:
                continue  # deleted
            try:
                group, stored_hash = decode_group(group_id, records)
            except (ValueError, KeyError, TypeError, IndexError) as e:
                _log.error("streams group %s: unreadable state records skipped: %s", group_id, e)
                continue
            placeholder = classic_groups.pop(group_id, None)
            if placeholder is not None:
                group.offsets = placeholder.offsets
            group.endpoint_epoch = group.group_epoch  # members ask again for older ones
            if group.topology is not None and stored_hash:
                configured = configure(group.topology, self._partition_counts())
                if configured.task_counts is not None and stored_hash == metadata_hash(
                    configured.source_partitions
                ):
                    group.configured = configured  # the same topics: no new group epoch
            group.persisted = {"": encode_group(group)}
            group.persisted.update(
                (mid, encode_member(group, m)) for mid, m in group.members.items()
            )
            self.groups[group_id] = group
            for m in group.members.values():
                self._schedule(group, m, "session")
                if m.state is MemberState.UNREVOKED_TASKS:
                    self._schedule(group, m, "revocation")

    def shutdown(self) -> None:
        for group in self.groups.values():
            for m in group.members.values():
                self._cancel(m, "session")
                self._cancel(m, "revocation")
        self._timeouts.shutdown()
        self._timeouts.timer.close()


def _validate(
    group_id: str,
    member_id: str,
    member_epoch: int,
    instance_id: str | None,
    rack_id: str | None,
    rebalance_timeout_ms: int,
    topology: Topology | None,
    owned: Tasks | None,
) -> None:
    if not group_id:
        raise InvalidRequestError("GroupId can't be empty.")
    if instance_id == "":
        raise InvalidRequestError("InstanceId can't be empty.")
    if rack_id == "":
        raise InvalidRequestError("RackId can't be empty.")
    if not member_id:
        raise InvalidRequestError("MemberId can't be empty.")
    if topology is not None:  # Kafka 4.4 checks the topology before the epoch
        _validate_topology(topology)
    if member_epoch < STATIC_LEAVE_EPOCH:
        raise InvalidRequestError(
            f"MemberEpoch is {member_epoch}, but must be greater than or equal to -2."
        )
    if member_epoch == STATIC_LEAVE_EPOCH and instance_id is None:
        raise InvalidRequestError("InstanceId can't be null.")
    if member_epoch == 0:
        if rebalance_timeout_ms == -1:
            raise InvalidRequestError("RebalanceTimeoutMs must be provided in first request.")
        if topology is None:
            raise InvalidRequestError("Topology must be non-null when (re-)joining.")
        if owned is None or owned.active:
            raise InvalidRequestError("ActiveTasks must be empty when (re-)joining.")
        if owned.standby:
            raise InvalidRequestError("StandbyTasks must be empty when (re-)joining.")
        if owned.warmup:
            raise InvalidRequestError("WarmupTasks must be empty when (re-)joining.")
    elif topology is not None and member_epoch > 0:
        raise InvalidRequestError("Topology can only be provided when (re-)joining.")


def _validate_topology(topology: Topology) -> None:
    if topology.epoch < 0:
        raise StreamsInvalidTopologyError("Topology epoch must be non-negative.")
    for s in topology.subtopologies:
        for c in s.state_changelog_topics:
            if c.partitions != 0:
                raise StreamsInvalidTopologyError(
                    f"Changelog topic {c.name} must have an undefined partition count, "
                    f"but it is set to {c.partitions}."
                )
        if any(t is None for g in s.copartition_groups for t in g):
            raise StreamsInvalidTopologyError(
                f"A copartition group of subtopology {s.subtopology_id} names a topic index "
                "the subtopology does not have."
            )
    ids = [s.subtopology_id for s in topology.subtopologies]
    if len(set(ids)) != len(ids):
        raise StreamsInvalidTopologyError("Subtopology ids must be unique.")
    written = {t for s in topology.subtopologies for t in s.repartition_sink_topics}
    for s in topology.subtopologies:
        for r in s.repartition_source_topics:
            if r.partitions <= 0 and r.name not in written:
                raise StreamsInvalidTopologyError(
                    f"Repartition source topic {r.name} is never written by a subtopology "
                    "and has no partition count."
                )


def _member(group: StreamsGroup, member_id: str) -> StreamsMember:
    member = group.members.get(member_id)
    if member is None:
        raise UnknownMemberIdError(f"Member {member_id} is not a member of group {group.group_id}.")
    return member


def _check_epoch(member: StreamsMember, epoch: int, owned: Tasks | None) -> None:
    if epoch == 0:
        return
    if epoch > member.member_epoch:
        raise FencedMemberEpochError(
            f"The streams group member has a greater member epoch ({epoch}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            "all its tasks and rejoin."
        )
    if epoch < member.member_epoch:
        if epoch != member.previous_member_epoch or (
            owned is not None and not _subset(owned.active, member.assigned.active)
        ):
            raise FencedMemberEpochError(
                f"The streams group member has a smaller member epoch ({epoch}) than the one "
                f"known by the group coordinator ({member.member_epoch}). The member must "
                "abandon all its tasks and rejoin."
            )


def _check_commit_epoch(member: StreamsMember, epoch: int, stale: type[KafkaError]) -> None:
    # A commit sent before the answer that moved the member's epoch arrived still counts.
    if epoch not in (member.member_epoch, member.previous_member_epoch):
        raise stale(
            f"The received member epoch {epoch} does not match the expected member epoch "
            f"{member.member_epoch}."
        )


def _subset(a: TaskSet, b: TaskSet) -> bool:
    return all(ps <= b.get(s, set()) for s, ps in a.items())


def _overlaps(owned: Tasks, pending: Tasks) -> bool:
    return any(
        ps & theirs.get(s, set())
        for mine, theirs in zip(owned.kinds(), pending.kinds(), strict=False)
        for s, ps in mine.items()
    )


def _answer(
    respond: Callable[[HeartbeatResult | None, int], None], result: HeartbeatResult
) -> Callable[[int], None]:
    """The write's callback that answers a heartbeat: its result, or the write's error."""
    return lambda code: respond(None if code else result, code)


def _ignore(code: int) -> None:
    """A write fails when the partition's leadership moved: the group is unloaded then, and
    the next coordinator replays what was written."""
