"""The scenarios of Kafka's tools: each runs one tool (and what it needs first) on a `Side`
and returns the outputs to compare. Set-up (topics, records, committed offsets) goes
through confluent-kafka: it is not what is compared, and a JVM start costs a second.

Scenario names are ``<tool>/<case>``; every topic, group and transactional id a scenario
uses starts with its side's prefix, the same on both clusters and new for each run.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from kafka_tools import Output, Side

Run = Callable[[Side], list[Output]]


@dataclass(frozen=True)
class ToolScenario:
    name: str
    run: Run


SCENARIOS: list[ToolScenario] = []


def scenario(name: str) -> Callable[[Run], Run]:
    def register(fn: Run) -> Run:
        SCENARIOS.append(ToolScenario(name, fn))
        return fn

    return register


# ---------------------------------------------------------------------- set-up helpers


def admin(s: Side):  # noqa: ANN201 - confluent_kafka has no type hints
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": s.bootstrap})


def topic(s: Side, suffix: str, partitions: int = 1, rf: int = 3, **configs: str) -> str:
    """A new topic (``_`` in a config name stands for ``.``), ready on every broker."""
    from confluent_kafka.admin import NewTopic

    name = s.name(suffix)
    conf = {k.replace("_", "."): v for k, v in configs.items()}
    a = admin(s)  # kept alive until the answer: a dropped client cancels its requests
    a.create_topics([NewTopic(name, partitions, rf, config=conf)])[name].result(30)
    _wait_for_leaders(s, name, partitions)
    return name


def _wait_for_leaders(s: Side, name: str, partitions: int) -> None:
    a = admin(s)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = a.list_topics(name, timeout=10).topics.get(name)
        if (
            md
            and md.error is None
            and len(md.partitions) == partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        ):
            return
        time.sleep(0.2)
    raise AssertionError(f"{name}: partitions without a leader after 30 s")


#: The create time of the first record a scenario writes, the same on both clusters: ten
#: minutes ago, whole seconds (old records would fall to Kafka's 7-day time retention).
BASE_MS = (int(time.time()) - 600) * 1000


def produce(s: Side, name: str, n: int, partitions: int = 1) -> None:
    """``n`` keyed records into each partition, record i at create time BASE_MS + i*1000."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": s.bootstrap, "acks": "all", "linger.ms": 5})
    for part in range(partitions):
        for i in range(n):
            p.produce(name, b"v%d" % i, b"k%d" % i, partition=part, timestamp=BASE_MS + i * 1000)
    assert p.flush(30) == 0, f"{name}: records not acknowledged in 30 s"


def commit(s: Side, group: str, name: str, offsets: dict[int, int]) -> None:
    """Commit ``offsets`` for ``group`` without joining it (a classic, empty group)."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    retriable = {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    }

    c = Consumer({"bootstrap.servers": s.bootstrap, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + 30
    try:
        while True:  # a coordinator still loading or moving answers with a retriable error
            try:
                c.commit(offsets=[TopicPartition(name, p, o) for p, o in offsets.items()],
                         asynchronous=False)  # fmt: skip
                return
            except KafkaException as e:
                if e.args[0].code() not in retriable or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        c.close()


def consume(s: Side, group: str, name: str, n: int, protocol: str = "classic") -> None:
    """Join ``group`` with ``protocol``, read ``n`` records of ``name``, commit and leave."""
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": s.bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        c.subscribe([name])
        seen = 0
        deadline = time.monotonic() + 60
        while seen < n and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                seen += 1
        assert seen == n, f"{group} read {seen} of {n} records"
        c.commit(asynchronous=False)
    finally:
        c.close()


def own(out: Output, s: Side) -> Output:
    """Only the lines about this scenario's names (cluster-wide listings)."""
    return Output(out.exit, tuple(ln for ln in out.stdout if "<p>" in ln), out.stderr)


def boot(*args: str) -> tuple[str, ...]:
    return ("--bootstrap-server", "{bootstrap}", *args)


def topics(s: Side, *args: str) -> Output:
    return s.run("kafka-topics", *boot(*args))


def configs(s: Side, *args: str) -> Output:
    return s.run("kafka-configs", *boot(*args))


def groups(s: Side, *args: str) -> Output:
    return s.run("kafka-consumer-groups", *boot(*args))


# ---------------------------------------------------------------------- kafka-topics


@scenario("kafka-topics/create")
def _(s: Side) -> list[Output]:
    t = s.name("created")
    return [topics(s, "--create", "--topic", t, "--partitions", "3", "--replication-factor", "3")]


@scenario("kafka-topics/create-existing")
def _(s: Side) -> list[Output]:
    t = topic(s, "exists")
    return [
        topics(s, "--create", "--topic", t, "--partitions", "1"),
        topics(s, "--create", "--if-not-exists", "--topic", t),
    ]


@scenario("kafka-topics/create-with-configs")
def _(s: Side) -> list[Output]:
    t = s.name("configured")
    return [
        topics(
            s,
            "--create",
            "--topic",
            t,
            "--partitions",
            "2",
            "--replication-factor",
            "2",
            "--config",
            "retention.ms=3600000",
            "--config",
            "cleanup.policy=compact",
        ),
        topics(s, "--describe", "--topic", t),
    ]


