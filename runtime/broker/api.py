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
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from kafkagen import generated as builtin_codecs
from kafkagen.generated import APIS
from kafkagen.runtime.errors import UnknownServerError
from kafkagen.runtime.message import Message, convert

from .config.definitions import API_VERSION_MAX, parse_version_caps
from .config.store import ConfigStore
from .group.group_coordinator import GroupCoordinator
from .metadata.cluster_metadata import ClusterMetadata
from .metadata.image import MetadataImage
from .release_presets import (
    PRESET_CONFIG,
    preset_caps,
    preset_floors,
    preset_gaps,
    preset_listed_floors,
)
from .security.authorizer import Authorizer
from .security.listeners import Session
from .security.sasl import Credentials
from .share.share_coordinator import ShareCoordinator
from .share.share_group import ShareGroupManager
from .share.share_partition_manager import SharePartitionManager
from .storage.replica_manager import ReplicaManager
from .telemetry.client_telemetry import ClientTelemetry
from .transaction.transaction_coordinator import MarkerWriter, TransactionCoordinator
from .types import BrokerInfo

__all__ = [
    "HANDLERS",
    "ApiHandler",
    "BrokerServices",
    "Dispatch",
    "HandlerFn",
    "Peers",
    "Registry",
    "RegistryError",
    "RequestContext",
    "Responder",
    "ServedApis",
    "TELEMETRY_APIS",
    "TELEMETRY_CONFIG",
    "combine_caps",
    "declare",
    "describe_gaps",
    "dispatch",
    "error_response",
]


class Responder(Protocol):
    """What a context answers through: the connection's slot for this request."""

    def send(self, response: Message, version: int) -> None: ...

    def send_nothing(self) -> None: ...

    def close(self, reason: str) -> None: ...

    def gone(self) -> bool:
        """Whether the connection closed: an answer would reach nobody."""
        ...


class Peers(MarkerWriter, Protocol):
    """The other brokers, as far as a handler may reach them, and the marker writing of
    each (WriteTxnMarkers takes the path its own transaction coordinator uses)."""

    def txn_coordinator_of(self, node_id: int) -> TransactionCoordinator | None:
        """The transaction coordinator of broker ``node_id``, None unless it is serving."""
        ...

    def replica_manager_of(self, node_id: int) -> ReplicaManager | None:
        """The replica manager of broker ``node_id``, None unless it is serving."""
        ...


#: GetTelemetrySubscriptions and PushTelemetry: Kafka advertises them only with a telemetry
#: reporter configured; kafkagen with its own receiver, when this config is true.
TELEMETRY_CONFIG = "kafkagen.client.telemetry.enable"
TELEMETRY_APIS = frozenset({71, 72})


