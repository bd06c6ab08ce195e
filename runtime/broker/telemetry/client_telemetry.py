"""What GetTelemetrySubscriptions answers and what PushTelemetry accepts, per broker.

A client asks for its subscription with the zero uuid first and is given an instance id.
Its subscription joins every client metrics resource whose ``match`` patterns all match
it (instance id, client id, software name and version, source address and port): the
union of their metric prefixes (``*`` in any: all metrics, sent as the one prefix ``*``)
at the shortest of their intervals; with none, no metrics and Kafka's five-minute interval.
The subscription id is a hash of that subscription and the instance id, so it changes
when the resources a client matches change, and a push naming the old id gets
UNKNOWN_SUBSCRIPTION_ID, which sends the client back for the new one.

Each instance is remembered (at most 16384, each for three intervals or a minute since its
last request, then forgotten; at once when the connection that made it closes, as Kafka's
disconnect listener forgets it) with the times of its last request of each kind: asking again
before an interval has passed, or pushing twice within one, answers THROTTLING_QUOTA_EXCEEDED
(the first push after a subscription is always taken: clients add jitter). A push after a
terminating one is INVALID_REQUEST. The receiver, when installed, keeps the latest pushes
(their sizes, and the metric names read from the OTLP payload) for tests and tools to look
at; without it pushes are checked and dropped, as Kafka does without a telemetry reporter.
"""

from __future__ import annotations

import collections
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING
from uuid import UUID

from kafkagen.runtime.compression import CompressionType, decompress
from kafkagen.runtime.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidRequestError,
    TelemetryTooLargeError,
    ThrottlingQuotaExceededError,
    UnknownSubscriptionIdError,
    UnsupportedCompressionTypeError,
)
from kafkagen.runtime.jsonform import uuid_to_json
from kafkagen.runtime.records import crc32c

from ..config.client_metrics import DEFAULT_INTERVAL_MS, Subscription
from ..metadata.cluster_metadata import ClusterMetadata

if TYPE_CHECKING:
    from ..security.listeners import Session

__all__ = ["ACCEPTED_COMPRESSION", "ClientTelemetry", "Granted", "TelemetryPush"]

#: The codecs a push may use, in Kafka's order of preference.
ACCEPTED_COMPRESSION = (
    CompressionType.ZSTD,
    CompressionType.LZ4,
    CompressionType.GZIP,
    CompressionType.SNAPPY,
)
#: Every codec id a push may name (Kafka's accepts what a record batch may use).
_CODECS = frozenset(CompressionType)
_MAX_INSTANCES = 16384
_MIN_EXPIRY_MS = 60_000
#: Pushes the receiver keeps per broker, the oldest dropped first.
_KEPT_PUSHES = 1000
#: Instance ids Kafka never hands out: the zero uuid and the metadata topic's id.
_RESERVED = (UUID(int=0), UUID(int=1))
_NEVER = -(2**62)


@dataclass(frozen=True, slots=True)
class Granted:
    """A GetTelemetrySubscriptions answer."""

    instance_id: UUID
    subscription_id: int
    metrics: list[str]
    interval_ms: int


@dataclass(frozen=True, slots=True)
class TelemetryPush:
    """One push the receiver took."""

    instance_id: str
    client_id: str | None
    subscription_id: int
    compression: int
    #: The payload's size as pushed (compressed) and once decompressed.
    size: int
    decompressed_size: int
    #: Names of the metrics in the OTLP payload, sorted, each once.
    metrics: list[str]
    terminating: bool
    time_ms: int

    def to_json(self) -> dict[str, object]:
        return {
            "client_instance_id": self.instance_id,
            "client_id": self.client_id,
            "subscription_id": self.subscription_id,
            "compression": self.compression,
            "size": self.size,
            "decompressed_size": self.decompressed_size,
            "metrics": self.metrics,
            "terminating": self.terminating,
            "time_ms": self.time_ms,
        }


@dataclass(slots=True)
class _Instance:
    client: dict[str, str | None]
    #: The resources it was evaluated against: a change means evaluating it again.
    resources: object
    granted: Granted
    last_get_ms: int = _NEVER
    last_push_ms: int = _NEVER
    last_request_ms: int = _NEVER
    terminating: bool = False

    @property
    def expiry_ms(self) -> int:
        return max(_MIN_EXPIRY_MS, 3 * self.granted.interval_ms)