@scenario("kafka-topics/create-replica-assignment")
def _(s: Side) -> list[Output]:
    t = s.name("assigned")
    return [
        topics(s, "--create", "--topic", t, "--replica-assignment", "0:1,1:2,2:0"),
        topics(s, "--describe", "--topic", t),
    ]


@scenario("kafka-topics/create-too-many-replicas")
def _(s: Side) -> list[Output]:
    return [topics(s, "--create", "--topic", s.name("rf4"), "--replication-factor", "4")]


@scenario("kafka-topics/create-invalid-name")
def _(s: Side) -> list[Output]:
    return [topics(s, "--create", "--topic", s.name("bad name!"))]


@scenario("kafka-topics/create-bad-config")
def _(s: Side) -> list[Output]:
    return [topics(s, "--create", "--topic", s.name("badconf"), "--config", "cleanup.policy=shred")]


@scenario("kafka-topics/list")
def _(s: Side) -> list[Output]:
    topic(s, "listed-a")
    topic(s, "listed-b", partitions=2)
    return [own(topics(s, "--list", "--exclude-internal"), s)]


@scenario("kafka-topics/describe")
def _(s: Side) -> list[Output]:
    t = topic(s, "described", partitions=3)
    return [topics(s, "--describe", "--topic", t)]


@scenario("kafka-topics/describe-regex")
def _(s: Side) -> list[Output]:
    topic(s, "rx-one")
    topic(s, "rx-two")
    return [topics(s, "--describe", "--topic", s.name("rx-.*"))]


@scenario("kafka-topics/describe-under-replicated")
def _(s: Side) -> list[Output]:
    t = topic(s, "urp", partitions=2)
    return [topics(s, "--describe", "--topic", t, "--under-replicated-partitions")]


@scenario("kafka-topics/describe-unavailable")
def _(s: Side) -> list[Output]:
    t = topic(s, "unavail", partitions=2)
    return [topics(s, "--describe", "--topic", t, "--unavailable-partitions")]


@scenario("kafka-topics/describe-at-min-isr")
def _(s: Side) -> list[Output]:
    t = topic(s, "atmin", rf=2, min_insync_replicas="2")
    return [
        topics(s, "--describe", "--topic", t, "--at-min-isr-partitions"),
        topics(s, "--describe", "--topic", t, "--under-min-isr-partitions"),
    ]


@scenario("kafka-topics/describe-topics-with-overrides")
def _(s: Side) -> list[Output]:
    topic(s, "ovr-plain")
    topic(s, "ovr-set", retention_ms="7200000")
    return [topics(s, "--describe", "--topic", s.name("ovr-.*"), "--topics-with-overrides")]


@scenario("kafka-topics/describe-unknown")
def _(s: Side) -> list[Output]:
    return [topics(s, "--describe", "--topic", s.name("missing"))]


@scenario("kafka-topics/alter-partitions")
def _(s: Side) -> list[Output]:
    t = topic(s, "grown", partitions=1)
    out = topics(s, "--alter", "--topic", t, "--partitions", "4")
    _wait_for_leaders(s, t, 4)
    return [out, topics(s, "--describe", "--topic", t)]


@scenario("kafka-topics/alter-fewer-partitions")
def _(s: Side) -> list[Output]:
    t = topic(s, "shrunk", partitions=3)
    return [topics(s, "--alter", "--topic", t, "--partitions", "2")]


@scenario("kafka-topics/delete")
def _(s: Side) -> list[Output]:
    t = topic(s, "deleted")
    out = topics(s, "--delete", "--topic", t)
    time.sleep(1)  # the deletion reaches every broker's metadata
    return [out, own(topics(s, "--list"), s)]


@scenario("kafka-topics/delete-unknown")
def _(s: Side) -> list[Output]:
    return [topics(s, "--delete", "--topic", s.name("nothing"))]


# ---------------------------------------------------------------------- kafka-configs


@scenario("kafka-configs/topic-describe")
def _(s: Side) -> list[Output]:
    t = topic(s, "cfg", retention_ms="86400000", max_message_bytes="65536")
    return [configs(s, "--entity-type", "topics", "--entity-name", t, "--describe")]


@scenario("kafka-configs/topic-describe-all")
def _(s: Side) -> list[Output]:
    t = topic(s, "cfgall")
    return [configs(s, "--entity-type", "topics", "--entity-name", t, "--describe", "--all")]


@scenario("kafka-configs/topic-add-and-delete")
def _(s: Side) -> list[Output]:
    t = topic(s, "cfgadd")
    add = configs(
        s,
        "--entity-type",
        "topics",
        "--entity-name",
        t,
        "--alter",
        "--add-config",
        "retention.ms=1000000,segment.bytes=1048576",
    )
    after_add = configs(s, "--entity-type", "topics", "--entity-name", t, "--describe")
    delete = configs(
        s,
        "--entity-type",
        "topics",
        "--entity-name",
        t,
        "--alter",
        "--delete-config",
        "retention.ms",
    )
    return [
        add,
        after_add,
        delete,
        configs(s, "--entity-type", "topics", "--entity-name", t, "--describe"),
    ]


@scenario("kafka-configs/topic-bad-value")
def _(s: Side) -> list[Output]:
    t = topic(s, "cfgbad")
    return [
        configs(
            s,
            "--entity-type",
            "topics",
            "--entity-name",
            t,
            "--alter",
            "--add-config",
            "retention.ms=abc",
        )
    ]


