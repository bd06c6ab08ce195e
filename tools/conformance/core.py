"""Scenarios, the sessions that run them against one broker, and the comparison of two runs.

A scenario is a short async function that sends requests through a `Session`. Each
recorded step (`Session.call`, `Session.raw`) keeps the outcome: the response in Kafka's
JSON form, or that the broker closed the connection or did not answer. Set-up requests
(`Session.setup`, `create_topic`, ...) are not compared. The suite runs each scenario
against both brokers at once, normalises the steps (`normalise.Normaliser`) and reports
the first difference by path.

Names (topics, groups, transactional ids) start with the run's prefix and the scenario's
own part, so scenarios never see each other's state and a run can repeat on the same
brokers.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import struct
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from kafkagen.generated import header_version, message_type
from kafkagen.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafkagen.generated.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafkagen.generated.headers import RequestHeader
from kafkagen.generated.metadata import MetadataRequest
from kafkagen.generated.produce import ProduceRequest
from kafkagen.generated.update_features import UpdateFeaturesRequest
from kafkagen.runtime.client.client import handshake
from kafkagen.runtime.client.connection import Connection
from kafkagen.runtime.errors import DecodeError, UnsupportedVersionError
from kafkagen.runtime.message import Message

from .normalise import Normaliser, first_difference

__all__ = [
    "SCENARIOS",
    "Result",
    "Scenario",
    "Session",
    "SetupError",
    "Target",
    "compare_runs",
    "scenario",
]

#: How long one request may wait for its answer.
REQUEST_TIMEOUT_S = 15.0
#: How long a request that should be refused waits for the broker to close the connection.
CLOSE_WAIT_S = 5.0
#: How long a request answered COORDINATOR_LOAD_IN_PROGRESS is retried before it counts.
LOADING_WAIT_S = 20.0
COORDINATOR_LOAD_IN_PROGRESS = 14


class SetupError(RuntimeError):
    """A scenario's set-up did not reach the state the scenario starts from."""


# ---------------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class Scenario:
    name: str  #: ``API/what``, unique
    api: str
    about: str
    run: Callable[[Session], Awaitable[None]]
    #: Brokers the scenario needs (requests to a non-leader need two).
    brokers: int = 1


SCENARIOS: dict[str, Scenario] = {}


def scenario(
    api: str, what: str, about: str, *, brokers: int = 1
) -> Callable[[Callable[[Session], Awaitable[None]]], Callable[[Session], Awaitable[None]]]:
    """Register the decorated function as the scenario ``api/what``."""

    def register(fn: Callable[[Session], Awaitable[None]]) -> Callable[[Session], Awaitable[None]]:
        add(Scenario(f"{api}/{what}", api, about, fn, brokers))
        return fn

    return register


def add(sc: Scenario) -> None:
    if sc.name in SCENARIOS:
        raise ValueError(f"scenario {sc.name} is defined twice")
    SCENARIOS[sc.name] = sc


# ---------------------------------------------------------------------- one broker


class Target:
    """A broker cluster by its bootstrap address: its nodes, versions and connections."""

    def __init__(self, bootstrap: str) -> None:
        first = bootstrap.split(",")[0].strip()
        host, sep, port = first.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"bootstrap address {bootstrap!r}: expected HOST:PORT[,HOST:PORT...]")
        self.bootstrap = bootstrap
        self.host, self.port = host.strip("[]"), int(port)
        #: node id -> (host, port), from Metadata.
        self.nodes: dict[int, tuple[str, int]] = {}
        #: api key -> (lowest, highest) version the broker advertises.
        self.ranges: dict[int, tuple[int, int]] = {}
        self._conns: dict[tuple[str, int], Connection] = {}

    async def open(self) -> Target:
        conn = await self.connection_to(self.host, self.port)
        versions = await handshake(conn, timeout=REQUEST_TIMEOUT_S)
        self.ranges = {k: (r.min, r.max) for k, r in versions.ranges.items()}
        version = min(self.ranges.get(3, (0, 9))[1], 12)
        md: Any = await conn.request(
            MetadataRequest(topics=[], allow_auto_topic_creation=False),
            version,
            timeout=REQUEST_TIMEOUT_S,
        )
        self.nodes = {b.node_id: (b.host, b.port) for b in md.brokers}
        return self

    async def connection_to(self, host: str, port: int) -> Connection:
        conn = self._conns.get((host, port))
        if conn is None or conn.closed:
            conn = await Connection.open(host, port, client_id="kafkagen-conformance", timeout=10)
            self._conns[(host, port)] = conn
        return conn

    async def connection(self, node: int | None) -> Connection:
        if node is None:
            return await self.connection_to(self.host, self.port)
        if node not in self.nodes:
            raise SetupError(f"{self.bootstrap} has no node {node}")
        return await self.connection_to(*self.nodes[node])

    async def close(self) -> None:
        conns, self._conns = list(self._conns.values()), {}
        for c in conns:
            await c.close()


