"""The same random requests to kafkagen and to Kafka, their error codes compared.

The scenarios hold chosen paths to Kafka's answers; this samples the rest. Each request is
built by the fuzz's random builders (the waits it asks for cut under 100 ms, so answers
come quickly) for an API and version both brokers advertise, sent to the first broker of
each (requests of a group or a transaction to its coordinator, as a client sends
them), and the two answers are reduced to what a client acts on: whether there was an
answer at all, and the error codes in it (every ``errorCode`` field, as a sorted list, so
the order of a map's entries does not count). Names and ids are random, so the requests
reach nothing the other requests or a user made; both brokers see the same sequence.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkagen.chaos.requests import cut_waits
from kafkagen.fuzz.builders import builder
from kafkagen.fuzz.randomgen import RandomGen
from kafkagen.generated import message_type

from .core import Session, SetupError, Target, choose_versions, new_prefix
from .suite import warm_up

__all__ = ["Sample", "coordinator_key", "error_codes", "run_sample"]

_PRODUCE = 0
EXAMPLES = 3


def error_codes(data: Any) -> list[int]:
    """The distinct ``errorCode`` values in a response's JSON form, sorted. Only which
    codes came back counts, not how often: random requests repeat names, and where Kafka
    reads a request's entries into a map it answers a repeated name once."""
    found: list[int] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k == "errorCode" and isinstance(v, int):
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(data)
    return sorted(set(found))