@scenario("kafka-configs/topic-unknown-config")
def _(s: Side) -> list[Output]:
    t = topic(s, "cfgunk")
    return [
        configs(
            s,
            "--entity-type",
            "topics",
            "--entity-name",
            t,
            "--alter",
            "--add-config",
            "no.such.config=1",
        )
    ]


@scenario("kafka-configs/broker-describe")
def _(s: Side) -> list[Output]:
    return [configs(s, "--entity-type", "brokers", "--entity-name", "1", "--describe")]


@scenario("kafka-configs/broker-default-describe")
def _(s: Side) -> list[Output]:
    return [configs(s, "--entity-type", "brokers", "--entity-default", "--describe")]


@scenario("kafka-configs/broker-dynamic-add-and-delete")
def _(s: Side) -> list[Output]:
    b = ("--entity-type", "brokers", "--entity-name", "1")
    return [
        configs(s, *b, "--alter", "--add-config", "log.cleaner.threads=2"),
        configs(s, *b, "--describe"),
        configs(s, *b, "--alter", "--delete-config", "log.cleaner.threads"),
    ]


@scenario("kafka-configs/group-add-describe-delete")
def _(s: Side) -> list[Output]:
    u = ("--entity-type", "groups", "--entity-name", s.name("cg"))
    set_ = "share.record.lock.duration.ms=20000,share.auto.offset.reset=by_duration:PT1H"
    return [
        configs(s, *u, "--alter", "--add-config", set_),
        configs(s, *u, "--describe"),
        configs(s, *u, "--describe", "--all"),
        configs(s, *u, "--alter", "--delete-config", "share.auto.offset.reset"),
        configs(s, *u, "--describe"),
    ]


@scenario("kafka-configs/group-bad-values")
def _(s: Side) -> list[Output]:
    u = ("--entity-type", "groups", "--entity-name", s.name("cgb"))
    bad = (
        "share.record.lock.duration.ms=100",
        "share.record.lock.duration.ms=70000",
        "share.delivery.count.limit=11",
        "share.auto.offset.reset=middle",
        "share.isolation.level=dirty",
        "share.renew.acknowledge.enable=maybe",
        "consumer.session.timeout.ms=5000",
        "share.bogus=1",
    )
    return [configs(s, *u, "--alter", "--add-config", b) for b in bad]


@scenario("kafka-configs/quota-user")
def _(s: Side) -> list[Output]:
    u = ("--entity-type", "users", "--entity-name", s.name("alice"))
    return [
        configs(
            s, *u, "--alter", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048"
        ),
        configs(s, *u, "--describe"),
        configs(s, *u, "--alter", "--delete-config", "producer_byte_rate"),
        configs(s, *u, "--describe"),
        # Quotas outlive the scenario on a shared reference: none is left behind.
        configs(s, *u, "--alter", "--delete-config", "consumer_byte_rate"),
    ]


@scenario("kafka-configs/quota-client")
def _(s: Side) -> list[Output]:
    c = ("--entity-type", "clients", "--entity-name", s.name("app"))
    return [
        configs(s, *c, "--alter", "--add-config", "request_percentage=50"),
        configs(s, *c, "--describe"),
        configs(s, *c, "--alter", "--delete-config", "request_percentage"),
    ]


@scenario("kafka-configs/quota-user-and-client")
def _(s: Side) -> list[Output]:
    uc = (
        "--entity-type",
        "users",
        "--entity-name",
        s.name("bob"),
        "--entity-type",
        "clients",
        "--entity-name",
        s.name("cli"),
    )
    return [
        configs(s, *uc, "--alter", "--add-config", "producer_byte_rate=4096"),
        configs(s, *uc, "--describe"),
        configs(s, *uc, "--alter", "--delete-config", "producer_byte_rate"),
    ]


@scenario("kafka-configs/quota-ip")
def _(s: Side) -> list[Output]:
    # an address no test traffic uses, removed again at the end
    ip = ("--entity-type", "ips", "--entity-name", "127.0.0.77")
    return [
        configs(s, *ip, "--alter", "--add-config", "connection_creation_rate=100"),
        configs(s, *ip, "--describe"),
        configs(s, *ip, "--alter", "--delete-config", "connection_creation_rate"),
    ]


@scenario("kafka-configs/quota-bad-key")
def _(s: Side) -> list[Output]:
    u = ("--entity-type", "users", "--entity-name", s.name("carol"))
    return [configs(s, *u, "--alter", "--add-config", "retention.ms=5")]


# ---------------------------------------------------------------------- kafka-consumer-groups


def committed_group(
    s: Side, suffix: str = "g", partitions: int = 2, records: int = 10
) -> tuple[str, str]:
    """A topic of ``records`` per partition and a classic group committed at 4 on each."""
    t = topic(s, f"{suffix}-t", partitions=partitions)
    produce(s, t, records, partitions=partitions)
    g = s.name(suffix)
    commit(s, g, t, {p: 4 for p in range(partitions)})
    return g, t


@scenario("kafka-consumer-groups/list")
def _(s: Side) -> list[Output]:
    committed_group(s, "lg")
    return [own(groups(s, "--list"), s)]


@scenario("kafka-consumer-groups/list-state-and-type")
def _(s: Side) -> list[Output]:
    committed_group(s, "lst")
    return [own(groups(s, "--list", "--state"), s), own(groups(s, "--list", "--type"), s)]


