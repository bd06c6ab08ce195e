"""The network layer: one asyncio listener per broker, Kafka's framing, ordered responses.

A connection reads 4-byte size-prefixed frames. The size is checked against
``socket.request.max.bytes`` before the body is read, and the body is received straight into
a buffer of that size (no stream buffer to copy through). Each request gets a slot in the
connection's queue as it arrives; handlers fill slots whenever their answer is ready (at
once, or later from a purgatory callback), and responses leave strictly in request order,
so clients may pipeline. A connection with ``queued.max.requests`` unanswered requests is
not read until some are answered. Answers leave in gathering writes, unjoined; answers that
carry stored batches (Fetch, FetchSnapshot, ShareFetch) are encoded in pieces
(`Message.encode_parts`), so a large batch goes out from the log's own bytes.

Anything malformed (short frame, bad header, body that does not decode, an API key or
version not served) is logged and closes that connection only, as Kafka does; the one
exception is an ApiVersions request newer than the broker knows, which is answered in the
v0 layout with UNSUPPORTED_VERSION so the client can retry with a version it finds there.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import os
import ssl
import struct
from collections.abc import Callable
from typing import cast

from kafkagen.runtime.errors import DecodeError, UnsupportedVersionError
from kafkagen.runtime.handlers import declare_handlers
from kafkagen.runtime.message import Message, convert

from .api import (
    ApiHandler,
    BrokerServices,
    Dispatch,
    RequestContext,
    dispatch,
    error_response,
)
from .security.limits import ConnectionQuotas, RequestMemory
from .security.listeners import (
    Listener,
    SaslState,
    SecurityProtocol,
    Session,
    certificate_principal,
    enabled_mechanisms,
    ssl_context,
)
from .security.sasl import AuthenticationFailed

__all__ = ["BrokerServer", "ClientConnection"]

_log = logging.getLogger("kafkagen.broker.server")

_SIZE = struct.Struct(">i")
_KEY_VERSION_CID = struct.Struct(">hhi")
API_VERSIONS_KEY = 18
#: What one receive into the scratch buffer may take, and how much unread data stops reading.
_SCRATCH = 64 * 1024
#: Reads up to this size (size prefixes, small requests) wait in the scratch buffer's queue.
_SMALL = 4096
#: How many buffers one gathering write may pass.
_IOV_MAX = os.sysconf("SC_IOV_MAX")
#: Answers that carry stored batches (Fetch, FetchSnapshot, ShareFetch): encoded in pieces,
#: each large batch sent from the log's own bytes instead of being copied into the answer.
_PIECED = frozenset({1, 59, 78})


class _Slot:
    """One request's place in its connection's response order; the handler's Responder."""

    __slots__ = ("conn", "api_key", "correlation_id", "payload", "done")

    def __init__(self, conn: ClientConnection, api_key: int, correlation_id: int) -> None:
        self.conn = conn
        self.api_key = api_key
        self.correlation_id = correlation_id
        #: The answer's frame in pieces: size prefix and header, then the body as encoded.
        self.payload: tuple[bytes | memoryview, ...] | None = None
        self.done = False

    def send(self, response: Message, version: int) -> None:
        if self.done:
            _log.error("a second response for correlation id %d was dropped", self.correlation_id)
            return
        registry = self.conn.server.services.apis.registry
        try:
            if registry.custom:
                # A built-in handler's answer, in the served package's class.
                response = convert(response, registry.response_type(self.api_key))
            hv = registry.header_version(self.api_key, version, "response")
            header = registry.response_header(correlation_id=self.correlation_id).encode(hv)
            if self.api_key in _PIECED:
                parts = response.encode_parts(version)
                size = len(header) + sum(map(len, parts))
                payload = (_SIZE.pack(size) + header, *parts)
            else:
                body = response.encode(version)
                payload = (_SIZE.pack(len(header) + len(body)) + header, body)
        except Exception:
            _log.exception("cannot encode %s v%d", type(response).__name__, version)
            self.done = True
            self.conn.close("response encoding failed")
            return
        self.payload = payload
        self.done = True
        self.conn.flush()

    def send_nothing(self) -> None:
        if not self.done:
            self.done = True
            self.conn.flush()

    def close(self, reason: str) -> None:
        self.done = True
        self.conn.close(reason)

    def gone(self) -> bool:
        return self.conn.closed


