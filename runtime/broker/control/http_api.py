"""The control API over HTTP: JSON in and out, on 127.0.0.1, for tests in any language.

One small HTTP/1.1 server on the brokers' event loop; every request is answered and the
connection closed. The endpoints (documented in ``docs/control.md``):

====== ============================== ===============================================
GET    /rules                         the rules in force
POST   /rules                         add a rule (JSON body); answers it with its id
DELETE /rules                         remove every rule, release held requests
DELETE /rules/ID                      remove one rule
GET    /records?api=NAME&broker=N     recorded requests and answers
POST   /records/start, /records/stop  turn recording on or off
DELETE /records                       forget the records
GET    /brokers                       each broker: id, address, alive
POST   /brokers/ID/stop, /start       take a broker away, bring it back
POST   /leader                        {"topic", "partition", "broker"}
POST   /coordinator                   {"group", "broker"}
GET    /telemetry?broker=N            client telemetry pushes the brokers kept
GET    /versions/ID                   what broker ID advertises
PUT    /versions/ID                   {"preset": "2.8", "caps": {"Metadata": 9}}; {}: uncap
GET    /faults                        the network, disk and clock faults in force
POST   /faults/partition              {"brokers": [1], "clients": true}: cut them off
POST   /faults/disk, /faults/network  {"broker": 1, "delay_ms": 200}: slow it
POST   /faults/clock                  {"broker": 1, "skew_ms": 60000}: move its clock
DELETE /faults                        heal: remove every fault
POST   /reset                         undo rules, records, faults, stopped brokers, caps
GET    /memory?top=N                  the process's live objects by type (after a full
                                      collection), what its allocators hold and, when
                                      tracemalloc traces, the source lines holding most
====== ============================== ===============================================

Errors answer 400 (a bad body or a control that cannot be done) or 404 (no such
endpoint or rule) with ``{"error": "..."}``.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import json
import logging
import os
import re
import sys
import tempfile
import tracemalloc
import urllib.parse
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from kafkagen.generated import APIS
from kafkagen.runtime.errors import KafkaError

from ..api import HANDLERS
from .interceptor import Control, ControlError, Rule, error_code_of, match_from_json

__all__ = ["ControlServer", "rule_from_json"]

_log = logging.getLogger("kafkagen.broker.control")

#: A control request body larger than this is refused (rules and controls are small).
MAX_BODY = 1 << 20
_RULE_KEYS = {
    "match",
    "error",
    "response",
    "drop",
    "close",
    "delay_ms",
    "times",
    "hold_until",
}


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def rule_from_json(obj: Any) -> Rule:
    """A `Rule` from its JSON form (see ``docs/control.md``)."""
    if not isinstance(obj, dict):
        raise ControlError("a rule is a JSON object")
    extra = set(obj) - _RULE_KEYS
    if extra:
        raise ControlError(f"unknown rule field(s) {sorted(extra)}; known: {sorted(_RULE_KEYS)}")
    match = match_from_json(obj.get("match") or {})
    error = obj.get("error")
    response = obj.get("response")
    if response is not None and not isinstance(response, dict):
        raise ControlError("response must be the response's JSON form (an object)")
    times = obj.get("times", 1)
    if times is not None and (isinstance(times, bool) or not isinstance(times, int)):
        raise ControlError(f"times must be an integer or null, not {times!r}")
    delay = obj.get("delay_ms", 0)
    if isinstance(delay, bool) or not isinstance(delay, int):
        raise ControlError(f"delay_ms must be an integer, not {delay!r}")
    hold = obj.get("hold_until")
    return Rule(
        match,
        None if error is None else error_code_of(error),
        response,
        bool(obj.get("drop", False)),
        bool(obj.get("close", False)),
        delay,
        times,
        None if hold is None else match_from_json(hold),
    )


Route = Callable[[re.Match[str], Any, dict[str, str]], Awaitable[Any]]


class ControlServer:
    """Serves ``control`` on 127.0.0.1:``port`` (0: a free port) while started."""

    def __init__(self, control: Control, brokers: Callable[[], list[dict[str, Any]]]) -> None:
        self.control = control
        self._brokers = brokers
        self._server: asyncio.Server | None = None
        self.port = 0
        self._routes: list[tuple[str, re.Pattern[str], Route]] = [
            ("GET", re.compile(r"/rules"), self._get_rules),
            ("POST", re.compile(r"/rules"), self._add_rule),
            ("DELETE", re.compile(r"/rules"), self._clear_rules),
            ("DELETE", re.compile(r"/rules/(\d+)"), self._remove_rule),
            ("GET", re.compile(r"/records"), self._get_records),
            ("POST", re.compile(r"/records/(start|stop)"), self._recording),
            ("DELETE", re.compile(r"/records"), self._clear_records),
            ("GET", re.compile(r"/brokers"), self._get_brokers),
            ("POST", re.compile(r"/brokers/(\d+)/(stop|start)"), self._broker),
            ("POST", re.compile(r"/leader"), self._leader),
            ("POST", re.compile(r"/coordinator"), self._coordinator),
            ("GET", re.compile(r"/telemetry"), self._get_telemetry),
            ("GET", re.compile(r"/versions/(\d+)"), self._get_versions),
            ("PUT", re.compile(r"/versions/(\d+)"), self._set_versions),
            ("GET", re.compile(r"/faults"), self._get_faults),
            ("POST", re.compile(r"/faults/(partition|disk|network|clock)"), self._fault),
            ("DELETE", re.compile(r"/faults"), self._heal),
            ("POST", re.compile(r"/reset"), self._reset),
            ("GET", re.compile(r"/memory"), self._memory),
        ]

    async def start(self, port: int = 0) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, body = await self._answer(reader)
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
            writer.close()
            return
        data = json.dumps(body).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}
        head = (
            f"HTTP/1.1 {status} {reason.get(status, 'Error')}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
            "Connection: close\r\n\r\n"
        )
        try:
            writer.write(head.encode() + data)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[int, Any]:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, _ = lines[0].split(" ", 2)
        except ValueError:
            return 400, {"error": f"bad request line {lines[0]!r}"}
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        length = int(headers.get("content-length", "0") or 0)
        if length > MAX_BODY:
            return 400, {"error": f"body of {length} bytes is over {MAX_BODY}"}
        raw = await asyncio.wait_for(reader.readexactly(length), 10) if length else b""
        url = urllib.parse.urlsplit(target)
        query = dict(urllib.parse.parse_qsl(url.query))
        try:
            body = json.loads(raw) if raw.strip() else None
        except json.JSONDecodeError as e:
            return 400, {"error": f"body is not JSON: {e}"}
        allowed = False
        for verb, pattern, route in self._routes:
            m = pattern.fullmatch(url.path.rstrip("/") or "/")
            if m is None:
                continue
            allowed = True
            if verb != method:
                continue
            try:
                return 200, await route(m, body, query)
            except HttpError as e:
                return e.status, {"error": str(e)}
            except (ControlError, KafkaError, ValueError, TypeError, KeyError) as e:
                return 400, {"error": str(e)}
        if allowed:
            return 405, {"error": f"{method} is not allowed on {url.path}"}
        return 404, {"error": f"no endpoint {url.path} (see docs/control.md)"}

    # -- endpoints --------------------------------------------------------------------

    async def _get_rules(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        return [r.to_json() for r in self.control.rules]

    async def _add_rule(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        return self.control.add_rule(rule_from_json(body)).to_json()

    async def _clear_rules(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        self.control.clear()
        return {"rules": 0}

    async def _remove_rule(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        try:
            self.control.remove(int(m.group(1)))
        except ControlError as e:
            raise HttpError(404, str(e)) from e
        return {"removed": int(m.group(1))}

    async def _get_records(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        broker = q.get("broker")
        found = self.control.find(q.get("api"), broker=None if broker is None else int(broker))
        return [r.to_json() for r in found]

    async def _recording(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        self.control.recording = m.group(1) == "start"
        return {"recording": self.control.recording}

    async def _clear_records(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        self.control.records.clear()
        return {"records": 0}

    async def _get_brokers(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        return self._brokers()

    async def _broker(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        node = int(m.group(1))
        if m.group(2) == "stop":
            await self.control.stop_broker(node)
        else:
            await self.control.start_broker(node)
        return {"broker": node, "alive": m.group(2) == "start"}

    async def _leader(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        b = _object(body, "topic", "partition", "broker")
        self.control.move_leader(str(b["topic"]), int(b["partition"]), int(b["broker"]))
        return {"topic": b["topic"], "partition": b["partition"], "leader": b["broker"]}

    async def _coordinator(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        b = _object(body, "group", "broker")
        self.control.move_coordinator(str(b["group"]), int(b["broker"]))
        return {"group": b["group"], "coordinator": b["broker"]}

    async def _get_telemetry(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        broker = int(q["broker"]) if "broker" in q else None
        return {
            "pushes": [
                {"broker": node, **push.to_json()} for node, push in self.control.telemetry(broker)
            ]
        }

    async def _get_versions(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        return _versions_json(self.control, int(m.group(1)))

    async def _set_versions(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        b = _object(body)
        _only(b, "caps", "preset")
        caps, preset = b.get("caps"), b.get("preset")
        if caps is not None and not isinstance(caps, dict | str):
            raise ControlError(
                'caps is {"API": max version, ...}, a "Metadata:12,..." text or null'
            )
        if preset is not None and not isinstance(preset, str):
            raise ControlError(f'preset is a release such as "2.8", not {preset!r}')
        node = int(m.group(1))
        self.control.set_versions(node, caps, preset=preset)
        return _versions_json(self.control, node)

    async def _get_faults(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        return self.control.faults.to_json()

    async def _fault(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        faults, kind = self.control.faults, m.group(1)
        if kind == "partition":
            b = _object(body, "brokers")
            _only(b, "brokers", "clients")
            brokers, clients = b["brokers"], b.get("clients", True)
            if not isinstance(brokers, list) or not all(_is_int(x) for x in brokers):
                raise ControlError(f"brokers is a list of broker ids, not {brokers!r}")
            if not isinstance(clients, bool):
                raise ControlError(f"clients is true or false, not {clients!r}")
            faults.cut(brokers, clients=clients)
        else:
            amount = "skew_ms" if kind == "clock" else "delay_ms"
            b = _object(body, "broker", amount)
            _only(b, "broker", amount)
            if not _is_int(b["broker"]) or not _is_int(b[amount]):
                raise ControlError(f"broker and {amount} are integers")
            inject = {"disk": faults.slow_disk, "network": faults.slow_network}
            inject.get(kind, faults.skew_clock)(b["broker"], b[amount])
        return faults.to_json()

    async def _heal(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        self.control.faults.heal()
        return self.control.faults.to_json()

    async def _reset(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        await self.control.reset()
        return {"reset": True}

    async def _memory(self, m: re.Match[str], body: Any, q: dict[str, str]) -> Any:
        return memory_json(int(q.get("top", "30")))


def memory_json(top: int) -> dict[str, Any]:
    """What the process holds: live objects counted by type after a full collection, and
    the ``top`` source lines holding most traced memory when tracemalloc traces (start
    the server with PYTHONTRACEMALLOC=1). For finding what grows between two reads."""
    gc.collect()
    counts = Counter(_type_name(type(o)) for o in gc.get_objects())
    out: dict[str, Any] = {
        "objects": sum(counts.values()),
        "types": dict(counts.most_common(top)),
        # Blocks of CPython's small-object allocator in use, whose 1 MiB arenas go back to
        # the system only when wholly empty.
        "allocated_blocks": sys.getallocatedblocks(),
    }
    heap = _malloc_heap()
    if heap is not None:
        out["heap"] = heap
    arenas = _small_object_arenas()
    if arenas is not None:
        out["small_objects"] = arenas
    if tracemalloc.is_tracing():
        snapshot = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)]
        )
        stats = snapshot.statistics("lineno")
        out["traced_bytes"] = sum(s.size for s in stats)
        out["lines"] = [
            {
                "where": f"{s.traceback[0].filename}:{s.traceback[0].lineno}",
                "bytes": s.size,
                "blocks": s.count,
            }
            for s in stats[:top]
        ]
    return out


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _malloc_heap() -> dict[str, int] | None:
    """The C heap as glibc's ``mallinfo2`` counts it (None elsewhere): bytes in use, bytes
    free inside the heap (held, not returned) and bytes of large blocks mapped apart.
    CPython's small-object arenas are mapped directly and are in none of these."""
    name = ctypes.util.find_library("c")
    try:
        fn = ctypes.CDLL(name).mallinfo2 if name else None
    except (OSError, AttributeError):
        return None
    if fn is None:
        return None
    fn.restype = _MallInfo2
    info = fn()
    return {"in_use": info.uordblks, "free": info.fordblks, "mapped": info.hblkhd}