@scenario("kafka-consumer-groups/describe-offsets")
def _(s: Side) -> list[Output]:
    g, _t = committed_group(s, "do")
    return [groups(s, "--describe", "--group", g, "--offsets")]


@scenario("kafka-consumer-groups/describe-members")
def _(s: Side) -> list[Output]:
    g, _t = committed_group(s, "dm")
    return [groups(s, "--describe", "--group", g, "--members", "--verbose")]


@scenario("kafka-consumer-groups/describe-state")
def _(s: Side) -> list[Output]:
    g, _t = committed_group(s, "ds")
    return [groups(s, "--describe", "--group", g, "--state")]


@scenario("kafka-consumer-groups/describe-consumer-protocol")
def _(s: Side) -> list[Output]:
    t = topic(s, "cp-t")
    produce(s, t, 5)
    g = s.name("cp")
    consume(s, g, t, 5, protocol="consumer")
    return [
        groups(s, "--describe", "--group", g, "--offsets"),
        groups(s, "--describe", "--group", g, "--state"),
        own(groups(s, "--list", "--type"), s),
    ]


@scenario("kafka-consumer-groups/describe-classic-protocol-consumed")
def _(s: Side) -> list[Output]:
    t = topic(s, "cl-t")
    produce(s, t, 5)
    g = s.name("cl")
    consume(s, g, t, 5)
    return [
        groups(s, "--describe", "--group", g, "--offsets"),
        groups(s, "--describe", "--group", g, "--state"),
    ]


@scenario("kafka-consumer-groups/describe-unknown")
def _(s: Side) -> list[Output]:
    return [groups(s, "--describe", "--group", s.name("nobody"))]


def reset(s: Side, how: tuple[str, ...], execute: bool) -> list[Output]:
    g, t = committed_group(s, "rs")
    mode = "--execute" if execute else "--dry-run"
    out = groups(s, "--reset-offsets", "--group", g, "--topic", t, *how, mode)
    return [out, groups(s, "--describe", "--group", g, "--offsets")]


@scenario("kafka-consumer-groups/reset-to-earliest-dry-run")
def _(s: Side) -> list[Output]:
    return reset(s, ("--to-earliest",), execute=False)


@scenario("kafka-consumer-groups/reset-to-earliest-execute")
def _(s: Side) -> list[Output]:
    return reset(s, ("--to-earliest",), execute=True)


@scenario("kafka-consumer-groups/reset-to-latest-execute")
def _(s: Side) -> list[Output]:
    return reset(s, ("--to-latest",), execute=True)


@scenario("kafka-consumer-groups/reset-shift-by")
def _(s: Side) -> list[Output]:
    return reset(s, ("--shift-by", "-3"), execute=True)


@scenario("kafka-consumer-groups/reset-to-offset")
def _(s: Side) -> list[Output]:
    return reset(s, ("--to-offset", "7"), execute=True)


@scenario("kafka-consumer-groups/reset-to-datetime")
def _(s: Side) -> list[Output]:
    # records are one second apart from BASE_MS: the sixth is at BASE_MS + 5 s (UTC here)
    sixth = datetime.fromtimestamp(BASE_MS / 1000 + 5, UTC)
    return reset(s, ("--to-datetime", sixth.strftime("%Y-%m-%dT%H:%M:%S.000")), execute=True)


@scenario("kafka-consumer-groups/reset-by-duration")
def _(s: Side) -> list[Output]:
    return reset(s, ("--by-duration", "PT1M"), execute=False)


@scenario("kafka-consumer-groups/delete-offsets")
def _(s: Side) -> list[Output]:
    g, t = committed_group(s, "dof")
    out = groups(s, "--delete-offsets", "--group", g, "--topic", f"{t}:0")
    return [out, groups(s, "--describe", "--group", g, "--offsets")]


@scenario("kafka-consumer-groups/delete")
def _(s: Side) -> list[Output]:
    g, _t = committed_group(s, "del")
    return [groups(s, "--delete", "--group", g), groups(s, "--describe", "--group", g)]


@scenario("kafka-consumer-groups/delete-unknown")
def _(s: Side) -> list[Output]:
    return [groups(s, "--delete", "--group", s.name("ghost"))]


# ---------------------------------------------------------------------- kafka-groups


@scenario("kafka-groups/list-by-type")
def _(s: Side) -> list[Output]:
    committed_group(s, "kg")
    t = topic(s, "kgc-t")
    produce(s, t, 2)
    consume(s, s.name("kgc"), t, 2, protocol="consumer")
    run = lambda *a: own(s.run("kafka-groups", *boot("--list", *a)), s)  # noqa: E731
    return [
        run(),
        run("--consumer"),
        run("--group-type", "classic"),
        run("--group-type", "consumer"),
        run("--share"),
    ]


# ---------------------------------------------------------------------- kafka-share-groups


def shares(s: Side, *args: str) -> Output:
    return s.run("kafka-share-groups", *boot(*args))


def share_group(s: Side, suffix: str, *how: str, execute: bool = True) -> tuple[str, str, Output]:
    """A topic of 6 records in each of 2 partitions and a share group reset on it (the
    reset creates the group, empty): the group, the topic and what the reset printed."""
    t = topic(s, f"{suffix}-t", partitions=2)
    produce(s, t, 6, partitions=2)
    g = s.name(suffix)
    mode = "--execute" if execute else "--dry-run"
    out = shares(
        s, "--reset-offsets", "--group", g, "--topic", t, *(how or ("--to-earliest",)), mode
    )
    return g, t, out