class ServedApis:
    """The API versions one broker serves: the registry, without the unstable versions
    unless ``unstable.api.versions.enable``, narrowed to a release's ranges by a preset
    (``kafkagen.api.version.preset``) and capped by ``kafkagen.api.version.max``."""

    def __init__(self, configs: ConfigStore, node_id: int, registry: Registry) -> None:
        #: The handlers and the generated package this broker serves with.
        self.registry = registry
        self.unstable = configs.broker_bool("unstable.api.versions.enable")
        #: Whether the client telemetry APIs are served (Kafka: with a telemetry reporter).
        self.telemetry = configs.broker_bool(TELEMETRY_CONFIG)
        raw_caps = configs.broker_raw(API_VERSION_MAX, node_id)[0]
        #: The Kafka release played (None: this broker's own ranges).
        self.preset: str | None = configs.broker_raw(PRESET_CONFIG, node_id)[0] or None
        #: API key -> highest version served (an older broker played on purpose).
        self.version_caps = combine_caps(
            preset_caps(self.preset, list(registry.handlers)) if self.preset else {},
            parse_version_caps(raw_caps or ""),
        )
        #: API key -> lowest version served, where a preset's release started higher.
        self.version_floors = preset_floors(self.preset, registry.handlers) if self.preset else {}

    def play(self, preset: str | None, caps: dict[int, int]) -> None:
        """Serve ``preset``'s ranges (None: the registry's), below ``caps``."""
        handlers = self.registry.handlers
        played = preset_caps(preset, list(handlers)) if preset else {}
        floors = preset_floors(preset, handlers) if preset else {}
        self.preset, self.version_caps = preset, combine_caps(played, caps)
        self.version_floors = floors

    def min_version(self, handler: ApiHandler) -> int:
        """The lowest version of ``handler`` this broker serves."""
        return max(handler.min_version, self.version_floors.get(handler.api_key, 0))

    def offered(self, api_key: int) -> bool:
        """Whether ApiVersions lists ``api_key``: not the client telemetry APIs while
        telemetry is off. Kafka still answers them then (its receiver keeps nothing)."""
        return self.telemetry or api_key not in TELEMETRY_APIS

    def max_version(self, handler: ApiHandler) -> int:
        """The highest version of ``handler`` this broker serves (below its lowest: none)."""
        top = handler.max_for(self.unstable)
        cap = self.version_caps.get(handler.api_key)
        return top if cap is None else min(top, cap)

    def served_versions(self) -> dict[int, tuple[int, int]]:
        """API key -> (min, max) served, as ApiVersions advertises it (a preset's release
        may list an API from below the lowest version it serves: `preset_listed_floors`)."""
        out = {}
        listed = preset_listed_floors(self.preset) if self.preset else {}
        for key, handler in sorted(self.registry.handlers.items()):
            if not self.offered(key):
                continue
            low, top = self.min_version(handler), self.max_version(handler)
            if top >= low:
                out[key] = (min(low, listed.get(key, low)), top)
        return out

    def unadvertised(self) -> dict[int, list[tuple[int, int]]]:
        """API key -> the version ranges the played release advertised that this broker
        does not (an API kafkagen does not implement, or versions beyond its own)."""
        if self.preset is None:
            return {}
        handlers = self.registry.handlers.items()
        served = {
            k: (h.min_version, h.max_for(self.unstable)) for k, h in handlers if self.offered(k)
        }
        return preset_gaps(self.preset, served)


def describe_gaps(gaps: dict[int, list[tuple[int, int]]]) -> str:
    """``"LeaderAndIsr (4) v0-7, ..."``: what `ServedApis.unadvertised` found."""
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
    #: Share groups this broker coordinates, and its share sessions and partitions.
    share_groups: ShareGroupManager
    share_partitions: SharePartitionManager
    #: The share partitions' state this broker coordinates (``__share_group_state``).
    share_coordinator: ShareCoordinator
    #: Client metrics subscriptions and the pushes received (KIP-714).
    telemetry: ClientTelemetry

    @property
    def image(self) -> ClusterMetadata | MetadataImage:
        """The metadata this broker knows (a stale copy while cut off from the
        controller), which Metadata and DescribeCluster answer from."""
        return self.metadata.image_of(self.node_id)


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
    #: The client's port (-1: not known).
    client_port: int = -1

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
    #: The generated package of its request class (None: the built-in).
    codecs: ModuleType | None = None
    _loaded: tuple[type[Message], HandlerFn] | None = field(default=None, init=False)

    def max_for(self, unstable: bool) -> int:
        return self.max_unstable_version if unstable else self.max_version

    def resolve(self) -> tuple[type[Message], HandlerFn]:
        """(request class, handler function), imported and checked on the first call."""
        if self._loaded is None:
            request_type = (self.codecs or builtin_codecs).message_type(self.api_key, "request")
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


class RegistryError(ValueError):
    """A handler registration that cannot be served; the text says which and why."""


