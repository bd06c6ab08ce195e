"""Random requests to a live broker over real sockets: well-formed ones of every API and
version, built by the fuzz's builders, and corrupted copies of them.

Each connection sends one request at a time and waits for its answer. A request ends as:

==========  ==========================================================================
answered    a frame came back with the request's correlation id (and, for a request
            that was not corrupted, it decodes as the API's response)
closed      the broker closed the connection (as Kafka does for an unknown API or
            version, or a frame it cannot parse); a new connection takes over
silent      no answer, but the connection still answers an ApiVersions sent after it
            (a Produce with acks=0, which Kafka never answers)
hang        neither: the request and the probe behind it both went unanswered
bad answer  an answer to a well-formed request that does not decode
==========  ==========================================================================

Waits a request asks for (``timeout_ms``, ``max_wait_ms``, ``rebalance_timeout_ms`` ...) are
cut to under 100 ms before encoding, so that every answer is due within the limit.
Topic, group and transactional ids are random strings, so the requests do not touch the
clients running alongside.
"""

from __future__ import annotations

import asyncio
import random
import struct
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kafkagen.fuzz.builders import builder
from kafkagen.fuzz.checks import mutate
from kafkagen.fuzz.randomgen import RandomGen
from kafkagen.generated import APIS, header_version, message_type, other_type
from kafkagen.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafkagen.generated.headers import RequestHeader

__all__ = ["RequestStats", "cut_waits", "send_random_requests"]

OUTCOMES = ("answered", "closed", "silent", "hang", "bad answer")
#: Fields whose value is a time the broker may wait; cut short so answers come quickly.
_WAIT_SUFFIXES = ("timeout_ms", "wait_ms", "timeout")
_API_VERSIONS = 18
EXAMPLES = 5


@dataclass
class RequestStats:
    sent: int = 0
    corrupted: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    by_api: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def failures(self) -> int:
        return self.outcomes["hang"] + self.outcomes["bad answer"]

    def note(self, outcome: str, example: str) -> None:
        self.outcomes[outcome] += 1
        if outcome in ("hang", "bad answer"):
            kept = self.examples.setdefault(outcome, [])
            if len(kept) < EXAMPLES:
                kept.append(example)

    def render(self) -> str:
        rate = self.sent / self.seconds if self.seconds else 0.0
        lines = [
            f"random requests: {self.sent:,} in {self.seconds:.0f} s ({rate:,.0f}/s), "
            f"{self.corrupted:,} corrupted, {len(self.by_api)} APIs",
        ]
        lines += [f"    {o:<11} {self.outcomes[o]:>10,}" for o in OUTCOMES]
        for outcome, examples in self.examples.items():
            lines += [f"    {outcome}: {e}" for e in examples]
        return "\n".join(lines)


class _Connection:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.correlation = 0

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    def frame(self, api_key: int, version: int, body: bytes) -> tuple[int, bytes]:
        self.correlation = (self.correlation + 1) & 0x7FFFFFFF
        hv = header_version(api_key, version, "request")
        header = RequestHeader(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=self.correlation,
        )
        if hv >= 1:  # header v0 (ControlledShutdown v0) has no client id
            header.client_id = "kafkagen-random"
        return self.correlation, header.encode(hv) + body

    async def send(self, frame: bytes) -> None:
        assert self.writer is not None
        self.writer.write(struct.pack(">i", len(frame)) + frame)
        await self.writer.drain()

    async def answer(self, correlation: int, limit: float) -> bytes | None:
        """The answer with this correlation id (earlier answers are passed over); None
        on EOF. Raises TimeoutError after ``limit`` seconds."""
        assert self.reader is not None
        async with asyncio.timeout(limit):
            while True:
                try:
                    size = struct.unpack(">i", await self.reader.readexactly(4))[0]
                    data = await self.reader.readexactly(size)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return None
                if len(data) >= 4 and struct.unpack(">i", data[:4])[0] == correlation:
                    return data


def cut_waits(msg: Any, rnd: random.Random) -> None:
    """Cut every wait ``msg`` asks of the broker to under 100 ms."""
    for name in msg.__slots__:
        if name.endswith(_WAIT_SUFFIXES) and isinstance(getattr(msg, name), int):
            setattr(msg, name, rnd.randrange(100))


def _decodes(api_key: int, version: int, data: bytes) -> str:
    """'' if ``data`` (a whole response frame) decodes, else why not."""
    try:
        hv = header_version(api_key, version, "response")
        _, pos = other_type("ResponseHeader").decode_prefix(data, hv)
        message_type(api_key, "response").decode(memoryview(data)[pos:], version)
        return ""
    except Exception as e:  # noqa: BLE001 - reported as the outcome
        if api_key == _API_VERSIONS:  # an unsupported version is answered at v0
            try:
                message_type(api_key, "response").decode(memoryview(data)[4:], 0)
                return ""
            except Exception:  # noqa: BLE001
                pass
        return f"{type(e).__name__}: {e}"