def share_member(s: Side, group: str, name: str) -> None:
    """A member joins ``group`` subscribing to ``name`` and stays until its session runs
    out (45 s): one heartbeat through kafkagen's client, as confluent-kafka has no share
    consumer and a Java one would cost a JVM."""
    import asyncio

    from kafkagen.generated.share_group_heartbeat import ShareGroupHeartbeatRequest
    from kafkagen.runtime.client import connect
    from kafkagen.runtime.errors import KafkaError

    async def join() -> None:
        host, port = s.bootstrap.split(",")[0].rsplit(":", 1)
        async with await connect(host, int(port)) as client:
            deadline = time.monotonic() + 30
            while True:  # a coordinator still loading answers with a retriable error
                node = (await client.find_coordinators([group]))[group]
                if not isinstance(node, KafkaError):
                    coordinator = await client.for_node(node.host, node.port)
                    r = await coordinator.request(
                        ShareGroupHeartbeatRequest(
                            group_id=group,
                            member_id="tool-scenario-member-0001",
                            member_epoch=0,
                            subscribed_topic_names=[name],
                        )
                    )
                    if r.error_code == 0:
                        return
                if time.monotonic() > deadline:
                    raise AssertionError(f"{group}: no member joined in 30 s ({node})")
                await asyncio.sleep(0.5)

    asyncio.run(join())


@scenario("kafka-share-groups/with-a-member")
def _(s: Side) -> list[Output]:
    g, t, _ = share_group(s, "sm")
    share_member(s, g, t)
    return [
        shares(s, "--describe", "--group", g, "--state"),
        shares(s, "--reset-offsets", "--group", g, "--topic", t, "--to-latest", "--execute"),
        shares(s, "--delete-offsets", "--group", g, "--topic", t),
        shares(s, "--delete", "--group", g),
    ]


@scenario("kafka-share-groups/reset-to-earliest-execute")
def _(s: Side) -> list[Output]:
    g, _t, out = share_group(s, "se")
    return [out, shares(s, "--describe", "--group", g, "--offsets")]


@scenario("kafka-share-groups/reset-to-latest-dry-run")
def _(s: Side) -> list[Output]:
    g, _t, out = share_group(s, "sl", "--to-latest", execute=False)
    return [out, shares(s, "--describe", "--group", g, "--offsets")]


@scenario("kafka-share-groups/reset-to-datetime")
def _(s: Side) -> list[Output]:
    # records are one second apart from BASE_MS: the fourth is at BASE_MS + 3 s (UTC here)
    fourth = datetime.fromtimestamp(BASE_MS / 1000 + 3, UTC).strftime("%Y-%m-%dT%H:%M:%S.000")
    g, _t, out = share_group(s, "sd", "--to-datetime", fourth)
    return [out, shares(s, "--describe", "--group", g, "--offsets")]


@scenario("kafka-share-groups/reset-again-to-latest")
def _(s: Side) -> list[Output]:
    g, t, _ = share_group(s, "sa")
    out = shares(
        s, "--reset-offsets", "--group", g, "--topic", f"{t}:1", "--to-latest", "--execute"
    )
    return [out, shares(s, "--describe", "--group", g, "--offsets")]


@scenario("kafka-share-groups/list")
def _(s: Side) -> list[Output]:
    share_group(s, "sls")
    return [own(shares(s, "--list"), s), own(shares(s, "--list", "--state", "Empty"), s)]


@scenario("kafka-share-groups/describe-state-and-members")
def _(s: Side) -> list[Output]:
    g, _t, _ = share_group(s, "sst")
    return [
        shares(s, "--describe", "--group", g, "--state"),
        shares(s, "--describe", "--group", g, "--members"),
    ]


@scenario("kafka-share-groups/delete-offsets")
def _(s: Side) -> list[Output]:
    g, t, _ = share_group(s, "sdo")
    out = shares(s, "--delete-offsets", "--group", g, "--topic", t)
    return [out, shares(s, "--describe", "--group", g, "--offsets")]


@scenario("kafka-share-groups/delete")
def _(s: Side) -> list[Output]:
    g, _t, _ = share_group(s, "sdl")
    return [shares(s, "--delete", "--group", g), shares(s, "--describe", "--group", g)]


@scenario("kafka-share-groups/unknown-group")
def _(s: Side) -> list[Output]:
    g = s.name("snobody")
    return [
        shares(s, "--describe", "--group", g),
        shares(s, "--delete", "--group", g),
        shares(s, "--delete-offsets", "--group", g, "--topic", s.name("none")),
    ]


# ---------------------------------------------------------------------- kafka-get-offsets


def offsets(s: Side, *args: str) -> Output:
    return s.run("kafka-get-offsets", *boot(*args))


@scenario("kafka-get-offsets/earliest-latest-max-timestamp")
def _(s: Side) -> list[Output]:
    t = topic(s, "go", partitions=2)
    produce(s, t, 6, partitions=2)
    return [offsets(s, "--topic", t, "--time", v) for v in ("-2", "-1", "-3", "earliest", "latest")]


@scenario("kafka-get-offsets/by-time")
def _(s: Side) -> list[Output]:
    t = topic(s, "gt")
    produce(s, t, 6)
    return [offsets(s, "--topic", t, "--time", str(BASE_MS + ms)) for ms in (0, 2500, 99_000)]


