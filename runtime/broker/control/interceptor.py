"""Fault injection: rules that stand in front of handler dispatch, and broker controls.

`Control` wraps the server's `api.Dispatch` (the cluster installs `Control.dispatch` on
every broker), so no handler knows it exists. A `Rule` matches requests by API key and
optionally broker, topic, partition and client id, and then, after an optional delay and
optionally held until another request arrives:

- ``error``: answers with that error code. On Produce, Fetch, ListOffsets and
  OffsetForLeaderEpoch the code goes to the matched partitions only (every partition when
  the rule names no topic) and the handler serves the others; elsewhere it is the
  response's top-level error code.
- ``response``: answers with that whole response (a message, or its Kafka JSON form at
  the request's version).
- ``drop``: never answers (later requests on the connection are still answered).
- ``close``: closes the connection.
- none of them: the handler answers (a rule that only delays, holds or records).

A rule fires ``times`` times (None: until removed). Every request and its answer can be
recorded for assertions (`records`). The broker controls (stop and start a broker, move a
partition's leader or a group's coordinator, change the versions a broker advertises)
reach the cluster through `ClusterOps`, which the cluster implements.
Everything here runs on the brokers' event loop.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafkagen.generated import message_type
from kafkagen.runtime.errors import ERRORS
from kafkagen.runtime.message import Message

from ..api import (
    HANDLERS,
    ApiHandler,
    Dispatch,
    RequestContext,
    Responder,
    ServedApis,
)
from ..config.definitions import parse_version_caps
from ..metadata.cluster_metadata import ClusterMetadata
from ..release_presets import preset_ranges
from ..telemetry.client_telemetry import ClientTelemetry, TelemetryPush
from ..types import OFFSETS_TOPIC, hash_partition
from .faults import Faults

__all__ = [
    "ClusterOps",
    "Control",
    "ControlError",
    "Match",
    "Record",
    "Rule",
    "api_key_of",
    "error_code_of",
]


class ControlError(ValueError):
    """A rule or a control call that cannot be carried out; the text says why."""


class ClusterOps(Protocol):
    """What the controls need of the cluster."""

    metadata: ClusterMetadata
    faults: Faults

    def served_apis(self, node_id: int) -> ServedApis: ...

    def telemetry_of(self, node_id: int) -> ClientTelemetry: ...

    async def pause_broker(self, node_id: int) -> None: ...

    async def resume_broker(self, node_id: int) -> None: ...


def api_key_of(api: int | str) -> int:
    """An API key from its number or its name (``"Produce"``, ``"JoinGroup"``)."""
    if isinstance(api, int) or (isinstance(api, str) and api.isdigit()):
        key = int(api)
        if key not in HANDLERS:
            raise ControlError(f"API key {key} is not served")
        return key
    for key, handler in HANDLERS.items():
        if handler.name.lower() == str(api).lower():
            return key
    raise ControlError(f"unknown API {api!r}; served: {', '.join(sorted(_api_names()))}")


def _api_names() -> list[str]:
    return [h.name for h in HANDLERS.values()]


def error_code_of(error: int | str) -> int:
    """An error code from its number or Kafka's name (``"NOT_LEADER_OR_FOLLOWER"``)."""
    if isinstance(error, int) or (isinstance(error, str) and error.lstrip("-").isdigit()):
        code = int(error)
        if code not in ERRORS:
            raise ControlError(f"error code {code} is not one Kafka defines")
        return code
    for code, cls in ERRORS.items():
        if cls.name == str(error).upper():
            return code
    raise ControlError(f"unknown error name {error!r}")


@dataclass(frozen=True, slots=True)
class Match:
    """Which requests a rule applies to; None matches anything."""

    api_key: int | None = None
    broker: int | None = None
    topic: str | None = None
    partition: int | None = None
    client_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in _fields(self).items() if v is not None}


def _fields(m: Match) -> dict[str, Any]:
    return {
        "api_key": m.api_key,
        "broker": m.broker,
        "topic": m.topic,
        "partition": m.partition,
        "client_id": m.client_id,
    }


