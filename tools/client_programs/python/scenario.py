"""The client scenario with the Python clients: confluent-kafka (librdkafka), kafka-python
and aiokafka.

Create a topic, produce with acks=all from an idempotent producer, consume in a group of
three members (threads) that commit after every poll while one member leaves half-way,
then list and describe the group and the topic. Prints one JSON object on stdout, the same
shape as the Java, Go and Node programs; the test decides what is right.

    python scenario.py confluent|kafka-python|aiokafka BOOTSTRAP TOPIC N
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

DEADLINE_S = 90.0


class Scenario:
    """What the members saw, from any thread."""

    def __init__(self, client: str, version: str, topic: str) -> None:
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self.assignment: dict[int, set[int]] = {}
        self.summary: dict[str, Any] = {
            "client": client,
            "version": version,
            "protocol": "classic",
            "topic": topic,
            "group": f"{topic}-group",
            "produced": [],
            "aborted": [],
            "consumed": [],
            "assignments": 0,
            "group_description": {},
            "committed": {},
            "topics": {},
            "errors": [],
            "timings_ms": {},
        }

    def mark(self, what: str) -> None:
        self.summary["timings_ms"][what] = int((time.monotonic() - self.started) * 1000)

    def consumed(self, member: int, partition: int, offset: int, key: bytes) -> None:
        with self.lock:
            self.summary["consumed"].append([member, partition, offset, key.decode()])

    def assigned(self, member: int, parts: set[int]) -> None:
        with self.lock:
            self.assignment.setdefault(member, set()).update(parts)
            self.summary["assignments"] += 1

    def revoked(self, member: int, parts: set[int]) -> None:
        with self.lock:
            self.assignment.get(member, set()).difference_update(parts)

    def left(self, member: int) -> None:
        with self.lock:
            self.assignment.pop(member, None)

    def error(self, what: str) -> None:
        with self.lock:
            self.summary["errors"].append(what)

    def described(
        self,
        groups: list[str],
        state: str,
        group_type: str,
        members: int,
        topics: list[str],
        partitions: list[tuple[int, int, int, int]],
    ) -> None:
        """Record the listings and descriptions; partitions as (id, leader, replicas, isr)."""
        self.summary["group_description"] = {
            "listed": groups,
            "state": state,
            "type": group_type,
            "members": members,
        }
        self.summary["topics"] = {
            "listed": topics,
            "partitions": [
                {"partition": p, "leader": leader, "replicas": replicas, "isr": isr}
                for p, leader, replicas, isr in partitions
            ],
        }

    def count(self) -> int:
        with self.lock:
            return len(self.summary["consumed"])

    def shared(self, members: int) -> bool:
        with self.lock:
            parts = sorted(p for ps in self.assignment.values() for p in ps)
            return (
                len(self.assignment) == members
                and all(self.assignment.values())
                and parts == [0, 1, 2]
            )


def wait(what: str, cond: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.02)


def listener(base: type, s: Scenario, index: int) -> Any:
    """A rebalance listener of kafka-python's or aiokafka's ``base`` class recording into ``s``."""

    class Listener(base):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            s.revoked(index, {tp.partition for tp in revoked})

        def on_partitions_assigned(self, assigned: Any) -> None:
            s.assigned(index, {tp.partition for tp in assigned})

    return Listener()


def member_options(bootstrap: str, s: Scenario, index: int) -> dict[str, Any]:
    """kafka-python's and aiokafka's consumer settings for member ``index``."""
    return {
        "bootstrap_servers": bootstrap,
        "group_id": s.summary["group"],
        "client_id": f"member-{index}",
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "session_timeout_ms": 10000,
        "heartbeat_interval_ms": 500,
    }


class Member:
    """A consumer thread: poll, record, commit synchronously, until stopped."""

    def __init__(self, s: Scenario, index: int, make: Callable[[Scenario, int], Any]) -> None:
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self.run, args=(s, index, make), daemon=True)
        self.thread.start()

    def run(self, s: Scenario, index: int, make: Callable[[Scenario, int], Any]) -> None:
        try:
            consumer = make(s, index)
            try:
                while not self.stop_flag.is_set():
                    consumer.poll_once()
            finally:
                consumer.close()
        except Exception as e:  # reported in the summary; the test fails on it
            s.error(f"member {index}: {e!r}")
        s.left(index)

    def stop(self) -> None:
        self.stop_flag.set()
        self.thread.join(DEADLINE_S)


# ------------------------------------------------------------------ confluent-kafka


class Confluent:
    def __init__(self, bootstrap: str) -> None:
        import confluent_kafka
        from confluent_kafka.admin import AdminClient

        self.ck = confluent_kafka
        self.bootstrap = bootstrap
        self.version = f"{confluent_kafka.version()} (librdkafka {confluent_kafka.libversion()[0]})"
        self.admin = AdminClient({"bootstrap.servers": bootstrap})

    def create_topic(self, topic: str) -> None:
        from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

        self.admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)

    def producer(self) -> Callable[[str, list[str]], list[tuple[int, int]]]:
        p = self.ck.Producer(
            {"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "acks": "all"}
        )

        def produce(topic: str, keys: list[str]) -> list[tuple[int, int]]:
            at: list[tuple[int, int]] = [(-1, -1)] * len(keys)
            errors: list[Any] = []

            def report(i: int) -> Callable[[Any, Any], None]:
                def done(err: Any, m: Any) -> None:
                    if err is not None:
                        errors.append(err)
                    else:
                        at[i] = (m.partition(), m.offset())

                return done

            for i, key in enumerate(keys):
                p.produce(topic, f"value-{key}".encode(), key.encode(), on_delivery=report(i))
                p.poll(0)
            if p.flush(DEADLINE_S) != 0 or errors:
                raise RuntimeError(f"produce failed: {errors[:3]}")
            return at

        return produce

    def member(self, s: Scenario, index: int) -> Any:
        ck = self.ck
        c = ck.Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": s.summary["group"],
                "client.id": f"member-{index}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 500,
            }
        )
        joined: list[bool] = []

        def on_assign(_c: Any, ps: Any) -> None:
            joined.append(True)
            s.assigned(index, {p.partition for p in ps})

        c.subscribe(
            [s.summary["topic"]],
            on_assign=on_assign,
            on_revoke=lambda _c, ps: s.revoked(index, {p.partition for p in ps}),
        )
        # A broker may not know a topic created a moment ago (its metadata lags the
        # controller's); librdkafka reports that and asks again, so it is no error
        # before the member's first assignment.
        early = (ck.KafkaError._PARTITION_EOF, ck.KafkaError.UNKNOWN_TOPIC_OR_PART)

        class Polling:
            def poll_once(self) -> None:
                msgs = c.consume(100, 0.1)
                good = [m for m in msgs if m.error() is None]
                for m in msgs:
                    err = m.error()
                    if err is None or err.code() == ck.KafkaError._PARTITION_EOF:
                        continue
                    if not joined and err.code() in early:
                        continue
                    s.error(f"member {index}: {err}")
                for m in good:
                    s.consumed(index, m.partition(), m.offset(), m.key())
                if good:
                    c.commit(asynchronous=False)

            def close(self) -> None:
                c.close()

        return Polling()

    def describe(self, s: Scenario) -> None:
        from confluent_kafka import TopicCollection

        group, topic = s.summary["group"], s.summary["topic"]
        listed = self.admin.list_consumer_groups().result(30).valid
        d = self.admin.describe_consumer_groups([group])[group].result(30)
        t = self.admin.describe_topics(TopicCollection([topic]))[topic].result(30)
        s.described(
            [g.group_id for g in listed],
            d.state.name,
            d.type.name,
            len(d.members),
            list(self.admin.list_topics(timeout=30).topics),
            [(p.id, p.leader.id, len(p.replicas), len(p.isr)) for p in t.partitions],
        )

    def committed(self, s: Scenario) -> dict[str, int]:
        from confluent_kafka import ConsumerGroupTopicPartitions

        spec = ConsumerGroupTopicPartitions(s.summary["group"])
        got = self.admin.list_consumer_group_offsets([spec])[s.summary["group"]].result(30)
        return {str(tp.partition): tp.offset for tp in got.topic_partitions}

    def close(self) -> None:
        pass


# ------------------------------------------------------------------ kafka-python


class KafkaPython:
    def __init__(self, bootstrap: str) -> None:
        import kafka  # type: ignore[import-untyped]
        from kafka import KafkaAdminClient

        self.kafka = kafka
        self.bootstrap = bootstrap
        self.version = kafka.__version__
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        self.closing: Any = None

    def create_topic(self, topic: str) -> None:
        from kafka.admin import NewTopic  # type: ignore[import-untyped]

        self.admin.create_topics([NewTopic(topic, 3, 3)], wait_for_metadata=True)

    def producer(self) -> Callable[[str, list[str]], list[tuple[int, int]]]:
        # kafka-python's producer is idempotent by default.
        p = self.kafka.KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=5)
        self.closing = p

        def produce(topic: str, keys: list[str]) -> list[tuple[int, int]]:
            futures = [p.send(topic, key=k.encode(), value=f"value-{k}".encode()) for k in keys]
            p.flush(DEADLINE_S)
            mds = [f.get(30) for f in futures]
            return [(md.partition, md.offset) for md in mds]

        return produce

    def member(self, s: Scenario, index: int) -> Any:
        from kafka import ConsumerRebalanceListener

        c = self.kafka.KafkaConsumer(
            **member_options(self.bootstrap, s, index), max_poll_records=100
        )
        c.subscribe([s.summary["topic"]], listener=listener(ConsumerRebalanceListener, s, index))

        class Polling:
            def poll_once(self) -> None:
                # A long poll: see test_broker_clients.py on kafka-python's SyncGroup.
                batch = c.poll(1000)
                for tp, records in batch.items():
                    for r in records:
                        s.consumed(index, tp.partition, r.offset, r.key)
                if batch:
                    c.commit()

            def close(self) -> None:
                c.close()

        return Polling()

    def describe(self, s: Scenario) -> None:
        group, topic = s.summary["group"], s.summary["topic"]
        listed = self.admin.list_groups()
        d = self.admin.describe_groups([group])[group]
        (t,) = self.admin.describe_topics([topic])
        s.described(
            [g["group_id"] for g in listed],
            d["group_state"],
            d["protocol_type"],
            len(d["members"]),
            self.admin.list_topics(),
            [
                (p["partition_index"], p["leader_id"], len(p["replica_nodes"]), len(p["isr_nodes"]))
                for p in t["partitions"]
            ],
        )

    def committed(self, s: Scenario) -> dict[str, int]:
        got = self.admin.list_group_offsets({s.summary["group"]: None})[s.summary["group"]]
        return {str(tp.partition): om.offset for tp, om in got.items()}

    def close(self) -> None:
        if self.closing is not None:
            self.closing.close(10)
        self.admin.close()


# ------------------------------------------------------------------ aiokafka


def created(loop: asyncio.AbstractEventLoop, factory: Callable[[], Any]) -> Any:
    """``factory()`` called inside ``loop``: aiokafka's clients bind to the running loop."""

    async def make() -> Any:
        return factory()

    return loop.run_until_complete(make())