@dataclass(slots=True)
class ClientTelemetry:
    """One broker's client instances and received pushes."""

    metadata: ClusterMetadata
    max_bytes: int
    #: Whether pushes are kept (a receiver is installed); else, as Kafka without a
    #: telemetry reporter, they are checked and dropped.
    keep: bool = False
    time_ms: Callable[[], int] = field(default=lambda: int(time.time() * 1000))
    pushes: collections.deque[TelemetryPush] = field(
        default_factory=lambda: collections.deque(maxlen=_KEPT_PUSHES)
    )
    _instances: collections.OrderedDict[UUID, _Instance] = field(
        default_factory=collections.OrderedDict
    )

    def subscription(
        self,
        instance_id: UUID,
        client: Mapping[str, str | None],
        connection: Session | None = None,
    ) -> Granted:
        """GetTelemetrySubscriptions: the subscription of ``instance_id`` (the zero uuid:
        a new instance); ``client`` holds the other match selectors' values, and an
        instance this request makes is forgotten when ``connection`` closes."""
        now = self.time_ms()
        if instance_id in _RESERVED:
            instance_id = self._new_id()
        inst = self._instance(instance_id, client, now, connection)
        if now - max(inst.last_get_ms, inst.last_push_ms) < inst.granted.interval_ms:
            raise ThrottlingQuotaExceededError(
                f"Request from the client [{uuid_to_json(instance_id)}] arrived before the "
                "next push interval time"
            )
        inst.last_get_ms = now
        return inst.granted

    def push(
        self,
        instance_id: UUID,
        client: Mapping[str, str | None],
        subscription_id: int,
        terminating: bool,
        compression: int,
        payload: bytes,
        connection: Session | None = None,
    ) -> None:
        """PushTelemetry: take ``payload`` or raise the error Kafka answers."""
        name = uuid_to_json(instance_id)
        if instance_id in _RESERVED:
            raise InvalidRequestError(
                f"Invalid request from the client [{name}], invalid client instance id"
            )
        now = self.time_ms()
        inst = self._instance(instance_id, client, now, connection)
        try:
            self._check_push(inst, name, subscription_id, terminating, compression, payload, now)
        finally:
            inst.terminating = terminating
        if not payload or not self.keep:
            return
        try:
            data = decompress(compression, payload) if compression else payload
            metrics = sorted(set(_metric_names(data)))
        except (ValueError, CorruptRecordError):
            # Kafka answers so when its receiver cannot take the payload.
            raise InvalidRecordError(f"the metrics pushed by {name} cannot be read") from None
        self.pushes.append(
            TelemetryPush(
                name,
                client.get("client_id"),
                subscription_id,
                compression,
                len(payload),
                len(data),
                metrics,
                terminating,
                now,
            )
        )

    def _check_push(
        self,
        inst: _Instance,
        name: str,
        subscription_id: int,
        terminating: bool,
        compression: int,
        payload: bytes,
        now: int,
    ) -> None:
        if inst.terminating:
            raise InvalidRequestError(
                f"Client [{name}] sent the previous request with state terminating to TRUE, "
                "can not accept any requests after that"
            )
        # The first push after a subscription is taken whenever it comes: clients jitter.
        if inst.last_get_ms > inst.last_push_ms or now - inst.last_push_ms >= (
            inst.granted.interval_ms
        ):
            inst.last_push_ms = now
        elif not terminating:
            raise ThrottlingQuotaExceededError(
                f"Request from the client [{name}] arrived before the next push interval time"
            )
        if subscription_id != inst.granted.subscription_id:
            raise UnknownSubscriptionIdError(
                f"Unknown client subscription id for the client [{name}]"
            )
        if compression not in _CODECS:
            raise UnsupportedCompressionTypeError(
                f"Unknown compression type [{compression}] is received in telemetry request "
                f"from [{name}]"
            )
        if len(payload) > self.max_bytes:
            raise TelemetryTooLargeError(
                f"Telemetry request from [{name}] is larger than the maximum allowed size "
                f"[{self.max_bytes}]"
            )

    def _new_id(self) -> UUID:
        while True:
            candidate = uuid.uuid4()
            if candidate not in self._instances and candidate not in _RESERVED:
                return candidate

    def _instance(
        self,
        instance_id: UUID,
        client: Mapping[str, str | None],
        now: int,
        connection: Session | None,
    ) -> _Instance:
        """The remembered instance, evaluated again when the resources changed; a new one
        (with this request's selectors) when it was never seen or has expired, which
        ``connection`` takes with it when it closes (its latest one only, as in Kafka)."""
        resources = self.metadata.client_metrics
        version = tuple(sorted((n, tuple(sorted(c.items()))) for n, c in resources.items()))
        inst = self._instances.get(instance_id)
        if inst is not None and now - inst.last_request_ms >= inst.expiry_ms:
            inst = None
        if inst is None:
            selectors = {**client, "client_instance_id": uuid_to_json(instance_id)}
            inst = _Instance(selectors, version, _grant(instance_id, selectors, resources))
        elif inst.resources != version:
            inst = _Instance(inst.client, version, _grant(instance_id, inst.client, resources))
        if connection is not None and self._instances.get(instance_id) is not inst:
            connection.on_close("client-telemetry", partial(self.forget, instance_id))
        inst.last_request_ms = now
        self._instances[instance_id] = inst
        self._instances.move_to_end(instance_id)
        while len(self._instances) > _MAX_INSTANCES:
            self._instances.popitem(last=False)
        self._forget_expired(now)
        return inst

    def forget(self, instance_id: UUID) -> None:
        """Drop ``instance_id``'s instance (its connection closed)."""
        self._instances.pop(instance_id, None)

    def forget_expired(self) -> None:
        """Drop the instances whose expiry passed: run every few seconds (Kafka removes
        each at its own expiry), so a broker no client asks any more lets them go."""
        self._forget_expired(self.time_ms())

    def _forget_expired(self, now: int) -> None:
        """Drop the instances whose expiry passed, as Kafka's expiration timer removes
        them from its cache: the dict runs from the least recently asked, so it stops at
        the first one still alive (one asked later expires no sooner unless its interval
        is shorter; it goes once the ones before it have)."""
        instances = self._instances
        while instances:
            oldest = next(iter(instances.values()))
            if now - oldest.last_request_ms < oldest.expiry_ms:
                return
            instances.popitem(last=False)