@dataclass(slots=True)
class Rule:
    """What to do with the requests ``match`` selects (see the module text)."""

    match: Match
    error: int | None = None
    response: Message | dict[str, Any] | None = None
    drop: bool = False
    close: bool = False
    delay_ms: int = 0
    times: int | None = 1
    hold_until: Match | None = None
    id: int = 0
    #: How many requests the rule has acted on so far.
    fired: int = 0

    def check(self) -> None:
        actions = [self.error is not None, self.response is not None, self.drop, self.close]
        if sum(actions) > 1:
            raise ControlError("a rule takes at most one of error, response, drop and close")
        if self.times is not None and self.times < 1:
            raise ControlError(
                f"times must be at least 1 (or None: until removed), not {self.times}"
            )
        if self.delay_ms < 0:
            raise ControlError(f"delay_ms must not be negative, not {self.delay_ms}")
        if self.match.api_key is None and (self.error is not None or self.response is not None):
            raise ControlError("an error or response rule must name the API it answers")
        if self.match.partition is not None and self.match.topic is None:
            raise ControlError("a partition matcher needs a topic")
        if self.error is not None and self.match.api_key not in _PARTITIONED:
            assert self.match.api_key is not None
            resp = message_type(self.match.api_key, "response")
            if "error_code" not in resp.__slots__:
                raise ControlError(
                    f"{resp.__name__} has no top-level error code: give a whole response"
                )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "match": self.match.to_json()}
        if self.error is not None:
            out["error"] = self.error
        if isinstance(self.response, dict):
            out["response"] = self.response
        elif self.response is not None:
            out["response"] = type(self.response).__name__
        if self.drop:
            out["drop"] = True
        if self.close:
            out["close"] = True
        out.update(delay_ms=self.delay_ms, times=self.times, fired=self.fired)
        if self.hold_until is not None:
            out["hold_until"] = self.hold_until.to_json()
        return out


@dataclass(slots=True)
class Record:
    """A request a broker received and the answer it gave (None: none yet, or none)."""

    broker: int
    api_key: int
    api_version: int
    client_id: str | None
    correlation_id: int
    request: Message | None
    response: Message | None = None
    #: What happened: "answered", "error", "response", "dropped", "closed" or "pending".
    outcome: str = "pending"
    rule: int | None = None

    def to_json(self) -> dict[str, Any]:
        v = self.api_version
        return {
            "broker": self.broker,
            "api_key": self.api_key,
            "api": HANDLERS[self.api_key].name,
            "api_version": v,
            "client_id": self.client_id,
            "correlation_id": self.correlation_id,
            "request": _json(self.request, v),
            "response": _json(self.response, v),
            "outcome": self.outcome,
            "rule": self.rule,
        }


def _json(msg: Message | None, version: int) -> Any:
    return None if msg is None else _plain(msg.to_json(version))


def _plain(value: Any) -> Any:
    # Record batches are memoryviews in the JSON form; JSON over HTTP wants text.
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return value


# -- the four APIs with per-partition errors --------------------------------------------


@dataclass(frozen=True, slots=True)
class _Shape:
    """Where topics and partitions sit in a request and its response."""

    req_topics: str
    req_name: str
    req_parts: str
    req_index: str
    resp_topics: str
    resp_topic_cls: str
    resp_name: str
    resp_parts: str
    resp_part_cls: str
    resp_index: str
    #: What Kafka writes beside an error code in a failed partition (where the default differs).
    on_error: tuple[tuple[str, int], ...] = ()


_PARTITIONED: dict[int, _Shape] = {
    0: _Shape(
        "topic_data", "name", "partition_data", "index",
        "responses", "TopicProduceResponse", "name",
        "partition_responses", "PartitionProduceResponse", "index", (("base_offset", -1),),
    ),
    1: _Shape(
        "topics", "topic", "partitions", "partition",
        "responses", "FetchableTopicResponse", "topic",
        "partitions", "PartitionData", "partition_index", (("high_watermark", -1),),
    ),
    2: _Shape(
        "topics", "name", "partitions", "partition_index",
        "topics", "ListOffsetsTopicResponse", "name",
        "partitions", "ListOffsetsPartitionResponse", "partition_index",
    ),
    23: _Shape(
        "topics", "topic", "partitions", "partition",
        "topics", "OffsetForLeaderTopicResult", "topic",
        "partitions", "EpochEndOffset", "partition",
    ),
}  # fmt: skip


def _topic_name(topic: Any, shape: _Shape, md: ClusterMetadata) -> str:
    name = getattr(topic, shape.req_name, "") or ""
    topic_id = getattr(topic, "topic_id", None)
    if not name and isinstance(topic_id, uuid.UUID):
        name = md.topic_names.get(topic_id, "")
    return str(name)


