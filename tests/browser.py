"""Headless Chromium for the tests: finding it, and driving it over the DevTools protocol.

Debian's ``chromium`` is installed by ``tools/dev.sh test`` where it may (root, as in CI);
elsewhere the tests that need it skip and say why, and in CI a missing browser fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect


def chromium() -> str:
    found = shutil.which("chromium")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("chromium is missing in CI: tools/dev.sh test installs Debian's 'chromium'")
    pytest.skip("no chromium on PATH (Debian: apt-get install chromium; tools/dev.sh does it)")


#: The flags every headless run needs here: root in CI needs --no-sandbox.
HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-dev-shm-usage"]  # fmt: skip


@dataclass
class Page:
    """One tab, driven over the DevTools protocol. Every event it sends is kept in
    ``events`` (method, params) until :meth:`drain`."""

    ws: ClientConnection
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _next_id: int = 0

    def call(self, method: str, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        ident = self._next_id
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.ws.recv(timeout=max(0.01, deadline - time.monotonic())))
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self.events.append((message["method"], message.get("params", {})))

    def wait_for(self, event: str, timeout: float = 30.0) -> dict[str, Any]:
        """The first ``event`` not yet seen, waiting for it up to ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            for i, (method, params) in enumerate(self.events):
                if method == event:
                    del self.events[i]
                    return params
            message = json.loads(self.ws.recv(timeout=max(0.01, deadline - time.monotonic())))
            if "method" in message:
                self.events.append((message["method"], message.get("params", {})))

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited if a promise)."""
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def until(self, expression: str, timeout: float = 20.0) -> Any:
        """Evaluate ``expression`` every 100 ms until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise TimeoutError(f"still false after {timeout} s: {expression}")

    def open(self, url: str) -> None:
        """Navigate and wait for the load event."""
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def drain(self, settle: float = 0.3) -> list[tuple[str, dict[str, Any]]]:
        """Every event so far, after waiting ``settle`` seconds for late ones."""
        deadline = time.monotonic() + settle
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = json.loads(self.ws.recv(timeout=left))
            except TimeoutError:
                break
            if "method" in message:
                self.events.append((message["method"], message.get("params", {})))
        events, self.events = self.events, []
        return events


def problems(events: list[tuple[str, dict[str, Any]]], origin: str) -> list[str]:
    """What a page did wrong: uncaught exceptions, console errors, log errors (a resource
    that failed to load), and any request that left ``origin``."""
    found = []
    for method, params in events:
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            found.append(f"exception: {text}")
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            args = [a.get("value", a.get("description")) for a in params["args"]]
            found.append(f"console.{params['type']}: {args}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            found.append(f"log: {entry['text']} {entry.get('url', '')}")
        elif method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if not url.startswith((origin, "data:", "blob:", "about:")):
                found.append(f"request off the site: {url}")
    return found


@contextmanager
def devtools(profile: Path) -> Iterator[Page]:
    """A headless Chromium with one tab, its console, log and network events on."""
    proc = subprocess.Popen(
        [chromium(), *HEADLESS, "--remote-debugging-port=0", f"--user-data-dir={profile}",
         "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            assert proc.poll() is None, "chromium exited before it listened"
            assert time.monotonic() < deadline, "chromium did not open its DevTools port"
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            targets = json.load(r)
        url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        with connect(url, max_size=None, open_timeout=30) as ws:
            page = Page(ws)
            for domain in ("Page", "Runtime", "Log", "Network"):
                page.call(f"{domain}.enable")
            yield page
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
