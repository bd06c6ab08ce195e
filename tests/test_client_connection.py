"""The client's connection and handshake against a scripted broker on 127.0.0.1.

The scripted broker speaks the real protocol through the generated codecs, but each test
decides what it answers and when: out of order, late, never, garbage, or with an
ApiVersions error. (Real brokers answer in order; the tests against the project's broker
are in test_client_broker.py.)
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest
from kafkagen.generated import header_version, message_type
from kafkagen.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafkagen.generated.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafkagen.generated.headers import RequestHeader, ResponseHeader
from kafkagen.runtime.client import Connection, VersionMismatchError, connect
from kafkagen.runtime.errors import (
    DecodeError,
    ErrorCode,
    InvalidRequestError,
    UnsupportedVersionError,
)
from kafkagen.runtime.message import Message

pytestmark = pytest.mark.timeout(60)

HOST = "127.0.0.1"
FIND_COORDINATOR = 10
API_VERSIONS = 18
#: Every test's own bound, well inside the pytest timeout.
TEST_SECONDS = 20


class Peer:
    """The broker's end of one connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def read(self) -> tuple[RequestHeader, Message]:
        (size,) = struct.unpack(">i", await self.reader.readexactly(4))
        frame = await self.reader.readexactly(size)
        api_key, version = struct.unpack_from(">hh", frame)
        header, pos = RequestHeader.decode_prefix(
            frame, header_version(api_key, version, "request")
        )
        body = message_type(api_key, "request").decode(memoryview(frame)[pos:], version)
        return header, body

    def answer(self, header: RequestHeader, response: Message, version: int | None = None) -> None:
        v = header.request_api_version if version is None else version
        hv = header_version(header.request_api_key, v, "response")
        data = ResponseHeader(correlation_id=header.correlation_id).encode(hv) + response.encode(v)
        self.write_frame(data)

    def write_frame(self, data: bytes) -> None:
        self.writer.write(struct.pack(">i", len(data)) + data)

    async def handshake(self, ranges: dict[int, tuple[int, int]]) -> int:
        """Answer one ApiVersions request with ``ranges``; the version it came at."""
        header, request = await self.read()
        assert isinstance(request, ApiVersionsRequest)
        self.answer(header, api_versions(ranges))
        return header.request_api_version


def api_versions(ranges: dict[int, tuple[int, int]], error: int = 0) -> ApiVersionsResponse:
    av = ApiVersionsResponse.ApiVersion
    return ApiVersionsResponse(
        error_code=error,
        api_keys=[av(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in ranges.items()],
    )


Script = Callable[[Peer], Awaitable[None]]


async def with_broker(script: Script, test: Callable[[int], Awaitable[None]]) -> None:
    """Serve ``script`` on one connection at a time while ``test(port)`` runs; stop both."""
    tasks: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await script(Peer(reader, writer))
            await reader.read()  # hold the connection until the client closes it
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # A task of our own: asyncio logs the cancellation of its callback task as an error.
        tasks.add(asyncio.create_task(serve(reader, writer)))

    server = await asyncio.start_server(accept, HOST, 0)
    try:
        async with asyncio.timeout(TEST_SECONDS):
            await test(server.sockets[0].getsockname()[1])
    finally:
        server.close()
        if tasks:
            # Let scripts see the client's close, then stop whatever still runs.
            await asyncio.wait(tasks, timeout=2)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coro)


def lookup(key: str) -> FindCoordinatorRequest:
    return FindCoordinatorRequest(key=key)


# --------------------------------------------------------------------------- the connection


def test_pipelined_requests_are_matched_by_correlation_id() -> None:
    n = 50
    seen: list[RequestHeader] = []

    async def script(peer: Peer) -> None:
        got = [await peer.read() for _ in range(n)]
        seen.extend(h for h, _ in got)
        for header, request in reversed(got):  # the opposite order: ids must match them up
            assert isinstance(request, FindCoordinatorRequest)
            peer.answer(header, FindCoordinatorResponse(node_id=1, host=request.key, port=1))

    async def test(port: int) -> None:
        async with await Connection.open(HOST, port, client_id="tester") as conn:
            keys = [f"g{i}" for i in range(n)]
            responses = await asyncio.gather(*(conn.request(lookup(k), 3) for k in keys))
            assert [r.host for r in responses if isinstance(r, FindCoordinatorResponse)] == keys
            assert conn.in_flight == 0

    run(with_broker(script, test))
    assert [h.correlation_id for h in seen] == list(range(n))
    assert {(h.request_api_key, h.request_api_version, h.client_id) for h in seen} == {
        (FIND_COORDINATOR, 3, "tester")
    }