def _partitions(request: Message, shape: _Shape, md: ClusterMetadata) -> list[tuple[str, int]]:
    return [
        (_topic_name(t, shape, md), getattr(p, shape.req_index))
        for t in getattr(request, shape.req_topics)
        for p in getattr(t, shape.req_parts)
    ]


def _group_id(request: Message | None) -> str | None:
    gid = getattr(request, "group_id", None)
    return gid if isinstance(gid, str) else None


class _Watch:
    """A responder that sees the answer first (to record it, or to add error entries)."""

    __slots__ = ("inner", "on_send", "on_end")

    def __init__(
        self,
        inner: Responder,
        on_send: Callable[[Message], Message],
        on_end: Callable[[str], None],
    ) -> None:
        self.inner = inner
        self.on_send = on_send
        self.on_end = on_end

    def send(self, response: Message, version: int) -> None:
        self.inner.send(self.on_send(response), version)

    def send_nothing(self) -> None:
        self.on_end("answered")
        self.inner.send_nothing()

    def close(self, reason: str) -> None:
        self.on_end("closed")
        self.inner.close(reason)

    def gone(self) -> bool:
        return self.inner.gone()


@dataclass(slots=True)
class _Held:
    release: Match
    go: Callable[[], None]


@dataclass(slots=True)
class _Seen:
    """One request as the matchers see it."""

    broker: int
    api_key: int
    client_id: str | None
    partitions: list[tuple[str, int]] = field(default_factory=list)
    topics: set[str] = field(default_factory=set)