async def _supported(host: str, port: int) -> dict[int, tuple[int, int]]:
    c = _Connection(host, port)
    await c.open()
    try:
        request = ApiVersionsRequest(
            client_software_name="kafkagen-random", client_software_version="1"
        )
        correlation, frame = c.frame(_API_VERSIONS, 3, request.encode(3))
        await c.send(frame)
        data = await c.answer(correlation, 10.0)
        if data is None:
            raise ConnectionError("the broker closed the connection on ApiVersions")
        _, pos = other_type("ResponseHeader").decode_prefix(data, 0)
        r = ApiVersionsResponse.decode(memoryview(data)[pos:], 3)
        return {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    finally:
        c.close()


async def send_random_requests(
    bootstrap: str,
    *,
    count: int,
    seconds: float,
    seed: int = 0,
    connections: int = 8,
    corrupt_every: int = 4,
    limit: float = 10.0,
    names: int = 0,
    names_seed: int | None = None,
) -> RequestStats:
    """Send up to ``count`` random requests within ``seconds`` over ``connections``
    connections to the first broker of ``bootstrap``; one in ``corrupt_every`` is
    corrupted (a flipped bit, a cut, inserted bytes or a bent length).

    With ``names``, every string a request carries (topic, group and transactional ids
    among them) is one of that many random strings drawn once from ``seed``, so what the
    requests create on the broker is bounded and a long run's memory can level off. The
    strings are drawn from ``names_seed`` (default ``seed``): runs that share it name the
    same ids, so several runs together stay within the ``names`` strings too."""
    host, _, port_text = bootstrap.split(",")[0].rpartition(":")
    port = int(port_text)
    supported = await _supported(host, port)
    known = sorted(APIS)
    stats = RequestStats()
    deadline = time.monotonic() + seconds
    started = time.monotonic()

    pool = _name_pool(seed if names_seed is None else names_seed, names) if names else None

    async def worker(i: int) -> None:
        rnd = random.Random(f"{seed}-{i}")
        gen = RandomGen(rnd) if pool is None else _PooledGen(rnd, pool)
        c = _Connection(host, port)
        await c.open()
        try:
            while stats.sent < count and time.monotonic() < deadline:
                api_key = rnd.choice(list(supported) if rnd.random() < 0.95 else known)
                cls = message_type(api_key, "request")
                lo, hi = cls.LOWEST_VERSION, cls.HIGHEST_VERSION
                if api_key in supported and rnd.random() < 0.9:
                    lo, hi = max(lo, supported[api_key][0]), min(hi, supported[api_key][1])
                if lo > hi:
                    continue
                version = rnd.randint(lo, hi)
                gen.reset()
                msg = builder(cls)(gen, version)
                cut_waits(msg, rnd)
                try:
                    body = msg.encode(version)
                except Exception:  # noqa: BLE001 - a value the codec refuses: not sent
                    continue
                correlation, frame = c.frame(api_key, version, body)
                corrupted = rnd.randrange(corrupt_every) == 0
                if corrupted:
                    head = frame[:8]  # keep key, version and correlation id
                    frame = head + mutate(frame[8:], rnd.getrandbits(48))
                    stats.corrupted += 1
                stats.sent += 1
                stats.by_api[cls.__name__] += 1
                what = f"{cls.__name__} v{version}{' corrupted' if corrupted else ''}"
                outcome, why = await _exchange(
                    c, api_key, version, correlation, frame, corrupted, limit
                )
                stats.note(outcome, f"{what}: {why}" if why else what)
                if outcome in ("closed", "hang"):
                    c.close()
                    await c.open()
        finally:
            c.close()

    await asyncio.gather(*(worker(i) for i in range(connections)))
    stats.seconds = time.monotonic() - started
    return stats


def _name_pool(seed: int, size: int) -> list[str]:
    gen = RandomGen(random.Random(f"{seed}-names"))
    return [gen.str() for _ in range(size)]


class _PooledGen(RandomGen):
    """A RandomGen whose strings all come from a fixed pool (the builders then take the
    Python walk, which asks it for each string)."""

    __slots__ = ("pool",)

    def __init__(self, rnd: random.Random, pool: list[str]) -> None:
        super().__init__(rnd)
        self.pool = pool

    def str(self) -> str:
        return self.pool[self.rng.randrange(len(self.pool))]


async def _exchange(
    c: _Connection,
    api_key: int,
    version: int,
    correlation: int,
    frame: bytes,
    corrupted: bool,
    limit: float,
) -> tuple[str, str]:
    """The request's outcome, and what was wrong with a bad answer."""
    try:
        await c.send(frame)
        data = await c.answer(correlation, limit)
    except ConnectionError:
        return "closed", ""
    except TimeoutError:
        return await _probe(c, limit), ""
    if data is None:
        return "closed", ""
    why = "" if corrupted else _decodes(api_key, version, data)
    return ("bad answer", why) if why else ("answered", "")


async def _probe(c: _Connection, limit: float) -> str:
    """After an unanswered request: does the connection still answer anything?"""
    cls = message_type(_API_VERSIONS, "request")
    correlation, frame = c.frame(_API_VERSIONS, 0, cls().encode(0))
    try:
        await c.send(frame)
        data = await c.answer(correlation, limit)
    except ConnectionError:
        return "closed"
    except TimeoutError:
        return "hang"
    return "closed" if data is None else "silent"
