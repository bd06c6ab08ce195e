"""An asyncio Kafka client for one broker: ApiVersions handshake, version choice, builders.

``client = await connect("127.0.0.1", 9092)`` opens a connection and asks the broker which
versions it serves. After that every request goes out at the highest version both sides
support, and `KafkaClient.send` runs a builder: its requests are pipelined on the
connection and their responses merged into one result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version
from types import ModuleType
from typing import Any, TypeVar

from kafkagen.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafkagen.runtime.errors import KafkaError, UnsupportedVersionError, error_for_code
from kafkagen.runtime.message import Message, convert
from kafkagen.runtime.topic_partition import TopicPartition

from .builders import (
    CoordinatorType,
    Exchange,
    FindCoordinatorBuilder,
    GroupOffsets,
    Node,
    OffsetFetchBuilder,
    RequestBuilder,
)
from .connection import Connection
from .versions import BrokerVersions, VersionRange, client_versions

__all__ = ["CLIENT_CONFIGS", "KafkaClient", "connect", "handshake"]

R = TypeVar("R")

API_VERSIONS = 18
SOFTWARE_NAME = "kafkagen"
#: Kafka-style client configs `connect` accepts, with their defaults.
CLIENT_CONFIGS = {"max.request.pagination.size.limit": "2000"}
#: Called with each request and its version just before it is sent.
RequestObserver = Callable[[Message, int], None]


def _software_version() -> str:
    try:
        return _dist_version("kafkagen")
    except PackageNotFoundError:  # running from a source tree
        return "0"


class KafkaClient:
    """A connection to one broker plus the versions it advertised. Make one with `connect`."""

    def __init__(
        self,
        connection: Connection,
        versions: BrokerVersions,
        *,
        request_timeout: float | None = 30.0,
        unstable: bool = False,
        pagination_limit: int = 2000,
        connect_timeout: float | None = 30.0,
        max_in_flight: int = 100,
        on_request: RequestObserver | None = None,
    ) -> None:
        if not isinstance(pagination_limit, int) or pagination_limit < 1:
            raise ValueError(
                f"max.request.pagination.size.limit must be a positive integer, "
                f"got {pagination_limit!r}"
            )
        self.connection = connection
        self.versions = versions
        self.request_timeout = request_timeout
        #: Whether unstable latest versions may be chosen (the broker must advertise them).
        self.unstable = unstable
        #: ResponsePaginationLimit of paginated admin requests (the client's
        #: max.request.pagination.size.limit); the broker clamps it to its own.
        self.pagination_limit = pagination_limit
        self.connect_timeout = connect_timeout
        self.max_in_flight = max_in_flight
        self.on_request = on_request
        #: Clients of other brokers of the cluster, opened on demand by `for_node`.
        self._others: dict[tuple[str, int], asyncio.Future[KafkaClient]] = {}

    def version_for(self, api_key: int, wanted: VersionRange | None = None) -> int:
        """The highest version of ``api_key`` both sides support (see `BrokerVersions`)."""
        return self.versions.choose(api_key, wanted, unstable=self.unstable)

    async def request(
        self, request: Message, version: int | None = None, *, timeout: float | None = None
    ) -> Message:
        """Send one request, at ``version`` or else the highest usable one; its response."""
        api_key = type(request).API_KEY
        if api_key is None:
            raise TypeError(f"{type(request).__name__} is not a request message")
        package = self.versions.package
        if package is not None and api_key in package.APIS:
            # Encoded, and its response decoded, with the package's classes.
            request = convert(request, package.message_type(api_key, "request"))
        if version is None:
            version = self.version_for(api_key)
        if self.on_request is not None:
            self.on_request(request, version)
        return await self.connection.request(
            request, version, timeout=self.request_timeout if timeout is None else timeout
        )

    async def send(self, builder: RequestBuilder[R], *, timeout: float | None = None) -> R:
        """Run a builder: negotiate, send its requests pipelined, merge their responses.

        Nothing is sent when the builder cannot be served (`UnsupportedVersionError`).
        """
        usable = self.versions.usable(builder.api_key, builder.versions(), unstable=self.unstable)
        planned = builder.build(usable)
        for version, _ in planned:
            if version not in usable:
                raise ValueError(f"{type(builder).__name__} built v{version} outside {usable}")
        responses = await self._all(
            [self.request(req, version, timeout=timeout) for version, req in planned]
        )
        return builder.merge(
            [Exchange(v, req, resp) for (v, req), resp in zip(planned, responses, strict=True)]
        )

    @staticmethod
    async def _all(calls: Sequence[Coroutine[Any, Any, Message]]) -> list[Message]:
        tasks = [asyncio.ensure_future(c) for c in calls]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            # gather leaves the others running: stop them, so none outlives the call.
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def find_coordinators(
        self,
        keys: Iterable[str],
        key_type: CoordinatorType | int = CoordinatorType.GROUP,
        *,
        split: bool = True,
        timeout: float | None = None,
    ) -> dict[str, Node | KafkaError]:
        """The coordinator of each key: one FindCoordinator v4+ request when the broker has
        it, one request per key otherwise (``split=False``: an error instead)."""
        return await self.send(FindCoordinatorBuilder(keys, key_type, split=split), timeout=timeout)

    async def fetch_offsets(
        self,
        groups: Mapping[str, Iterable[TopicPartition] | None] | Iterable[str],
        *,
        require_stable: bool = False,
        split: bool = True,
        timeout: float | None = None,
    ) -> dict[str, GroupOffsets | KafkaError]:
        """Committed offsets of each group (see `OffsetFetchBuilder`); the groups must be
        coordinated by this broker, others get NOT_COORDINATOR as their result."""
        builder = OffsetFetchBuilder(groups, require_stable=require_stable, split=split)
        return await self.send(builder, timeout=timeout)

    async def for_node(self, host: str, port: int) -> KafkaClient:
        """A client of another broker of the cluster (or this one), with the same settings.

        Opened once (concurrent callers share the one connection) and kept; `close` closes
        it with this client.
        """
        if self.connection.address in (f"{host}:{port}", f"[{host}]:{port}"):
            return self
        key = (host, port)
        opening = self._others.get(key)
        if opening is not None and opening.done() and not opening.cancelled():
            if opening.exception() is not None or opening.result().closed:
                opening = None  # failed or since closed: open a new one
        if opening is None:
            opening = asyncio.ensure_future(
                connect(
                    host,
                    port,
                    client_id=self.connection.client_id,
                    timeout=self.connect_timeout,
                    request_timeout=self.request_timeout,
                    unstable=self.unstable,
                    max_in_flight=self.max_in_flight,
                    pagination_limit=self.pagination_limit,
                    on_request=self.on_request,
                )
            )
            self._others[key] = opening
        # shield: one caller being cancelled must not abort the others' connection.
        return await asyncio.shield(opening)

    @property
    def closed(self) -> bool:
        return self.connection.closed

    async def close(self) -> None:
        others, self._others = list(self._others.values()), {}
        for opening in others:
            if not opening.done():
                opening.cancel()
            try:
                other = await opening
            except (asyncio.CancelledError, Exception):
                continue  # never opened: nothing to close
            await other.close()
        await self.connection.close()

    async def __aenter__(self) -> KafkaClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def connect(
    host: str,
    port: int,
    *,
    client_id: str | None = "kafkagen",
    timeout: float | None = 30.0,
    request_timeout: float | None = 30.0,
    unstable: bool = False,
    max_in_flight: int = 100,
    pagination_limit: int | None = None,
    configs: Mapping[str, str | int] | None = None,
    on_request: RequestObserver | None = None,
    package: ModuleType | None = None,
) -> KafkaClient:
    """Connect to a broker and learn its API versions.

    ``timeout`` bounds the TCP connect, ``request_timeout`` each request (the handshake
    included). ``unstable`` lets unstable latest versions be chosen when advertised.
    ``pagination_limit`` (or ``configs={"max.request.pagination.size.limit": n}``) is the
    page size the admin helpers of `kafkagen.runtime.client.admin` ask for.
    ``on_request(request, version)`` sees every request before it is sent.
    ``package`` (a module ``kafkagen generate`` wrote, e.g. loaded with
    `kafkagen.generator.packages.load`) encodes requests and decodes responses of the
    APIs it has, at its versions; requests and builders may still use the built-in
    classes, converted by field name. Default: the built-in ``kafkagen.generated``.
    """
    limit = _pagination_limit(pagination_limit, configs)
    connection = await Connection.open(
        host, port, client_id=client_id, timeout=timeout, max_in_flight=max_in_flight
    )
    try:
        versions = await handshake(connection, timeout=request_timeout)
        versions.package = package
    except BaseException:
        await connection.close()
        raise
    return KafkaClient(
        connection,
        versions,
        request_timeout=request_timeout,
        unstable=unstable,
        pagination_limit=limit,
        connect_timeout=timeout,
        max_in_flight=max_in_flight,
        on_request=on_request,
    )


def _pagination_limit(given: int | None, configs: Mapping[str, str | int] | None) -> int:
    values = dict(CLIENT_CONFIGS)
    for name, value in (configs or {}).items():
        if name not in CLIENT_CONFIGS:
            known = ", ".join(sorted(CLIENT_CONFIGS))
            raise ValueError(f"unknown client config {name!r}; known: {known}")
        values[name] = str(value)
    raw = values["max.request.pagination.size.limit"]
    if given is not None:
        if configs and "max.request.pagination.size.limit" in configs:
            raise ValueError(
                "pass pagination_limit or configs['max.request.pagination.size.limit'], not both"
            )
        return given
    try:
        return int(raw)
    except ValueError:
        raise ValueError(
            f"max.request.pagination.size.limit must be a positive integer, got {raw!r}"
        ) from None


async def handshake(connection: Connection, *, timeout: float | None = 30.0) -> BrokerVersions:
    """ApiVersions at the highest version we know; on UNSUPPORTED_VERSION, again at the
    highest version the broker lists (as kafka-python and Kafka's clients do)."""
    version = client_versions(API_VERSIONS).max
    request = ApiVersionsRequest(
        client_software_name=SOFTWARE_NAME, client_software_version=_software_version()
    )
    while True:  # bounded: every retry is at a strictly lower version
        response = await connection.request(request, version, timeout=timeout)
        if not isinstance(response, ApiVersionsResponse):
            raise TypeError(f"expected ApiVersionsResponse, got {type(response).__name__}")
        if response.error_code == 0:
            return BrokerVersions.from_response(response)
        if response.error_code != UnsupportedVersionError.code or version == 0:
            raise error_for_code(response.error_code)(
                f"ApiVersions v{version} to {connection.address} failed"
            )
        theirs = response.api_keys.find(API_VERSIONS)
        version = min(version - 1, theirs.max_version if theirs is not None else 0)
        if version < 0:
            raise UnsupportedVersionError(
                f"{connection.address} supports no ApiVersions version kafkagen can send"
            )