class _Wire(asyncio.BufferedProtocol):
    """A connection's transport, read the way Kafka's frames are sized.

    Bytes that arrive while no frame body is awaited (size prefixes, small pipelined
    requests) land in the broker's scratch buffer and are moved at once to ``pending``
    (the buffer is free again for its next connection); a frame's body is
    received straight into a buffer of the size its prefix gave, so a large request is not
    copied through a stream buffer. Reading pauses while more than one scratch buffer
    waits unread (a connection held back by ``queued.max.requests``).
    """

    def __init__(self, accept: Callable[[_Wire], None], scratch: bytearray) -> None:
        self._accept = accept
        self.transport: asyncio.Transport | None = None
        # A view, not the bytearray: asyncio's TLS reader fills the buffer it gets in
        # several reads into slices of it, and a bytearray's slice is a copy (what went
        # there was lost); a view's slice writes through.
        self._scratch = memoryview(scratch)
        self._pending = bytearray()
        self._body: memoryview | None = None
        self._filled = 0
        self._wanted = 0
        self._waiter: asyncio.Future[None] | None = None
        self._eof = False
        self._lost: Exception | None = None
        self._drain: asyncio.Future[None] | None = None
        self._writing_paused = False
        #: The socket's descriptor for gathering writes; -1 over TLS.
        self._fd = -1

    # -- protocol callbacks -----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        if transport.get_extra_info("sslcontext") is None:
            self._fd = transport.get_extra_info("socket").fileno()
        self._accept(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._body is not None:
            return self._body[self._filled :]
        return self._scratch

    def buffer_updated(self, nbytes: int) -> None:
        if self._body is not None:
            self._filled += nbytes
            if self._filled == len(self._body):
                # Done: what comes next (TLS may hand it over before the reader runs) is
                # the next frame's.
                self._body = None
                self._wake()
            return
        self._pending += self._scratch[:nbytes]
        if len(self._pending) >= self._wanted:
            self._wake()
        if len(self._pending) >= _SCRATCH and self.transport is not None:
            self.transport.pause_reading()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        # Kept half-open so that answers to requests already read still go out; TLS
        # cannot be half-closed.
        return self.transport is not None and self.transport.get_extra_info("sslcontext") is None

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = True
        self._lost = exc or ConnectionResetError("connection lost")
        self._wake()
        if self._drain is not None and not self._drain.done():
            self._drain.set_exception(self._lost)
            self._drain.exception()  # retrieved: nobody may be waiting for it any more

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    # -- for ClientConnection ---------------------------------------------------------

    async def read(self, size: int) -> bytes | memoryview:
        """The next ``size`` bytes; raises IncompleteReadError at the end of the stream."""
        pending = self._pending
        if len(pending) >= size:
            data = bytes(pending[:size])
            del pending[:size]
            self._resume()
            return data
        if size <= _SMALL:
            self._wanted = size
            try:
                while len(pending) < size and not self._eof:
                    await self._wait()
            finally:
                self._wanted = 0
            if len(pending) < size:
                raise asyncio.IncompleteReadError(bytes(pending), size)
            data = bytes(pending[:size])
            del pending[:size]
            return data
        body = bytearray(size)
        body[: len(pending)] = pending
        self._filled = len(pending)
        pending.clear()
        self._body = memoryview(body)
        try:
            while self._body is not None and not self._eof:
                await self._wait()
        finally:
            self._body = None
        if self._filled < size:
            raise asyncio.IncompleteReadError(bytes(body[: self._filled]), size)
        # Read-only, as bytes are: what decodes from it (records) may be kept and hashed.
        return memoryview(body).toreadonly()

    def write(self, parts: list[bytes | memoryview]) -> None:
        """Send ``parts`` in order, unjoined. Over plain TCP with nothing waiting in the
        transport's buffer they go to the socket in one gathering call (asyncio's
        ``writelines`` joins them first); what the socket does not take, and everything
        over TLS, goes through the transport."""
        transport = self.transport
        assert transport is not None
        start = 0
        if self._fd >= 0 and not transport.get_write_buffer_size() and not transport.is_closing():
            try:
                sent = os.writev(self._fd, parts[:_IOV_MAX])
            except OSError:
                sent = 0  # would block, or broken: the transport's own write finds out
            while start < len(parts) and sent >= len(parts[start]):
                sent -= len(parts[start])
                start += 1
            if sent:
                transport.write(memoryview(parts[start])[sent:])
                start += 1
        for part in parts[start:]:
            transport.write(part)

    async def drain(self) -> None:
        if self._lost is not None:
            raise ConnectionResetError("connection lost")
        if not self._writing_paused:
            return
        if self._drain is None or self._drain.done():
            self._drain = asyncio.get_running_loop().create_future()
        await self._drain

    async def _wait(self) -> None:
        self._resume()
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _resume(self) -> None:
        if len(self._pending) < _SCRATCH and self.transport is not None and not self._eof:
            self.transport.resume_reading()


class ClientConnection:
    """A client's connection to this broker: reads requests, dispatches them, writes answers
    in order (the client's own end is `kafkagen.runtime.client.Connection`)."""

    def __init__(
        self,
        server: BrokerServer,
        wire: _Wire,
        session: Session | None = None,
    ) -> None:
        self.server = server
        self.session = session or Session(None)
        self.wire = wire
        assert wire.transport is not None
        self.transport = wire.transport
        peer = self.transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.client_host = f"/{peer[0]}" if peer else ""
        self.client_port: int = peer[1] if peer else -1
        self.slots: collections.deque[_Slot] = collections.deque()
        self.closed = False
        self._room = asyncio.Event()
        self._room.set()
        self.task: asyncio.Task[None] | None = None

    # -- reading ----------------------------------------------------------------------

    async def run(self) -> None:
        max_size = self.server.services.configs.broker_int("socket.request.max.bytes")
        wire = self.wire
        idle_s = self.server.idle_ms / 1000
        memory = self.server.request_memory
        try:
            while not self.closed:
                async with asyncio.timeout(idle_s):
                    prefix = await wire.read(4)
                (size,) = _SIZE.unpack(prefix)
                if size < 0 or size > max_size:
                    # Checked before the body is read: a bogus prefix never allocates.
                    self.close(
                        f"frame size {size} outside 0..{max_size} (socket.request.max.bytes)"
                    )
                    return
                if 0 <= memory.max_frame < size:
                    self.close(
                        f"frame size {size} exceeds what queued.max.request.bytes "
                        f"({memory.bound}) lets one request hold ({memory.max_frame})"
                    )
                    return
                async with memory.reserve(size):
                    async with asyncio.timeout(idle_s):
                        body = await wire.read(size)
                    self.dispatch(body)
                if self.closed:
                    return
                await wire.drain()
                if len(self.slots) >= self.server.queued_max_requests:
                    self._room.clear()
                    await self._room.wait()
        except asyncio.IncompleteReadError as e:
            if e.partial:
                _log.info("%s: connection closed inside a frame", self.peer)
        except (ConnectionError, OSError):
            pass
        except TimeoutError:
            self.close(f"idle for {self.server.idle_ms} ms (connections.max.idle.ms)")
        except asyncio.CancelledError:
            raise
        except Exception:
            _log.exception("%s: connection failed", self.peer)
        finally:
            if not self.slots:
                self.close(None)

    def dispatch(self, body: bytes | memoryview) -> None:
        if self.session.state is SaslState.RAW_TOKENS:
            self._raw_token(bytes(body))
            return
        if len(body) < _KEY_VERSION_CID.size:
            self.close(f"a {len(body)}-byte frame cannot hold a request header")
            return
        api_key, version, correlation_id = _KEY_VERSION_CID.unpack_from(body)
        apis = self.server.services.apis
        registry = apis.registry
        handler = registry.handlers.get(api_key)
        if handler is None:
            self.close(f"unknown API key {api_key}")
            return
        refusal = self.session.refusal(api_key)
        if refusal is not None:
            self.close(refusal)
            return
        min_version, max_version = apis.min_version(handler), apis.max_version(handler)
        if not min_version <= version <= max_version:
            if api_key == API_VERSIONS_KEY and version > max_version:
                # Answered in the v0 layout, which every client can read.
                self._handle(handler, 0, correlation_id, None, None)
                return
            self.close(f"{handler.name} v{version} is not served ({min_version}-{max_version})")
            return
        try:
            header, pos = registry.request_header.decode_prefix(
                body, registry.header_version(api_key, version, "request")
            )
            # Like Kafka, bytes after the body are ignored: librdkafka 2.16 sends some after
            # a Metadata v12 request with no topics.
            request, _ = handler.request_type.decode_prefix(memoryview(body)[pos:], version)
        except (DecodeError, UnsupportedVersionError, ValueError, IndexError, struct.error) as e:
            self.close(f"malformed {handler.name} v{version} request: {e}")
            return
        client_id = getattr(header, "client_id", None)
        self._handle(handler, version, correlation_id, client_id, request)

    def _handle(
        self,
        handler: ApiHandler,
        version: int,
        correlation_id: int,
        client_id: str | None,
        request: Message | None,
    ) -> None:
        api_key = handler.api_key
        slot = _Slot(self, api_key, correlation_id)
        self.slots.append(slot)
        ctx = RequestContext(
            self.server.services,
            api_key,
            version,
            correlation_id,
            client_id,
            self.client_host,
            slot,
            self.session,
            self.client_port,
        )
        try:
            self.server.dispatch(handler, ctx, request)
        except Exception:
            # As Kafka does: logged once, answered with UNKNOWN_SERVER_ERROR, still serving.
            _log.exception("%s: handler of API %d v%d failed", self.peer, api_key, version)
            if not slot.done:
                registry = self.server.services.apis.registry
                slot.send(error_response(registry.response_type(api_key)), version)

    def _raw_token(self, token: bytes) -> None:
        """A SASL token after SaslHandshake v0: answered by a bare size-prefixed token."""
        try:
            answer = self.session.authenticate(token)
        except AuthenticationFailed as e:
            self.close(f"SASL authentication failed: {e}")
            return
        slot = _Slot(self, -1, -1)
        slot.payload = (_SIZE.pack(len(answer)) + answer,)
        slot.done = True
        self.slots.append(slot)
        self.flush()

    # -- writing ----------------------------------------------------------------------

    def flush(self) -> None:
        """Write every answered request at the head of the queue, in order."""
        if self.closed:
            return
        slots = self.slots
        parts: list[bytes | memoryview] = []
        while slots and slots[0].done:
            payload = slots.popleft().payload
            if payload is not None:
                parts += payload
        if parts:
            self.wire.write(parts)
        if len(slots) < self.server.queued_max_requests:
            self._room.set()
        if not slots and self.task is not None and self.task.done():
            self.close(None)

    def close(self, reason: str | None) -> None:
        if self.closed:
            return
        if reason:
            _log.warning("%s: closing connection: %s", self.peer, reason)
        self.closed = True
        self._room.set()
        self.transport.close()
        self.server.forget(self)
        self.session.closed()

    async def finish(self, timeout: float) -> None:
        """Shutdown: flush what was answered, fail the rest by closing, within ``timeout``."""
        self.flush()
        if not self.closed:
            if self.slots:
                # Unanswered requests fail the way a broker going away fails them.
                _log.info("%s: %d request(s) unanswered at shutdown", self.peer, len(self.slots))
            try:
                await asyncio.wait_for(self.wire.drain(), timeout)
            except (TimeoutError, ConnectionError, OSError):
                pass
            self.close(None)


class BrokerServer:
    """The listener of one broker on 127.0.0.1."""

    def __init__(
        self,
        services: BrokerServices,
        host: str,
        port: int,
        listeners: list[Listener] | None = None,
    ) -> None:
        declare_handlers()
        self.services = services
        self.node_id = services.node_id
        self.host = host
        self.port = port
        #: This broker's listeners (ports already its own).
        self.listeners = listeners or [
            Listener("PLAINTEXT", SecurityProtocol.PLAINTEXT, host, port)
        ]
        self.connections: set[ClientConnection] = set()
        self._servers: list[asyncio.Server] = []
        cfg = services.configs
        self.mechanisms = enabled_mechanisms(cfg)
        self._tls = {lst.name: ssl_context(cfg, lst) for lst in self.listeners if lst.protocol.tls}
        self.queued_max_requests = cfg.broker_int("queued.max.requests")
        self.max_connections = cfg.broker_int("max.connections")
        self.quotas = ConnectionQuotas(cfg)
        self.idle_ms = cfg.broker_int("connections.max.idle.ms")
        self.request_memory = RequestMemory(cfg.broker_int("queued.max.request.bytes"))
        #: What every decoded request goes through to its handler (see `api.dispatch`).
        self.dispatch: Dispatch = dispatch
        self._accepting = False
        #: Where every connection of this broker receives what no frame body awaits; one
        #: is enough, as each receive's bytes are moved out before the next (one loop).
        self._scratch = bytearray(_SCRATCH)

    async def start(self) -> int:
        """Listen on every listener; return the first one's bound port (useful when asked
        for port 0)."""
        bound = []
        for lst in self.listeners:
            server = await asyncio.get_running_loop().create_server(
                functools.partial(_Wire, functools.partial(self._accept, lst), self._scratch),
                lst.host,
                lst.port,
                ssl=self._tls.get(lst.name),
            )
            self._servers.append(server)
            bound.append(Listener(lst.name, lst.protocol, lst.host, _port_of(server)))
        self.listeners = bound
        self.port = bound[0].port
        self._accepting = True
        return self.port

    def _session(self, listener: Listener, transport: asyncio.Transport) -> Session:
        principal = "User:ANONYMOUS"
        if listener.protocol is SecurityProtocol.SSL:
            ssl_object = transport.get_extra_info("ssl_object")
            if isinstance(ssl_object, ssl.SSLObject):
                principal = certificate_principal(ssl_object.getpeercert())
        return Session(listener, self.services.credentials, self.mechanisms, principal)

    def _accept(self, listener: Listener, wire: _Wire) -> None:
        transport = wire.transport
        assert transport is not None
        if not self._accepting or len(self.connections) >= self.max_connections:
            _log.warning(
                "broker %d: refusing a connection (%d open, max.connections %d)",
                self.node_id,
                len(self.connections),
                self.max_connections,
            )
            transport.close()
            return
        conn = ClientConnection(self, wire, self._session(listener, transport))
        if not self.quotas.admit(conn.client_host):
            _log.warning("broker %d: refusing %s (max.connections.per.ip)", self.node_id, conn.peer)
            transport.close()
            return
        self.connections.add(conn)
        conn.task = asyncio.create_task(conn.run())

    def forget(self, conn: ClientConnection) -> None:
        """A closed connection leaves the broker's counts."""
        if conn in self.connections:
            self.connections.discard(conn)
            self.quotas.release(conn.client_host)

    def pause(self) -> None:
        """Refuse new connections and drop the open ones (a broker that went away)."""
        self._accepting = False
        for conn in list(self.connections):
            conn.close("the broker is paused")
            if conn.task is not None and not conn.task.done():
                conn.task.cancel()

    def resume(self) -> None:
        self._accepting = True

    async def stop_accepting(self) -> None:
        """Close the listener and stop reading requests; answers still go out."""
        self._accepting = False
        for server in self._servers:
            server.close()
        for conn in list(self.connections):
            task = conn.task
            if task is not None and not task.done():
                task.cancel()
        await asyncio.sleep(0)

    async def close_connections(self, timeout: float = 2.0) -> None:
        conns = list(self.connections)
        if conns:
            await asyncio.gather(*(c.finish(timeout) for c in conns))
        for server in self._servers:
            await server.wait_closed()
        self._servers = []


def _port_of(server: asyncio.Server) -> int:
    port: int = server.sockets[0].getsockname()[1]
    return port