class AioKafka:
    """aiokafka is asynchronous: the admin and producer share one event loop in the main
    thread, and each member runs its own loop in its thread."""

    def __init__(self, bootstrap: str) -> None:
        import aiokafka  # type: ignore[import-untyped]
        from aiokafka.admin import AIOKafkaAdminClient  # type: ignore[import-untyped]

        self.aiokafka = aiokafka
        self.bootstrap = bootstrap
        self.version = aiokafka.__version__
        self.loop = asyncio.new_event_loop()
        self.admin = created(self.loop, lambda: AIOKafkaAdminClient(bootstrap_servers=bootstrap))
        self.loop.run_until_complete(self.admin.start())
        self.closing: Any = None

    def create_topic(self, topic: str) -> None:
        from aiokafka.admin import NewTopic

        self.loop.run_until_complete(self.admin.create_topics([NewTopic(topic, 3, 3)]))

    def producer(self) -> Callable[[str, list[str]], list[tuple[int, int]]]:
        p = created(
            self.loop,
            lambda: self.aiokafka.AIOKafkaProducer(
                bootstrap_servers=self.bootstrap, acks="all", enable_idempotence=True
            ),
        )
        self.loop.run_until_complete(p.start())
        self.closing = p

        async def send(topic: str, keys: list[str]) -> list[tuple[int, int]]:
            futures = [
                await p.send(topic, key=k.encode(), value=f"value-{k}".encode()) for k in keys
            ]
            mds = [await f for f in futures]
            return [(md.partition, md.offset) for md in mds]

        return lambda topic, keys: self.loop.run_until_complete(send(topic, keys))

    def member(self, s: Scenario, index: int) -> Any:
        from aiokafka import ConsumerRebalanceListener

        loop = asyncio.new_event_loop()
        c = created(
            loop,
            lambda: self.aiokafka.AIOKafkaConsumer(**member_options(self.bootstrap, s, index)),
        )
        c.subscribe([s.summary["topic"]], listener=listener(ConsumerRebalanceListener, s, index))
        loop.run_until_complete(c.start())

        async def poll() -> None:
            batch = await c.getmany(timeout_ms=100, max_records=100)
            for tp, records in batch.items():
                for r in records:
                    s.consumed(index, tp.partition, r.offset, r.key)
            if batch:
                await c.commit()

        class Polling:
            def poll_once(self) -> None:
                loop.run_until_complete(poll())

            def close(self) -> None:
                loop.run_until_complete(c.stop())
                loop.close()

        return Polling()

    def describe(self, s: Scenario) -> None:
        group, topic = s.summary["group"], s.summary["topic"]
        run = self.loop.run_until_complete
        listed = run(self.admin.list_consumer_groups())
        (response,) = run(self.admin.describe_consumer_groups([group]))
        (d,) = response.to_object()["groups"]
        (t,) = run(self.admin.describe_topics([topic]))
        s.described(
            [g[0] for g in listed],
            d["state"],
            d["protocol_type"],
            len(d["members"]),
            run(self.admin.list_topics()),
            [
                (p["partition"], p["leader"], len(p["replicas"]), len(p["isr"]))
                for p in t["partitions"]
            ],
        )

    def committed(self, s: Scenario) -> dict[str, int]:
        got = self.loop.run_until_complete(
            self.admin.list_consumer_group_offsets(s.summary["group"])
        )
        return {str(tp.partition): om.offset for tp, om in got.items()}

    def close(self) -> None:
        if self.closing is not None:
            self.loop.run_until_complete(self.closing.stop())
        self.loop.run_until_complete(self.admin.close())
        self.loop.close()