@dataclass
class Sample:
    sent: int = 0
    agree: int = 0
    #: Requests the broker under test left unanswered while the reference answered.
    unanswered: int = 0
    seconds: float = 0.0
    #: API name -> requests sent / requests whose answers differ.
    by_api: Counter[str] = field(default_factory=Counter)
    differ_by_api: Counter[str] = field(default_factory=Counter)
    #: API name -> a few differences: the version, both answers and the request.
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def differ(self) -> int:
        return self.sent - self.agree

    def render(self) -> str:
        lines = [
            f"random sample: {self.sent:,} requests of {len(self.by_api)} APIs in "
            f"{self.seconds:.0f} s, {self.agree:,} answered alike "
            f"({100 * self.agree / max(self.sent, 1):.1f}%), {self.differ:,} differ, "
            f"{self.unanswered:,} answered by the reference only"
        ]
        for api, n in sorted(self.differ_by_api.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {api:<32} {n:>5} of {self.by_api[api]:>5} differ")
            lines += [f"      {e}" for e in self.examples.get(api, [])]
        return "\n".join(lines)


#: Requests that name a group or a transactional id but are served by a partition's leader
#: or by any broker.
_NOT_COORDINATED = {"ProduceRequest", "ListGroupsRequest", "ListTransactionsRequest"}
_GROUP, _TRANSACTION = 0, 1
_NO_ANSWER = {"outcome": "no answer"}
_INTERNAL_TOPICS = {_GROUP: "__consumer_offsets", _TRANSACTION: "__transaction_state"}


def coordinator_key(request: Any) -> tuple[str, int] | None:
    """The group (0) or transactional id (1) whose coordinator a client sends ``request``
    to: its first one, when it names several. TxnOffsetCommit goes to the group's,
    AddOffsetsToTxn to the transaction's."""
    request_type = type(request).__name__
    if request_type in _NOT_COORDINATED:
        return None
    if request_type == "AddOffsetsToTxnRequest":  # names the group its offsets will go to
        return request.transactional_id, _TRANSACTION
    # Lists first: OffsetFetch names its groups in a list from v8, in group_id before.
    for name, kind in (
        ("groups", _GROUP),
        ("groups_names", _GROUP),
        ("group_ids", _GROUP),
        ("transactional_ids", _TRANSACTION),
        ("group_id", _GROUP),
        ("transactional_id", _TRANSACTION),
    ):
        value = getattr(request, name, None)
        if isinstance(value, list):
            if not value:
                continue
            value = getattr(value[0], "group_id", value[0])
        if isinstance(value, str):
            return value, kind
    return None


async def _node_for(session: Session, request: Any) -> int | None:
    """The coordinator a client would send ``request`` to; else the first broker."""
    key = coordinator_key(request)
    if key is None:
        return None
    try:
        if not key[0]:
            # FindCoordinator refuses an empty id, but a broker asked about one answers as
            # its coordinator would: the leader of the partition it hashes to, the first.
            return await session.leader(_INTERNAL_TOPICS[key[1]], 0)
        return await session.coordinator(*key)
    except (SetupError, ConnectionError, TimeoutError):
        return None  # no coordinator for this key: ask any broker


def _shortened(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"


def _said(session: Session, response: Any) -> Any:
    """What a client acts on: the error codes of the answer, or that none came."""
    last = session.steps[-1].outcome
    return last if response is None else last["errorCodes"]


async def run_sample(
    bootstrap: str,
    reference: str,
    *,
    count: int,
    seconds: float,
    seed: int = 0,
    on_request: Callable[[int], None] | None = None,
) -> Sample:
    """Up to ``count`` random requests, within ``seconds``, to both brokers."""
    a, b = Target(bootstrap), Target(reference)
    sample = Sample()
    started = time.monotonic()
    try:
        await asyncio.gather(a.open(), b.open())
        await asyncio.gather(warm_up(a), warm_up(b))
        chosen = choose_versions([a, b])
        both = {
            k: (max(a.ranges[k][0], b.ranges[k][0]), min(a.ranges[k][1], b.ranges[k][1]))
            for k in a.ranges.keys() & b.ranges.keys()
        }
        apis = sorted(k for k, (lo, hi) in both.items() if lo <= hi)
        prefix = new_prefix()
        sa = Session(a, prefix, chosen, sorted(a.nodes))
        sb = Session(b, prefix, chosen, sorted(b.nodes))
        rnd = random.Random(seed)
        gen = RandomGen(rnd)

        def keep(data: Any) -> Any:
            return {"errorCodes": error_codes(data)}

        while sample.sent < count and time.monotonic() - started < seconds:
            api_key = rnd.choice(apis)
            cls: Any = message_type(api_key, "request")
            lo, hi = both[api_key]
            version = rnd.randint(max(lo, cls.LOWEST_VERSION), min(hi, cls.HIGHEST_VERSION))
            gen.reset()
            request = builder(cls)(gen, version)
            cut_waits(request, rnd)
            if api_key == _PRODUCE and request.acks == 0:
                request.acks = 1  # acks=0 is never answered: nothing to compare
            try:
                request.encode(version)
            except Exception:  # noqa: BLE001 - a value the codec refuses: not sent
                continue
            node_a, node_b = await asyncio.gather(_node_for(sa, request), _node_for(sb, request))
            ra, rb = await asyncio.gather(
                sa.call(request, version, node=node_a, keep=keep),
                sb.call(request, version, node=node_b, keep=keep),
            )
            said_a, said_b = _said(sa, ra), _said(sb, rb)
            name = cls.__name__.removesuffix("Request")
            sample.sent += 1
            sample.by_api[name] += 1
            if said_a == said_b:
                sample.agree += 1
            else:
                sample.unanswered += said_a == _NO_ANSWER
                sample.differ_by_api[name] += 1
                kept = sample.examples.setdefault(name, [])
                if len(kept) < EXAMPLES:
                    sent = json.dumps(request.to_json(version), separators=(",", ":"))
                    kept.append(
                        f"v{version}: kafkagen {said_a}, reference {said_b}\n"
                        f"        request: {_shortened(sent)}"
                    )
            if on_request is not None:
                on_request(sample.sent)
    finally:
        sample.seconds = time.monotonic() - started
        await asyncio.gather(a.close(), b.close())
    return sample