def _small_object_arenas() -> dict[str, int] | None:
    """CPython's small-object allocator as it reports itself (None where it cannot):
    bytes of the 1 MiB arenas it holds from the system (and the most it ever held), bytes
    of blocks in use in them and bytes free in their pools. Arenas held far beyond the
    blocks in use are memory kept for objects that lived once, not memory objects use
    now."""
    stats = getattr(sys, "_debugmallocstats", None)
    if stats is None:
        return None
    # The report goes to the C stream stderr: lend it a file for the moment it takes.
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as f:
            os.dup2(f.fileno(), 2)
            try:
                stats()
            finally:
                os.dup2(saved, 2)
            f.seek(0)
            text = f.read().decode("ascii", "replace")
    finally:
        os.close(saved)
    wanted = {
        "arenas allocated current": "arenas",
        "arenas highwater mark": "highwater",
        "bytes in allocated blocks": "in_use",
        "bytes in available blocks": "free",
    }
    out: dict[str, int] = {}
    for line in text.splitlines():
        name, _, value = line.lstrip("# ").partition("=")
        key = wanted.get(name.strip())
        if key is not None:
            out[key] = int(value.strip().replace(",", ""))
    if "arenas" not in out:
        return None
    out["arenas"] <<= 20
    if "highwater" in out:
        out["highwater"] <<= 20
    return out


def _type_name(t: type) -> str:
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _versions_json(control: Control, node: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        HANDLERS[k].name: {"api_key": k, "min": lo, "max": hi}
        for k, (lo, hi) in control.versions(node).items()
    }
    release, gaps = control.played(node)
    if release is not None:
        # Not an API name: what the played release advertised that this broker cannot.
        out["preset"] = {
            "release": release,
            "unadvertised": {
                APIS[k][1].removesuffix("Request"): {
                    "api_key": k,
                    "versions": [[lo, hi] for lo, hi in ranges],
                }
                for k, ranges in gaps.items()
            },
        }
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _only(body: dict[str, Any], *keys: str) -> None:
    extra = set(body) - set(keys)
    if extra:
        raise ControlError(f"unknown field(s) {sorted(extra)}; known: {', '.join(keys)}")


def _object(body: Any, *keys: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ControlError(f"the body must be a JSON object ({', '.join(keys) or 'fields'})")
    missing = [k for k in keys if k not in body]
    if missing:
        raise ControlError(f"the body lacks {', '.join(missing)}")
    return body