@scenario("kafka-get-offsets/partitions-and-regex")
def _(s: Side) -> list[Output]:
    t = topic(s, "gp", partitions=3)
    produce(s, t, 2, partitions=3)
    return [
        offsets(s, "--topic", t, "--partitions", "0,2"),
        offsets(s, "--topic-partitions", f"{s.name('gp')}:1"),
        offsets(s, "--topic", s.name("g.*")),
    ]


@scenario("kafka-get-offsets/unknown-topic")
def _(s: Side) -> list[Output]:
    return [offsets(s, "--topic", s.name("none"))]


# ---------------------------------------------------------------------- kafka-delete-records


@scenario("kafka-delete-records/delete")
def _(s: Side) -> list[Output]:
    t = topic(s, "dr", partitions=2)
    produce(s, t, 8, partitions=2)
    plan = s.file(
        "delete.json",
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": t, "partition": 0, "offset": 3},
                    {"topic": t, "partition": 1, "offset": -1},
                ],
            }
        ),
    )
    out = s.run("kafka-delete-records", *boot("--offset-json-file", plan))
    return [out, offsets(s, "--topic", t, "--time", "-2")]


@scenario("kafka-delete-records/beyond-high-watermark")
def _(s: Side) -> list[Output]:
    t = topic(s, "drh")
    produce(s, t, 2)
    plan = s.file(
        "delete.json",
        json.dumps({"version": 1, "partitions": [{"topic": t, "partition": 0, "offset": 10}]}),
    )
    return [s.run("kafka-delete-records", *boot("--offset-json-file", plan))]


# ---------------------------------------------------------------------- kafka-reassign-partitions


def reassign(s: Side, *args: str) -> Output:
    return s.run("kafka-reassign-partitions", *boot(*args))


def plan_for(s: Side, t: str, partitions: int, replicas: list[list[int]]) -> str:
    return s.file(
        f"plan-{t}.json",
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": t, "partition": p, "replicas": replicas[p]} for p in range(partitions)
                ],
            }
        ),
    )


@scenario("kafka-reassign-partitions/generate")
def _(s: Side) -> list[Output]:
    t = topic(s, "rg", partitions=3, rf=2)
    move = s.file("move.json", json.dumps({"version": 1, "topics": [{"topic": t}]}))
    return [reassign(s, "--generate", "--topics-to-move-json-file", move, "--broker-list", "0,1,2")]


#: Scenarios run in parallel, but some must have the cluster to themselves: the tool
#: refuses `--execute` while any other reassignment is still moving (unless given
#: `--additional`), and a preferred election of every partition fails on a partition whose
#: reassignment has not yet brought its new first replica into the ISR.
_CLUSTER_LOCKS: dict[str, threading.Lock] = {}


def alone(s: Side) -> threading.Lock:
    """The lock of the scenarios that move or elect leaders across ``s``'s cluster."""
    return _CLUSTER_LOCKS.setdefault(s.bootstrap, threading.Lock())


def execute_and_verify(s: Side, plan: str, *extra: str) -> list[Output]:
    with alone(s):
        out = reassign(s, "--execute", "--reassignment-json-file", plan, *extra)
        time.sleep(2)
        verified = reassign(s, "--verify", "--reassignment-json-file", plan)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
            "No partition reassignments found" in ln for ln in reassign(s, "--list").stdout
        ):
            time.sleep(0.5)
    return [out, verified]


@scenario("kafka-reassign-partitions/execute-and-verify")
def _(s: Side) -> list[Output]:
    t = topic(s, "rx", partitions=2, rf=1)
    produce(s, t, 20, partitions=2)
    return execute_and_verify(s, plan_for(s, t, 2, [[1, 2], [2, 0]]))


@scenario("kafka-reassign-partitions/execute-with-throttle")
def _(s: Side) -> list[Output]:
    t = topic(s, "rt", partitions=1, rf=1)
    produce(s, t, 20)
    return execute_and_verify(s, plan_for(s, t, 1, [[0, 1, 2]]), "--throttle", "10000000")


@scenario("kafka-reassign-partitions/list-and-cancel")
def _(s: Side) -> list[Output]:
    t = topic(s, "rc", partitions=1, rf=1)
    plan = plan_for(s, t, 1, [[0, 1]])
    listed = reassign(s, "--list")
    # Only this scenario's lines: another scenario's reassignment may be running meanwhile,
    # which turns "No partition reassignments found." into a list of other topics.
    return [
        Output(listed.exit, tuple(ln for ln in listed.stdout if "<p>" in ln), listed.stderr),
        reassign(s, "--cancel", "--reassignment-json-file", plan),
    ]


@scenario("kafka-reassign-partitions/unknown-broker")
def _(s: Side) -> list[Output]:
    t = topic(s, "rb", rf=1)
    return [reassign(s, "--execute", "--reassignment-json-file", plan_for(s, t, 1, [[7]]))]


# ---------------------------------------------------------------------- kafka-leader-election


def elect(s: Side, *args: str) -> Output:
    return s.run("kafka-leader-election", *boot(*args))


@scenario("kafka-leader-election/preferred-all")
def _(s: Side) -> list[Output]:
    topic(s, "le", partitions=2)
    with alone(s):
        out = elect(s, "--election-type", "preferred", "--all-topic-partitions")
    return [Output(out.exit, tuple(ln for ln in out.stdout if "<p>" in ln), out.stderr)]


