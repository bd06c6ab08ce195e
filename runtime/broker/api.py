"""The API layer's registry: which handler serves which API key and versions.

Each module of ``kafkagen.runtime.handlers`` registers one handler with `register` at import.
A handler decodes nothing itself (the server hands it the decoded request), calls the
replica manager or a coordinator with a callback, and answers through `RequestContext`,
at once or later from that callback. What ApiVersions advertises is exactly this registry.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kafkagen.generated import message_type
from kafkagen.runtime.message import Message

if TYPE_CHECKING:
    from .broker import Broker

__all__ = [
    "HANDLERS",
    "ApiHandler",
    "HandlerFn",
    "RequestContext",
    "Responder",
    "load_handlers",
    "register",
    "supported_versions",
]


class Responder(Protocol):
    """What a context answers through: the connection's slot for this request."""

    def send(self, response: Message, version: int) -> None: ...

    def send_nothing(self) -> None: ...

    def close(self, reason: str) -> None: ...


@dataclass(slots=True)
class RequestContext:
    """One request as a handler sees it: who sent it, at which version, and how to answer."""

    broker: Broker
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    responder: Responder

    def respond(self, response: Message) -> None:
        """Send the response, encoded at the request's version (once)."""
        self.responder.send(response, self.api_version)

    def respond_nothing(self) -> None:
        """Produce with acks=0: the request is done and has no response."""
        self.responder.send_nothing()

    def close_connection(self, reason: str) -> None:
        self.responder.close(reason)


HandlerFn = Callable[[RequestContext, Any], None]


@dataclass(frozen=True, slots=True)
class ApiHandler:
    api_key: int
    name: str
    min_version: int
    #: Highest stable version served.
    max_version: int
    #: Highest version served when unstable versions are enabled (>= max_version).
    max_unstable_version: int
    request_type: type[Message]
    handle: HandlerFn

    def max_for(self, unstable: bool) -> int:
        return self.max_unstable_version if unstable else self.max_version


HANDLERS: dict[int, ApiHandler] = {}


def register(
    api_key: int,
    min_version: int,
    max_version: int,
    *,
    max_unstable_version: int | None = None,
) -> Callable[[HandlerFn], HandlerFn]:
    """Register the decorated function as the handler of ``api_key`` for those versions."""
    request_type = message_type(api_key, "request")
    if not request_type.LOWEST_VERSION <= min_version <= max_version:
        raise ValueError(f"API {api_key}: bad version range {min_version}-{max_version}")
    top = max_version if max_unstable_version is None else max_unstable_version
    if top > request_type.HIGHEST_VERSION:
        raise ValueError(f"API {api_key}: the codec stops at v{request_type.HIGHEST_VERSION}")
    stable_top = request_type.HIGHEST_VERSION - (1 if request_type.LATEST_VERSION_UNSTABLE else 0)
    if max_version > stable_top:
        raise ValueError(f"API {api_key}: v{max_version} is unstable, pass it as unstable")

    def decorate(fn: HandlerFn) -> HandlerFn:
        if api_key in HANDLERS and HANDLERS[api_key].handle is not fn:
            raise RuntimeError(f"API {api_key} has two handlers")
        HANDLERS[api_key] = ApiHandler(
            api_key,
            request_type.__name__.removesuffix("Request"),
            min_version,
            max_version,
            top,
            request_type,
            fn,
        )
        return fn

    return decorate


def supported_versions(unstable: bool) -> dict[int, tuple[int, int]]:
    """API key -> (min, max) for every registered handler, as ApiVersions advertises it."""
    load_handlers()
    return {k: (h.min_version, h.max_for(unstable)) for k, h in sorted(HANDLERS.items())}


_loaded = False


def load_handlers() -> dict[int, ApiHandler]:
    """Import every ``api_NN_*`` module of the handlers package (once)."""
    global _loaded
    if not _loaded:
        from kafkagen.runtime import handlers

        for info in pkgutil.iter_modules(handlers.__path__):
            if info.name.startswith("api_"):
                importlib.import_module(f"{handlers.__name__}.{info.name}")
        _loaded = True
    return HANDLERS