class Control:
    """The cluster's fault-injection rules, request records and broker controls."""

    def __init__(self, ops: ClusterOps, inner: Dispatch) -> None:
        self._ops = ops
        self._inner = inner
        self.rules: list[Rule] = []
        self.records: list[Record] = []
        #: Record requests and responses (off by default: records keep request bodies
        #: alive; ``max_records`` bounds the list).
        self.recording = False
        self.max_records = 10_000
        self._ids = itertools.count(1)
        self._held: list[_Held] = []
        #: Broker -> its (preset, caps, floors) before the first `set_versions`, for `reset`.
        self._original_caps: dict[int, tuple[str | None, dict[int, int], dict[int, int]]] = {}
        self._stopped: set[int] = set()
        #: The in-process network, disk and clock faults (`Faults`): cut brokers off,
        #: slow them, skew their clocks, heal.
        self.faults = ops.faults

    # -- rules ------------------------------------------------------------------------

    def add_rule(self, rule: Rule) -> Rule:
        rule.check()
        rule.id = next(self._ids)
        self.rules.append(rule)
        return rule

    def add(
        self,
        api: int | str | None = None,
        *,
        broker: int | None = None,
        topic: str | None = None,
        partition: int | None = None,
        client_id: str | None = None,
        error: int | str | None = None,
        response: Message | dict[str, Any] | None = None,
        drop: bool = False,
        close: bool = False,
        delay_ms: int = 0,
        times: int | None = 1,
        hold_until: Match | Mapping[str, Any] | None = None,
    ) -> Rule:
        """Add a rule from keywords (API and error by number or name); return it."""
        match = Match(None if api is None else api_key_of(api), broker, topic, partition, client_id)
        if hold_until is not None and not isinstance(hold_until, Match):
            hold_until = match_from_json(hold_until)
        return self.add_rule(
            Rule(
                match,
                None if error is None else error_code_of(error),
                response,
                drop,
                close,
                delay_ms,
                times,
                hold_until,
            )
        )

    def remove(self, rule_id: int) -> None:
        for i, r in enumerate(self.rules):
            if r.id == rule_id:
                del self.rules[i]
                return
        raise ControlError(f"there is no rule {rule_id}")

    def clear(self) -> None:
        """Remove every rule and release every held request."""
        self.rules.clear()
        held, self._held = self._held, []
        for h in held:
            h.go()

    # -- the interceptor --------------------------------------------------------------

    def dispatch(self, handler: ApiHandler, ctx: RequestContext, request: Message | None) -> None:
        """What the server calls instead of `api.dispatch`."""
        delay_ms = self.faults.client_delay_ms(ctx.broker.node_id, ctx.api_key)
        if delay_ms is None:  # cut off from clients: the request arrives with the heal
            self.faults.deliver_at_heal(lambda: self._deliver_late(handler, ctx, request))
        elif delay_ms:
            loop = asyncio.get_running_loop()
            loop.call_later(delay_ms / 1000, self._dispatch, handler, ctx, request)
        else:
            self._dispatch(handler, ctx, request)

    def _deliver_late(
        self, handler: ApiHandler, ctx: RequestContext, request: Message | None
    ) -> None:
        if not ctx.responder.gone():  # else the client gave up on it meanwhile
            self._dispatch(handler, ctx, request)

    def _dispatch(self, handler: ApiHandler, ctx: RequestContext, request: Message | None) -> None:
        rule = None
        if self.rules or self._held:  # with neither, requests go straight through
            seen = self._seen(ctx, request)
            self._release(seen)
            rule = self._first_rule(seen)
        record = self._record(ctx, request, rule)
        self._watch(ctx, record, rule)
        if rule is None:
            self._inner(handler, ctx, request)
            return

        def act() -> None:
            self._act(rule, handler, ctx, request, record)

        go = act
        if rule.delay_ms:
            loop = asyncio.get_running_loop()

            def go() -> None:
                loop.call_later(rule.delay_ms / 1000, act)

        if rule.hold_until is not None:
            self._held.append(_Held(rule.hold_until, go))
        else:
            go()

    def _seen(self, ctx: RequestContext, request: Message | None) -> _Seen:
        seen = _Seen(ctx.broker.node_id, ctx.api_key, ctx.client_id)
        shape = _PARTITIONED.get(ctx.api_key)
        if request is None:
            return seen
        if shape is not None:
            seen.partitions = _partitions(request, shape, self._ops.metadata)
            seen.topics = {t for t, _ in seen.partitions}
        else:
            for t in getattr(request, "topics", None) or ():
                name = getattr(t, "name", None)
                if isinstance(name, str):
                    seen.topics.add(name)
        return seen

    def _matches(self, m: Match, seen: _Seen) -> bool:
        if m.api_key is not None and m.api_key != seen.api_key:
            return False
        if m.broker is not None and m.broker != seen.broker:
            return False
        if m.client_id is not None and m.client_id != seen.client_id:
            return False
        if m.topic is not None:
            if m.partition is not None:
                return (m.topic, m.partition) in seen.partitions
            return m.topic in seen.topics
        return True

    def _first_rule(self, seen: _Seen) -> Rule | None:
        for rule in self.rules:
            if self._matches(rule.match, seen):
                rule.fired += 1
                if rule.times is not None and rule.fired >= rule.times:
                    self.rules.remove(rule)
                return rule
        return None

    def _release(self, seen: _Seen) -> None:
        ready = [h for h in self._held if self._matches(h.release, seen)]
        if ready:
            self._held = [h for h in self._held if h not in ready]
            loop = asyncio.get_running_loop()
            for h in ready:
                # After the releasing request is dispatched: "held until it arrived".
                loop.call_soon(h.go)

    def _act(
        self,
        rule: Rule,
        handler: ApiHandler,
        ctx: RequestContext,
        request: Message | None,
        record: Record | None,
    ) -> None:
        if record is not None:
            record.rule = rule.id
        if rule.drop:
            if record is not None:
                record.outcome = "dropped"
            ctx.responder.send_nothing()
        elif rule.close:
            ctx.close_connection(f"closed by control rule {rule.id}")
        elif rule.response is not None:
            response = rule.response
            if isinstance(response, dict):
                cls = message_type(ctx.api_key, "response")
                response = cls.from_json(response, ctx.api_version)
            ctx.respond(response)
        elif rule.error is not None:
            self._answer_error(rule, handler, ctx, request)
        else:
            self._inner(handler, ctx, request)

    def _answer_error(
        self, rule: Rule, handler: ApiHandler, ctx: RequestContext, request: Message | None
    ) -> None:
        assert rule.error is not None
        cls = message_type(ctx.api_key, "response")
        shape = _PARTITIONED.get(ctx.api_key)
        if shape is None or request is None:
            response = cls()
            response.error_code = rule.error  # type: ignore[attr-defined]
            ctx.respond(response)
            return
        md = self._ops.metadata
        m = rule.match
        failed: list[tuple[Any, list[Any]]] = []
        for t in getattr(request, shape.req_topics):
            name = _topic_name(t, shape, md)
            if m.topic is not None and m.topic != name:
                continue
            parts = getattr(t, shape.req_parts)
            hit = [p for p in parts if m.partition in (None, getattr(p, shape.req_index))]
            if hit:
                failed.append((t, hit))
                setattr(t, shape.req_parts, [p for p in parts if p not in hit])
        topics_cls = getattr(cls, shape.resp_topic_cls)
        parts_cls = getattr(cls, shape.resp_part_cls)
        entries = []
        for t, hit in failed:
            entry = topics_cls(**{shape.resp_name: getattr(t, shape.req_name)})
            if hasattr(t, "topic_id") and "topic_id" in topics_cls.__slots__:
                entry.topic_id = t.topic_id
            setattr(
                entry,
                shape.resp_parts,
                [
                    parts_cls(
                        **{shape.resp_index: getattr(p, shape.req_index)},
                        error_code=rule.error,
                        **dict(shape.on_error),
                    )
                    for p in hit
                ],
            )
            entries.append(entry)

        def add_errors(response: Message) -> Message:
            # Into the handler's entry for the same topic where there is one, as one answer.
            topics = getattr(response, shape.resp_topics)
            for entry in entries:
                same = [
                    t
                    for t in topics
                    if getattr(t, shape.resp_name) == getattr(entry, shape.resp_name)
                    and getattr(t, "topic_id", None) == getattr(entry, "topic_id", None)
                ]
                if same:
                    getattr(same[0], shape.resp_parts).extend(getattr(entry, shape.resp_parts))
                else:
                    topics.append(entry)
            return response

        left = [t for t in getattr(request, shape.req_topics) if getattr(t, shape.req_parts)]
        setattr(request, shape.req_topics, left)
        acks = getattr(request, "acks", 1)
        if left:
            ctx.responder = _Watch(ctx.responder, add_errors, lambda _: None)
            self._inner(handler, ctx, request)
        elif ctx.api_key == 0 and acks == 0:
            ctx.respond_nothing()
        else:
            ctx.respond(add_errors(cls()))

    # -- records ----------------------------------------------------------------------

    def _record(
        self, ctx: RequestContext, request: Message | None, rule: Rule | None
    ) -> Record | None:
        if not self.recording:
            return None
        record = Record(
            ctx.broker.node_id,
            ctx.api_key,
            ctx.api_version,
            ctx.client_id,
            ctx.correlation_id,
            request,
            rule=None if rule is None else rule.id,
        )
        self.records.append(record)
        if len(self.records) > self.max_records:
            del self.records[: len(self.records) - self.max_records]
        return record

    def _watch(
        self,
        ctx: RequestContext,
        record: Record | None,
        rule: Rule | None,
    ) -> None:
        if record is None:
            return

        def sent(response: Message) -> Message:
            record.response = response
            if record.outcome == "pending":
                record.outcome = "answered" if record.rule is None else _outcome(rule)
            return response

        def ended(outcome: str) -> None:
            if record.outcome == "pending":
                record.outcome = outcome

        ctx.responder = _Watch(ctx.responder, sent, ended)

    def find(self, api: int | str | None = None, *, broker: int | None = None) -> list[Record]:
        """The records of one API (and broker), oldest first."""
        key = None if api is None else api_key_of(api)
        return [
            r
            for r in self.records
            if (key is None or r.api_key == key) and (broker is None or r.broker == broker)
        ]

    def telemetry(self, broker: int | None = None) -> list[tuple[int, TelemetryPush]]:
        """(broker, push) of the client telemetry pushes each broker (or one) kept, oldest
        first per broker (``kafkagen.client.telemetry.enable``)."""
        nodes = sorted(self._ops.metadata.brokers) if broker is None else [broker]
        return [(n, push) for n in nodes for push in self._ops.telemetry_of(n).pushes]

    # -- broker controls --------------------------------------------------------------

    async def stop_broker(self, node_id: int) -> None:
        """The broker goes away: connections drop, its leaderships move."""
        await self._ops.pause_broker(node_id)
        self._stopped.add(node_id)

    async def start_broker(self, node_id: int) -> None:
        await self._ops.resume_broker(node_id)
        self._stopped.discard(node_id)

    async def reset(self) -> None:
        """Undo every control: rules (held requests go on), records, faults, stopped
        brokers, version caps. Moved leaders and coordinators stay where they are."""
        self.clear()
        self.faults.heal()
        self.records.clear()
        self.recording = False
        for node_id, (preset, caps, floors) in self._original_caps.items():
            apis = self._ops.served_apis(node_id)
            apis.preset, apis.version_caps, apis.version_floors = preset, caps, floors
        self._original_caps.clear()
        for node_id in sorted(self._stopped):
            await self.start_broker(node_id)

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        """Make ``node_id`` (an alive in-sync replica) the partition's leader."""
        try:
            self._ops.metadata.move_leader(topic, partition, node_id)
        except Exception as e:
            raise ControlError(f"cannot move {topic}-{partition} to broker {node_id}: {e}") from e

    def coordinator_of(self, group_id: str) -> tuple[int, int]:
        """(partition of ``__consumer_offsets``, broker) coordinating ``group_id``."""
        md = self._ops.metadata
        info = md.topic(OFFSETS_TOPIC)
        if info is None:
            raise ControlError(f"{OFFSETS_TOPIC} does not exist yet: no group has a coordinator")
        index = hash_partition(group_id, len(info.partitions))
        return index, info.partitions[index].leader

    def move_coordinator(self, group_id: str, node_id: int) -> None:
        """Make ``node_id`` the group's coordinator (it must be an in-sync replica of the
        group's ``__consumer_offsets`` partition: a leader move, as in Kafka)."""
        index, _ = self.coordinator_of(group_id)
        self.move_leader(OFFSETS_TOPIC, index, node_id)

    def set_versions(
        self,
        node_id: int,
        caps: Mapping[int | str, int] | str | None = None,
        *,
        preset: str | None = None,
    ) -> None:
        """Set what broker ``node_id`` advertises and accepts (nothing given: no caps).

        ``preset`` plays a Kafka release (``"2.8"``: `release_presets`): exactly its range
        of every API served, none of an API it lacked; ``caps`` maps APIs
        (key or name) to their highest version, or is the text form of
        ``kafkagen.api.version.max`` (``"Metadata:12,Fetch:11"``); given both, the lower
        cap wins. Clients see the change on their next ApiVersions, so usually on a new
        connection; a request above a cap closes its connection, as with a real old broker.
        """
        apis = self._ops.served_apis(node_id)
        try:
            if isinstance(caps, str):
                explicit = parse_version_caps(caps)
            else:
                explicit = {api_key_of(k): int(v) for k, v in (caps or {}).items()}
            if preset is not None:
                preset_ranges(preset)  # names a release there is a preset for
        except ValueError as e:
            raise ControlError(str(e)) from e
        self._original_caps.setdefault(
            node_id, (apis.preset, dict(apis.version_caps), dict(apis.version_floors))
        )
        apis.play(preset, explicit)

    def versions(self, node_id: int) -> dict[int, tuple[int, int]]:
        """API key -> (min, max) broker ``node_id`` advertises now."""
        return self._ops.served_apis(node_id).served_versions()

    def played(self, node_id: int) -> tuple[str | None, dict[int, list[tuple[int, int]]]]:
        """(release broker ``node_id`` plays or None, API key -> the version ranges of
        that release it cannot advertise)."""
        apis = self._ops.served_apis(node_id)
        return apis.preset, apis.unadvertised()


def _outcome(rule: Rule | None) -> str:
    if rule is None:
        return "answered"
    if rule.error is not None:
        return "error"
    if rule.response is not None:
        return "response"
    return "answered"


def match_from_json(obj: Mapping[str, Any]) -> Match:
    """A `Match` from its JSON form (``api`` by key or name, or ``api_key``)."""
    known = {"api", "api_key", "broker", "topic", "partition", "client_id"}
    extra = set(obj) - known
    if extra:
        raise ControlError(f"unknown matcher field(s) {sorted(extra)}; known: {sorted(known)}")
    api = obj.get("api", obj.get("api_key"))
    return Match(
        None if api is None else api_key_of(api),
        _opt_int(obj, "broker"),
        obj.get("topic"),
        _opt_int(obj, "partition"),
        obj.get("client_id"),
    )


def _opt_int(obj: Mapping[str, Any], key: str) -> int | None:
    v = obj.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ControlError(f"{key} must be an integer, not {v!r}")
    return v
