"""Groups of the consumer protocol (KIP-848): the coordinator drives the rebalance.

Members heartbeat (ConsumerGroupHeartbeat) with their subscription; the coordinator keeps:

- the **group epoch**, bumped whenever membership, a subscription, or the partition count
  of a subscribed topic changes;
- the **target assignment**, recomputed by a server-side assignor (`assignors`) when the
  group epoch moves past the **assignment epoch**;
- per member, a **member epoch** and the partitions it currently owns. A member moves to
  the target epoch one heartbeat at a time: first it gives up the partitions it must
  revoke (state ``unrevoked``: it keeps its epoch until it reports they are gone), then it
  gets the new ones, except partitions another member has not released yet (state
  ``unreleased``: they come on a later heartbeat).

Sessions end by the broker's timer: a member that does not heartbeat within
``group.consumer.session.timeout.ms`` is removed, and one that does not revoke within its
rebalance timeout is fenced.

The group's state is written to its ``__consumer_offsets`` partition (acks=all) whenever it
changes, and a heartbeat that changed it is answered once the write is durable; a broker
that takes over the partition rebuilds the group from the last records, so members carry on
with their epochs. Only what changed is written, as
the records of `consumer_group`.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterable

from kafkagen.runtime.errors import (
    FencedInstanceIdError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    InvalidRegularExpressionError,
    InvalidRequestError,
    KafkaError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
    UnsupportedVersionError,
)
from kafkagen.runtime.purgatory import DelayedOperationPurgatory
from kafkagen.runtime.records import Record
from kafkagen.runtime.timer import Timer

from ..coordinator.coordinator_log import CoordinatorLog
from ..sorted_keys import SortedKeysDict
from .assignors import ASSIGNORS, Assignment, AssignmentSpec, TopicSpec
from .consumer_group import (
    GROUP_METADATA,
    ConsumerGroup,
    ConsumerMember,
    HeartbeatResult,
    MemberState,
    StateRecords,
    decode_group,
    encode_group,
    encode_group_records,
    encode_member,
)
from .group_model import Group, MemberDeadline

__all__ = ["ConsumerGroupManager"]

_log = logging.getLogger("kafkagen.broker.groups")

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


def _copy(a: Assignment) -> Assignment:
    return {t: set(ps) for t, ps in a.items() if ps}


def _same(a: Assignment, b: Assignment) -> bool:
    return _copy(a) == _copy(b)


class ConsumerGroupManager:
    """The consumer-protocol groups of one group coordinator."""

    def __init__(
        self,
        log: CoordinatorLog,
        classic_groups: SortedKeysDict[str, Group],
        timer_factory: Callable[[], Timer],
    ) -> None:
        self.log = log
        #: The classic groups of the same coordinator: one group-id namespace for both.
        self.classic_groups = classic_groups
        self.groups: SortedKeysDict[str, ConsumerGroup] = SortedKeysDict()
        self._sessions: DelayedOperationPurgatory[MemberDeadline] = DelayedOperationPurgatory(
            "ConsumerGroupHeartbeat", timer_factory()
        )

    # -- config -----------------------------------------------------------------------

    def _cfg(self, name: str) -> int:
        return self.log.cfg(name)

    def _assignor_names(self) -> list[str]:
        value = self.log.configs.broker("group.consumer.assignors", self.log.node_id)
        assert isinstance(value, list)
        return [str(v) for v in value]

    def enabled(self) -> bool:
        value = self.log.configs.broker("group.coordinator.rebalance.protocols", self.log.node_id)
        return isinstance(value, list) and "consumer" in value

    # -- ConsumerGroupHeartbeat -------------------------------------------------------

    def heartbeat(
        self,
        *,
        version: int,
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        subscribed_topic_names: list[str] | None,
        subscribed_topic_regex: str | None,
        server_assignor: str | None,
        owned: Assignment | None,
        client_id: str,
        client_host: str,
        respond: Callable[[HeartbeatResult | None, int], None],
    ) -> None:
        """One heartbeat; raises the Kafka error the response must carry.

        ``respond(result, error code)`` runs once the group's new state is durable (at once
        when nothing changed); a failed write answers with its error and no result.
        """
        if not self.enabled():
            raise UnsupportedVersionError("the consumer group protocol is not enabled")
        self._validate(
            version,
            group_id,
            member_id,
            member_epoch,
            instance_id,
            rack_id,
            rebalance_timeout_ms,
            subscribed_topic_names,
            subscribed_topic_regex,
            server_assignor,
            owned,
        )
        self.log.check_owner(group_id)
        interval = self.log.group_cfg(group_id, "consumer.heartbeat.interval.ms")
        if member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            group = self.groups.get(group_id)
            if group is None:
                raise GroupIdNotFoundError(f"consumer group {group_id!r} not found")
            epoch = self._leave(group, member_id, instance_id, member_epoch)
            left = HeartbeatResult(member_id, epoch, 0, None)  # no more heartbeats, as Kafka
            self._persist(group, lambda code: respond(None if code else left, code), member_id)
            return
        group = self._group_for_heartbeat(group_id, create=member_epoch == 0)
        if not member_id:
            member_id = str(uuid.uuid4())  # v0: the coordinator names new members
        member, is_new = self._member(
            group, member_id, member_epoch, instance_id, owned, client_id, client_host
        )
        before = _copy(member.assigned)
        changed = _subscribe(
            member, version, subscribed_topic_names, subscribed_topic_regex, server_assignor
        )
        if rack_id is not None:
            member.rack_id = rack_id
        if rebalance_timeout_ms >= 0:
            member.rebalance_timeout_ms = rebalance_timeout_ms
        member.client_id = client_id
        member.client_host = client_host
        metadata = self._subscription_metadata(group)
        if is_new or changed or metadata != group.subscription_metadata:
            group.group_epoch += 1
            group.subscription_metadata = metadata
        self._maybe_assign(group)
        self._reconcile(group, member, owned)
        self._schedule_session(group, member)
        send = member_epoch == 0 or not _same(before, member.assigned)
        if owned is not None and not _same(owned, member.assigned):
            send = True
        result = HeartbeatResult(
            member.member_id,
            member.member_epoch,
            interval,
            _copy(member.assigned) if send else None,
        )
        self._persist(group, lambda code: respond(None if code else result, code), member_id)

    def _validate(
        self,
        version: int,
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        subscribed_topic_names: list[str] | None,
        subscribed_topic_regex: str | None,
        server_assignor: str | None,
        owned: Assignment | None,
    ) -> None:
        def bad(what: str) -> InvalidRequestError:
            return InvalidRequestError(f"ConsumerGroupHeartbeat: {what}")

        if not group_id:
            raise bad("GroupId can't be empty")
        if instance_id == "":
            raise bad("InstanceId can't be empty")
        if rack_id == "":
            raise bad("RackId can't be empty")
        if version >= 1 and not member_id:
            raise bad("MemberId can't be empty")
        if member_epoch > 0 or member_epoch == LEAVE_EPOCH:
            if not member_id:
                raise bad("MemberId can't be empty")
        elif member_epoch == 0:
            if rebalance_timeout_ms == -1:
                raise bad("RebalanceTimeoutMs must be provided in the first request")
            if owned is None or owned:
                raise bad("TopicPartitions must be empty when (re-)joining")
            has_names = bool(subscribed_topic_names)
            has_regex = version >= 1 and bool(subscribed_topic_regex)
            if not has_names and not has_regex:
                raise bad("SubscribedTopicNames or SubscribedTopicRegex must be set when joining")
        elif member_epoch == STATIC_LEAVE_EPOCH:
            if not member_id:
                raise bad("MemberId can't be empty")
            if instance_id is None:
                raise bad("InstanceId can't be null when a static member leaves")
        else:
            raise bad(f"MemberEpoch {member_epoch} is invalid")
        if version >= 1 and subscribed_topic_regex:
            try:
                re.compile(subscribed_topic_regex)
            except re.error as e:
                raise InvalidRegularExpressionError(
                    f"SubscribedTopicRegex {subscribed_topic_regex!r} is invalid: {e}"
                ) from None
        if server_assignor is not None and server_assignor not in self._assignor_names():
            raise UnsupportedAssignorError(
                f"ServerAssignor {server_assignor!r} is not supported; this broker offers "
                f"{', '.join(self._assignor_names())}"
            )

    def _group_for_heartbeat(self, group_id: str, create: bool) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is not None:
            return group
        classic = self.classic_groups.get(group_id)
        if classic is not None:
            if classic.members or classic.pending_members or not create:
                raise GroupIdNotFoundError(f"group {group_id!r} is not a consumer group")
            # An empty classic group becomes a consumer group; its offsets stay.
            del self.classic_groups[group_id]
            group = ConsumerGroup(group_id)
            group.offsets = classic.offsets
            self.groups[group_id] = group
            return group
        if not create:
            raise GroupIdNotFoundError(f"consumer group {group_id!r} not found")
        group = self.groups[group_id] = ConsumerGroup(group_id)
        return group

    def _member(
        self,
        group: ConsumerGroup,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        owned: Assignment | None,
        client_id: str,
        client_host: str,
    ) -> tuple[ConsumerMember, bool]:
        member = group.members.get(member_id)
        if member_epoch == 0 and instance_id is not None:
            current_id = group.static_members.get(instance_id)
            if current_id is not None and current_id != member_id:
                previous = group.members[current_id]
                if previous.member_epoch != STATIC_LEAVE_EPOCH:
                    raise UnreleasedInstanceIdError(
                        f"static member {current_id!r} with instance id {instance_id!r} "
                        "has not left the group yet"
                    )
                return self._replace_static(group, previous, member_id, client_id, client_host)
        if member is None:
            if member_epoch != 0:
                raise UnknownMemberIdError(
                    f"{member_id!r} is not a member of group {group.group_id!r}"
                )
            if len(group.members) >= self._cfg("group.consumer.max.size"):
                raise GroupMaxSizeReachedError(
                    f"group {group.group_id!r} has reached its maximum size"
                )
            member = ConsumerMember(member_id, instance_id, None, client_id, client_host, -1)
            group.members[member_id] = member
            if instance_id is not None:
                group.static_members[instance_id] = member_id
            return member, True
        if instance_id is not None and member.instance_id != instance_id:
            raise FencedInstanceIdError(
                f"member {member_id!r} joined with instance id {member.instance_id!r}, "
                f"not {instance_id!r}"
            )
        if member_epoch > member.member_epoch:
            raise FencedMemberEpochError(
                f"member epoch {member_epoch} is newer than the coordinator's "
                f"{member.member_epoch}; the member must rejoin"
            )
        if member_epoch < member.member_epoch:
            # The response that bumped the epoch may have been lost: the previous epoch is
            # still fine as long as the member owns nothing it should not.
            if member_epoch != member.previous_member_epoch or (
                owned is not None and not _subset(owned, member.assigned)
            ):
                raise FencedMemberEpochError(
                    f"member epoch {member_epoch} is older than the coordinator's "
                    f"{member.member_epoch}; the member must rejoin"
                )
        return member, False

    def _replace_static(
        self,
        group: ConsumerGroup,
        previous: ConsumerMember,
        member_id: str,
        client_id: str,
        client_host: str,
    ) -> tuple[ConsumerMember, bool]:
        """A static member comes back under a new member id and keeps its assignment."""
        self._cancel_timers(previous)
        del group.members[previous.member_id]
        member = ConsumerMember(
            member_id,
            previous.instance_id,
            previous.rack_id,
            client_id,
            client_host,
            previous.rebalance_timeout_ms,
            list(previous.subscribed_topic_names),
            previous.subscribed_topic_regex,
            previous.server_assignor,
            assigned=_copy(previous.assigned),
        )
        group.members[member_id] = member
        assert previous.instance_id is not None
        group.static_members[previous.instance_id] = member_id
        if previous.member_id in group.target:
            group.target[member_id] = group.target.pop(previous.member_id)
        return member, False

    def _leave(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None, epoch: int
    ) -> int:
        member = group.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(f"{member_id!r} is not a member of group {group.group_id!r}")
        if epoch == STATIC_LEAVE_EPOCH:
            if member.instance_id != instance_id:
                raise FencedInstanceIdError(
                    f"member {member_id!r} has instance id {member.instance_id!r}, "
                    f"not {instance_id!r}"
                )
            # Kept, with its partitions, until the instance returns or the session ends.
            if member.member_epoch != STATIC_LEAVE_EPOCH:
                member.previous_member_epoch = member.member_epoch
            member.member_epoch = STATIC_LEAVE_EPOCH
            self._schedule_session(group, member)
            return STATIC_LEAVE_EPOCH
        self._remove(group, member, "left the group")
        return LEAVE_EPOCH

    def _remove(self, group: ConsumerGroup, member: ConsumerMember, why: str) -> None:
        _log.info("group %s: member %s %s", group.group_id, member.member_id, why)
        self._cancel_timers(member)
        group.members.pop(member.member_id, None)
        group.target.pop(member.member_id, None)
        if member.instance_id is not None:
            if group.static_members.get(member.instance_id) == member.member_id:
                del group.static_members[member.instance_id]
        group.group_epoch += 1
        group.subscription_metadata = self._subscription_metadata(group)
        self._maybe_assign(group)

    # -- assignment -------------------------------------------------------------------

    def _subscribed(self, member: ConsumerMember) -> frozenset[str]:
        topics = self.log.metadata.topics
        names = {n for n in member.subscribed_topic_names if n in topics}
        if member.subscribed_topic_regex:
            # Internal topics match too, as in Kafka 4.4: its coordinator resolves a regex
            # against every topic name, `__consumer_offsets` included.
            pattern = re.compile(member.subscribed_topic_regex)
            names.update(n for n in topics if pattern.fullmatch(n))
        return frozenset(names)

    def subscribed_topics(self, group: ConsumerGroup) -> set[str]:
        """Existing topics some member of the group subscribes to."""
        out: set[str] = set()
        for m in group.members.values():
            out |= self._subscribed(m)
        return out

    def _subscription_metadata(self, group: ConsumerGroup) -> dict[str, tuple[uuid.UUID, int]]:
        topics = self.log.metadata.topics
        out: dict[str, tuple[uuid.UUID, int]] = {}
        for m in group.members.values():
            for name in self._subscribed(m):
                t = topics[name]
                out[name] = (t.topic_id, len(t.partitions))
        return out

    def _choose_assignor(self, group: ConsumerGroup) -> str:
        """The assignor most members ask for (ties by name), else the configured default."""
        votes: dict[str, int] = {}
        for m in group.members.values():
            if m.server_assignor is not None:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        if votes:
            return min(votes, key=lambda n: (-votes[n], n))
        return self._assignor_names()[0]

    def _maybe_assign(self, group: ConsumerGroup) -> None:
        """Compute a new target assignment when the group epoch moved past it, no sooner
        than ``consumer.assignment.interval.ms`` after the last one (Kafka 4.4 keeps the
        last target until then, and a heartbeat after it computes the new one)."""
        if group.group_epoch <= group.assignment_epoch:
            return
        interval = self.log.group_cfg(group.group_id, "consumer.assignment.interval.ms")
        now = self._time_ms()
        last = group.assignment_timestamp_ms
        if last and interval and now < last + interval:
            return
        name = self._choose_assignor(group)
        group.assignor_name = name
        spec = AssignmentSpec(
            subscriptions={m.member_id: self._subscribed(m) for m in group.members.values()},
            topics={
                n: TopicSpec(n, topic_id, count)
                for n, (topic_id, count) in group.subscription_metadata.items()
            },
            current=group.target,
        )
        group.target = ASSIGNORS[name].assign(spec)
        group.dirty = None  # targets may have moved for anyone
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp_ms = now

    def _reconcile(
        self, group: ConsumerGroup, member: ConsumerMember, owned: Assignment | None
    ) -> None:
        """Move the member one step toward its target assignment (revoke before assign)."""
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            if owned is None or _overlaps(owned, member.pending_revocation):
                return  # still waiting for the member to give them up
            member.pending_revocation = {}
            member.state = MemberState.STABLE
            self._cancel_revocation(member)
        target_epoch = group.assignment_epoch
        if member.state is MemberState.STABLE and member.member_epoch == target_epoch:
            return
        target = group.target.get(member.member_id, {})
        owners = group.owners()
        keep: Assignment = {}
        revoke: Assignment = {}
        grant: Assignment = {}
        unreleased = False
        for topic_id in set(member.assigned) | set(target):
            current = member.assigned.get(topic_id, set())
            wanted = target.get(topic_id, set())
            if current & wanted:
                keep[topic_id] = current & wanted
            if current - wanted:
                revoke[topic_id] = current - wanted
            for p in wanted - current:
                holder = owners.get((topic_id, p))
                if holder is None or holder == member.member_id:
                    grant.setdefault(topic_id, set()).add(p)
                else:
                    unreleased = True
        if revoke:
            member.assigned = keep
            member.pending_revocation = revoke
            member.state = MemberState.UNREVOKED_PARTITIONS
            self._schedule_revocation(group, member)
            return
        for topic_id, parts in grant.items():
            keep.setdefault(topic_id, set()).update(parts)
        member.assigned = keep
        if member.member_epoch != target_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = target_epoch
        member.state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE

    # -- timers -----------------------------------------------------------------------

    def _schedule_session(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        timeout = self.log.group_cfg(group.group_id, "consumer.session.timeout.ms")
        op = self._deadline(group, member.member_id, timeout, "session")
        old, member.session = member.session, op
        if old is not None:
            old.force_complete()
        self._sessions.try_complete_else_watch(op, [(group.group_id, member.member_id)])

    def _schedule_revocation(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        self._cancel_revocation(member)
        timeout = member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 else 300_000
        op = self._deadline(group, member.member_id, timeout, "revocation")
        member.revocation = op
        self._sessions.try_complete_else_watch(op, [(group.group_id, member.member_id)])

    def _cancel_revocation(self, member: ConsumerMember) -> None:
        if member.revocation is not None:
            op, member.revocation = member.revocation, None
            op.force_complete()

    def _cancel_timers(self, member: ConsumerMember) -> None:
        self._cancel_revocation(member)
        if member.session is not None:
            op, member.session = member.session, None
            op.force_complete()

    def _deadline(
        self, group: ConsumerGroup, member_id: str, delay_ms: int, what: str
    ) -> MemberDeadline:
        return MemberDeadline(delay_ms, lambda op: self._expired(group, member_id, op, what))

    def _expired(self, group: ConsumerGroup, member_id: str, op: MemberDeadline, what: str) -> None:
        member = group.members.get(member_id)
        if member is None or self.groups.get(group.group_id) is not group:
            return
        if what == "session" and member.session is op:
            member.session = None
            self._remove(group, member, "timed out (session)")
        elif what == "revocation" and member.revocation is op:
            member.revocation = None
            self._remove(group, member, "did not revoke its partitions in time")
        else:
            return
        self._persist(group, _ignore)

    # -- offsets ----------------------------------------------------------------------

    def validate_offset_commit(
        self, group: ConsumerGroup, member_id: str, member_epoch: int, api_version: int
    ) -> None:
        """Raise what Kafka answers to a commit into a consumer-protocol group."""
        if member_epoch < 0 and not group.members:
            return  # an admin or a consumer outside group management, on an empty group
        member = _member(group, member_id)
        if api_version < 9:
            raise UnsupportedVersionError(
                "members of a consumer-protocol group commit with OffsetCommit v9 or later"
            )
        _check_epoch(member, member_epoch, StaleMemberEpochError)

    def validate_txn_offset_commit(
        self, group: ConsumerGroup, member_id: str, member_epoch: int
    ) -> None:
        """Raise what Kafka answers to a transactional commit (TxnOffsetCommit) into a
        consumer-protocol group: as `validate_offset_commit`, but a stale epoch is
        ILLEGAL_GENERATION, the error transactional producers abort on."""
        if member_epoch < 0 and (not group.members or not member_id):
            return  # a producer outside the group (TxnOffsetCommit before v3 names none)
        _check_epoch(_member(group, member_id), member_epoch, IllegalGenerationError)

    def validate_offset_fetch(
        self, group: ConsumerGroup, member_id: str, member_epoch: int
    ) -> None:
        if member_epoch == -1:
            return  # an admin client
        _check_epoch(_member(group, member_id), member_epoch, StaleMemberEpochError)

    # -- describe, list, lifecycle ----------------------------------------------------

    def describe(self, group_id: str) -> ConsumerGroup:
        """The group; raises NOT_COORDINATOR, or GROUP_ID_NOT_FOUND (unknown or classic)."""
        self.log.check_owner(group_id)
        group = self.groups.get(group_id)
        if group is None or group.dead:
            if group_id in self.classic_groups:
                raise GroupIdNotFoundError(f"group {group_id!r} is not a consumer group")
            raise GroupIdNotFoundError(f"Group {group_id} not found.")
        return group

    def topic_name(self, topic_id: uuid.UUID) -> str:
        return self.log.metadata.topic_names.get(topic_id, "")

    def owned_groups(self, owned_partitions: Iterable[int]) -> list[ConsumerGroup]:
        owned = set(owned_partitions)
        partition_of = self.log.partition_of
        return [g for g in self.groups.values() if not g.dead and partition_of(g.group_id) in owned]

    def drop(self, group_id: str, *, persist: bool = True) -> ConsumerGroup | None:
        """Forget a group; ``persist`` also writes that it is gone (not when unloading)."""
        group = self.groups.pop(group_id, None)
        if group is not None:
            for m in group.members.values():
                self._cancel_timers(m)
            group.dead = True
            if persist:
                now = self._time_ms()
                keys = encode_group(group)  # every record the group may have left behind
                tombstones = [Record(-1, now, key, None) for key in keys]
                self.log.append(group_id, tombstones, _ignore)
        return group

    def unload(self, index: int) -> None:
        for group_id in [g for g in self.groups if self.log.partition_of(g) == index]:
            self.drop(group_id, persist=False)

    def load(self, states: dict[str, StateRecords]) -> None:
        """Rebuild groups from their last state records (this broker took their partition).

        ``states`` maps a group id to its records' values (`StateRecords`). Offsets were
        loaded into classic placeholders; they move to the consumer groups. Every member
        gets a fresh session, as Kafka does on load.
        """
        for group_id, records in states.items():
            if ("", GROUP_METADATA) not in records:
                continue  # deleted, or taken over by a classic group
            try:
                group = decode_group(group_id, records)
            except (ValueError, KeyError, TypeError) as e:
                _log.error("group %s: unreadable state records skipped: %s", group_id, e)
                continue
            placeholder = self.classic_groups.pop(group_id, None)
            if placeholder is not None:
                group.offsets = placeholder.offsets
            # Kafka keeps no record of the assignor: the members' votes choose it again.
            group.assignor_name = self._choose_assignor(group) if group.members else ""
            group.persisted = {
                "": encode_group_records(group),
                **{mid: encode_member(group, m) for mid, m in group.members.items()},
            }
            group.dirty = set()
            self.groups[group_id] = group
            for m in group.members.values():
                self._schedule_session(group, m)
                if m.state is MemberState.UNREVOKED_PARTITIONS:
                    self._schedule_revocation(group, m)

    def _time_ms(self) -> int:
        return self.log.now_ms()

    def _persist(
        self, group: ConsumerGroup, done: Callable[[int], None], touched: str | None = None
    ) -> None:
        """Write the state records that changed since the last write; ``done(error)``.

        Only the group's record, ``touched`` and the members marked dirty are encoded.
        """
        dirty, group.dirty = group.dirty, set()
        if dirty is not None and touched is not None:
            dirty.add(touched)
        wanted = {"": encode_group_records(group)}
        for mid in group.members if dirty is None else dirty:
            member = group.members.get(mid)
            if member is not None:
                wanted[mid] = encode_member(group, member)
        changed = [
            (key, value)
            for mid, records in wanted.items()
            for key, value in records.items()
            if group.persisted.get(mid, {}).get(key) != value
        ]
        gone = [mid for mid in group.persisted if mid and mid not in group.members]
        if not changed and not gone:
            done(0)
            return
        now = self._time_ms()
        records = [Record(-1, now, key, value) for key, value in changed]
        records += [Record(-1, now, key, None) for mid in gone for key in group.persisted[mid]]
        gid = group.group_id
        persisted = {mid: v for mid, v in group.persisted.items() if mid not in gone}
        persisted.update(wanted)
        group.persisted = persisted

        def written(code: int) -> None:
            if code and group.persisted is persisted:
                group.persisted = {}  # write everything again with the next change
                group.dirty = None
            done(code)

        self.log.append(gid, records, written)

    def shutdown(self) -> None:
        for group in self.groups.values():
            for m in group.members.values():
                self._cancel_timers(m)
        self._sessions.shutdown()
        self._sessions.timer.close()


def _subscribe(
    member: ConsumerMember,
    version: int,
    topic_names: list[str] | None,
    topic_regex: str | None,
    server_assignor: str | None,
) -> bool:
    """Apply what a heartbeat says of the member's subscription; whether it changed (null
    fields leave it as it is)."""
    changed = False
    if topic_names is not None:
        names = sorted(set(topic_names))
        if names != member.subscribed_topic_names:
            member.subscribed_topic_names = names
            changed = True
    if version >= 1 and topic_regex is not None:
        regex = topic_regex or None
        if regex != member.subscribed_topic_regex:
            member.subscribed_topic_regex = regex
            changed = True
    if server_assignor is not None and server_assignor != member.server_assignor:
        member.server_assignor = server_assignor
        changed = True
    return changed


def _subset(a: Assignment, b: Assignment) -> bool:
    return all(ps <= b.get(t, set()) for t, ps in a.items())


def _overlaps(a: Assignment, b: Assignment) -> bool:
    return any(ps & b.get(t, set()) for t, ps in a.items())


def _ignore(code: int) -> None:
    """Writes nobody waits for (timer-driven changes): a failure is retried next change."""


def _member(group: ConsumerGroup, member_id: str) -> ConsumerMember:
    member = group.members.get(member_id)
    if member is None:
        raise UnknownMemberIdError(f"{member_id!r} is not a member of group {group.group_id!r}")
    return member


def _check_epoch(member: ConsumerMember, epoch: int, stale: type[KafkaError]) -> None:
    if epoch != member.member_epoch:
        raise stale(f"member epoch {epoch} is not the current {member.member_epoch}")