CLIENTS: dict[str, Callable[[str], Any]] = {
    "confluent": Confluent,
    "kafka-python": KafkaPython,
    "aiokafka": AioKafka,
}


def run(client: Any, s: Scenario, n: int) -> None:
    topic = s.summary["topic"]
    client.create_topic(topic)
    s.mark("topic_created")
    produce = client.producer()
    members = [Member(s, i, client.member) for i in range(3)]
    try:

        def send(start: int, stop: int) -> None:
            keys = [f"key-{i}" for i in range(start, stop)]
            for (p, o), k in zip(produce(topic, keys), keys, strict=True):
                s.summary["produced"].append([p, o, k])

        wait("three members sharing the partitions", lambda: s.shared(3))
        s.mark("group_of_three")
        half = n // 2
        send(0, half)
        s.mark("first_half_produced")
        wait("the first half consumed", lambda: s.count() >= half)
        members[0].stop()
        wait("two members sharing the partitions", lambda: s.shared(2))
        s.mark("rebalanced_to_two")
        send(half, n)
        s.mark("second_half_produced")
        wait("every message consumed", lambda: s.count() >= n)
        s.mark("all_consumed")
        time.sleep(0.5)  # a duplicate would arrive now
        client.describe(s)
        s.mark("group_described")
    finally:
        for m in members:
            m.stop()
    s.summary["committed"] = client.committed(s)


def main() -> None:
    if len(sys.argv) != 5 or sys.argv[1] not in CLIENTS:
        sys.exit(f"usage: scenario.py {'|'.join(CLIENTS)} BOOTSTRAP TOPIC N")
    name, bootstrap, topic, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    client = CLIENTS[name](bootstrap)
    s = Scenario(name, client.version, topic)
    try:
        run(client, s, n)
    except Exception as e:  # reported in the summary; the test fails on it
        s.error(repr(e))
    finally:
        client.close()
    print(json.dumps(s.summary))


if __name__ == "__main__":
    main()
