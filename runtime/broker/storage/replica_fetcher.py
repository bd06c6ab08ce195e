"""Followers copying their leaders' logs: one fetcher per broker, one fetch per leader.

The brokers of a cluster share a process, so a follower fetches by calling the leader's
replica manager directly, with its broker id as ``replica_id``, exactly the path a
follower's Fetch request takes on the leader: the leader records how far the follower got
(moving the high watermark and completing acks=all produces), and a fetch with nothing new
waits in the leader's fetch purgatory until an append wakes it. Each answer is appended to
the follower's log and the next fetch goes out at once, so replication is event-driven.

A follower sends the epoch of its last batch; a leader whose log went another way answers
with the diverging epoch, and the follower truncates to where the logs agree.

Throttled replicas outside the ISR are left out of a fetch while this broker's follower
replication quota is used up (`replication_quota`); the fetcher looks again shortly. A
leader the follower cannot reach (the control API's network faults) is asked again
shortly too, and an answer that comes back across a cut is lost.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Protocol

from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.topic_partition import TopicPartition

from .replica_manager import FetchInfo, FetchParams, FetchResult, ReplicaManager
from .replication_quota import ReplicationQuota

__all__ = ["LeaderLookup", "ReplicaFetcher"]

_log = logging.getLogger("kafkagen.broker.replication")

#: How long a follower's fetch waits on the leader when there is nothing new.
FETCH_WAIT_MS = 500
#: Per-partition and per-request byte limits of follower fetches (Kafka's defaults).
PARTITION_MAX_BYTES = 1024 * 1024
MAX_BYTES = 10 * 1024 * 1024
#: Back-off before asking again a leader that cannot be reached, or for throttled replicas.
RETRY_S = 0.1


class LeaderLookup(Protocol):
    """How a follower finds its leaders (the brokers share a process)."""

    def replica_manager_of(self, node_id: int) -> ReplicaManager | None:
        """The replica manager of broker ``node_id``, None unless that broker is serving."""
        ...

    def peer_delay(self, follower: int, leader: int) -> float | None:
        """Seconds a fetch between the two brokers takes on top of its wait, or None when
        they cannot reach each other."""
        ...


class ReplicaFetcher:
    """Keeps this broker's follower replicas up to date with their leaders."""

    def __init__(self, replica_manager: ReplicaManager, leaders: LeaderLookup) -> None:
        self.replica_manager = replica_manager
        self.node_id = replica_manager.broker_id
        self._leaders = leaders
        self._inflight: set[int] = set()
        self._running = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._retry: asyncio.TimerHandle | None = None
        self.quota = ReplicationQuota(replica_manager.configs, self.node_id, "follower")

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._running = True
        self.kick()

    def stop(self) -> None:
        self._running = False
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None

    def kick(self) -> None:
        """Fetch from every leader this broker follows that has no fetch out yet."""
        if not self._running:
            return
        by_leader: dict[int, list[TopicPartition]] = {}
        over_quota = self.quota.exceeded(self.replica_manager.now())
        held_back = False
        for tp, p in self.replica_manager.partitions.items():
            if p.is_leader or p.leader_id < 0:
                continue
            if over_quota and self.node_id not in p.isr and self.quota.throttles(tp):
                held_back = True
                continue
            by_leader.setdefault(p.leader_id, []).append(tp)
        for leader_id, tps in by_leader.items():
            if leader_id in self._inflight:
                continue
            leader = self._leaders.replica_manager_of(leader_id)
            if leader is None or self._leaders.peer_delay(self.node_id, leader_id) is None:
                held_back = True
                continue
            self._fetch(leader_id, leader, tps)
        if held_back and self._retry is None and self._loop is not None:
            self._retry = self._loop.call_later(RETRY_S, self._retry_now)

    def _retry_now(self) -> None:
        self._retry = None
        self.kick()

    def _fetch(self, leader_id: int, leader: ReplicaManager, tps: Sequence[TopicPartition]) -> None:
        rm = self.replica_manager
        infos = []
        for tp in tps:
            p = rm.partitions[tp]
            epochs = p.log.epochs
            infos.append(
                (
                    tp,
                    FetchInfo(
                        p.log.log_end_offset,
                        PARTITION_MAX_BYTES,
                        current_leader_epoch=p.leader_epoch,
                        last_fetched_epoch=epochs[-1][0] if epochs else -1,
                        log_start_offset=p.log.log_start_offset,
                    ),
                )
            )
        params = FetchParams(
            replica_id=self.node_id,
            max_wait_ms=FETCH_WAIT_MS,
            min_bytes=1,
            max_bytes=MAX_BYTES,
            shared=True,
        )
        self._inflight.add(leader_id)

        def done(results: list[tuple[TopicPartition, FetchResult]]) -> None:
            # The answer is read and sent now: slow disks and networks hold it back.
            delay = self._leaders.peer_delay(self.node_id, leader_id)
            if delay and self._loop is not None:
                self._loop.call_later(delay, arrived, results)
            else:
                arrived(results)

        def arrived(results: list[tuple[TopicPartition, FetchResult]]) -> None:
            self._inflight.discard(leader_id)
            if not self._running:
                return
            if self._leaders.peer_delay(self.node_id, leader_id) is not None:
                self._apply(leader_id, results)
            # Not from inside the callback: the leader may answer synchronously.
            if self._loop is not None:
                self._loop.call_soon(self.kick)

        leader.fetch_messages(params, infos, done)

    def _apply(self, leader_id: int, results: list[tuple[TopicPartition, FetchResult]]) -> None:
        rm = self.replica_manager
        for tp, r in results:
            p = rm.partitions.get(tp)
            if p is None or p.is_leader or p.leader_id != leader_id:
                continue  # the partition moved while the fetch was out
            if r.diverging_epoch is not None:
                epoch, end = r.diverging_epoch
                _log.info(
                    "broker %d: %s diverged from leader %d at epoch %d, truncating to %d",
                    self.node_id,
                    tp,
                    leader_id,
                    epoch,
                    end,
                )
                p.log.truncate_to(max(end, 0))
                p.high_watermark = min(p.high_watermark, p.log.log_end_offset)
                continue
            if r.error is not None:
                if r.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    self._out_of_range(tp, leader_id)
                continue  # NOT_LEADER, epochs: the next metadata update sorts it out
            if r.batches:
                try:
                    p.append_as_follower(r.batches, rm.now())
                except Exception:
                    _log.exception("broker %d: cannot append to %s", self.node_id, tp)
                    continue
                if self.quota.throttles(tp):
                    self.quota.record(r.size, rm.now())
            p.high_watermark = min(r.high_watermark, p.log.log_end_offset)
            if r.log_start_offset > p.log.log_start_offset:
                p.log.advance_start(r.log_start_offset)

    def _out_of_range(self, tp: TopicPartition, leader_id: int) -> None:
        """The follower's log end is outside the leader's log: follow the leader's bounds."""
        leader = self._leaders.replica_manager_of(leader_id)
        mine = self.replica_manager.partitions.get(tp)
        if leader is None or mine is None:
            return
        theirs = leader.partitions.get(tp)
        if theirs is None:
            return
        if mine.log.log_end_offset > theirs.log.log_end_offset:
            mine.log.truncate_to(theirs.log.log_end_offset)
        elif mine.log.log_end_offset < theirs.log.log_start_offset:
            # Everything we have is gone on the leader: start over from its log start.
            mine.log.truncate_to(0)
            mine.log.log_start_offset = mine.log.log_end_offset = theirs.log.log_start_offset
        mine.high_watermark = min(mine.high_watermark, mine.log.log_end_offset)
