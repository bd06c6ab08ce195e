"""The classic group protocol: JoinGroup, SyncGroup, Heartbeat and LeaveGroup.

Waiting uses two purgatories on the broker's timer:

- heartbeats, one operation per member keyed by (group, member): it expires after the
  session timeout unless a heartbeat, join or sync replaced it first;
- joins, keyed by group: a rebalance completes when every member rejoined, or when the
  rebalance timeout passes (members that did not rejoin are removed);
- the first join of an empty group waits ``group.initial.rebalance.delay.ms`` for more
  members, extended while new ones keep arriving, up to the rebalance timeout.

Every join and sync callback is answered exactly once, whatever happens to the member:
a parked request must not block its connection's later responses. Group metadata is
written to the group's ``__consumer_offsets`` partition with acks=all.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.purgatory import DelayedOperation, DelayedOperationPurgatory
from kafkagen.runtime.records import Record
from kafkagen.runtime.timer import Timer

from ..coordinator.coordinator_log import CoordinatorLog
from ..sorted_keys import SortedKeysDict
from ._group_records import GroupMetadataValue, group_key, group_value
from .consumer_group_manager import ConsumerGroupManager
from .group_model import (
    Group,
    GroupState,
    JoinCallback,
    JoinResult,
    Member,
    SyncCallback,
    SyncResult,
)

__all__ = ["ClassicProtocol"]

_log = logging.getLogger("kafkagen.broker.groups")


@dataclass(slots=True)
class _MemberSettings:
    """What a join may change of a member (kept to undo a static member's replacement)."""

    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: list[tuple[str, bytes]]

    @classmethod
    def of(cls, m: Member) -> _MemberSettings:
        return cls(
            m.client_id, m.client_host, m.rebalance_timeout_ms, m.session_timeout_ms, m.protocols
        )

    def apply(self, m: Member) -> None:
        m.client_id, m.client_host = self.client_id, self.client_host
        m.rebalance_timeout_ms, m.session_timeout_ms = (
            self.rebalance_timeout_ms,
            self.session_timeout_ms,
        )
        m.protocols = self.protocols


class DelayedHeartbeat(DelayedOperation):
    """A member's session: expires unless replaced by the next heartbeat, join or sync."""

    __slots__ = ("_coordinator", "_group", "_member_id")

    def __init__(
        self, coordinator: ClassicProtocol, group: Group, member_id: str, delay_ms: int
    ) -> None:
        super().__init__(delay_ms)
        self._coordinator = coordinator
        self._group = group
        self._member_id = member_id

    def try_complete(self) -> bool:
        return False  # only a replacement (force_complete) or the timeout ends it

    def on_complete(self) -> None:
        if self.is_expired:
            self._coordinator._session_expired(self._group, self._member_id, self)


class DelayedJoin(DelayedOperation):
    """A rebalance waiting for every member to rejoin, at most the rebalance timeout."""

    __slots__ = ("_coordinator", "_group")

    def __init__(self, coordinator: ClassicProtocol, group: Group, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self._coordinator = coordinator
        self._group = group

    def try_complete(self) -> bool:
        if self._group.has_all_members_joined():
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self._coordinator._complete_join(self._group, self)


class InitialDelayedJoin(DelayedOperation):
    """The first rebalance of an empty group: wait a little for more members to arrive."""

    __slots__ = ("_coordinator", "_group", "_delay", "_remaining")

    def __init__(
        self,
        coordinator: ClassicProtocol,
        group: Group,
        delay_ms: int,
        remaining_ms: int,
    ) -> None:
        super().__init__(delay_ms)
        self._coordinator = coordinator
        self._group = group
        self._delay = delay_ms
        self._remaining = remaining_ms

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        group = self._group
        if not self.is_expired:
            self._coordinator._complete_join(group, self)
            return
        if group.new_member_added and self._remaining > 0:
            # Members keep arriving: wait again, within the rebalance timeout.
            group.new_member_added = False
            delay = min(self._delay, self._remaining)
            nxt = InitialDelayedJoin(
                self._coordinator, group, delay, max(0, self._remaining - delay)
            )
            group.join_op = nxt
            self._coordinator._join_purgatory.try_complete_else_watch(nxt, [group.group_id])
        else:
            self._coordinator._complete_join(group, self)


class ClassicProtocol:
    """The classic protocol over the groups of one group coordinator (`GroupCoordinator`
    is one: it adds the offsets partitions' ownership, the committed offsets and listing)."""

    def __init__(
        self,
        log: CoordinatorLog,
        groups: SortedKeysDict[str, Group],
        consumer: ConsumerGroupManager,
        timer_factory: Callable[[], Timer],
    ) -> None:
        self.log = log
        #: Sorted by id too, so ListGroups pages start with a bisect.
        self.groups = groups
        #: Groups of the consumer protocol (KIP-848); they share the group-id namespace.
        self.consumer = consumer
        self._heartbeats: DelayedOperationPurgatory[DelayedHeartbeat] = DelayedOperationPurgatory(
            "Heartbeat", timer_factory()
        )
        self._join_purgatory: DelayedOperationPurgatory[DelayedOperation] = (
            DelayedOperationPurgatory("Rebalance", timer_factory())
        )
        self._time_ms = self.log.now_ms
        self._cfg = self.log.cfg

    # -- JoinGroup --------------------------------------------------------------------

    def join_group(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        require_known_member_id: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        callback: JoinCallback,
        *,
        supports_skip_assignment: bool = False,
    ) -> None:
        def fail(code: int) -> None:
            callback(JoinResult(error=code, member_id=member_id))

        error = self.log.group_error(group_id)
        if error:
            fail(error)
            return
        if not (
            self._cfg("group.min.session.timeout.ms")
            <= session_timeout_ms
            <= self._cfg("group.max.session.timeout.ms")
        ):
            fail(ErrorCode.INVALID_SESSION_TIMEOUT)
            return
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            if consumer_group.members:
                # A live group of the other protocol owns the id.
                fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
                return
            # An empty consumer-protocol group becomes a classic one; its offsets stay.
            self.consumer.drop(group_id)
            converted = self.groups[group_id] = Group(group_id, self._time_ms())
            converted.offsets = consumer_group.offsets
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                fail(ErrorCode.UNKNOWN_MEMBER_ID)
                return
            group = self.groups[group_id] = Group(group_id, self._time_ms())
        if group.state is GroupState.DEAD:
            fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            return
        if not group.supports(protocol_type, protocols):
            fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            return
        known = member_id in group.members or member_id in group.pending_members
        if not known and len(group.members) >= self._cfg("group.max.size"):
            fail(ErrorCode.GROUP_MAX_SIZE_REACHED)
            return
        args = (client_id, client_host, rebalance_timeout_ms, session_timeout_ms)
        if not member_id:
            self._join_unknown(
                group,
                group_instance_id,
                require_known_member_id,
                args,
                protocol_type,
                protocols,
                callback,
                supports_skip_assignment,
            )
        else:
            self._join_known(
                group, member_id, group_instance_id, args, protocol_type, protocols, callback
            )

    def _join_unknown(
        self,
        group: Group,
        instance_id: str | None,
        require_known: bool,
        args: tuple[str, str, int, int],
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        callback: JoinCallback,
        supports_skip: bool,
    ) -> None:
        # Kafka names members after their instance id when static, else their client id.
        new_id = f"{instance_id or args[0]}-{uuid.uuid4()}"
        if instance_id is not None:
            old_id = group.static_members.get(instance_id)
            if old_id is not None and old_id in group.members:
                self._replace_static_member(
                    group, old_id, new_id, args, protocol_type, protocols, callback, supports_skip
                )
                return
            self._add_member_and_rebalance(
                group, new_id, instance_id, args, protocol_type, protocols, callback
            )
            return
        if require_known:
            # KIP-394: hand out the id first; the member joins for real when it comes back.
            op = DelayedHeartbeat(self, group, new_id, args[3])
            group.pending_members[new_id] = op
            self._heartbeats.try_complete_else_watch(op, [(group.group_id, new_id)])
            callback(JoinResult(error=ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
            return
        self._add_member_and_rebalance(
            group, new_id, None, args, protocol_type, protocols, callback
        )

    def _join_known(
        self,
        group: Group,
        member_id: str,
        instance_id: str | None,
        args: tuple[str, str, int, int],
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        callback: JoinCallback,
    ) -> None:
        if member_id in group.pending_members:
            op = group.pending_members.pop(member_id)
            if op is not None:
                op.force_complete()
            self._add_member_and_rebalance(
                group, member_id, instance_id, args, protocol_type, protocols, callback
            )
            return
        error = group.member_error(member_id, instance_id)
        if error:
            callback(JoinResult(error=error, member_id=member_id))
            return
        member = group.members[member_id]
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, args, protocols, callback)
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.same_protocols(protocols):
                # A retried join: the rebalance already completed for it.
                callback(self._join_result(group, member, leader_view=member_id == group.leader_id))
            else:
                self._update_member_and_rebalance(group, member, args, protocols, callback)
        elif state is GroupState.STABLE:
            if member_id == group.leader_id or not member.same_protocols(protocols):
                self._update_member_and_rebalance(group, member, args, protocols, callback)
            else:
                self._schedule_heartbeat(group, member)
                callback(self._join_result(group, member, leader_view=False))
        else:
            callback(JoinResult(error=ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))

    def _join_result(self, group: Group, member: Member, leader_view: bool) -> JoinResult:
        result = JoinResult(
            error=0,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            member_id=member.member_id,
        )
        if leader_view:
            result.members = [
                (m.member_id, m.group_instance_id, m.metadata_for(group.protocol_name))
                for m in group.members.values()
            ]
        return result

    def _add_member_and_rebalance(
        self,
        group: Group,
        member_id: str,
        instance_id: str | None,
        args: tuple[str, str, int, int],
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        callback: JoinCallback,
    ) -> None:
        client_id, client_host, rebalance_timeout, session_timeout = args
        member = Member(
            member_id,
            instance_id,
            client_id,
            client_host,
            rebalance_timeout,
            session_timeout,
            protocol_type,
            list(protocols),
            join_callback=callback,
            is_new=True,
        )
        if not group.members:
            group.protocol_type = protocol_type
        group.members[member_id] = member
        if instance_id is not None:
            group.static_members[instance_id] = member_id
        if group.leader_id is None:
            group.leader_id = member_id
        group.new_member_added = True
        self._schedule_heartbeat(group, member)
        self._maybe_prepare_rebalance(group, f"{member_id} joined")
        self._check_join(group)

    def _update_member_and_rebalance(
        self,
        group: Group,
        member: Member,
        args: tuple[str, str, int, int],
        protocols: list[tuple[str, bytes]],
        callback: JoinCallback,
    ) -> None:
        _, _, member.rebalance_timeout_ms, member.session_timeout_ms = args
        member.protocols = list(protocols)
        self._set_join_callback(member, callback)
        self._schedule_heartbeat(group, member)
        self._maybe_prepare_rebalance(group, f"{member.member_id} rejoined")
        self._check_join(group)

    def _replace_static_member(
        self,
        group: Group,
        old_id: str,
        new_id: str,
        args: tuple[str, str, int, int],
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        callback: JoinCallback,
        supports_skip: bool,
    ) -> None:
        """A static member came back with a new member id: it takes over the old one.

        In a Stable group whose selected protocol stays the same there is no rebalance (the
        point of static membership): the group is stored with the new id and the member is
        answered with the current generation, to sync for its old assignment. A returning
        leader gets the members with skip_assignment (v9+), or, before v9, the old leader id
        so that it does not assign again.
        """
        current_leader = group.leader_id
        old = group.members.pop(old_id)
        if old.heartbeat is not None:
            hb, old.heartbeat = old.heartbeat, None
            hb.force_complete()
        # Whoever still waits under the old id is fenced, as a zombie instance would be.
        self._answer_join(old, JoinResult(error=ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
        self._answer_sync(old, SyncResult(error=ErrorCode.FENCED_INSTANCE_ID))
        member = old
        saved = _MemberSettings.of(member)
        _MemberSettings(args[0], args[1], args[2], args[3], list(protocols)).apply(member)
        self._rename_static_member(group, member, old_id, new_id)
        instance = member.group_instance_id
        if group.state is GroupState.STABLE:
            if protocol_type == group.protocol_type and group.select_protocol() == (
                group.protocol_name
            ):
                generation = group.generation_id

                def stored(error: int) -> None:
                    if error:
                        # Not durable: undo, the old id stays the member.
                        if group.members.get(new_id) is member:
                            saved.apply(member)
                            self._rename_static_member(group, member, new_id, old_id)
                        callback(JoinResult(error=error, member_id=""))
                        return
                    result = self._join_result(group, member, leader_view=False)
                    result.generation_id = generation
                    is_leader = group.leader_id == new_id
                    if supports_skip and is_leader:
                        result = self._join_result(group, member, leader_view=True)
                        result.skip_assignment = True
                    elif not supports_skip:
                        result.leader = current_leader or ""
                    callback(result)

                self._store_group(group, stored)
                return
            self._set_join_callback(member, callback)
            self._prepare_rebalance(group, f"static member {instance} changed protocols")
            self._check_join(group)
            return
        self._set_join_callback(member, callback)
        if group.state is GroupState.COMPLETING_REBALANCE:
            # The leader may already be assigning to the old id: assign again.
            self._prepare_rebalance(group, f"static member {instance} rejoined")
        self._check_join(group)

    def _rename_static_member(self, group: Group, member: Member, old_id: str, new_id: str) -> None:
        """Move a static member from ``old_id`` to ``new_id`` (its leadership too)."""
        group.members.pop(old_id, None)
        member.member_id = new_id
        group.members[new_id] = member
        assert member.group_instance_id is not None
        group.static_members[member.group_instance_id] = new_id
        if group.leader_id == old_id:
            group.leader_id = new_id
        self._schedule_heartbeat(group, member)

    def _set_join_callback(self, member: Member, callback: JoinCallback) -> None:
        old = member.join_callback
        member.join_callback = callback
        if old is not None:
            old(JoinResult(error=ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id))

    # -- rebalances -------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.state in (
            GroupState.STABLE,
            GroupState.COMPLETING_REBALANCE,
            GroupState.EMPTY,
        ):
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.state is GroupState.COMPLETING_REBALANCE:
            # Members waiting for their assignment must rejoin instead.
            for m in group.members.values():
                m.assignment = b""
                self._answer_sync(m, SyncResult(error=ErrorCode.REBALANCE_IN_PROGRESS))
        _log.info("group %s: rebalancing (%s)", group.group_id, reason)
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        op: DelayedOperation
        if group.state is GroupState.EMPTY:
            delay = self._cfg("group.initial.rebalance.delay.ms")
            group.new_member_added = False
            op = InitialDelayedJoin(self, group, delay, max(0, timeout - delay))
        else:
            op = DelayedJoin(self, group, timeout)
        group.transition(GroupState.PREPARING_REBALANCE, self._time_ms())
        group.join_op = op
        self._join_purgatory.try_complete_else_watch(op, [group.group_id])

    def _check_join(self, group: Group) -> None:
        if group.state is GroupState.PREPARING_REBALANCE:
            self._join_purgatory.check_and_complete(group.group_id)

    def _complete_join(self, group: Group, op: DelayedOperation) -> None:
        if group.join_op is not op:
            return
        group.join_op = None
        if group.state is not GroupState.PREPARING_REBALANCE:
            return
        # Dynamic members that did not rejoin in time leave the group. Static ones stay (their
        # session decides), and so do members still to come back with their new id: they
        # start the next rebalance when they do.
        for m in [
            m
            for m in group.members.values()
            if m.join_callback is None and m.group_instance_id is None
        ]:
            self._remove_member(group, m, ErrorCode.UNKNOWN_MEMBER_ID, check=False)
        now = self._time_ms()
        group.generation_id += 1
        if not group.members:
            group.protocol_name = None
            group.leader_id = None
            group.transition(GroupState.EMPTY, now)
            self._store_group(group, lambda error: None)
            return
        group.protocol_name = group.select_protocol()
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        group.transition(GroupState.COMPLETING_REBALANCE, now)
        _log.info(
            "group %s: generation %d with %d member(s)",
            group.group_id,
            group.generation_id,
            len(group.members),
        )
        for m in group.members.values():
            m.is_new = False
            self._schedule_heartbeat(group, m)
            self._answer_join(
                m, self._join_result(group, m, leader_view=m.member_id == group.leader_id)
            )

    def _answer_join(self, member: Member, result: JoinResult) -> None:
        callback = member.join_callback
        member.join_callback = None
        if callback is not None:
            callback(result)

    def _answer_sync(self, member: Member, result: SyncResult) -> None:
        callback = member.sync_callback
        member.sync_callback = None
        if callback is not None:
            callback(result)

    # -- SyncGroup --------------------------------------------------------------------

    def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
        callback: SyncCallback,
    ) -> None:
        error = self.log.group_error(group_id)
        if error:
            callback(SyncResult(error=error))
            return
        group = self.groups.get(group_id)
        if group is None:
            callback(SyncResult(error=ErrorCode.UNKNOWN_MEMBER_ID))
            return
        error = group.member_error(member_id, group_instance_id)
        if error:
            callback(SyncResult(error=error))
            return
        if generation_id != group.generation_id:
            callback(SyncResult(error=ErrorCode.ILLEGAL_GENERATION))
            return
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            callback(SyncResult(error=ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        member = group.members[member_id]
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            callback(SyncResult(error=ErrorCode.REBALANCE_IN_PROGRESS))
        elif state is GroupState.STABLE:
            self._schedule_heartbeat(group, member)
            callback(self._sync_result(group, member))
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.sync_callback is not None:
                self._answer_sync(member, SyncResult(error=ErrorCode.REBALANCE_IN_PROGRESS))
            member.sync_callback = callback
            self._schedule_heartbeat(group, member)
            if member_id == group.leader_id:
                self._leader_synced(group, assignments)
        else:
            callback(SyncResult(error=ErrorCode.UNKNOWN_MEMBER_ID))

    def _sync_result(self, group: Group, member: Member) -> SyncResult:
        return SyncResult(0, group.protocol_type, group.protocol_name, member.assignment)

    def _leader_synced(self, group: Group, assignments: dict[str, bytes]) -> None:
        generation = group.generation_id
        proposed = {m: assignments.get(m, b"") for m in group.members}

        def stored(error: int) -> None:
            # Only if nothing changed while the group metadata was being written.
            if group.state is not GroupState.COMPLETING_REBALANCE or (
                group.generation_id != generation
            ):
                return
            if error:
                for m in group.members.values():
                    m.assignment = b""
                    self._answer_sync(m, SyncResult(error=error))
                self._prepare_rebalance(group, "the group metadata could not be stored")
                return
            for member_id, assignment in proposed.items():
                target = group.members.get(member_id)
                if target is not None:
                    target.assignment = assignment
            group.transition(GroupState.STABLE, self._time_ms())
            for m in group.members.values():
                self._answer_sync(m, self._sync_result(group, m))

        self._store_group(group, stored, proposed)

    # -- Heartbeat and LeaveGroup -----------------------------------------------------

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int:
        error = self.log.group_error(group_id)
        if error:
            return error
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = group.member_error(member_id, group_instance_id)
        if error:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        member = group.members[member_id]
        self._schedule_heartbeat(group, member)
        if group.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        if group.state is GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return 0

    def leave_group(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> tuple[int, list[int]]:
        """(top-level error, one error per leaving member)."""
        error = self.log.group_error(group_id)
        if error:
            return error, [error] * len(members)
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return 0, [ErrorCode.UNKNOWN_MEMBER_ID] * len(members)
        errors: list[int] = []
        for member_id, instance_id in members:
            if not member_id and instance_id is not None:
                member_id = group.static_members.get(instance_id, "")
                if not member_id:
                    errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
            if member_id in group.pending_members:
                hb = group.pending_members.pop(member_id)
                if hb is not None:
                    hb.force_complete()
                self._check_join(group)
                errors.append(0)
                continue
            error = group.member_error(member_id, instance_id)
            if error:
                errors.append(error)
                continue
            self._remove_member(group, group.members[member_id], ErrorCode.UNKNOWN_MEMBER_ID)
            errors.append(0)
        return 0, errors

    def _session_expired(self, group: Group, member_id: str, op: DelayedHeartbeat) -> None:
        if member_id in group.pending_members:
            if group.pending_members[member_id] is op:
                del group.pending_members[member_id]
                self._check_join(group)
            return
        member = group.members.get(member_id)
        if member is None or member.heartbeat is not op:
            return
        if member.join_callback is not None or member.sync_callback is not None:
            # A member parked in a join or sync is alive: the rebalance governs it.
            self._schedule_heartbeat(group, member)
            return
        _log.info("group %s: member %s session expired", group.group_id, member_id)
        self._remove_member(group, member, ErrorCode.UNKNOWN_MEMBER_ID)

    def _remove_member(
        self, group: Group, member: Member, error: int, *, check: bool = True
    ) -> None:
        group.members.pop(member.member_id, None)
        if member.group_instance_id is not None:
            if group.static_members.get(member.group_instance_id) == member.member_id:
                del group.static_members[member.group_instance_id]
        if member.heartbeat is not None:
            hb, member.heartbeat = member.heartbeat, None
            hb.force_complete()
        self._answer_join(member, JoinResult(error=error, member_id=member.member_id))
        self._answer_sync(member, SyncResult(error=error))
        if group.leader_id == member.member_id:
            group.leader_id = next(iter(group.members), None)
        if not check:
            return
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"{member.member_id} left")
        self._check_join(group)

    def _schedule_heartbeat(self, group: Group, member: Member) -> None:
        old = member.heartbeat
        op = DelayedHeartbeat(self, group, member.member_id, member.session_timeout_ms)
        member.heartbeat = op
        if old is not None:
            old.force_complete()
        self._heartbeats.try_complete_else_watch(op, [(group.group_id, member.member_id)])

    # -- writing to the offsets topic -------------------------------------------------

    def _store_group(
        self,
        group: Group,
        callback: Callable[[int], None],
        assignments: dict[str, bytes] | None = None,
    ) -> None:
        members = [
            GroupMetadataValue.MemberMetadata(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata_for(group.protocol_name),
                assignment=(assignments or {}).get(m.member_id, m.assignment),
            )
            for m in group.members.values()
        ]
        value = GroupMetadataValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation_id,
            protocol=group.protocol_name,
            leader=group.leader_id,
            current_state_timestamp=group.state_timestamp,
            members=members,
        )
        record = Record(-1, self._time_ms(), group_key(group.group_id), group_value(value))
        self.log.append(group.group_id, [record], callback)

    # -- lifecycle --------------------------------------------------------------------

    def _fail_all(self, group: Group, error: int) -> None:
        for m in list(group.members.values()):
            if m.heartbeat is not None:
                hb, m.heartbeat = m.heartbeat, None
                hb.force_complete()
            self._answer_join(m, JoinResult(error=error, member_id=m.member_id))
            self._answer_sync(m, SyncResult(error=error))
        for pending in group.pending_members.values():
            if pending is not None:
                pending.force_complete()
        group.pending_members.clear()

    def _stop_purgatories(self) -> None:
        for purgatory in (self._heartbeats, self._join_purgatory):
            purgatory.shutdown()
            purgatory.timer.close()
