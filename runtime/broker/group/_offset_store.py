"""The group coordinator's committed offsets: commits, fetches, deletes, and transactional
commits that count only once their transaction's marker arrives.

Offsets live in the groups themselves (`Group.offsets` for classic groups,
`ConsumerGroup.offsets` for the consumer protocol) and are written to the group's
``__consumer_offsets`` partition through `CoordinatorLog`; the cache is updated only in
the append's callback, so an offset is never visible before it is durable (seed 002).
A transactional commit (TxnOffsetCommit) is written as part of its producer's transaction
and held aside until the marker reaches the partition: COMMIT applies it, ABORT drops it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from kafkagen.runtime.errors import ErrorCode, KafkaError
from kafkagen.runtime.records import Record
from kafkagen.runtime.topic_partition import TopicPartition

from ..coordinator.coordinator_log import CoordinatorLog
from ..metadata.cluster_metadata import ClusterMetadata
from ..sorted_keys import SortedKeysDict
from ._group_records import OffsetCommitValue, offset_key, offset_value
from .consumer_group import ConsumerGroup
from .consumer_group_manager import ConsumerGroupManager
from .group_model import Group, GroupState, Member, OffsetEntry
from .streams_group import StreamsGroup
from .streams_group_manager import StreamsGroupManager

__all__ = ["MAX_METADATA", "OffsetStore", "offset_records", "tombstones"]

#: Kafka's limit on offset metadata strings (offset.metadata.max.bytes).
MAX_METADATA = 4096

OffsetCommitCallback = Callable[[dict[TopicPartition, int]], None]
OffsetDeleteCallback = Callable[[int, dict[TopicPartition, int]], None]


def offset_records(
    md: ClusterMetadata, group_id: str, offsets: Mapping[TopicPartition, OffsetEntry]
) -> tuple[list[Record], dict[TopicPartition, int]]:
    """The offsets topic records of a commit, and the per-partition errors of the entries
    that cannot be committed (unknown partition, metadata over Kafka's size limit)."""
    errors: dict[TopicPartition, int] = {}
    records = []
    for tp, entry in offsets.items():
        if md.partition(tp.topic, tp.partition) is None:
            errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        elif len(entry.metadata.encode("utf-8")) > MAX_METADATA:
            errors[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
        else:
            value = OffsetCommitValue(
                offset=entry.offset,
                leader_epoch=entry.leader_epoch,
                metadata=entry.metadata,
                commit_timestamp=entry.commit_timestamp,
            )
            key = offset_key(group_id, tp.topic, tp.partition)
            records.append(Record(-1, entry.commit_timestamp, key, offset_value(value)))
    return records, errors


@dataclass(slots=True)
class _PendingOffsets:
    #: group id -> offsets waiting for the transaction's marker.
    groups: dict[str, dict[TopicPartition, OffsetEntry]] = field(default_factory=dict)


class OffsetStore:
    """Committed offsets of the groups of one group coordinator, of both protocols."""

    def __init__(
        self,
        log: CoordinatorLog,
        groups: SortedKeysDict[str, Group],
        consumer: ConsumerGroupManager,
        streams: StreamsGroupManager,
        keep_alive: Callable[[Group, Member], None],
    ) -> None:
        self.log = log
        #: The coordinator's classic groups (shared: the protocol adds and removes them).
        self.groups = groups
        self.consumer = consumer
        self.streams = streams
        #: Called when a classic member commits: a commit counts as a heartbeat.
        self._keep_alive = keep_alive
        #: (producer id, offsets-topic partition) -> what its open transaction committed.
        self.pending: dict[tuple[int, int], _PendingOffsets] = {}

    def _modern(self, group_id: str) -> tuple[Any, ConsumerGroup | StreamsGroup | None]:
        """The manager and the group when ``group_id`` is a consumer-protocol or streams
        group (they keep their offsets and check their members' epochs themselves)."""
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return self.consumer, consumer_group
        return self.streams, self.streams.groups.get(group_id)

    # -- OffsetCommit -----------------------------------------------------------------

    def commit(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        offsets: dict[TopicPartition, OffsetEntry],
        callback: OffsetCommitCallback,
        *,
        api_version: int = 9,
    ) -> None:
        """Validate, write to the offsets topic (acks=all), cache and answer when durable.

        ``generation_id`` is the member epoch for consumer-protocol groups.
        """

        def fail(code: int) -> None:
            callback(dict.fromkeys(offsets, code))

        error = self.log.group_error(group_id)
        if error:
            fail(error)
            return
        manager, consumer_group = self._modern(group_id)
        group = self.groups.get(group_id)
        cache: dict[TopicPartition, OffsetEntry]
        if consumer_group is not None:
            try:
                manager.validate_offset_commit(
                    consumer_group, member_id, generation_id, api_version
                )
            except KafkaError as e:
                fail(e.code)
                return
            cache = consumer_group.offsets
        elif group is None:
            if generation_id >= 0:
                fail(ErrorCode.ILLEGAL_GENERATION)
                return
            # A consumer that commits without being a member (manual assignment).
            group = self.groups[group_id] = Group(group_id, self.log.now_ms())
        elif group.state is GroupState.DEAD:
            fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            return
        elif not (generation_id < 0 and group.state is GroupState.EMPTY):
            error = group.member_error(member_id, group_instance_id)
            if not error and generation_id != group.generation_id:
                error = ErrorCode.ILLEGAL_GENERATION
            if not error and group.state is GroupState.COMPLETING_REBALANCE:
                error = ErrorCode.REBALANCE_IN_PROGRESS
            if error:
                fail(error)
                return
            self._keep_alive(group, group.members[member_id])
        if consumer_group is None:
            assert group is not None
            cache = group.offsets
        owner: object = consumer_group if consumer_group is not None else group
        records, errors = offset_records(self.log.metadata, group_id, offsets)
        valid = {tp: e for tp, e in offsets.items() if tp not in errors}
        if not valid:
            callback(errors)
            return

        def appended(error: int) -> None:
            current = self._modern(group_id)[1] or self.groups.get(group_id)
            if not error and current is owner:
                cache.update(valid)
            for tp in valid:
                errors[tp] = error
            callback(errors)

        self.log.append(group_id, records, appended)

    # -- OffsetFetch ------------------------------------------------------------------

    def fetch(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None,
        *,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> dict[TopicPartition, OffsetEntry | None]:
        """Committed offsets (None: nothing committed); all of them when ``partitions`` is None.

        Raises NOT_COORDINATOR and the like; for a consumer-protocol group, also
        UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH when a member asks with a wrong epoch.
        """
        offsets = self._offsets_of(group_id, member_id, member_epoch)
        if partitions is None:
            return dict(offsets)
        return {tp: offsets.get(tp) for tp in partitions}

    def fetch_from(
        self,
        group_id: str,
        start: TopicPartition | None,
        count: int,
        *,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> list[tuple[TopicPartition, OffsetEntry]]:
        """At most ``count`` committed offsets by topic then partition, from the first at or
        after ``start``: one page of a full listing, found without sorting them all. Raises
        as ``fetch``."""
        offsets = self._offsets_of(group_id, member_id, member_epoch)
        out: list[tuple[TopicPartition, OffsetEntry]] = []
        for tp in offsets.keys_from(start):
            if len(out) >= count:
                break
            out.append((tp, offsets[tp]))
        return out

    def _offsets_of(
        self, group_id: str, member_id: str | None, member_epoch: int
    ) -> SortedKeysDict[TopicPartition, OffsetEntry]:
        self.log.check_owner(group_id)
        manager, consumer_group = self._modern(group_id)
        if consumer_group is not None:
            if member_id is not None:
                manager.validate_offset_fetch(consumer_group, member_id, member_epoch)
            return consumer_group.offsets
        group = self.groups.get(group_id)
        return SortedKeysDict() if group is None else group.offsets

    # -- OffsetDelete -----------------------------------------------------------------

    def delete(
        self,
        group_id: str,
        partitions: Sequence[TopicPartition],
        callback: OffsetDeleteCallback,
    ) -> None:
        """OffsetDelete: refused for a non-empty group unless it is of the consumer type
        and the partitions' topics are not subscribed to."""
        error = self.log.group_error(group_id)
        if error:
            callback(error, {})
            return
        manager, consumer_group = self._modern(group_id)
        errors: dict[TopicPartition, int] = {}
        owner: Group | ConsumerGroup | StreamsGroup
        if consumer_group is not None:
            subscribed = manager.subscribed_topics(consumer_group)
            owner = consumer_group
        else:
            group = self.groups.get(group_id)
            if group is None or group.state is GroupState.DEAD:
                callback(ErrorCode.GROUP_ID_NOT_FOUND, {})
                return
            owner = group
            subscribed = set()
            if group.state is not GroupState.EMPTY:
                topics = group.subscribed_topics()
                if group.protocol_type != "consumer" or topics is None:
                    callback(ErrorCode.NON_EMPTY_GROUP, {})
                    return
                subscribed = topics
        errors = {
            tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC for tp in partitions if tp.topic in subscribed
        }
        deletable = [tp for tp in partitions if tp not in errors]
        now = self.log.now_ms()
        records = tombstones(group_id, [tp for tp in deletable if tp in owner.offsets], now)
        if not records:
            callback(0, {**dict.fromkeys(deletable, 0), **errors})
            return

        def appended(error: int) -> None:
            if not error:
                for tp in deletable:
                    owner.offsets.pop(tp, None)
            callback(error, {**dict.fromkeys(deletable, error), **errors})

        self.log.append(group_id, records, appended)

    def on_topic_deleted(self, topic: str) -> None:
        """Offsets of a deleted topic go with it, as in Kafka: the coordinator of each group
        writes their tombstones, so that a later coordinator does not read them back."""
        owners: list[Group | ConsumerGroup | StreamsGroup] = [*self.groups.values()]
        owners += self.consumer.groups.values()
        owners += self.streams.groups.values()
        now = self.log.now_ms()
        for owner in owners:
            gone = [tp for tp in owner.offsets if tp.topic == topic]
            for tp in gone:
                del owner.offsets[tp]
            if gone and self.log.owns(owner.group_id):
                self.log.append(owner.group_id, tombstones(owner.group_id, gone, now), _ignore)

    # -- expiry -----------------------------------------------------------------------

    def expired(
        self,
        owner: Group | ConsumerGroup | StreamsGroup,
        subscribed: Set[str],
        empty_since: int | None,
        now_ms: int,
        retention_ms: int,
    ) -> tuple[list[TopicPartition], bool]:
        """The offsets of ``owner`` older than ``retention_ms``, counted from
        ``empty_since`` or else each one's commit, and whether they are all it has (no
        subscribed topic's offset is one, nor one an open transaction also wrote; a group
        in an open transaction keeps something)."""
        gone: list[TopicPartition] = []
        group_id = owner.group_id
        kept = self.has_pending_group(group_id)
        for tp, entry in owner.offsets.items():
            if (
                tp.topic not in subscribed
                and now_ms - (entry.commit_timestamp if empty_since is None else empty_since)
                >= retention_ms
                and not self.has_pending(group_id, tp)
            ):
                gone.append(tp)
            else:
                kept = True
        return gone, not kept

    def expire(
        self, owner: Group | ConsumerGroup | StreamsGroup, partitions: Sequence[TopicPartition]
    ) -> None:
        """Write tombstones for these expired offsets of ``owner``; each leaves the cache
        once written unless a commit replaced it meanwhile, whose record is then written
        again after the tombstone (the log's last word is the commit's)."""
        group_id, now = owner.group_id, self.log.now_ms()
        entries = {tp: owner.offsets[tp] for tp in partitions}
        records = tombstones(group_id, entries, now)

        def appended(error: int) -> None:
            if error:
                return
            replaced = {}
            for tp, entry in entries.items():
                current = owner.offsets.get(tp)
                if current is entry:
                    del owner.offsets[tp]
                elif current is not None:
                    replaced[tp] = current
            if replaced:
                again, _ = offset_records(self.log.metadata, group_id, replaced)
                self.log.append(group_id, again, _ignore)

        self.log.append(group_id, records, appended)

    # -- TxnOffsetCommit and the transaction markers ----------------------------------

    def commit_transactional(
        self,
        group_id: str,
        pid: int,
        epoch: int,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        offsets: dict[TopicPartition, OffsetEntry],
        callback: OffsetCommitCallback,
    ) -> None:
        """Write the offsets as part of ``pid``'s transaction; they count only once it
        commits."""

        def fail(code: int) -> None:
            callback(dict.fromkeys(offsets, code))

        error = self.log.group_error(group_id)
        if error:
            fail(error)
            return
        manager, consumer_group = self._modern(group_id)
        group = self.groups.get(group_id)
        if consumer_group is not None:
            try:
                manager.validate_txn_offset_commit(consumer_group, member_id, generation_id)
            except KafkaError as e:
                fail(e.code)
                return
        elif group is not None:
            if group.state is GroupState.DEAD:
                fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
                return
            # An empty member id or a negative generation: a producer outside the group.
            error = group.member_error(member_id, group_instance_id, must_be_member=False)
            if not error and generation_id >= 0 and generation_id != group.generation_id:
                error = ErrorCode.ILLEGAL_GENERATION
            if error:
                fail(error)
                return
        records, errors = offset_records(self.log.metadata, group_id, offsets)
        valid = {tp: e for tp, e in offsets.items() if tp not in errors}
        if not valid:
            callback(errors)
            return
        index = self.log.partition_of(group_id)

        def appended(error: int) -> None:
            if not error:
                pending = self.pending.setdefault((pid, index), _PendingOffsets())
                pending.groups.setdefault(group_id, {}).update(valid)
            for tp in valid:
                errors[tp] = error
            callback(errors)

        self.log.append(group_id, records, appended, producer=(pid, epoch))

    def complete_transaction(self, pid: int, index: int, commit: bool) -> None:
        """The marker of ``pid``'s transaction reached offsets partition ``index``."""
        pending = self.pending.pop((pid, index), None)
        if pending is None or not commit:
            return
        now = self.log.now_ms()
        for group_id, entries in pending.groups.items():
            # A consumer-protocol group keeps its offsets itself: a classic group made here
            # would hide them from its members and refuse their next transactional commits.
            consumer_group = self._modern(group_id)[1]
            if consumer_group is not None:
                consumer_group.offsets.update(entries)
                continue
            group = self.groups.get(group_id)
            if group is None:
                group = self.groups[group_id] = Group(group_id, now)
            group.offsets.update(entries)

    def add_pending(
        self, pid: int, index: int, group_id: str, tp: TopicPartition, entry: OffsetEntry
    ) -> None:
        """An offset ``pid``'s open transaction wrote to offsets partition ``index``."""
        pending = self.pending.setdefault((pid, index), _PendingOffsets())
        pending.groups.setdefault(group_id, {})[tp] = entry

    def drop_pending(self, index: int) -> None:
        """Forget what is pending on offsets partition ``index`` (leadership moved)."""
        for key in [k for k in self.pending if k[1] == index]:
            del self.pending[key]

    def has_pending(self, group_id: str, tp: TopicPartition) -> bool:
        """Whether an open transaction holds an offset for ``tp`` of ``group_id``."""
        return any(tp in p.groups.get(group_id, {}) for p in self.pending.values())

    def has_pending_group(self, group_id: str) -> bool:
        """Whether an open transaction holds offsets of ``group_id``."""
        return any(group_id in p.groups for p in self.pending.values())


def tombstones(group_id: str, partitions: Iterable[TopicPartition], now_ms: int) -> list[Record]:
    """The records that delete ``group_id``'s committed offsets of ``partitions``."""
    return [
        Record(-1, now_ms, offset_key(group_id, tp.topic, tp.partition), None) for tp in partitions
    ]


def _ignore(error: int) -> None:
    """For a write no request waits for: a failed one leaves the log as it was."""
