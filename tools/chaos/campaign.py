"""A fault campaign: real clients work against a cluster while a seeded schedule injects
faults, and every operation goes into a history for `kafkagen.chaos.checker`.

The clients are librdkafka's (confluent-kafka), each in a thread of its own:

- idempotent producers (acks=all) writing batches of unique values to ``<prefix>-in``;
- transactional consume-transform-produce workers reading ``<prefix>-in`` in one group
  (read_committed), writing one value per record read to ``<prefix>-out`` and committing
  the offsets in the transaction; about one transaction in ten is aborted on purpose and
  its records read again;
- consumers in groups (read_committed and read_uncommitted; the classic and the consumer
  group protocol taking turns) reading both topics and committing what they read.

When the time is up, the faults are healed and whole partitions are read once more at
both isolation levels (the ``final`` reads the checker holds acknowledged writes to).

Faults come from a `Faults` object: `ControlFaults` drives ``kafkagen serve
--control-port`` (stop and start a broker, move a leader, pause a broker, cut it off from
its peers, partition the cluster, slow a disk or a network, skew a clock); a reference
Kafka's processes can take signals instead (`ProcessFaults`).
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .history import History, Recorder

__all__ = ["SERVE_CONFIGS", "Campaign", "ControlFaults", "Faults", "ProcessFaults"]

#: Idle time a client waits for, so that every loop notices the end of the campaign.
TICK = 0.5
#: The limit of one blocking call of a transaction (Kafka's clients default to 60 s;
#: shorter, so that a stuck transaction shows within a short campaign).
TXN_CALL_S = 15.0
#: How long after the end clients have to finish what they are doing.
JOIN_S = 60.0
#: The limit of one call to the control API.
CONTROL_TIMEOUT_S = 60.0
#: The broker configs of a campaign's ``kafkagen serve``: a group starts at once, and a
#: broker cut off for a fault's few seconds leaves the ISR and is fenced (Kafka's 30 s
#: and 9 s would outlast every fault).
SERVE_CONFIGS = (
    "group.initial.rebalance.delay.ms=0",
    "replica.lag.time.max.ms=2000",
    "broker.session.timeout.ms=3000",
)


class Faults:
    """Faults a campaign can inject; each returns a description and a way to heal it."""

    def choices(self) -> list[Callable[[random.Random], tuple[str, Callable[[], None]]]]:
        raise NotImplementedError

    def heal_all(self) -> None:
        """Undo whatever may still be in force."""


class ControlFaults(Faults):
    """Faults through kafkagen's control API (``kafkagen serve --control-port``)."""

    def __init__(
        self,
        url: str,
        brokers: Iterable[int],
        topics: Iterable[str],
        partitions: int = 3,
        kinds: Iterable[str] | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.brokers = list(brokers)
        self.topics = list(topics)
        self.partitions = partitions
        #: The faults to choose from, by method name (None: every one).
        self.kinds = None if kinds is None else list(kinds)

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        # A loaded machine can hold a control call for seconds; a minute means it is gone.
        with urllib.request.urlopen(req, timeout=CONTROL_TIMEOUT_S) as r:
            return json.loads(r.read() or b"null")

    def choices(self) -> list[Callable[[random.Random], tuple[str, Callable[[], None]]]]:
        every = [
            self.stop_broker,
            self.move_leader,
            self.pause_broker,
            self.isolate_broker,
            self.partition_cluster,
            self.slow_broker,
            self.skew_clock,
        ]
        return [f for f in every if self.kinds is None or f.__name__ in self.kinds]

    def stop_broker(self, rnd: random.Random) -> tuple[str, Callable[[], None]]:
        b = rnd.choice(self.brokers)
        self._call("POST", f"/brokers/{b}/stop")
        return f"stop broker {b}", lambda: self._call("POST", f"/brokers/{b}/start")

    def move_leader(self, rnd: random.Random) -> tuple[str, Callable[[], None]]:
        topic, b = rnd.choice(self.topics), rnd.choice(self.brokers)
        part = rnd.randrange(self.partitions)
        try:
            self._call("POST", "/leader", {"topic": topic, "partition": part, "broker": b})
        except OSError:
            return f"move the leader of {topic}-{part} to {b}: refused", lambda: None
        return f"move the leader of {topic}-{part} to {b}", lambda: None

    def _heal(self) -> None:
        self._call("DELETE", "/faults")

    def pause_broker(self, rnd: random.Random) -> tuple[str, Callable[[], None]]:
        """Nothing reaches the broker, from clients or peers: a paused process."""
        b = rnd.choice(self.brokers)
        self._call("POST", "/faults/partition", {"brokers": [b], "clients": False})
        return f"pause broker {b}", self._heal

    def isolate_broker(self, rnd: random.Random) -> tuple[str, Callable[[], None]]:
        b = rnd.choice(self.brokers)
        self._call("POST", "/faults/partition", {"brokers": [b], "clients": True})
        return f"isolate broker {b} from its peers", self._heal

    def partition_cluster(self, rnd: random.Random) -> tuple[str, Callable[[], None]]:
        side = sorted(rnd.sample(self.brokers, rnd.randrange(1, len(self.brokers))))
        self._call("POST", "/faults/partition", {"brokers": side})
        rest = [b for b in self.brokers if b not in side]
        return f"partition brokers {side} from {rest}", self._heal

    def slow_broker(self, rnd: random.Random) -> tuple[str, Callable[[], None]]:
        b, ms, what = (
            rnd.choice(self.brokers),
            rnd.choice((50, 200, 1000)),
            rnd.choice(("disk", "network")),
        )
        self._call("POST", f"/faults/{what}", {"broker": b, "delay_ms": ms})
        return f"delay broker {b}'s {what} by {ms} ms", self._heal

    def skew_clock(self, rnd: random.Random) -> tuple[str, Callable[[], None]]:
        b, skew = rnd.choice(self.brokers), rnd.choice((-1, 1)) * rnd.choice((5, 60, 3600))
        self._call("POST", "/faults/clock", {"broker": b, "skew_ms": skew * 1000})
        return f"skew broker {b}'s clock by {skew:+d} s", self._heal

    def heal_all(self) -> None:
        self._call("POST", "/reset")


class ProcessFaults(Faults):
    """Faults a broker process can take from outside: SIGSTOP and SIGCONT, SIGKILL and a
    restart (``restart(i)`` starts node ``i`` again)."""

    def __init__(self, pids: Callable[[], list[int]], restart: Callable[[int], None]) -> None:
        self.pids = pids
        self.restart = restart

    def choices(self) -> list[Callable[[random.Random], tuple[str, Callable[[], None]]]]:
        return [self.pause_node, self.kill_node]

    def pause_node(self, rnd: random.Random) -> tuple[str, Callable[[], None]]:
        i = rnd.randrange(len(self.pids()))
        pid = self.pids()[i]
        os.kill(pid, signal.SIGSTOP)
        return f"SIGSTOP node {i}", lambda: os.kill(pid, signal.SIGCONT)

    def kill_node(self, rnd: random.Random) -> tuple[str, Callable[[], None]]:
        i = rnd.randrange(len(self.pids()))
        os.kill(self.pids()[i], signal.SIGKILL)
        return f"SIGKILL node {i}", lambda: self.restart(i)

    def heal_all(self) -> None:
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass


@dataclass
class Campaign:
    bootstrap: str
    duration: float = 60.0
    seed: int = 0
    prefix: str = "chaos"
    partitions: int = 3
    replication: int = 3
    producers: int = 2
    transactional: int = 2
    consumers: int = 2
    batch: int = 50
    #: Writes per second of each producer (None: as fast as acknowledgements come back).
    rate: float | None = None
    #: Seconds between one fault's end and the next one's start, and a fault's length.
    fault_every: tuple[float, float] = (3.0, 8.0)
    fault_length: tuple[float, float] = (2.0, 8.0)
    faults: Faults | None = None
    recorder: Recorder = field(default_factory=Recorder)
    faults_done: list[str] = field(default_factory=list)
    #: Clients that stopped on an exception: a campaign defect, not the broker's anomaly.
    errors: list[str] = field(default_factory=list)

    @property
    def topics(self) -> tuple[str, str]:
        return self.topic_names(self.prefix)

    @staticmethod
    def topic_names(prefix: str) -> tuple[str, str]:
        """The topic the producers write and the one the transactions write."""
        return (f"{prefix}-in", f"{prefix}-out")

    def run(self) -> History:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        new = [
            NewTopic(t, self.partitions, self.replication, config={"min.insync.replicas": "2"})
            for t in self.topics
        ]
        for f in admin.create_topics(new).values():
            f.result(30)
        self.start = time.monotonic()
        self.deadline = self.start + self.duration
        workers = [
            *(self._worker(self._producer, i) for i in range(self.producers)),
            *(self._worker(self._transformer, i) for i in range(self.transactional)),
            *(
                self._worker(self._consumer, i, isolation)
                for i in range(self.consumers)
                for isolation in ("read_committed", "read_uncommitted")
            ),
        ]
        for w in workers:
            w.start()
        try:
            self._nemesis()
        finally:
            if self.faults is not None:
                try:
                    self.faults.heal_all()
                except OSError as e:
                    self.errors.append(f"the faults could not be healed at the end: {e}")
            for w in workers:
                w.join(max(1.0, self.deadline + JOIN_S - time.monotonic()))
                if w.is_alive():
                    self.errors.append(f"{w.name} still running {JOIN_S:.0f} s after the end")
        for isolation in ("read_committed", "read_uncommitted"):
            self._final_read(isolation)
        return self.recorder.history()

    # ------------------------------------------------------------------ bookkeeping
    def _worker(self, target: Callable[..., None], *args: Any) -> threading.Thread:
        """A client's thread; an exception that ends it is kept in `errors` (its open
        operation stays unfinished, which the history reads as info)."""

        def guarded() -> None:
            try:
                target(*args)
            except Exception as e:  # noqa: BLE001 - reported with the campaign
                self.errors.append(f"{target.__name__.strip('_')} {args}: {e!r}")

        name = f"{target.__name__.strip('_')}-{args[0]}"
        return threading.Thread(target=guarded, name=name, daemon=True)

    def _now(self) -> float:
        return time.monotonic() - self.start

    def _op(
        self, process: str, type: str, f: str, value: dict[str, Any], at: float | None = None
    ) -> None:
        # Copies the lists: a transaction's value grows after its invocation is recorded.
        value = {k: list(v) if isinstance(v, list) else v for k, v in value.items()}
        self.recorder.add(process, type, f, self._now() if at is None else at, value)

    def _running(self) -> bool:
        return time.monotonic() < self.deadline

    def _nemesis(self) -> None:
        # Every kind of fault once, in a seeded order, before any comes again.
        rnd = random.Random(self.seed)
        bag: list[Callable[[random.Random], tuple[str, Callable[[], None]]]] = []
        while self._running():
            time.sleep(
                min(rnd.uniform(*self.fault_every), max(0.0, self.deadline - time.monotonic()))
            )
            if self.faults is None or not self._running():
                continue
            if not bag:
                bag = self.faults.choices()
                rnd.shuffle(bag)
            inject = bag.pop()
            self._op("nemesis", "invoke", "fault", {"fault": inject.__name__.replace("_", " ")})
            try:
                what, heal = inject(rnd)
            except OSError as e:  # the control call failed: recorded, and the run goes on
                self._op("nemesis", "fail", "fault", {"error": f"{inject.__name__}: {e}"})
                continue
            self._op("nemesis", "ok", "fault", {"fault": what})
            self.faults_done.append(what)
            time.sleep(rnd.uniform(*self.fault_length))
            self._op("nemesis", "invoke", "fault", {"fault": "heal: " + what})
            try:
                heal()
            except OSError as e:  # whatever is still in force, heal_all undoes at the end
                self._op("nemesis", "fail", "fault", {"fault": "heal: " + what, "error": str(e)})
                continue
            self._op("nemesis", "ok", "fault", {"fault": "heal: " + what})

    # ------------------------------------------------------------------ clients
    def _producer(self, i: int) -> None:
        from confluent_kafka import Producer

        name = f"producer-{i}"
        rnd = random.Random(f"{self.seed}-{name}")
        p = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 30000,
            }
        )
        topic, n = self.topics[0], 0
        acked, delivered = _acknowledgements()
        while self._running():
            writes = []
            for _ in range(self.batch):
                writes.append([topic, rnd.randrange(self.partitions), f"{name}:{n}", None])
                n += 1
            self._op(name, "invoke", "send", {"writes": writes, "idempotent": True})
            for t, part, value, _ in writes:
                p.produce(t, value.encode(), partition=part, on_delivery=delivered)
            p.flush(40)
            done = [[t, part, v, acked.get(v)] for t, part, v, _ in writes]
            self._op(name, "ok", "send", {"writes": done, "idempotent": True})
            if self.rate:
                ahead = self.start + n / self.rate - time.monotonic()
                time.sleep(max(0.0, min(ahead, self.deadline - time.monotonic())))

    def _consumer_config(self, group: str, isolation: str, protocol: str) -> dict[str, Any]:
        config = {
            "bootstrap.servers": self.bootstrap,
            "group.id": group,
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "group.protocol": protocol,
        }
        if protocol == "classic":
            config["session.timeout.ms"] = 10000
        return config

    def _transformer(self, i: int) -> None:
        from confluent_kafka import Consumer, Producer, TopicPartition

        name, group = f"transformer-{i}", f"{self.prefix}-ctp"
        events = _Rebalances(self, name, group)
        c = Consumer(self._consumer_config(group, "read_committed", "consumer"))
        c.subscribe(
            [self.topics[0]], on_assign=events.assign, on_revoke=events.revoke, on_lost=events.lose
        )

        def producer() -> Any:
            p = Producer(
                {
                    "bootstrap.servers": self.bootstrap,
                    "transactional.id": f"{self.prefix}-tx-{i}",
                    "transaction.timeout.ms": 30000,
                }
            )
            p.init_transactions(60)
            return p

        p = producer()
        rnd, n = random.Random(f"{self.seed}-{name}"), 0
        acked, delivered = _acknowledgements()
        try:
            while self._running():
                before = _positions(c, events.owned)
                t0 = self._now()
                msgs = [m for m in c.consume(self.batch, TICK) if m.error() is None]
                before = events.settle(before)
                if not msgs:
                    continue
                reads = _reads(msgs, before)
                out = self.topics[1]
                writes = [[out, m.partition(), f"{name}:{n + k}", None] for k, m in enumerate(msgs)]
                n += len(msgs)
                offsets = [TopicPartition(t, part, to) for t, part, _, to, _ in reads]
                value = {
                    "reads": reads,
                    "writes": writes,
                    "group": group,
                    "offsets": [[o.topic, o.partition, o.offset] for o in offsets],
                }
                self._op(name, "invoke", "txn", value, at=t0)
                outcome, error = _transaction(
                    p, writes, offsets, c.consumer_group_metadata(), rnd.random() < 0.1, delivered
                )
                if outcome == "ok":
                    value["writes"] = [[t, part, v, acked.get(v)] for t, part, v, _ in writes]
                self._op(name, outcome, "txn", {**value, "error": error} if error else value)
                if outcome != "ok":
                    _rewind(c, reads)
                if outcome == "info":
                    # The producer's state is unknown: a new one with the same id fences it.
                    p = producer()
        finally:
            events.close()
            c.close()

    def _consumer(self, i: int, isolation: str) -> None:
        from confluent_kafka import Consumer, KafkaException

        name = f"{isolation.split('_')[1]}-{i}"
        group = f"{self.prefix}-{isolation}"
        events = _Rebalances(self, name, group)
        # One protocol per group: read_committed readers use the consumer group protocol,
        # read_uncommitted ones the classic protocol.
        protocol = "consumer" if isolation == "read_committed" else "classic"
        c = Consumer(self._consumer_config(group, isolation, protocol))
        c.subscribe(
            list(self.topics), on_assign=events.assign, on_revoke=events.revoke, on_lost=events.lose
        )
        polls = 0
        try:
            while self._running():
                before = _positions(c, events.owned)
                t0 = self._now()
                msgs = [m for m in c.consume(500, TICK) if m.error() is None]
                before = events.settle(before)
                if msgs:
                    reads = _reads(msgs, before)
                    self._op(name, "invoke", "poll", {"group": group, "isolation": isolation}, t0)
                    self._op(
                        name, "ok", "poll", {"group": group, "isolation": isolation, "reads": reads}
                    )
                    polls += 1
                if polls == 10:
                    polls = 0
                    self._op(name, "invoke", "commit", {"group": group})
                    try:
                        done = c.commit(asynchronous=False)
                    except KafkaException as e:
                        self._op(name, "info", "commit", {"group": group, "error": str(e)})
                        continue
                    offsets = [
                        [t.topic, t.partition, t.offset] for t in done or () if t.offset >= 0
                    ]
                    self._op(name, "ok", "commit", {"group": group, "offsets": offsets})
        finally:
            events.close()
            c.close()

    def _final_read(self, isolation: str) -> None:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"{self.prefix}-final-{isolation}",
                "isolation.level": isolation,
                "enable.auto.commit": False,
            }
        )
        name = f"final-{isolation}"
        self._op(name, "invoke", "final", {"isolation": isolation})
        reads = []
        for topic in self.topics:
            for part in range(self.partitions):
                low, high = c.get_watermark_offsets(TopicPartition(topic, part), 30)
                c.assign([TopicPartition(topic, part, low)])
                records, position, idle = [], low, 0
                give_up = time.monotonic() + 60
                # Until the end, or nothing more for a while (read_committed stops at the
                # last stable offset, and a trailing commit marker is never returned).
                while position < high and idle < 4 and time.monotonic() < give_up:
                    got = [m for m in c.consume(1000, TICK) if m.error() is None]
                    records += [[m.offset(), m.value().decode()] for m in got]
                    idle = 0 if got else idle + 1
                    position = _positions(c, {(topic, part)}).get((topic, part), position)
                reads.append([topic, part, low, max(low, position), records])
        c.close()
        self._op(name, "ok", "final", {"isolation": isolation, "reads": reads})


