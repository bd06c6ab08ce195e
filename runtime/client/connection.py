"""One TCP connection to a Kafka broker: framing, correlation ids, pipelining, timeouts.

Requests are written as soon as they are made (up to ``max_in_flight`` unanswered at once)
and responses are matched to them by correlation id, so any number of callers can share
the connection. Kafka brokers answer in order, but nothing here relies on it.

A request that times out or is cancelled is forgotten, and its late answer, if one comes,
is dropped. Any other answer nobody asked for means the byte stream cannot be trusted: the
connection closes and every waiting request fails with `ConnectionError`.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import sys
from dataclasses import dataclass
from types import ModuleType

from kafkagen.generated.headers import RequestHeader, ResponseHeader
from kafkagen.runtime.errors import DecodeError, UnsupportedVersionError
from kafkagen.runtime.message import Message

from .versions import api_name

__all__ = ["Connection", "codecs_of"]

_log = logging.getLogger("kafkagen.client")

_SIZE = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_API_VERSIONS = 18
#: Forgotten correlation ids remembered so their late answers can be dropped.
_ABANDONED_LIMIT = 4096


def codecs_of(request_type: type[Message]) -> ModuleType:
    """The generated package a request class belongs to (``kafkagen.generated`` or a
    user's package), whose response class and header versions go with it."""
    return sys.modules[request_type.__module__.rpartition(".")[0]]


@dataclass(slots=True)
class _Pending:
    api_key: int
    version: int
    response_type: type[Message]
    future: asyncio.Future[Message]
    #: The generated package of the request, which decodes its response.
    codecs: ModuleType


class Connection:
    """A connection that sends generated request messages and returns decoded responses.

    Open it with `Connection.open`; close it with `close` (or ``async with``).
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        address: str,
        client_id: str | None = "kafkagen",
        max_in_flight: int = 100,
        max_response_bytes: int = 100 * 1024 * 1024,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.address = address
        self.client_id = client_id
        self.max_in_flight = max_in_flight
        self.max_response_bytes = max_response_bytes
        self._reader = reader
        self._writer = writer
        self._next_id = 0
        self._pending: dict[int, _Pending] = {}
        self._abandoned: dict[int, None] = {}  # insertion-ordered, so the oldest goes first
        self._slots = asyncio.Semaphore(max_in_flight)
        #: Why the connection ended; None while it is open.
        self._error: ConnectionError | None = None
        self._read_task = asyncio.create_task(self._read_loop(), name=f"kafkagen-read-{address}")

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        client_id: str | None = "kafkagen",
        timeout: float | None = 30.0,
        max_in_flight: int = 100,
        max_response_bytes: int = 100 * 1024 * 1024,
    ) -> Connection:
        """Connect to ``host:port`` within ``timeout`` seconds."""
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(host, port)
        except TimeoutError:
            raise TimeoutError(f"no connection to {address} within {timeout} s") from None
        return cls(
            reader,
            writer,
            address=address,
            client_id=client_id,
            max_in_flight=max_in_flight,
            max_response_bytes=max_response_bytes,
        )

    @property
    def closed(self) -> bool:
        return self._error is not None

    @property
    def in_flight(self) -> int:
        """Requests written and not yet answered."""
        return len(self._pending)

    async def request(
        self, request: Message, version: int, *, timeout: float | None = None
    ) -> Message:
        """Send ``request`` at ``version`` and return its decoded response.

        Raises `TimeoutError` when no answer comes within ``timeout`` seconds (counted from
        the call, waiting for an in-flight slot included), `ConnectionError` when the
        connection is or becomes closed, `DecodeError` when the answer does not decode, and
        `UnsupportedVersionError` when the request cannot be written at ``version``.
        """
        api_key = type(request).API_KEY
        if api_key is None or type(request).KIND != "request":
            raise TypeError(f"{type(request).__name__} is not a request message")
        cid = -1
        try:
            async with asyncio.timeout(timeout):
                async with self._slots:
                    cid, future = self._write(request, api_key, version)
                    await self._writer.drain()
                    return await future
        except TimeoutError:
            what = "no response" if cid >= 0 else f"no free slot of {self.max_in_flight}"
            raise TimeoutError(
                f"{api_name(api_key)} v{version} (correlation id {cid}) to {self.address}: "
                f"{what} within {timeout} s"
            ) from None
        finally:
            if cid >= 0 and cid in self._pending:
                # Timed out or cancelled after the bytes went out: drop its answer later.
                del self._pending[cid]
                self._abandoned[cid] = None
                if len(self._abandoned) > _ABANDONED_LIMIT:
                    del self._abandoned[next(iter(self._abandoned))]

    def _write(
        self, request: Message, api_key: int, version: int
    ) -> tuple[int, asyncio.Future[Message]]:
        if self._error is not None:
            raise ConnectionError(str(self._error))
        # Encode first: a request that cannot be written must not use a correlation id.
        body = request.encode(version)
        cid = self._next_id
        codecs = codecs_of(type(request))
        header = RequestHeader(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=cid,
            client_id=self.client_id,
        ).encode(codecs.header_version(api_key, version, "request"))
        self._next_id = (cid + 1) & 0x7FFFFFFF  # an int32 that stays non-negative
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        response_type = codecs.message_type(api_key, "response")
        self._pending[cid] = _Pending(api_key, version, response_type, future, codecs)
        self._writer.write(_SIZE.pack(len(header) + len(body)) + header + body)
        return cid, future

    async def _read_loop(self) -> None:
        reader = self._reader
        error: ConnectionError
        try:
            while True:
                (size,) = _SIZE.unpack(await reader.readexactly(4))
                if not 4 <= size <= self.max_response_bytes:
                    # Checked before reading: a corrupt prefix must not allocate gigabytes.
                    error = ConnectionError(
                        f"{self.address}: response frame of {size} bytes is outside "
                        f"4..{self.max_response_bytes}"
                    )
                    break
                frame = await reader.readexactly(size)
                problem = self._dispatch(frame)
                if problem is not None:
                    error = ConnectionError(f"{self.address}: {problem}")
                    break
        except asyncio.IncompleteReadError:
            error = ConnectionError(f"{self.address}: the broker closed the connection")
        except (ConnectionError, OSError) as e:
            error = ConnectionError(f"{self.address}: {e}")
        except asyncio.CancelledError:
            error = self._error or ConnectionError(f"{self.address}: connection closed")
        except Exception as e:  # a bug must not leave callers waiting for their timeouts
            _log.exception("%s: reading responses failed", self.address)
            error = ConnectionError(f"{self.address}: reading responses failed: {e!r}")
        self._shut(error)

    def _dispatch(self, frame: bytes) -> str | None:
        """Hand one response to its caller; a reason to close the connection, or None."""
        (cid,) = _SIZE.unpack_from(frame)  # every response header starts with it
        pending = self._pending.pop(cid, None)
        if pending is None:
            if cid in self._abandoned:
                del self._abandoned[cid]
                return None
            return f"response with correlation id {cid}, which no request is waiting for"
        try:
            hv = pending.codecs.header_version(pending.api_key, pending.version, "response")
            _, pos = ResponseHeader.decode_prefix(frame, hv)
            body = memoryview(frame)[pos:]
            response = self._decode(pending, body)
        except (DecodeError, UnsupportedVersionError) as e:
            # The frame boundary is intact, so only this request failed.
            if not pending.future.done():
                pending.future.set_exception(e)
            return None
        if not pending.future.done():
            pending.future.set_result(response)
        return None

    @staticmethod
    def _decode(pending: _Pending, body: memoryview) -> Message:
        cls, version = pending.response_type, pending.version
        if pending.api_key == _API_VERSIONS and version > 0:
            # A broker that does not know our ApiVersions version answers UNSUPPORTED_VERSION
            # in the v0 layout; the error code leads every layout, so it tells which to read.
            if len(body) >= 2 and _INT16.unpack_from(body)[0] == UnsupportedVersionError.code:
                return cls.decode(body, 0)
            try:
                return cls.decode(body, version)
            except DecodeError:
                return cls.decode(body, 0)  # as Kafka's ApiVersionsResponse.parse falls back
        return cls.decode(body, version)

    def _shut(self, error: ConnectionError) -> None:
        if self._error is None:
            self._error = error
            _log.debug("%s", error)
        pending, self._pending = self._pending, {}
        for p in pending.values():
            if not p.future.done():
                # One exception object each: waiters add their own tracebacks to it.
                p.future.set_exception(ConnectionError(str(self._error)))
        self._writer.close()

    async def close(self) -> None:
        """Close the connection; requests still waiting fail with `ConnectionError`."""
        if self._error is None:
            self._error = ConnectionError(f"{self.address}: connection closed by the client")
        self._read_task.cancel()
        await asyncio.wait({self._read_task})
        self._shut(self._error)
        try:
            await self._writer.wait_closed()
        except (ConnectionError, OSError):
            pass

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