def _grant(
    instance_id: UUID, client: Mapping[str, str | None], resources: Mapping[str, Mapping[str, str]]
) -> Granted:
    metrics: set[str] = set()
    interval = DEFAULT_INTERVAL_MS
    for configs in resources.values():
        sub = Subscription.of(configs)
        if sub.matches(client):
            metrics.update(sub.metrics)
            interval = min(interval, sub.interval_ms)
    if "*" in metrics:
        metrics = {"*"}
    chosen = sorted(metrics)
    # A hash of the subscription and the instance: any change gives another id.
    digest = crc32c(f"[{', '.join(chosen)}]{interval}".encode()) ^ _java_hash(instance_id)
    return Granted(instance_id, _int32(digest), chosen, interval)


def _java_hash(u: UUID) -> int:
    """The instance id folded to 32 bits, as Kafka's Uuid hashes it."""
    folded = (u.int >> 64) ^ (u.int & (2**64 - 1))
    return ((folded >> 32) ^ folded) & 0xFFFFFFFF


def _int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - 2**32 if n >= 2**31 else n


# -- OTLP ------------------------------------------------------------------------------
# A push is an OTLP MetricsData message (protobuf): resource_metrics (field 1), each with
# scope_metrics (2), each with metrics (2), each with its name (1). Only the names are read.

_PATH = (1, 2, 2, 1)


def _metric_names(data: bytes) -> Iterator[str]:
    def walk(buf: memoryview, depth: int) -> Iterator[str]:
        for number, value in _fields(buf):
            if number != _PATH[depth]:
                continue
            if depth == len(_PATH) - 1:
                yield bytes(value).decode("utf-8")
            else:
                yield from walk(value, depth + 1)

    return walk(memoryview(data), 0)


def _fields(buf: memoryview) -> Iterator[tuple[int, memoryview]]:
    """(field number, payload) of each length-delimited field; other wire types skipped.
    A truncated or malformed message raises ValueError."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = _varint(buf, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > end:
                raise ValueError("a field runs past the end of the message")
            yield number, buf[pos : pos + size]
            pos += size
        else:
            raise ValueError(f"protobuf wire type {wire} is not read")
    if pos != end:
        raise ValueError("a field runs past the end of the message")


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("a truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
