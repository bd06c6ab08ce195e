"""The API layer: which handler serves which API key and versions, and what handlers see.

``kafkagen.runtime.handlers`` declares each served API with `declare`; its module is imported
on the first request.
A handler decodes nothing itself (the server hands it the decoded request), calls the
replica manager or a coordinator with a callback, and answers through `RequestContext`,
at once or later from that callback. ``ctx.broker`` is the broker as handlers know it,
`BrokerServices`: the components they call, never the broker that wires them. What
ApiVersions advertises is exactly this registry (filled by
`kafkagen.runtime.handlers.declare_handlers`), capped per broker by `ServedApis`.

The server calls handlers through `dispatch`: the one place where something may later
stand in front of every handler (an interceptor that injects faults, an authoriser).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafkagen.generated import APIS, message_type
from kafkagen.runtime.message import Message

from .config.definitions import API_VERSION_MAX, parse_version_caps
from .config.store import ConfigStore
from .group.group_coordinator import GroupCoordinator
from .metadata.cluster_metadata import ClusterMetadata
from .release_presets import PRESET_CONFIG, preset_caps, preset_floors, preset_gaps
from .security.authorizer import Authorizer
from .security.listeners import Session
from .security.sasl import Credentials
from .storage.replica_manager import ReplicaManager
from .transaction.transaction_coordinator import TransactionCoordinator
from .types import BrokerInfo

__all__ = [
    "HANDLERS",
    "ApiHandler",
    "BrokerServices",
    "Dispatch",
    "HandlerFn",
    "Peers",
    "RequestContext",
    "Responder",
    "ServedApis",
    "combine_caps",
    "declare",
    "describe_gaps",
    "dispatch",
]


class Responder(Protocol):
    """What a context answers through: the connection's slot for this request."""

    def send(self, response: Message, version: int) -> None: ...

    def send_nothing(self) -> None: ...

    def close(self, reason: str) -> None: ...


class Peers(Protocol):
    """The other brokers, as far as a handler may reach them."""

    def txn_coordinator_of(self, node_id: int) -> TransactionCoordinator | None:
        """The transaction coordinator of broker ``node_id``, None unless it is serving."""
        ...


class ServedApis:
    """The API versions one broker serves: the registry, without the unstable versions
    unless ``unstable.api.versions.enable``, narrowed to a release's ranges by a preset
    (``kafkagen.api.version.preset``) and capped by ``kafkagen.api.version.max``."""

    def __init__(self, configs: ConfigStore, node_id: int) -> None:
        self.unstable = configs.broker_bool("unstable.api.versions.enable")
        raw_caps = configs.broker_raw(API_VERSION_MAX, node_id)[0]
        #: The Kafka release played (None: this broker's own ranges).
        self.preset: str | None = configs.broker_raw(PRESET_CONFIG, node_id)[0] or None
        #: API key -> highest version served (an older broker played on purpose).
        self.version_caps = combine_caps(
            preset_caps(self.preset, list(HANDLERS)) if self.preset else {},
            parse_version_caps(raw_caps or ""),
        )
        #: API key -> lowest version served, where a preset's release started higher.
        self.version_floors = preset_floors(self.preset, HANDLERS) if self.preset else {}

    def play(self, preset: str | None, caps: dict[int, int]) -> None:
        """Serve ``preset``'s ranges (None: the registry's), below ``caps``."""
        played = preset_caps(preset, list(HANDLERS)) if preset else {}
        floors = preset_floors(preset, HANDLERS) if preset else {}
        self.preset, self.version_caps = preset, combine_caps(played, caps)
        self.version_floors = floors

    def min_version(self, handler: ApiHandler) -> int:
        """The lowest version of ``handler`` this broker serves."""
        return max(handler.min_version, self.version_floors.get(handler.api_key, 0))

    def max_version(self, handler: ApiHandler) -> int:
        """The highest version of ``handler`` this broker serves (below its lowest: none)."""
        top = handler.max_for(self.unstable)
        cap = self.version_caps.get(handler.api_key)
        return top if cap is None else min(top, cap)

    def served_versions(self) -> dict[int, tuple[int, int]]:
        """API key -> (min, max) served, as ApiVersions advertises it."""
        out = {}
        for key, handler in sorted(HANDLERS.items()):
            low, top = self.min_version(handler), self.max_version(handler)
            if top >= low:
                out[key] = (low, top)
        return out

    def unadvertised(self) -> dict[int, list[tuple[int, int]]]:
        """API key -> the version ranges the played release advertised that this broker
        does not (an API kafkagen does not implement, or versions beyond its own)."""
        if self.preset is None:
            return {}
        registry = {k: (h.min_version, h.max_for(self.unstable)) for k, h in HANDLERS.items()}
        return preset_gaps(self.preset, registry)


def describe_gaps(gaps: dict[int, list[tuple[int, int]]]) -> str:
    """``"WriteTxnMarkers (27) v0-1, ..."``: what `ServedApis.unadvertised` found."""
    return ", ".join(
        f"{APIS[k][1].removesuffix('Request')} ({k}) "
        + " ".join(f"v{lo}" if lo == hi else f"v{lo}-{hi}" for lo, hi in ranges)
        for k, ranges in gaps.items()
    )