@scenario("kafka-leader-election/preferred-named")
def _(s: Side) -> list[Output]:
    t = topic(s, "len", partitions=2)
    return [elect(s, "--election-type", "preferred", "--topic", t, "--partition", "1")]


@scenario("kafka-leader-election/unclean-named")
def _(s: Side) -> list[Output]:
    t = topic(s, "leu")
    return [elect(s, "--election-type", "unclean", "--topic", t, "--partition", "0")]


@scenario("kafka-leader-election/path-to-json-file")
def _(s: Side) -> list[Output]:
    t = topic(s, "lej", partitions=2)
    f = s.file(
        "elect.json",
        json.dumps({"partitions": [{"topic": t, "partition": 0}, {"topic": t, "partition": 1}]}),
    )
    return [elect(s, "--election-type", "preferred", "--path-to-json-file", f)]


@scenario("kafka-leader-election/unknown-partition")
def _(s: Side) -> list[Output]:
    t = topic(s, "lex")
    return [elect(s, "--election-type", "preferred", "--topic", t, "--partition", "5")]


# ---------------------------------------------------------------------- kafka-transactions


def txns(s: Side, *args: str) -> Output:
    return s.run("kafka-transactions", *boot(*args))


def open_transaction(s: Side, suffix: str, commit_it: bool) -> tuple[str, str]:
    """A topic and a transactional producer that wrote 3 records to it, committed or left
    open (the producer is kept alive by the returned id only as long as the broker waits:
    ten minutes, which the slowest tool runs on a loaded machine stay well within)."""
    from confluent_kafka import Producer

    t = topic(s, f"{suffix}-t")
    tid = s.name(suffix)
    p = Producer(
        {
            "bootstrap.servers": s.bootstrap,
            "transactional.id": tid,
            "transaction.timeout.ms": 600000,
        }
    )
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(3):
        p.produce(t, b"v%d" % i, partition=0, timestamp=int(time.time() * 1000))
    if commit_it:
        p.commit_transaction(30)
    else:
        assert p.flush(30) == 0
    return t, tid


@scenario("kafka-transactions/list-and-describe")
def _(s: Side) -> list[Output]:
    _t, tid = open_transaction(s, "tx", commit_it=True)
    listed = txns(s, "list")
    return [own(listed, s), txns(s, "describe", "--transactional-id", tid)]


@scenario("kafka-transactions/describe-producers")
def _(s: Side) -> list[Output]:
    t, _tid = open_transaction(s, "txp", commit_it=True)
    return [txns(s, "describe-producers", "--topic", t, "--partition", "0")]


@scenario("kafka-transactions/describe-unknown")
def _(s: Side) -> list[Output]:
    return [txns(s, "describe", "--transactional-id", s.name("nope"))]


@scenario("kafka-transactions/find-hanging-and-abort")
def _(s: Side) -> list[Output]:
    t, tid = open_transaction(s, "txh", commit_it=False)
    hanging = txns(s, "find-hanging", "--broker-id", "0", "--max-transaction-timeout", "0")
    described = txns(s, "describe", "--transactional-id", tid)
    abort = txns(s, "abort", "--topic", t, "--partition", "0", "--start-offset", "0")
    # The partition's producer no longer has an open transaction.
    after = txns(s, "describe-producers", "--topic", t, "--partition", "0")
    return [own(hanging, s), described, abort, after]


@scenario("kafka-transactions/abort-by-producer")
def _(s: Side) -> list[Output]:
    t, _tid = open_transaction(s, "txa", commit_it=False)
    described = ("describe-producers", "--topic", t, "--partition", "0")
    before = s.run_raw("kafka-transactions", *boot(*described))
    # ProducerId ProducerEpoch LatestCoordinatorEpoch ... of the one open producer.
    pid, epoch, coordinator_epoch = before.stdout.splitlines()[1].split()[:3]
    abort = txns(s, "abort", "--topic", t, "--partition", "0", "--producer-id", pid,
                 "--producer-epoch", epoch, "--coordinator-epoch", coordinator_epoch)  # fmt: skip
    after = txns(s, *described)
    return [s.output(before.returncode, before.stdout, before.stderr), abort, after]


@scenario("kafka-transactions/find-hanging-each-broker")
def _(s: Side) -> list[Output]:
    topic(s, "txb", partitions=3)
    return [own(txns(s, "find-hanging", "--broker-id", b), s) for b in ("0", "1", "2")]


# ---------------------------------------------------------------------- kafka-acls


def acls(s: Side, *args: str) -> Output:
    return s.run("kafka-acls", *boot(*args))


@scenario("kafka-acls/add-list-remove")
def _(s: Side) -> list[Output]:
    t = s.name("acl")
    rule = ("--allow-principal", f"User:{s.name('alice')}", "--operation", "Read", "--topic", t)
    return [
        acls(s, "--add", *rule),
        acls(s, "--list", "--topic", t),
        acls(s, "--remove", "--force", *rule),
    ]


@scenario("kafka-acls/producer-convenience")
def _(s: Side) -> list[Output]:
    return [
        acls(
            s,
            "--add",
            "--allow-principal",
            f"User:{s.name('p')}",
            "--producer",
            "--topic",
            s.name("pt"),
        )
    ]