# ---------------------------------------------------------------------- one run


@dataclass
class Step:
    label: str
    outcome: Any


class Session:
    """One scenario on one broker: sends requests, records outcomes, helps with set-up."""

    def __init__(
        self, target: Target, prefix: str, versions: Mapping[int, int], node_order: list[int]
    ) -> None:
        self.target = target
        self.prefix = prefix
        self.versions = versions
        self.steps: list[Step] = []
        self.topic_ids: dict[str, str] = {}
        #: Topic name -> its id, for the scenario's own topics.
        self.topic_uuids: dict[str, UUID] = {}
        self._normalise = Normaliser(self.topic_ids)
        self._node_order = node_order

    # -- names and versions

    def name(self, part: str = "t") -> str:
        """A topic, group or transactional id of this scenario."""
        return f"{self.prefix}-{part}"

    def version(self, api_key: int) -> int:
        """The version this run uses for ``api_key`` (see `choose_versions`)."""
        return self.versions[api_key]

    # -- recorded steps

    async def call(
        self,
        request: Message,
        version: int | None = None,
        *,
        node: int | None = None,
        keep: Callable[[Any], Any] | None = None,
        expect_answer: bool = True,
    ) -> Any:
        """Send ``request`` and record its outcome; the response, or None when there was
        none (closed connection, no answer). ``keep`` trims the JSON form before it is
        recorded (e.g. to this scenario's topics in a listing of all of them)."""
        api_key = type(request).API_KEY
        assert api_key is not None
        v = self.version(api_key) if version is None else version
        label = f"{type(request).__name__} v{v}"
        await self._name_topics_by_id(request, v, node)
        try:
            response = await self._send(request, v, node, expect_answer)
        except ConnectionError:
            self._record(label, {"outcome": "connection closed"})
            return None
        except TimeoutError:
            # An answer may still come: never reuse the connection.
            await (await self.target.connection(node)).close()
            self._record(label, {"outcome": "no answer"})
            return None
        except (DecodeError, UnsupportedVersionError) as e:
            self._record(label, {"outcome": f"undecodable answer: {e}"})
            return None
        data = response.to_json(v)
        self._record(label, keep(data) if keep is not None else data)
        return response

    async def _send(
        self, request: Message, version: int, node: int | None, expect_answer: bool
    ) -> Message:
        """One request; while a coordinator answers that it is still loading (a passing
        state of a newly started broker, which clients retry), the same again."""
        deadline = time.monotonic() + LOADING_WAIT_S
        while True:
            conn = await self.target.connection(node)
            response = await conn.request(
                request, version, timeout=REQUEST_TIMEOUT_S if expect_answer else CLOSE_WAIT_S
            )
            loading = getattr(response, "error_code", 0) == COORDINATOR_LOAD_IN_PROGRESS
            if not loading or time.monotonic() > deadline:
                return response
            await asyncio.sleep(0.1)

    async def raw(
        self, api_key: int, version: int, body: bytes, *, node: int | None = None
    ) -> None:
        """Send a frame with any header version and body, on a connection of its own, and
        record whether the broker answered (and how many bytes) or closed the connection."""
        label = f"raw api {api_key} v{version} ({len(body)} bytes)"
        try:
            hv = header_version(api_key, version, "request")
        except (KeyError, ValueError, UnsupportedVersionError):
            hv = 2 if version > 0 else 1
        header = RequestHeader(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=7,
            client_id="kafkagen-conformance",
        ).encode(hv)
        host, port = (
            (self.target.host, self.target.port) if node is None else self.target.nodes[node]
        )
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(struct.pack(">i", len(header) + len(body)) + header + body)
            await writer.drain()
            try:
                async with asyncio.timeout(CLOSE_WAIT_S):
                    size = struct.unpack(">i", await reader.readexactly(4))[0]
                    frame = await reader.readexactly(size)
            except (asyncio.IncompleteReadError, ConnectionError):
                self._record(label, {"outcome": "connection closed"})
                return
            except TimeoutError:
                self._record(label, {"outcome": "no answer"})
                return
            self._record(label, self._raw_answer(api_key, frame))
        finally:
            writer.close()

    @staticmethod
    def _raw_answer(api_key: int, frame: bytes) -> Any:
        (cid,) = struct.unpack_from(">i", frame)
        if api_key == 18:
            # ApiVersions answers an unknown version in the v0 layout (no tagged fields).
            try:
                response = ApiVersionsResponse.decode(memoryview(frame)[4:], 0)
                return {"correlationId": cid, "errorCode": response.error_code}
            except DecodeError:
                pass
        return {"correlationId": cid, "answer": "a frame"}

    def note(self, label: str, outcome: Any) -> None:
        """Record something the scenario observed by other means."""
        self._record(label, outcome)

    def _record(self, label: str, outcome: Any) -> None:
        self.steps.append(Step(label, self._normalise(outcome)))

    # -- set-up (not compared)

    async def setup(self, request: Message, version: int | None = None, **kw: Any) -> Any:
        """Send ``request`` without recording it; its response (SetupError if none)."""
        api_key = type(request).API_KEY
        assert api_key is not None
        v = self.version(api_key) if version is None else version
        node = kw.pop("node", None)
        await self._name_topics_by_id(request, v, node)
        conn = await self.target.connection(node)
        try:
            return await conn.request(request, v, timeout=REQUEST_TIMEOUT_S)
        except (ConnectionError, TimeoutError) as e:
            raise SetupError(f"set-up {type(request).__name__} v{v}: {e}") from e

    async def _name_topics_by_id(self, request: Message, version: int, node: int | None) -> None:
        """Produce from v13 names topics by id: fill in each topic's id as a client does,
        from the metadata (the zero id for a topic the broker does not know)."""
        if not isinstance(request, ProduceRequest) or version < PRODUCE_TOPIC_IDS_SINCE:
            return
        for t in request.topic_data:
            if t.topic_id != _NO_TOPIC_ID or not t.name:
                continue
            if t.name not in self.topic_uuids:
                md = await self.metadata([t.name], node)
                if md.topics and md.topics[0].topic_id != _NO_TOPIC_ID:
                    self.topic_ids[_uuid_text(md.topics[0].topic_id)] = t.name
                    self.topic_uuids[t.name] = md.topics[0].topic_id
            t.topic_id = self.topic_uuids.get(t.name, _NO_TOPIC_ID)

    async def metadata(self, topics: Sequence[str], node: int | None = None) -> Any:
        Req = MetadataRequest
        return await self.setup(
            Req(
                topics=[Req.MetadataRequestTopic(name=t) for t in topics],
                allow_auto_topic_creation=False,
            ),
            self.version(3),
            node=node,
        )

    async def create_topic(
        self,
        part: str = "t",
        partitions: int = 1,
        replication: int = 1,
        configs: Mapping[str, str] | None = None,
    ) -> str:
        """Create this scenario's topic ``part`` and wait until every node knows its leaders."""
        from kafkagen.generated.create_topics import CreateTopicsRequest as C

        name = self.name(part)
        r: Any = await self.setup(
            C(
                topics=[
                    C.CreatableTopic(
                        name=name,
                        num_partitions=partitions,
                        replication_factor=replication,
                        configs=[
                            C.CreatableTopicConfig(name=k, value=v)
                            for k, v in (configs or {}).items()
                        ],
                    )
                ],
                timeout_ms=30000,
            )
        )
        err = r.topics[0].error_code
        if err != 0:
            raise SetupError(f"creating topic {name}: error {err}")
        await self.wait_for_leaders(name, partitions)
        await self._leaders_serve(name, partitions)
        return name

    async def _leaders_serve(self, topic: str, partitions: int, timeout: float = 20.0) -> None:
        """Wait until each partition's leader answers for it: a broker may list itself as
        leader in Metadata a moment before its log is ready."""
        from .messages import list_offsets

        deadline = time.monotonic() + timeout
        for p in range(partitions):
            while True:
                r = await self.setup(
                    list_offsets(topic, -1, partition=p), node=await self.leader(topic, p)
                )
                if r.topics[0].partitions[0].error_code == 0:
                    break
                if time.monotonic() > deadline:
                    raise SetupError(f"{topic}-{p}: its leader does not serve it")
                await asyncio.sleep(0.05)

    async def wait_for_leaders(self, topic: str, partitions: int, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        pending = set(self.target.nodes)
        while pending:
            for node in sorted(pending):
                md = await self.metadata([topic], node)
                t = md.topics[0]
                if (
                    t.error_code == 0
                    and len(t.partitions) == partitions
                    and all(p.leader_id >= 0 for p in t.partitions)
                ):
                    if getattr(t, "topic_id", None) is not None:
                        self.topic_ids[_uuid_text(t.topic_id)] = topic
                        self.topic_uuids[topic] = t.topic_id
                    pending.discard(node)
            if pending:
                if time.monotonic() > deadline:
                    raise SetupError(f"topic {topic}: nodes {sorted(pending)} know no leaders")
                await asyncio.sleep(0.05)

    async def produced(self, topic: str, records: bytes, partition: int = 0, **kw: Any) -> int:
        """Produce ``records`` as set-up (to the leader); the base offset."""
        from .messages import produce

        node = await self.leader(topic, partition)
        r = await self.setup(produce(topic, records, partition=partition, **kw), node=node)
        p = r.responses[0].partition_responses[0]
        if p.error_code != 0:
            raise SetupError(f"producing to {topic}-{partition}: error {p.error_code}")
        return int(p.base_offset)

    async def leader(self, topic: str, partition: int = 0) -> int:
        md = await self.metadata([topic])
        for p in md.topics[0].partitions:
            if p.partition_index == partition:
                return int(p.leader_id)
        raise SetupError(f"{topic}-{partition} has no leader")

    def other_node(self, node: int) -> int:
        """A node other than ``node`` (SetupError on a one-node cluster)."""
        for n in self._node_order:
            if n != node:
                return n
        raise SetupError("the cluster has one node")

    async def set_feature_level(self, feature: str, level: int, node: int) -> int:
        """Finalize ``feature`` at ``level`` (not recorded) and wait, at most 20 s, until
        ``node`` says so in ApiVersions (Kafka's brokers learn it from the metadata log).
        Returns the level it replaced, for the scenario to put back: the broker under test
        is shared by every later scenario and test."""
        versions = ApiVersionsRequest(
            client_software_name="conformance", client_software_version="1"
        )
        before = await self.setup(versions, 3, node=node)
        levels = {f.name: f.max_version_level for f in before.finalized_features}
        previous: int = levels.get(feature, 0)
        U = UpdateFeaturesRequest
        upd = U.FeatureUpdateKey(
            feature=feature, max_version_level=level, upgrade_type=1 if level else 2
        )
        r = await self.setup(U(feature_updates=[upd], timeout_ms=30000), 1)
        errors = [r.error_code, *(x.error_code for x in r.results)]
        if any(errors):
            raise SetupError(f"UpdateFeatures {feature}={level}: errors {errors}")
        deadline = time.monotonic() + 20.0
        while True:
            v = await self.setup(versions, 3, node=node)
            now = {f.name: f.max_version_level for f in v.finalized_features}
            if now.get(feature, 0) == level:
                return previous
            if time.monotonic() > deadline:
                raise SetupError(f"node {node} still has {feature} {now.get(feature)}")
            await asyncio.sleep(0.1)

    async def coordinator(self, key: str, key_type: int = 0) -> int:
        """The coordinator of a group (0), transactional id (1) or share partition (2, from
        v6), waiting while it loads."""
        deadline = time.monotonic() + 20.0
        while True:
            r: FindCoordinatorResponse = await self.setup(
                FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key]),
                6 if key_type == 2 else 4,
            )
            c = r.coordinators[0]
            if c.error_code == 0:
                return int(c.node_id)
            if time.monotonic() > deadline:
                raise SetupError(f"no coordinator for {key!r}: error {c.error_code}")
            await asyncio.sleep(0.1)


