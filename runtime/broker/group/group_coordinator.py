"""The group coordinator: the groups of both protocols, and the coordinator's life.

A broker coordinates the groups that hash onto the ``__consumer_offsets`` partitions it
leads (`CoordinatorLog`). `GroupCoordinator` speaks the classic protocol
(`_classic_protocol`) over the group model of `group_model`, holds the consumer-protocol
groups (`consumer_group_manager`), the streams groups (`streams_group_manager`) and the
committed offsets (`_offset_store`), and loads them all from a partition when it takes it
over.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.records import Record, iter_batches
from kafkagen.runtime.timer import Timer
from kafkagen.runtime.topic_partition import TopicPartition

from ..config.store import ConfigStore
from ..coordinator.coordinator_log import CoordinatorLog
from ..metadata.cluster_metadata import ClusterMetadata
from ..sorted_keys import SortedKeysDict
from ..storage.partition import ABORT_MARKER, COMMIT_MARKER, Partition, parse_control_key
from ..storage.replica_manager import ReplicaManager
from ..types import OFFSETS_TOPIC
from ._classic_protocol import ClassicProtocol
from ._group_records import decode_group_value, decode_key, decode_offset_value, group_key
from ._offset_store import OffsetStore, tombstones
from .consumer_group import ConsumerGroup, StateRecords, decode_state_key
from .consumer_group_manager import ConsumerGroupManager
from .group_model import Group, GroupState, Member, OffsetEntry
from .streams_group import StreamsGroup
from .streams_group_manager import StreamsGroupManager
from .streams_group_records import decode_state_key as decode_streams_key

__all__ = ["GroupCoordinator"]

_log = logging.getLogger("kafkagen.broker.groups")


class GroupCoordinator(ClassicProtocol):
    """The groups whose offsets-topic partitions this broker leads."""

    def __init__(
        self,
        node_id: int,
        configs: ConfigStore,
        metadata: ClusterMetadata,
        replica_manager: ReplicaManager,
        timer_factory: Callable[[], Timer],
        running: Callable[[], bool] = lambda: True,
    ) -> None:
        self.log = CoordinatorLog(
            OFFSETS_TOPIC,
            node_id,
            configs,
            metadata,
            replica_manager,
            partitions_config="offsets.topic.num.partitions",
            replication_config="offsets.topic.replication.factor",
            segment_config="offsets.topic.segment.bytes",
            write_timeout_ms=lambda: configs.broker_int("offsets.commit.timeout.ms", node_id),
            on_load=self._load,
            on_unload=self._unload,
        )
        groups: SortedKeysDict[str, Group] = SortedKeysDict()
        consumer = ConsumerGroupManager(self.log, groups, timer_factory)
        super().__init__(self.log, groups, consumer, timer_factory)
        #: Streams groups (KIP-1071).
        self.streams = StreamsGroupManager(self.log, timer_factory)
        #: Committed offsets of the groups of every protocol.
        self.offsets = OffsetStore(
            self.log, self.groups, self.consumer, self.streams, self._schedule_heartbeat
        )
        #: Whether the broker serves (False while paused): groups expire only then.
        self._running = running
        self._cleanup: asyncio.TimerHandle | None = None

    # -- ownership --------------------------------------------------------------------

    @property
    def owned(self) -> Mapping[int, int]:
        """Offsets-topic partitions this broker leads, hence coordinates (-> leader epoch)."""
        return self.log.owned

    def ensure_offsets_topic(self) -> bool:
        """Create ``__consumer_offsets`` on first use, as Kafka does; False if impossible."""
        return self.log.ensure_topic()

    def coordinator_for(self, group_id: str) -> int:
        """The broker id coordinating ``group_id`` (-1 if none is available)."""
        return self.log.coordinator_for(group_id)

    def _load(self, partition: Partition) -> None:
        """Rebuild groups' committed offsets from the partition (leadership moved here).

        Transactional offset commits are replayed as the previous leader saw them: kept
        aside until their transaction's marker, which applies (COMMIT) or drops (ABORT)
        them; those of transactions still open stay pending.
        """
        index = partition.tp.partition
        offsets = self.offsets
        offsets.drop_pending(index)
        # Consumer-protocol and streams groups: their last state records.
        states: dict[str, StateRecords] = {}
        streams_states: dict[str, StateRecords] = {}
        for b in partition.log.batches:
            for batch in iter_batches(b.data, verify_crc=False):
                if batch.is_control:
                    for r in batch:
                        marker = parse_control_key(r.key)
                        if marker in (ABORT_MARKER, COMMIT_MARKER):
                            offsets.complete_transaction(
                                batch.producer_id, index, marker == COMMIT_MARKER
                            )
                    continue
                txn_pid = batch.producer_id if batch.is_transactional else None
                for r in batch:
                    if r.key is None:
                        continue
                    try:
                        owner, state_of = states, decode_state_key(r.key)
                        if state_of is None:
                            owner, state_of = streams_states, decode_streams_key(r.key)
                        key = None if state_of is not None else decode_key(r.key)
                    except ValueError as e:
                        _log.error(
                            "%s batch at %d: record skipped: %s", partition.tp, b.base_offset, e
                        )
                        continue
                    if state_of is not None:
                        state_group, member_id, record_type = state_of
                        records = owner.setdefault(state_group, {})
                        if r.value is None:
                            records.pop((member_id, record_type), None)
                        else:
                            records[member_id, record_type] = bytes(r.value)
                        continue
                    if key is None:
                        continue
                    kind, group_id, topic, tp_index = key
                    group = self.groups.get(group_id)
                    if kind == "group":
                        states.pop(group_id, None)  # the id went to a classic group
                        streams_states.pop(group_id, None)
                        if r.value is None:
                            self.groups.pop(group_id, None)
                            continue
                        if group is None:
                            group = self.groups[group_id] = Group(group_id, self._time_ms())
                        _restore(group, r.value)
                        continue
                    tp = TopicPartition(topic, tp_index)
                    if txn_pid is not None:
                        if r.value is not None:
                            v = decode_offset_value(r.value)
                            entry = OffsetEntry(
                                v.offset, v.leader_epoch, v.metadata, v.commit_timestamp
                            )
                            offsets.add_pending(txn_pid, index, group_id, tp, entry)
                        continue
                    if r.value is None:
                        if group is not None:
                            group.offsets.pop(tp, None)
                        continue
                    if group is None:
                        group = self.groups[group_id] = Group(group_id, self._time_ms())
                    v = decode_offset_value(r.value)
                    group.offsets[tp] = OffsetEntry(
                        v.offset, v.leader_epoch, v.metadata, v.commit_timestamp
                    )
        self.consumer.load(states)
        self.streams.load(streams_states, self.groups)
        # Members of the loaded groups keep their place, as on the previous coordinator:
        # each must heartbeat within its session from now on.
        for group in self.groups.values():
            if self.log.partition_of(group.group_id) == index:
                for m in group.members.values():
                    self._schedule_heartbeat(group, m)
        self._schedule_cleanup()

    def _unload(self, index: int) -> None:
        for group_id in [g for g in self.groups if self.log.partition_of(g) == index]:
            group = self.groups.pop(group_id)
            self._fail_all(group, ErrorCode.NOT_COORDINATOR)
        self.consumer.unload(index)
        self.streams.unload(index)
        # The next leader replays them; kept here they would go stale.
        self.offsets.drop_pending(index)

    # -- listing, describing, deleting ------------------------------------------------

    def list_groups(self) -> list[Group]:
        return [
            g
            for g in self.groups.values()
            if g.state is not GroupState.DEAD and self.log.owns(g.group_id)
        ]

    def groups_from(self, start: str | None) -> Iterator[Group | ConsumerGroup]:
        """The live groups of both protocols this broker coordinates, by group id from the
        first at or after ``start``: ListGroups pages cost their own size, not every group's.
        """
        owns = self.log.owns
        classic = (
            g
            for g in map(self.groups.__getitem__, self.groups.keys_from(start))
            if g.state is not GroupState.DEAD and owns(g.group_id)
        )
        consumer = self.consumer.groups
        modern = (
            g
            for g in map(consumer.__getitem__, consumer.keys_from(start))
            if not g.dead and owns(g.group_id)
        )
        return heapq.merge(classic, modern, key=lambda g: g.group_id)

    def describe_group(self, group_id: str) -> Group | None:
        """The group, or None if unknown; raises NOT_COORDINATOR and the like."""
        self.log.check_owner(group_id)
        return self.groups.get(group_id)

    def delete_groups(
        self, group_ids: Sequence[str], callback: Callable[[dict[str, int]], None]
    ) -> None:
        results: dict[str, int] = {}
        waiting: list[str] = []
        for group_id in group_ids:
            error = self.log.owner_error(group_id)
            if error:
                results[group_id] = error
                continue
            modern = self.consumer.groups.get(group_id) or self.streams.groups.get(group_id)
            if modern is not None:
                if modern.members:
                    results[group_id] = ErrorCode.NON_EMPTY_GROUP
                else:
                    # Its offsets move to a classic placeholder, deleted below like any.
                    if isinstance(modern, ConsumerGroup):
                        self.consumer.drop(group_id)
                    else:
                        self.streams.drop(group_id)
                    placeholder = self.groups[group_id] = Group(group_id, self._time_ms())
                    placeholder.offsets = modern.offsets
                    waiting.append(group_id)
                continue
            group = self.groups.get(group_id)
            if group is None or group.state is GroupState.DEAD:
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.state is not GroupState.EMPTY:
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                waiting.append(group_id)
        if not waiting:
            callback(results)
            return
        remaining = len(waiting)

        def one_done(group_id: str, group: Group, error: int) -> None:
            nonlocal remaining
            if not error and self.groups.get(group_id) is group:
                group.transition(GroupState.DEAD, self._time_ms())
                del self.groups[group_id]
            results[group_id] = error
            remaining -= 1
            if remaining == 0:
                callback(results)

        for group_id in waiting:
            group = self.groups[group_id]
            now = self._time_ms()
            records = tombstones(group_id, group.offsets, now)
            records.append(Record(-1, now, group_key(group_id), None))
            self.log.append(group_id, records, functools.partial(one_done, group_id, group))

    def on_topic_deleted(self, topic: str) -> None:
        """Offsets of a deleted topic go with it (Kafka cleans them up the same way)."""
        self.offsets.on_topic_deleted(topic)

    # -- expiry of offsets and empty groups ---------------------------------------------

    def _schedule_cleanup(self) -> None:
        if self._cleanup is not None or self.log.shut_down:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # not serving (a cluster driven by hand)
        every = self._cfg("offsets.retention.check.interval.ms") / 1000
        self._cleanup = loop.call_later(every, self._cleanup_tick)

    def _cleanup_tick(self) -> None:
        self._cleanup = None
        if self._running():
            self.cleanup_group_metadata()
        if self.owned:
            self._schedule_cleanup()

    def cleanup_group_metadata(self) -> int:
        """Kafka's periodic clean-up of the groups this broker coordinates: committed
        offsets older than ``offsets.retention.minutes`` go, and a group left empty with no
        offset goes too (share groups never expire). Returns how many offsets and groups
        are being removed.

        Which offsets may expire, and counted from when, follows the group: an empty
        classic group's from when it became empty; a Stable classic group's of protocol
        type "consumer", and those of every consumer-protocol (KIP-848) and streams group,
        from each commit, but never for a topic the group subscribes to; a classic group's
        with no protocol type (a consumer committing outside group management) from each
        commit. Any other classic group keeps its offsets while it has members."""
        retention_ms = self._cfg("offsets.retention.minutes") * 60_000
        now = self._time_ms()
        removed = 0
        doomed: list[str] = []
        for owner, empty, subscribed, empty_since in self._expirable():
            gone, all_gone = self.offsets.expired(owner, subscribed, empty_since, now, retention_ms)
            if all_gone and empty:
                doomed.append(owner.group_id)
                removed += 1 + len(gone)
            elif gone:
                self.offsets.expire(owner, gone)
                removed += len(gone)
        if doomed:
            self.delete_groups(doomed, lambda results: None)
        if removed:
            _log.info("expired %d offsets and groups", removed)
        return removed

    def _expirable(
        self,
    ) -> Iterator[tuple[Group | ConsumerGroup | StreamsGroup, bool, set[str], int | None]]:
        """(group, is empty, subscribed topics, when it became empty) of each group this
        broker coordinates whose offsets may expire now; with no time of becoming empty,
        an offset's age counts from its commit."""
        owns = self.log.owns
        for group in list(self.groups.values()):
            if group.state is GroupState.DEAD or not owns(group.group_id):
                continue
            if group.protocol_type is None:
                yield group, group.state is GroupState.EMPTY, set(), None
            elif group.state is GroupState.EMPTY:
                yield group, True, set(), group.state_timestamp
            elif group.state is GroupState.STABLE and group.protocol_type == "consumer":
                topics = group.subscribed_topics()
                if topics is not None:
                    yield group, False, topics, None
        modern: list[ConsumerGroup | StreamsGroup] = [*self.consumer.groups.values()]
        modern += self.streams.groups.values()
        for m in modern:
            if not m.dead and owns(m.group_id):
                manager: Any = self.consumer if isinstance(m, ConsumerGroup) else self.streams
                yield m, not m.members, manager.subscribed_topics(m), None

    # -- lifecycle --------------------------------------------------------------------

    def shutdown(self) -> None:
        """Answer every parked join and sync; stop the purgatories."""
        self.log.shut_down = True
        if self._cleanup is not None:
            self._cleanup.cancel()
            self._cleanup = None
        for group in self.groups.values():
            self._fail_all(group, ErrorCode.NOT_COORDINATOR)
        self.consumer.shutdown()
        self.streams.shutdown()
        self._stop_purgatories()


def _restore(group: Group, value: bytes) -> None:
    """The group as its last metadata record left it: generation, protocol, leader and
    members with their subscriptions and assignments; Stable with members, else Empty."""
    v = decode_group_value(value)
    group.protocol_type = v.protocol_type or None
    group.generation_id = v.generation
    group.protocol_name = v.protocol
    group.leader_id = v.leader
    group.members = {}
    group.static_members = {}
    for m in v.members:
        group.members[m.member_id] = Member(
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            m.rebalance_timeout,
            m.session_timeout,
            v.protocol_type,
            [(v.protocol, bytes(m.subscription))] if v.protocol is not None else [],
            bytes(m.assignment),
        )
        if m.group_instance_id is not None:
            group.static_members[m.group_instance_id] = m.member_id
    group.state = GroupState.STABLE if group.members else GroupState.EMPTY
    if v.current_state_timestamp >= 0:
        group.state_timestamp = v.current_state_timestamp
