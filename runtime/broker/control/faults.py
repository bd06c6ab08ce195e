"""Faults a kafkagen cluster takes inside its one process: cut networks, slow disks and
networks, skewed clocks, and the controller fencing what it cannot hear from.

The brokers share a process, so their "network" between each other is a set of calls:
a follower's fetch from its leader (`ReplicaFetcher`) and a leader's ISR change sent to
the controller (Kafka's AlterPartition, `ClusterMetadata.set_isr`). `Faults` says which
of those calls get through (`peer_delay`, `reaches_controller`) and how late, and the
control interceptor asks it whether a client's request reaches a broker and how late.

Each broker sits on one side of the cluster's network (all on side 0 when healed); brokers
on different sides cannot reach each other. kafkagen's controller is in process, so it
stands for a KRaft quorum whose voters are the brokers themselves (Kafka's combined
mode): the side holding a strict majority of the brokers keeps the metadata authority.
A broker on any other side cannot change an ISR, and after ``broker.session.timeout.ms``
without reaching the controller it is fenced: its leaderships move to in-sync replicas
that the controller still hears from, as `ClusterMetadata.broker_down` does for a stopped
broker. With no side holding a majority, nobody reaches the controller: no ISR changes
and no fencing until the network heals.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable
from typing import Any

from ..metadata.cluster_metadata import ClusterMetadata
from ..metadata.image import MetadataImage

__all__ = ["Faults"]

#: The APIs whose work is a disk's: a slow disk delays them (appends and reads).
DISK_APIS = frozenset({0, 1})  # Produce, Fetch


class Faults:
    """The in-process faults in force; everything runs on the brokers' event loop."""

    def __init__(
        self,
        metadata: ClusterMetadata,
        serving: Callable[[int], bool],
        catch_up: Callable[[int, MetadataImage], None],
    ) -> None:
        self._metadata = metadata
        self._serving = serving
        #: Gives a broker back in reach of the controller the image as it is now.
        self._catch_up = catch_up
        #: Broker id -> the side of the network it is on.
        self.sides: dict[int, int] = {}
        self._next_side = itertools.count(1)
        #: Brokers no client request reaches until the heal.
        self.unreachable: set[int] = set()
        #: Requests sent to an unreachable broker, run at the heal in the order they came:
        #: on a live connection TCP delivers them late, it does not lose them.
        self._undelivered: list[Callable[[], None]] = []
        self.disk_delay_ms: dict[int, int] = {}
        self.network_delay_ms: dict[int, int] = {}
        self.clock_skew_ms: dict[int, int] = {}
        #: Brokers the controller fenced because it could not hear from them.
        self.fenced: set[int] = set()
        self._fencing: dict[int, asyncio.TimerHandle] = {}

    # -- what the brokers ask -------------------------------------------------------------

    def reaches(self, a: int, b: int) -> bool:
        return self.sides.get(a, 0) == self.sides.get(b, 0)

    def controller_side(self) -> list[int]:
        """The brokers on the side holding a strict majority of them (every broker when
        nothing is cut; none when no side holds a majority)."""
        brokers = sorted(self._metadata.brokers)
        by_side: dict[int, list[int]] = {}
        for b in brokers:
            by_side.setdefault(self.sides.get(b, 0), []).append(b)
        return next((side for side in by_side.values() if 2 * len(side) > len(brokers)), [])

    def reaches_controller(self, node_id: int) -> bool:
        return not self.sides or node_id in self.controller_side()

    def peer_delay(self, follower: int, leader: int) -> float | None:
        """Seconds a follower's fetch from its leader takes beyond its own wait (both
        brokers' networks, the leader's disk reading, the follower's disk appending), or
        None when the two cannot reach each other."""
        if not self.reaches(follower, leader):
            return None
        ms = self.network_delay_ms.get(follower, 0) + self.network_delay_ms.get(leader, 0)
        ms += self.disk_delay_ms.get(follower, 0) + self.disk_delay_ms.get(leader, 0)
        return ms / 1000

    def client_delay_ms(self, node_id: int, api_key: int) -> int | None:
        """How late a client's request to the broker runs; None: not before the heal
        (`deliver_at_heal`)."""
        if node_id in self.unreachable:
            return None
        ms = self.network_delay_ms.get(node_id, 0)
        if api_key in DISK_APIS:
            ms += self.disk_delay_ms.get(node_id, 0)
        return ms

    def deliver_at_heal(self, run: Callable[[], None]) -> None:
        self._undelivered.append(run)

    def clock_offset_ms(self, node_id: int) -> int:
        return self.clock_skew_ms.get(node_id, 0)

    # -- injecting --------------------------------------------------------------------

    def cut(self, brokers: Iterable[int], *, clients: bool = True) -> None:
        """Cut ``brokers`` off from every other broker (a network partition; one broker:
        its isolation). ``clients=False``: no client reaches them either, until the heal."""
        side = sorted(set(brokers))
        self._check(side)
        if not side:
            raise ValueError("name at least one broker to cut off")
        if len(side) == len(self._metadata.brokers):
            raise ValueError("a partition needs brokers on both sides")
        label = next(self._next_side)
        for b in side:
            self.sides[b] = label
        if not clients:
            self.unreachable.update(side)
        self._follow_the_controller()
        self._fence_the_unheard()

    def slow_disk(self, node_id: int, delay_ms: int) -> None:
        self._check([node_id])
        self.disk_delay_ms[node_id] = _non_negative(delay_ms, "a disk delay")

    def slow_network(self, node_id: int, delay_ms: int) -> None:
        self._check([node_id])
        self.network_delay_ms[node_id] = _non_negative(delay_ms, "a network delay")

    def skew_clock(self, node_id: int, skew_ms: int) -> None:
        self._check([node_id])
        self.clock_skew_ms[node_id] = int(skew_ms)

    def heal(self) -> None:
        """Remove every fault; fenced brokers that serve register again (and those
        started while cut off register at last)."""
        self.sides.clear()
        self.unreachable.clear()
        self.disk_delay_ms.clear()
        self.network_delay_ms.clear()
        self.clock_skew_ms.clear()
        for handle in self._fencing.values():
            handle.cancel()
        self._fencing.clear()
        self.fenced.clear()
        self._follow_the_controller()
        for b in sorted(self._metadata.brokers):
            if self._serving(b):
                self._metadata.broker_up(b)
        undelivered, self._undelivered = self._undelivered, []
        for run in undelivered:
            run()

    def to_json(self) -> dict[str, Any]:
        by_side: dict[int, list[int]] = {}
        for b in sorted(self._metadata.brokers):
            by_side.setdefault(self.sides.get(b, 0), []).append(b)
        return {
            "sides": list(by_side.values()),
            "controller_side": self.controller_side(),
            "unreachable_by_clients": sorted(self.unreachable),
            "fenced": sorted(self.fenced),
            "disk_delay_ms": _keyed(self.disk_delay_ms),
            "network_delay_ms": _keyed(self.network_delay_ms),
            "clock_skew_ms": _keyed(self.clock_skew_ms),
        }

    # -- the controller's side ----------------------------------------------------------

    def _follow_the_controller(self) -> None:
        """A broker that lost the controller keeps the image it has (Kafka's broker
        fetches the metadata log from the controller quorum); one that reaches it again
        catches up with every change it missed, before anything else happens."""
        md = self._metadata
        for b in sorted(md.brokers):
            if not self.reaches_controller(b):
                md.keep_stale_image(b)
            elif b in md.stale_images:
                self._catch_up(b, md.stale_images.pop(b))

    def _fence_the_unheard(self) -> None:
        timeout_s = self._metadata.configs.broker_int("broker.session.timeout.ms") / 1000
        loop = asyncio.get_running_loop()
        for b in self._metadata.brokers:
            if self.reaches_controller(b) or b in self.fenced or b in self._fencing:
                continue
            self._fencing[b] = loop.call_later(timeout_s, self._fence, b)

    def _fence(self, node_id: int) -> None:
        self._fencing.pop(node_id, None)
        # Only a controller with its quorum fences, and only brokers it cannot hear.
        if self.reaches_controller(node_id) or not self.controller_side():
            return
        self.fenced.add(node_id)
        self._metadata.broker_down(node_id)

    def _check(self, brokers: Iterable[int]) -> None:
        unknown = [b for b in brokers if b not in self._metadata.brokers]
        if unknown:
            raise ValueError(f"there is no broker {unknown[0]}")


def _non_negative(ms: int, what: str) -> int:
    if ms < 0:
        raise ValueError(f"{what} cannot be negative ({ms} ms)")
    return int(ms)


def _keyed(by_broker: dict[int, int]) -> dict[str, int]:
    return {str(b): v for b, v in sorted(by_broker.items())}