#: Produce names topics by id from this version.
PRODUCE_TOPIC_IDS_SINCE = 13
_NO_TOPIC_ID = UUID(int=0)


def _uuid_text(value: UUID) -> str:
    """A topic id as Kafka's JSON form writes it (url-safe base64, no padding)."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


# ---------------------------------------------------------------------- the comparison


@dataclass
class Result:
    scenario: Scenario
    #: "agree", "differ" or "skipped".
    status: str
    detail: str = ""
    steps: tuple[list[Step], list[Step]] = field(default_factory=lambda: ([], []))

    @property
    def stopped(self) -> bool:
        """The scenario did not run to its end on a broker (a failed set-up or step, or
        its time limit), whether or not the two runs compare equal."""
        return any(
            set(s.outcome) == {"stopped"}
            for side in self.steps
            for s in side
            if isinstance(s.outcome, dict)
        )


def compare_runs(sc: Scenario, a: list[Step], b: list[Step]) -> Result:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x.label != y.label:
            return Result(sc, "differ", f"step {i + 1}: {x.label} != {y.label}", (a, b))
        if _is_outcome(x.outcome) or _is_outcome(y.outcome):
            if x.outcome != y.outcome:
                detail = f"step {i + 1} {x.label}: {_said(x.outcome)} != {_said(y.outcome)}"
                return Result(sc, "differ", detail, (a, b))
            continue
        found = first_difference(x.outcome, y.outcome)
        if found is not None:
            return Result(sc, "differ", f"step {i + 1} {x.label}: {found}", (a, b))
    if len(a) != len(b):
        n = min(len(a), len(b))
        which, extra = ("broker", a[n]) if len(a) > n else ("reference", b[n])
        text = json.dumps(extra.outcome, sort_keys=True)[:200]
        detail = f"step {n + 1} only on the {which}: {extra.label} {text}"
        return Result(sc, "differ", detail, (a, b))
    return Result(sc, "agree", "", (a, b))


def _is_outcome(value: Any) -> bool:
    return isinstance(value, dict) and set(value) in ({"outcome"}, {"stopped"})


def _said(value: Any) -> str:
    if _is_outcome(value):
        return str(value.get("outcome") or "stopped: " + value["stopped"])
    return "an answer"


def choose_versions(
    targets: Sequence[Target], overrides: Mapping[int, int] | None = None
) -> dict[int, int]:
    """Per API: the highest stable version kafkagen's codecs, and every target, know.

    Where a target lacks the API the others' choice stands (its scenarios then show how it
    refuses the API). ``overrides`` pins versions (``--api-version Produce=8``).
    """
    from kafkagen.generated import APIS

    chosen: dict[int, int] = {}
    for key in APIS:
        cls: Any = message_type(key, "request")
        high = cls.HIGHEST_VERSION - (1 if cls.LATEST_VERSION_UNSTABLE else 0)
        for t in targets:
            if key in t.ranges:
                high = min(high, t.ranges[key][1])
        chosen[key] = max(high, cls.LOWEST_VERSION)
    chosen.update(overrides or {})
    return chosen


def new_prefix() -> str:
    return f"kc{secrets.token_hex(3)}"