@scenario("kafka-acls/consumer-convenience")
def _(s: Side) -> list[Output]:
    return [
        acls(
            s,
            "--add",
            "--allow-principal",
            f"User:{s.name('c')}",
            "--consumer",
            "--topic",
            s.name("ct"),
            "--group",
            s.name("cg"),
        )
    ]


# ---------------------------------------------------------------------- cluster-wide tools


@scenario("kafka-features/describe")
def _(s: Side) -> list[Output]:
    return [s.run("kafka-features", *boot("describe"))]


@scenario("kafka-metadata-quorum/describe-status")
def _(s: Side) -> list[Output]:
    return [s.run("kafka-metadata-quorum", *boot("describe", "--status"))]


@scenario("kafka-metadata-quorum/describe-replication")
def _(s: Side) -> list[Output]:
    return [s.run("kafka-metadata-quorum", *boot("describe", "--replication"))]


@scenario("kafka-log-dirs/describe")
def _(s: Side) -> list[Output]:
    t = topic(s, "ld", partitions=2)
    produce(s, t, 3, partitions=2)
    return [s.run("kafka-log-dirs", *boot("--describe", "--topic-list", t))]


@scenario("kafka-client-metrics/alter-describe-list-delete")
def _(s: Side) -> list[Output]:
    n = s.name("cm")
    cm = lambda *a: s.run("kafka-client-metrics", *boot(*a))  # noqa: E731
    return [
        cm(
            "--alter", "--name", n, "--metrics", "org.apache.kafka.producer.", "--interval", "60000"
        ),
        cm("--describe", "--name", n),
        own(cm("--list"), s),
        cm("--delete", "--name", n),
    ]


@scenario("kafka-broker-api-versions/all")
def _(s: Side) -> list[Output]:
    return [s.run("kafka-broker-api-versions", *boot())]


# ---------------------------------------------------------------------- clients


def counts(out: Output, keep: Callable[[str], str | None]) -> Output:
    """``out`` reduced to what ``keep`` extracts from each stdout line (counts, not rates)."""
    return Output(out.exit, tuple(k for ln in out.stdout if (k := keep(ln))), out.stderr)


@scenario("kafka-verifiable-producer/and-consumer")
def _(s: Side) -> list[Output]:
    t = topic(s, "vp", partitions=2)
    produced = s.run(
        "kafka-verifiable-producer", *boot("--topic", t, "--max-messages", "1000", "--acks", "-1")
    )
    consumed = s.run(
        "kafka-verifiable-consumer",
        *boot(
            "--topic",
            t,
            "--group-id",
            s.name("vc"),
            "--max-messages",
            "1000",
            "--reset-policy",
            "earliest",
            "--verbose",
        ),
    )

    def events(out: Output, *names: str) -> dict[str, int]:
        seen: dict[str, int] = {}
        for ln in out.stdout:
            m = re.search(r'"name": ?"(\w+)"', ln)
            if m and m.group(1) in names:
                seen[m.group(1)] = seen.get(m.group(1), 0) + (json.loads(ln).get("count", 1))
        return seen

    sent = events(produced, "producer_send_success", "producer_send_error")
    got = events(consumed, "records_consumed")
    summary = (
        f"sent={sent}",
        f"consumed={got}",
        f"exactly_once={sent.get('producer_send_success') == got.get('records_consumed') == 1000}",
    )
    return [
        Output(produced.exit, summary, produced.stderr),
        Output(consumed.exit, (), consumed.stderr),
    ]


@scenario("kafka-producer-perf-test/20000")
def _(s: Side) -> list[Output]:
    t = topic(s, "perf", partitions=3, rf=1)
    out = s.run(
        "kafka-producer-perf-test",
        "--topic",
        t,
        "--num-records",
        "20000",
        "--record-size",
        "100",
        "--throughput",
        "-1",
        "--producer-props",
        "bootstrap.servers={bootstrap}",
        "acks=all",
    )
    return [
        counts(
            out,
            lambda ln: (
                m.group(1)
                if (m := re.match(r"(\d+) records sent, ", ln)) and "99th" in ln
                else None
            ),
        )
    ]


@scenario("kafka-consumer-perf-test/20000")
def _(s: Side) -> list[Output]:
    t = topic(s, "cperf", partitions=2, rf=1)
    s.run(
        "kafka-producer-perf-test",
        "--topic",
        t,
        "--num-records",
        "20000",
        "--record-size",
        "100",
        "--throughput",
        "-1",
        "--producer-props",
        "bootstrap.servers={bootstrap}",
    )
    out = s.run(
        "kafka-consumer-perf-test",
        *boot("--topic", t, "--messages", "20000", "--group", s.name("cpg")),
    )
    # data row: start, end, MB, MB/s, records, records/s, ...: only the record count is compared
    return [
        counts(
            out,
            lambda ln: (
                ln.split(",")[4].strip() if ln.count(",") > 5 and "start.time" not in ln else None
            ),
        )
    ]


@scenario("kafka-e2e-latency/500")
def _(s: Side) -> list[Output]:
    t = topic(s, "e2e", rf=1)
    out = s.run("kafka-e2e-latency", "{bootstrap}", t, "500", "1", "100")
    return [
        counts(
            out,
            lambda ln: ln.split(":")[0] if ln.startswith(("Avg latency", "Percentiles")) else None,
        )
    ]