class Registry:
    """What one cluster serves: the built-in handlers, a user's handlers over them, and the
    generated package requests are decoded and responses encoded with.

    An API the package has is served with the package's classes (its headers too, when it
    has them); an API it lacks keeps the built-in classes. A version of an API is served
    when the package has it and either a user handler claims it (`handler`) or the built-in
    handler serves it: its own versions, or up to a version named with `serve_builtin` for
    changes it answers correctly without knowing them (new fields left at their defaults).
    Built-in handlers get the request as a built-in message and their response is converted
    to the package's class by field name (`kafkagen.runtime.message.convert`).

    Handler modules register on it before the cluster starts; each cluster has its own.
    """

    def __init__(self, builtin: dict[int, ApiHandler], package: ModuleType | None = None):
        #: The generated package served with (the built-in ``kafkagen.generated`` unless told).
        self.package = builtin_codecs if package is None else package
        self.builtin = builtin
        self._claims: dict[int, dict[int, HandlerFn]] = {}
        self._builtin_through: dict[int, int] = {}
        self._composed: dict[int, ApiHandler] | None = None
        # The package's headers, or the built-in ones if it has none.
        has_headers = "RequestHeader" in getattr(self.package, "OTHER_TYPES", {})
        headers = self.package if has_headers else builtin_codecs
        self.request_header: type[Message] = headers.header_type("request")
        #: Called with ``correlation_id=``.
        self.response_header: Callable[..., Message] = headers.header_type("response")

    @property
    def custom(self) -> bool:
        """Whether anything differs from the built-in package and handlers."""
        return self.package is not builtin_codecs or bool(self._claims or self._builtin_through)

    # -- the public face for handler modules --------------------------------------------

    def handler(
        self, api_key: int, versions: int | Iterable[int]
    ) -> Callable[[HandlerFn], HandlerFn]:
        """A decorator: ``fn(ctx, request)`` serves ``versions`` of ``api_key`` (an int or
        any iterable of ints, e.g. ``range(3, 4)``), over the built-in handler if any."""
        wanted = [versions] if isinstance(versions, int) else list(versions)
        if not wanted:
            raise RegistryError(f"API {api_key}: a handler for no version")

        def register(fn: HandlerFn) -> HandlerFn:
            claims = self._claims.setdefault(api_key, {})
            for v in wanted:
                claims[v] = fn
            self._changed()
            return fn

        return register

    def serve_builtin(self, api_key: int, through: int) -> None:
        """Let the built-in handler of ``api_key`` serve the package's versions up to
        ``through``: for changes it answers correctly without knowing them."""
        if api_key not in self.builtin:
            raise RegistryError(f"API {api_key} has no built-in handler")
        self._builtin_through[api_key] = through
        self._changed()

    def call_builtin(
        self, ctx: RequestContext, request: Message | None, then: Callable[[Message], None]
    ) -> None:
        """Run the built-in handler of the request's API and hand its response, as the
        package's class, to ``then`` (which answers with ``ctx.respond``)."""
        cls = self.response_type(ctx.api_key)
        capture = _Capture(ctx.responder, lambda response: then(convert(response, cls)))
        self._builtin(dataclasses.replace(ctx, responder=capture), request)

    def register_module(self, source: str) -> ModuleType:
        """Import a handler module (a dotted name importable from the current folder, or
        a ``.py`` path) and call its ``register(registry)`` with this registry."""
        try:
            if source.endswith(".py"):
                path = Path(source)
                if not path.is_file():
                    raise RegistryError(f"{source}: no such file")
                spec = importlib.util.spec_from_file_location(
                    f"kafkagen_handlers_{path.stem}", path
                )
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
            else:
                if "" not in sys.path and os.getcwd() not in sys.path:
                    sys.path.insert(0, os.getcwd())
                module = importlib.import_module(source)
        except RegistryError:
            raise
        except (Exception, SystemExit) as e:
            raise RegistryError(f"{source}: cannot be imported: {type(e).__name__}: {e}") from None
        register = getattr(module, "register", None)
        if not callable(register):
            raise RegistryError(f"{source}: has no register(registry) function")
        try:
            register(self)
            self.compose()
        except RegistryError as e:
            raise RegistryError(f"{source}: {e}") from None
        except Exception as e:
            raise RegistryError(f"{source}: register() failed: {type(e).__name__}: {e}") from None
        return module

    # -- what the server uses ----------------------------------------------------------

    @property
    def handlers(self) -> dict[int, ApiHandler]:
        """API key -> the handler the server dispatches to, with the versions it serves."""
        return self.compose()

    def compose(self) -> dict[int, ApiHandler]:
        """`handlers`, built after registrations; raises `RegistryError` for one that
        cannot be served."""
        if not self.custom:
            return self.builtin  # read live: tests stand a handler in for a built-in one
        if self._composed is None:
            self._composed = self._compose()
        return self._composed

    def owns(self, api_key: int) -> bool:
        """Whether the package's classes serve ``api_key`` (otherwise the built-in ones)."""
        return api_key in self.package.APIS

    def response_type(self, api_key: int) -> type[Message]:
        codecs = self.package if self.owns(api_key) else builtin_codecs
        return codecs.message_type(api_key, "response")  # type: ignore[no-any-return]

    def header_version(self, api_key: int, version: int, kind: str) -> int:
        codecs = self.package if self.owns(api_key) else builtin_codecs
        return codecs.header_version(api_key, version, kind)  # type: ignore[no-any-return]

    # -- composing -----------------------------------------------------------------------

    def _changed(self) -> None:
        self._composed = None

    def _compose(self) -> dict[int, ApiHandler]:
        out = {k: h for k, h in self.builtin.items() if not self.owns(k)}
        for key in sorted(set(self.builtin) | set(self._claims)):
            if self.owns(key):
                out[key] = self._served(key)
            elif key in self._claims:
                raise RegistryError(f"API {key}: not in the package served")
        return out

    def _served(self, key: int) -> ApiHandler:
        """The handler of an API the package has: the versions the package has and a user
        handler claims or the built-in handler serves, contiguous."""
        request = self.package.message_type(key, "request")
        top = request.HIGHEST_VERSION
        stable_top = top - 1 if request.LATEST_VERSION_UNSTABLE else top
        claimed = set(self._claims.get(key, ()))
        stable, unstable = set(claimed), set(claimed)
        builtin = self.builtin.get(key)
        if builtin is not None:
            through = self._builtin_through.get(key, builtin.max_version)
            stable |= set(range(builtin.min_version, max(through, builtin.max_version) + 1))
            through = max(through, builtin.max_unstable_version)
            unstable |= set(range(builtin.min_version, through + 1))
        package_versions = set(range(request.LOWEST_VERSION, top + 1))
        stable &= set(range(request.LOWEST_VERSION, stable_top + 1))
        unstable &= package_versions
        beyond = sorted(claimed - package_versions)
        if beyond:
            raise RegistryError(f"API {key}: the package has no v{beyond[0]}")
        if not stable:
            raise RegistryError(f"API {key}: no stable version the package has is served")
        low, high = min(unstable), max(unstable)
        if len(unstable) != high - low + 1:
            missing = sorted(set(range(low, high + 1)) - unstable)
            raise RegistryError(f"API {key}: v{missing[0]} is not served, between v{low}-v{high}")
        name = APIS[key][1] if key in APIS else self.package.APIS[key][1]
        return ApiHandler(
            key,
            name.removesuffix("Request"),
            low,
            max(stable),
            high,
            lambda: functools.partial(self._serve, key),
            self.package,
        )

    def _serve(self, key: int, ctx: RequestContext, request: Message | None) -> None:
        fn = self._claims.get(key, {}).get(ctx.api_version)
        if fn is not None:
            fn(ctx, request)
        else:
            self._builtin(ctx, request)

    def _builtin(self, ctx: RequestContext, request: Message | None) -> None:
        handler = self.builtin.get(ctx.api_key)
        if handler is None:
            raise RegistryError(f"API {ctx.api_key} has no built-in handler")
        if request is not None:
            request = convert(request, handler.request_type)
        handler.handle(ctx, request)


class _Capture:
    """A responder that hands the response to a function instead of the connection."""

    def __init__(self, inner: Responder, then: Callable[[Message], None]) -> None:
        self.inner = inner
        self.then = then

    def send(self, response: Message, version: int) -> None:
        self.then(response)

    def send_nothing(self) -> None:
        self.inner.send_nothing()

    def close(self, reason: str) -> None:
        self.inner.close(reason)

    def gone(self) -> bool:
        return self.inner.gone()


def error_response(cls: type[Message], code: int = UnknownServerError.code) -> Message:
    """A response of ``cls`` with every top-level error code set to ``code``, as Kafka
    answers a request whose handler failed."""
    response = cls()
    for attr in cls._fields:
        if attr == "error_code" or attr.endswith("_error_code"):
            setattr(response, attr, code)
    return response
