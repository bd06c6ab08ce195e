"""Server-side assignors of consumer-protocol groups (KIP-848): ``uniform`` and ``range``.

An assignor maps every member to the partitions it should own, from the members'
subscriptions, the subscribed topics' partition counts and the current target assignment.
Assignments are keyed by topic id, as the protocol carries them.

- ``uniform`` spreads partitions as evenly as subscriptions allow and is sticky: a member
  keeps what it had as long as that does not unbalance the group.
- ``range`` works topic by topic: the members subscribed to a topic, sorted by member id,
  each get a consecutive range of its partitions, the first ones one more when it does not
  divide evenly (so members subscribed to the same topics get the same indexes of each).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "ASSIGNORS",
    "Assignment",
    "Assignor",
    "AssignmentSpec",
    "RangeAssignor",
    "TopicSpec",
    "UniformAssignor",
]

#: topic id -> partition indexes
Assignment = dict[uuid.UUID, set[int]]


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    topic_id: uuid.UUID
    partitions: int


@dataclass(frozen=True, slots=True)
class AssignmentSpec:
    #: member id -> names of the (existing) topics it subscribes to
    subscriptions: Mapping[str, frozenset[str]]
    #: subscribed topics that exist, by name
    topics: Mapping[str, TopicSpec]
    #: member id -> what the previous target assignment gave it
    current: Mapping[str, Assignment]


class Assignor(Protocol):
    name: str

    def assign(self, spec: AssignmentSpec) -> dict[str, Assignment]: ...


def _empty(spec: AssignmentSpec) -> dict[str, Assignment]:
    return {m: {} for m in spec.subscriptions}


class RangeAssignor:
    name = "range"

    def assign(self, spec: AssignmentSpec) -> dict[str, Assignment]:
        out = _empty(spec)
        for name in sorted(spec.topics):
            topic = spec.topics[name]
            members = sorted(m for m, subs in spec.subscriptions.items() if name in subs)
            if not members:
                continue
            per, extra = divmod(topic.partitions, len(members))
            start = 0
            for i, m in enumerate(members):
                n = per + (1 if i < extra else 0)
                if n:
                    out[m][topic.topic_id] = set(range(start, start + n))
                start += n
        return out


class UniformAssignor:
    name = "uniform"

    def assign(self, spec: AssignmentSpec) -> dict[str, Assignment]:
        members = sorted(spec.subscriptions)
        if not members:
            return {}
        by_id = {t.topic_id: t for t in spec.topics.values()}
        eligible: dict[str, list[str]] = {
            name: [m for m in members if name in spec.subscriptions[m]] for name in spec.topics
        }
        # Every partition somebody subscribes to, in a stable order.
        wanted = [
            (spec.topics[name].topic_id, p)
            for name in sorted(spec.topics)
            if eligible[name]
            for p in range(spec.topics[name].partitions)
        ]
        owned: dict[str, list[tuple[uuid.UUID, int]]] = {m: [] for m in members}
        holder: dict[tuple[uuid.UUID, int], str] = {}
        # Stickiness: keep what the previous target gave, while it is still valid.
        for m in members:
            for topic_id, parts in sorted(spec.current.get(m, {}).items()):
                topic = by_id.get(topic_id)
                if topic is None or topic.name not in spec.subscriptions[m]:
                    continue
                for p in sorted(parts):
                    key = (topic_id, p)
                    if p < topic.partitions and key not in holder:
                        holder[key] = m
                        owned[m].append(key)
        # Members above their fair share give back their last partitions first.
        homogeneous = len({spec.subscriptions[m] for m in members}) == 1
        if homogeneous:
            total = len(wanted)
            base, extra = divmod(total, len(members))
            over = sorted(members, key=lambda m: (-len(owned[m]), m))
            quotas = {m: base + (1 if i < extra else 0) for i, m in enumerate(over)}
            for m in members:
                while len(owned[m]) > quotas[m]:
                    del holder[owned[m].pop()]
        # Whatever is free goes to the least loaded eligible member.
        for key in wanted:
            if key in holder:
                continue
            topic = by_id[key[0]]
            m = min(eligible[topic.name], key=lambda x: (len(owned[x]), x))
            holder[key] = m
            owned[m].append(key)
        if not homogeneous:
            _rebalance(owned, holder, by_id, eligible, len(wanted))
        out: dict[str, Assignment] = {m: {} for m in members}
        for m, keys in owned.items():
            for topic_id, p in keys:
                out[m].setdefault(topic_id, set()).add(p)
        return out


def _rebalance(
    owned: dict[str, list[tuple[uuid.UUID, int]]],
    holder: dict[tuple[uuid.UUID, int], str],
    by_id: Mapping[uuid.UUID, TopicSpec],
    eligible: Mapping[str, list[str]],
    rounds: int,
) -> None:
    """Move partitions from the most to the least loaded members that may take them."""
    for _ in range(rounds):
        moved = False
        for giver in sorted(owned, key=lambda m: (-len(owned[m]), m)):
            for key in reversed(owned[giver]):
                topic = by_id[key[0]]
                taker = min(eligible[topic.name], key=lambda x: (len(owned[x]), x))
                if len(owned[giver]) - len(owned[taker]) > 1:
                    owned[giver].remove(key)
                    owned[taker].append(key)
                    holder[key] = taker
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return


ASSIGNORS: dict[str, Assignor] = {a.name: a for a in (UniformAssignor(), RangeAssignor())}