def test_no_more_than_max_in_flight_requests_are_unanswered() -> None:
    batches: list[int] = []

    async def script(peer: Peer) -> None:
        for _ in range(3):
            got = [await peer.read(), await peer.read()]
            with pytest.raises(TimeoutError):  # a third must wait for an answer
                async with asyncio.timeout(0.2):
                    await peer.reader.readexactly(1)
            batches.append(len(got))
            for header, _ in got:
                peer.answer(header, FindCoordinatorResponse())

    async def test(port: int) -> None:
        async with await Connection.open(HOST, port, max_in_flight=2) as conn:
            await asyncio.gather(*(conn.request(lookup(f"g{i}"), 3) for i in range(6)))
            stuck = await asyncio.gather(
                *(conn.request(lookup("x"), 3, timeout=0.3) for _ in range(3)),
                return_exceptions=True,
            )
            assert all(isinstance(e, TimeoutError) for e in stuck)
            texts = sorted(str(e).split(": ", 1)[1] for e in stuck)
            assert texts == ["no free slot of 2 within 0.3 s"] + ["no response within 0.3 s"] * 2

    run(with_broker(script, test))
    assert batches == [2, 2, 2]


def test_a_timed_out_request_is_dropped_and_its_late_answer_ignored() -> None:
    async def script(peer: Peer) -> None:
        first, _ = await peer.read()  # not answered in time
        second, _ = await peer.read()
        peer.answer(first, FindCoordinatorResponse(host="late"))
        peer.answer(second, FindCoordinatorResponse(host="second"))

    async def test(port: int) -> None:
        async with await Connection.open(HOST, port) as conn:
            with pytest.raises(TimeoutError, match=r"FindCoordinator v3 \(correlation id 0\)"):
                await conn.request(lookup("a"), 3, timeout=0.2)
            response = await conn.request(lookup("b"), 3, timeout=5)
            assert isinstance(response, FindCoordinatorResponse) and response.host == "second"
            assert not conn.closed

    run(with_broker(script, test))


def test_an_answer_nobody_asked_for_closes_the_connection() -> None:
    async def script(peer: Peer) -> None:
        header, _ = await peer.read()
        header.correlation_id = 999
        peer.answer(header, FindCoordinatorResponse())

    async def test(port: int) -> None:
        async with await Connection.open(HOST, port) as conn:
            with pytest.raises(ConnectionError, match="correlation id 999"):
                await conn.request(lookup("a"), 3)
            assert conn.closed
            with pytest.raises(ConnectionError):
                await conn.request(lookup("b"), 3)

    run(with_broker(script, test))


def test_the_broker_closing_fails_waiting_requests() -> None:
    async def script(peer: Peer) -> None:
        await peer.read()
        peer.writer.close()

    async def test(port: int) -> None:
        async with await Connection.open(HOST, port) as conn:
            with pytest.raises(ConnectionError, match="closed the connection"):
                await conn.request(lookup("a"), 3)

    run(with_broker(script, test))


def test_close_fails_waiting_requests_and_can_be_repeated() -> None:
    async def script(peer: Peer) -> None:
        await peer.read()

    async def test(port: int) -> None:
        conn = await Connection.open(HOST, port)
        waiting = asyncio.create_task(conn.request(lookup("a"), 3))
        while conn.in_flight == 0:
            await asyncio.sleep(0.01)
        await conn.close()
        with pytest.raises(ConnectionError, match="closed by the client"):
            await waiting
        await conn.close()
        assert conn.closed

    run(with_broker(script, test))


