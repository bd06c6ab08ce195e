"""Replication throttles: the bytes per second a broker copies of throttled replicas.

Each broker keeps two quotas. As leader it sends throttled replicas (the topic's
``leader.replication.throttled.replicas`` naming this broker) to followers outside the ISR
within ``leader.replication.throttled.rate``; as follower it copies throttled replicas
(``follower.replication.throttled.replicas``) while outside the ISR within
``follower.replication.throttled.rate``. As in Kafka the rate is measured, not scheduled:
every byte of a throttled replica counts into samples of
``replication.quota.window.size.seconds`` each, ``replication.quota.window.num`` of them
kept, and while the measured rate is above the bound a throttled replica is left out of the
fetch (the follower does not ask for it; the leader answers it with no records). Replicas
in the ISR are never held back, and neither is anything not named in the topic configs.
"""

from __future__ import annotations

from collections import deque

from kafkagen.runtime.topic_partition import TopicPartition

from ..config.definitions import INT64_MAX, parse_throttled_replicas
from ..config.store import ConfigStore

__all__ = ["ReplicationQuota"]


class ReplicationQuota:
    """One broker's leader or follower replication quota (``side``: "leader"/"follower")."""

    def __init__(self, configs: ConfigStore, broker_id: int, side: str) -> None:
        self._configs = configs
        self._broker_id = broker_id
        self._rate_config = f"{side}.replication.throttled.rate"
        self._replicas_config = f"{side}.replication.throttled.replicas"
        self._window_ms = 1000 * configs.broker_int("replication.quota.window.size.seconds")
        self._windows = configs.broker_int("replication.quota.window.num")
        #: [start ms, bytes] of the kept samples, oldest first.
        self._samples: deque[list[float]] = deque()
        #: The last value of each topic's throttled-replicas config, parsed.
        self._parsed: dict[str, tuple[str, frozenset[tuple[int, int]] | None]] = {}

    def throttles(self, tp: TopicPartition) -> bool:
        """Whether the topic's config names this broker's replica of ``tp`` (or ``*``)."""
        raw = str(self._configs.topic_raw(tp.topic, self._replicas_config)[0] or "")
        if not raw:
            return False
        cached = self._parsed.get(tp.topic)
        if cached is None or cached[0] != raw:
            cached = (raw, parse_throttled_replicas(raw))
            self._parsed[tp.topic] = cached
        pairs = cached[1]
        return pairs is None or (tp.partition, self._broker_id) in pairs

    def bound(self) -> int:
        """The bytes per second in force for this broker now."""
        return self._configs.broker_int(self._rate_config, self._broker_id)

    def exceeded(self, now_ms: float) -> bool:
        bound = self.bound()
        return bound < INT64_MAX and self.rate(now_ms) > bound

    def record(self, size: int, now_ms: float) -> None:
        if size <= 0:
            return
        self._expire(now_ms)
        if not self._samples or now_ms - self._samples[-1][0] >= self._window_ms:
            self._samples.append([now_ms, 0])
        self._samples[-1][1] += size

    def rate(self, now_ms: float) -> float:
        """Bytes per second since the oldest kept sample began (at least one window)."""
        self._expire(now_ms)
        if not self._samples:
            return 0.0
        elapsed = max(now_ms - self._samples[0][0], self._window_ms)
        return sum(n for _, n in self._samples) * 1000 / elapsed

    def _expire(self, now_ms: float) -> None:
        span = self._windows * self._window_ms
        while self._samples and now_ms - self._samples[0][0] >= span:
            self._samples.popleft()
