"""Garbage on the wire never stops the broker, and real clients keep working meanwhile."""

from __future__ import annotations

import random
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest
from broker_helpers import BrokerProcess, WireClient
from kafkagen.generated import message_type

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

ATTACKS = 400
ATTACK_SECONDS = 20.0


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess("max.connections=200") as b:
        yield b
        assert b.alive(), b.stderr_text()


def _garbage(rng: random.Random, i: int) -> bytes:
    kind = i % 6
    if kind == 0:  # random bytes
        return rng.randbytes(rng.randrange(1, 512))
    if kind == 1:  # a huge size prefix
        return struct.pack(">i", rng.choice([2**31 - 1, 200 * 1024 * 1024, -1, -(2**31)]))
    if kind == 2:  # a truncated frame: the prefix promises more than is sent
        body = struct.pack(">hhi", 3, 12, i) + rng.randbytes(20)
        return struct.pack(">i", len(body) + 500) + body
    if kind == 3:  # an unknown API key
        body = struct.pack(">hhi", rng.choice([-1, 500, 32767]), 0, i) + b"\x00\x01x"
        return struct.pack(">i", len(body)) + body
    if kind == 4:  # a known API, unserved version
        body = struct.pack(">hhi", 0, 99, i) + b"\x00\x01x"
        return struct.pack(">i", len(body)) + body
    # a valid header with a garbage body
    api = rng.choice([0, 1, 3, 11, 19])
    body = struct.pack(">hhi", api, 3, i) + b"\x00\x01x" + rng.randbytes(rng.randrange(0, 64))
    return struct.pack(">i", len(body)) + body


def _attack(bootstrap: str, stop: threading.Event, sent: list[int]) -> None:
    host, port = bootstrap.rsplit(":", 1)
    rng = random.Random(7)
    deadline = time.monotonic() + ATTACK_SECONDS
    for i in range(ATTACKS):
        if stop.is_set() or time.monotonic() > deadline:
            break
        try:
            with socket.create_connection((host, int(port)), timeout=2) as s:
                s.sendall(_garbage(rng, i))
                if i % 2:
                    s.settimeout(0.2)
                    try:
                        s.recv(64)
                    except OSError:
                        pass
        except OSError:
            pass
        sent[0] += 1


def test_garbage_never_stops_the_broker_and_clients_keep_working(broker: BrokerProcess) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("steady", 2, 1)])["steady"].result(30)
    stop = threading.Event()
    sent = [0]
    attacker = threading.Thread(target=_attack, args=(broker.bootstrap, stop, sent), daemon=True)
    attacker.start()
    try:
        p = Producer(
            {"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "acks": "all"}
        )
        errors: list[object] = []
        n = 5000
        for i in range(n):
            p.produce(
                "steady", b"v%d" % i, b"k%d" % i, on_delivery=lambda e, m: e and errors.append(e)
            )
            if i % 100 == 0:
                p.poll(0.01)  # spread the load over the attack
        assert p.flush(60) == 0
        assert not errors, errors[:3]
        c = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "steady",
                "enable.auto.commit": False,
            }
        )
        c.assign([TopicPartition("steady", i, 0) for i in range(2)])
        got = 0
        deadline = time.monotonic() + 30
        while got < n and time.monotonic() < deadline:
            got += sum(1 for m in c.consume(1000, 0.5) if not m.error())
        c.close()
        assert got == n
    finally:
        stop.set()
        attacker.join(30)
    assert sent[0] >= 50, "the attack barely ran"
    assert broker.alive(), broker.stderr_text()
    # A fresh wire client still gets answers.
    with WireClient(broker.bootstrap) as w:
        req = message_type(18, "request")(client_software_name="t", client_software_version="1")
        assert w.call(18, 3, req).error_code == 0