def combine_caps(*caps: dict[int, int]) -> dict[int, int]:
    """The lowest cap of each API over several sets of caps."""
    out: dict[int, int] = {}
    for one in caps:
        for key, top in one.items():
            out[key] = min(top, out.get(key, top))
    return out


@dataclass(frozen=True, slots=True)
class BrokerServices:
    """What handlers use of their broker: its components, not the broker itself."""

    node_id: int
    configs: ConfigStore
    metadata: ClusterMetadata
    replica_manager: ReplicaManager
    group_coordinator: GroupCoordinator
    txn_coordinator: TransactionCoordinator
    apis: ServedApis
    peers: Peers
    authorizer: Authorizer
    #: PLAIN users and SCRAM credentials, shared by the cluster's brokers.
    credentials: Credentials


@dataclass(slots=True)
class RequestContext:
    """One request as a handler sees it: who sent it, at which version, and how to answer."""

    broker: BrokerServices
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    responder: Responder
    #: Who sent it (principal) and the connection's SASL state.
    session: Session = dataclasses.field(default_factory=lambda: Session(None))

    @property
    def principal(self) -> str:
        return self.session.principal

    def allowed(self, operation: int, resource_type: int, name: str) -> bool:
        """Whether the sender may do ``operation`` on the resource (`Authorizer`)."""
        return self.broker.authorizer.authorize(
            self.session.principal, self.client_host, operation, resource_type, name
        )

    def advertised(self, broker: BrokerInfo) -> BrokerInfo:
        """``broker`` with the host and port the sender reaches it at: those of the
        listener this request came in on, as Kafka answers with the client's listener."""
        listener = self.session.listener
        if listener is None or listener.name not in broker.endpoints:
            return broker
        host, port = broker.endpoints[listener.name]
        return dataclasses.replace(broker, host=host, port=port)

    def authorized_operations(self, resource_type: int, name: str) -> int:
        return self.broker.authorizer.authorized_operations(
            self.session.principal, self.client_host, resource_type, name
        )

    def respond(self, response: Message) -> None:
        """Send the response, encoded at the request's version (once)."""
        self.responder.send(response, self.api_version)

    def respond_nothing(self) -> None:
        """Produce with acks=0: the request is done and has no response."""
        self.responder.send_nothing()

    def close_connection(self, reason: str) -> None:
        self.responder.close(reason)


HandlerFn = Callable[[RequestContext, Any], None]
#: How the server hands a decoded request (None: answer in the v0 layout) to its handler.
Dispatch = Callable[["ApiHandler", RequestContext, Message | None], None]


@dataclass(slots=True, eq=False)
class ApiHandler:
    """One served API: its versions, known at start, and its handler function and request
    class, imported on first use (importing every codec would slow every start)."""

    api_key: int
    name: str
    min_version: int
    #: Highest stable version served.
    max_version: int
    #: Highest version served when unstable versions are enabled (>= max_version).
    max_unstable_version: int
    #: Imports the handler's module and returns its function.
    load: Callable[[], HandlerFn]
    _loaded: tuple[type[Message], HandlerFn] | None = field(default=None, init=False)

    def max_for(self, unstable: bool) -> int:
        return self.max_unstable_version if unstable else self.max_version

    def resolve(self) -> tuple[type[Message], HandlerFn]:
        """(request class, handler function), imported and checked on the first call."""
        if self._loaded is None:
            request_type = message_type(self.api_key, "request")
            _check_versions(self, request_type)
            self._loaded = (request_type, self.load())
        return self._loaded

    @property
    def request_type(self) -> type[Message]:
        return (self._loaded or self.resolve())[0]

    @property
    def handle(self) -> HandlerFn:
        return (self._loaded or self.resolve())[1]


def _check_versions(handler: ApiHandler, request_type: type[Message]) -> None:
    key, low, high = handler.api_key, handler.min_version, handler.max_version
    if not request_type.LOWEST_VERSION <= low <= high <= handler.max_unstable_version:
        raise ValueError(f"API {key}: bad version range {low}-{high}")
    if handler.max_unstable_version > request_type.HIGHEST_VERSION:
        raise ValueError(f"API {key}: the codec stops at v{request_type.HIGHEST_VERSION}")
    stable_top = request_type.HIGHEST_VERSION - (1 if request_type.LATEST_VERSION_UNSTABLE else 0)
    if high > stable_top:
        raise ValueError(f"API {key}: v{high} is unstable, pass it as unstable")


HANDLERS: dict[int, ApiHandler] = {}


def declare(
    api_key: int,
    module: str,
    min_version: int,
    max_version: int,
    max_unstable_version: int,
    loader: Callable[[str], HandlerFn],
) -> None:
    """Register the handler of ``api_key``, defined in ``module``, for those versions;
    ``loader(module)`` imports it when the API is first used."""
    if api_key in HANDLERS:
        raise RuntimeError(f"API {api_key} has two handlers")
    HANDLERS[api_key] = ApiHandler(
        api_key,
        APIS[api_key][1].removesuffix("Request"),
        min_version,
        max_version,
        max_unstable_version,
        functools.partial(loader, module),
    )


def dispatch(handler: ApiHandler, ctx: RequestContext, request: Message | None) -> None:
    """Call the handler: what the server does with every request it decoded."""
    handler.handle(ctx, request)