class _Rebalances:
    """Assignments seen in a consumer's callbacks, recorded once its poll returns (the
    callbacks run inside the poll, and a process does one operation at a time)."""

    def __init__(self, campaign: Campaign, process: str, group: str) -> None:
        self.campaign = campaign
        self.process = process
        self.group = group
        self.events: list[tuple[str, float, list[list[Any]]]] = []
        self.owned: set[tuple[str, int]] = set()

    def assign(self, consumer: Any, partitions: list[Any]) -> None:
        tps = [[p.topic, p.partition] for p in partitions]
        self.owned |= {(t, p) for t, p in tps}
        self.events.append(("assign", self.campaign._now(), tps))

    def revoke(self, consumer: Any, partitions: list[Any]) -> None:
        self._give_up("revoke", partitions)

    def lose(self, consumer: Any, partitions: list[Any]) -> None:
        """The group fenced this member: it learns only now that others own them."""
        self._give_up("lost", partitions)

    def _give_up(self, kind: str, partitions: list[Any]) -> None:
        tps = [[p.topic, p.partition] for p in partitions]
        self.owned -= {(t, p) for t, p in tps}
        self.events.append((kind, self.campaign._now(), tps))

    def settle(self, before: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """Record what the last poll's callbacks saw; the positions from before it, less
        those of partitions whose assignment changed meanwhile."""
        touched = {(t, p) for _, _, tps in self.events for t, p in tps}
        self.record()
        return {tp: pos for tp, pos in before.items() if tp not in touched}

    def record(self) -> None:
        for kind, at, tps in self.events:
            value = {"group": self.group, "partitions": tps}
            self.campaign._op(self.process, "invoke", kind, value, at)
            self.campaign._op(self.process, "ok", kind, value, at)
        self.events.clear()

    def close(self) -> None:
        """Closing gives up what is still owned; recorded before the close starts."""
        if self.owned:
            tps = [[t, p] for t, p in sorted(self.owned)]
            self.events.append(("revoke", self.campaign._now(), tps))
            self.owned.clear()
        self.record()


class _Hung(Exception):
    """A client call that did not return within its limit plus a margin."""


def _bounded(call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)``, in a thread of its own so that a call that never returns cannot
    stop the campaign: librdkafka 2.16's send_offsets_to_transaction can wait forever, past
    its own timeout, when the group coordinator left the cluster's metadata (its issue
    5511). Such a call is abandoned with its producer."""
    box: list[Any] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            box.append(call(*args))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            failure.append(e)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(TXN_CALL_S + 10)
    if t.is_alive():
        raise _Hung(f"{getattr(call, '__name__', call)} did not return in {TXN_CALL_S + 10:.0f} s")
    if failure:
        raise failure[0]
    return box[0] if box else None


def _transaction(
    p: Any,
    writes: list[list[Any]],
    offsets: list[Any],
    group_metadata: Any,
    abort: bool,
    delivered: Callable[[Any, Any], None],
) -> tuple[str, str]:
    """Run one transaction; its outcome as the history says it (ok, fail or info), and
    the error that decided it."""
    from confluent_kafka import KafkaException

    try:
        p.begin_transaction()
        for t, part, v, _ in writes:
            p.produce(t, v.encode(), partition=part, on_delivery=delivered)
        _bounded(p.send_offsets_to_transaction, offsets, group_metadata, TXN_CALL_S)
        if abort:
            _bounded(p.abort_transaction, TXN_CALL_S)
            return "fail", ""
        for _ in range(3):
            try:
                _bounded(p.commit_transaction, TXN_CALL_S)
                return "ok", ""
            except KafkaException as e:
                if not e.args[0].retriable():
                    raise
        return "info", "the commit was still retriable after 3 tries"
    except _Hung as e:
        return "info", f"hung: {e}"
    except KafkaException as e:
        error = e.args[0]
        if not error.txn_requires_abort():
            return "info", str(error)
        try:
            _bounded(p.abort_transaction, TXN_CALL_S)
        except (KafkaException, _Hung) as again:
            return "info", f"{error}; the abort: {again}"
        return "fail", str(error)


def _acknowledgements() -> tuple[dict[str, int], Callable[[Any, Any], None]]:
    """Offsets by value, and the delivery callback that fills them in (also for a write
    acknowledged after the operation that sent it ended)."""
    acked: dict[str, int] = {}

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            acked[msg.value().decode()] = msg.offset()

    return acked, delivered


def _positions(consumer: Any, owned: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The consumer's position in each partition it owns, where it has one. What it owns
    comes from its rebalance callbacks, not from ``assignment()``: confluent-kafka holds
    the interpreter lock through that call while it waits on librdkafka's own thread, so
    when that thread stalls every thread of the process stops (seen in a campaign against
    Kafka after a SIGKILL)."""
    from confluent_kafka import TopicPartition

    out = {}
    for tp in consumer.position([TopicPartition(t, p) for t, p in owned]):
        if tp.offset >= 0:
            out[(tp.topic, tp.partition)] = tp.offset
    return out


def _reads(msgs: list[Any], before: dict[tuple[str, int], int]) -> list[list[Any]]:
    """One pass per partition: from the position before the poll (or the first record,
    when the consumer had none) to just past the last record returned."""
    by_tp: dict[tuple[str, int], list[list[Any]]] = {}
    for m in msgs:
        by_tp.setdefault((m.topic(), m.partition()), []).append([m.offset(), m.value().decode()])
    return [
        [t, p, before.get((t, p), records[0][0]), records[-1][0] + 1, records]
        for (t, p), records in by_tp.items()
    ]


def _rewind(consumer: Any, reads: list[list[Any]]) -> None:
    """After an abort, read the transaction's input again."""
    from confluent_kafka import TopicPartition

    for t, p, start, _, _ in reads:
        try:
            consumer.seek(TopicPartition(t, p, start))
        except Exception:  # noqa: BLE001 - the partition moved away: its new owner reads it
            pass