def test_an_oversized_frame_prefix_closes_the_connection_before_reading() -> None:
    async def script(peer: Peer) -> None:
        await peer.read()
        peer.writer.write(struct.pack(">i", 1 << 30))

    async def test(port: int) -> None:
        async with await Connection.open(HOST, port) as conn:
            with pytest.raises(ConnectionError, match="1073741824 bytes"):
                await conn.request(lookup("a"), 3)

    run(with_broker(script, test))


def test_an_undecodable_response_fails_only_its_request() -> None:
    async def script(peer: Peer) -> None:
        first, _ = await peer.read()
        second, _ = await peer.read()
        hv = header_version(FIND_COORDINATOR, 3, "response")
        peer.write_frame(ResponseHeader(correlation_id=first.correlation_id).encode(hv) + b"\x01")
        peer.answer(second, FindCoordinatorResponse(host="fine"))

    async def test(port: int) -> None:
        async with await Connection.open(HOST, port) as conn:
            bad, good = await asyncio.gather(
                conn.request(lookup("a"), 3), conn.request(lookup("b"), 3), return_exceptions=True
            )
            assert isinstance(bad, DecodeError) and "FindCoordinatorResponse v3" in str(bad)
            assert isinstance(good, FindCoordinatorResponse) and good.host == "fine"

    run(with_broker(script, test))


def test_a_request_that_cannot_be_encoded_sends_nothing() -> None:
    async def script(peer: Peer) -> None:
        header, request = await peer.read()
        assert header.correlation_id == 0  # the failed request used no id
        peer.answer(header, FindCoordinatorResponse(host="ok"))

    async def test(port: int) -> None:
        async with await Connection.open(HOST, port) as conn:
            with pytest.raises(UnsupportedVersionError, match="CoordinatorKeys"):
                await conn.request(FindCoordinatorRequest(coordinator_keys=["a", "b"]), 3)
            response = await conn.request(lookup("a"), 3)
            assert isinstance(response, FindCoordinatorResponse) and response.host == "ok"

    run(with_broker(script, test))


# --------------------------------------------------------------------------- the handshake


def test_api_versions_is_retried_at_the_highest_version_the_broker_lists() -> None:
    versions: list[int] = []

    async def script(peer: Peer) -> None:
        header, _ = await peer.read()
        versions.append(header.request_api_version)
        # A broker that knows ApiVersions up to v2: UNSUPPORTED_VERSION in the v0 layout.
        ranges = {API_VERSIONS: (0, 2), FIND_COORDINATOR: (0, 3)}
        peer.answer(header, api_versions(ranges, ErrorCode.UNSUPPORTED_VERSION), version=0)
        versions.append(await peer.handshake(ranges))

    async def test(port: int) -> None:
        async with await connect(HOST, port) as client:
            assert client.versions.get(FIND_COORDINATOR) == (0, 3)
            assert client.version_for(FIND_COORDINATOR) == 3

    run(with_broker(script, test))
    assert versions == [ApiVersionsRequest.HIGHEST_VERSION, 2]


def test_api_versions_error_other_than_unsupported_version_fails_connect() -> None:
    async def script(peer: Peer) -> None:
        header, _ = await peer.read()
        peer.answer(header, api_versions({}, ErrorCode.INVALID_REQUEST))

    async def test(port: int) -> None:
        with pytest.raises(
            InvalidRequestError, match=f"ApiVersions v{ApiVersionsRequest.HIGHEST_VERSION}"
        ):
            await connect(HOST, port)

    run(with_broker(script, test))


def test_a_missing_api_fails_before_anything_is_sent() -> None:
    after_handshake: list[bytes] = []

    async def script(peer: Peer) -> None:
        await peer.handshake({API_VERSIONS: (0, 4), 3: (0, 12)})
        after_handshake.append(await peer.reader.read())  # b"" once the client closes

    async def test(port: int) -> None:
        async with await connect(HOST, port) as client:
            with pytest.raises(VersionMismatchError) as info:
                await client.find_coordinators(["a", "b"])
            assert "does not support FindCoordinator (API key 10)" in str(info.value)
            assert "supports: Metadata v0-12, ApiVersions v0-4" in str(info.value)

    run(with_broker(script, test))
    assert after_handshake == [b""]
