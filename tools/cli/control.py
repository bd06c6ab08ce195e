"""``kafkagen control``: the control API of a running ``kafkagen serve --control-port P``.

Each subcommand is one HTTP call (see ``docs/control.md``); the answer is printed as JSON.
Exit status 0 on success, 1 when the server refused (its reason on stderr), 2 when it
cannot be reached or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

__all__ = ["ControlClient", "main"]


class ControlRefused(Exception):
    """The control server answered with an error."""


class ControlClient:
    """A small client of the control API (also usable from Python tests of other processes)."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            try:
                reason = json.loads(e.read()).get("error", e.reason)
            except ValueError:
                reason = e.reason
            raise ControlRefused(f"{method} {path}: {e.code} {reason}") from e


def _caps(text: str) -> Any:
    return None if text == "none" else text


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kafkagen control",
        description="Inject faults into, and control, brokers started with "
        "kafkagen serve --control-port P.",
    )
    p.add_argument(
        "--port", type=int, default=None, metavar="P", help="the control port (127.0.0.1:P)"
    )
    p.add_argument("--url", help="the control API's base URL instead of --port")
    # Also after the action (kafkagen control add --port P ...); unset there, they leave
    # the values given before it alone.
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--port", type=int, default=argparse.SUPPRESS, metavar="P", help="as above")
    where.add_argument("--url", default=argparse.SUPPRESS, help="as above")
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    def action(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[where], **kwargs)

    add = action("add", help="add a rule; prints it with its id")
    add.add_argument("--api", required=True, help="API name or key, e.g. Produce or 0")
    add.add_argument("--broker", type=int, help="only requests to this broker id")
    add.add_argument("--topic", help="only requests naming this topic")
    add.add_argument("--partition", type=int, help="only this partition (with --topic)")
    add.add_argument("--client-id", help="only requests from this client id")
    what = add.add_mutually_exclusive_group()
    what.add_argument("--error", help="answer with this error code or name")
    what.add_argument("--response", help="answer with this response (its JSON form)")
    what.add_argument("--drop", action="store_true", help="never answer")
    what.add_argument("--close", action="store_true", help="close the connection")
    add.add_argument("--delay-ms", type=int, default=0, help="act after this many ms")
    add.add_argument("--times", type=int, default=1, help="act on N requests (default 1)")
    add.add_argument("--forever", action="store_true", help="act until the rule is removed")
    add.add_argument(
        "--hold-until", metavar="API", help="hold the request until one of this API arrives"
    )

    action("rules", help="list the rules in force")
    rm = action("remove", help="remove one rule")
    rm.add_argument("id", type=int)
    action("clear", help="remove every rule and release held requests")
    action("reset", help="undo rules, records, stopped brokers and version caps")

    rec = action("records", help="print recorded requests and answers")
    rec.add_argument("--api", help="only this API")
    rec.add_argument("--broker", type=int, help="only this broker")
    recording = action("record", help="start, stop or clear recording")
    recording.add_argument("what", choices=["start", "stop", "clear"])

    action("brokers", help="list the brokers and whether they serve")
    for verb in ("stop", "start"):
        b = action(f"{verb}-broker", help=f"{verb} a broker")
        b.add_argument("broker", type=int)
    ml = action("move-leader", help="make a broker a partition's leader")
    ml.add_argument("topic")
    ml.add_argument("partition", type=int)
    ml.add_argument("broker", type=int)
    mc = action("move-coordinator", help="make a broker a group's coordinator")
    mc.add_argument("group")
    mc.add_argument("broker", type=int)
    action("faults", help="show the network, disk and clock faults in force")
    for name, summary in (
        ("isolate", "cut a broker off from its peers"),
        ("partition", "cut these brokers off from the others"),
    ):
        cut = action(name, help=summary)
        cut.add_argument("brokers", type=int, nargs=1 if name == "isolate" else "+")
        cut.add_argument("--no-clients", action="store_true", help="no client reaches them either")
    for name, summary in (
        ("slow-disk", "delay a broker's appends and reads"),
        ("slow-network", "delay everything a broker sends and receives"),
    ):
        slow = action(name, help=summary)
        slow.add_argument("broker", type=int)
        slow.add_argument("delay_ms", type=int)
    skew = action("skew-clock", help="move a broker's wall clock by SKEW_MS (may be negative)")
    skew.add_argument("broker", type=int)
    skew.add_argument("skew_ms", type=int)
    action("heal", help="remove every network, disk and clock fault")
    v = action("versions", help="show or change what a broker advertises")
    v.add_argument("broker", type=int)
    v.add_argument(
        "--set",
        dest="caps",
        type=_caps,
        default=argparse.SUPPRESS,
        metavar="CAPS",
        help='"Metadata:9,Fetch:11", or "none" to uncap',
    )
    v.add_argument(
        "--preset",
        default=argparse.SUPPRESS,
        metavar="RELEASE",
        help="play a Kafka release's broker: any minor release, 2.4 to 4.4",
    )
    return p


def _request(args: argparse.Namespace) -> tuple[str, str, Any]:
    a = args.action
    if a == "add":
        match: dict[str, Any] = {"api": args.api}
        for key in ("broker", "topic", "partition", "client_id"):
            if getattr(args, key) is not None:
                match[key] = getattr(args, key)
        rule: dict[str, Any] = {
            "match": match,
            "delay_ms": args.delay_ms,
            "times": None if args.forever else args.times,
        }
        if args.error is not None:
            rule["error"] = int(args.error) if args.error.lstrip("-").isdigit() else args.error
        if args.response is not None:
            rule["response"] = json.loads(args.response)
        if args.drop:
            rule["drop"] = True
        if args.close:
            rule["close"] = True
        if args.hold_until is not None:
            rule["hold_until"] = {"api": args.hold_until}
        return "POST", "/rules", rule
    if a == "rules":
        return "GET", "/rules", None
    if a == "remove":
        return "DELETE", f"/rules/{args.id}", None
    if a == "clear":
        return "DELETE", "/rules", None
    if a == "reset":
        return "POST", "/reset", None
    if a == "records":
        query = "&".join(
            f"{k}={getattr(args, k)}" for k in ("api", "broker") if getattr(args, k) is not None
        )
        return "GET", "/records" + (f"?{query}" if query else ""), None
    if a == "record":
        if args.what == "clear":
            return "DELETE", "/records", None
        return "POST", f"/records/{args.what}", None
    if a == "brokers":
        return "GET", "/brokers", None
    if a in ("stop-broker", "start-broker"):
        return "POST", f"/brokers/{args.broker}/{a.split('-')[0]}", None
    if a == "move-leader":
        body = {"topic": args.topic, "partition": args.partition, "broker": args.broker}
        return "POST", "/leader", body
    if a == "move-coordinator":
        return "POST", "/coordinator", {"group": args.group, "broker": args.broker}
    if a == "faults":
        return "GET", "/faults", None
    if a in ("isolate", "partition"):
        return (
            "POST",
            "/faults/partition",
            {"brokers": args.brokers, "clients": not args.no_clients},
        )
    if a in ("slow-disk", "slow-network"):
        body = {"broker": args.broker, "delay_ms": args.delay_ms}
        return "POST", f"/faults/{a.removeprefix('slow-')}", body
    if a == "skew-clock":
        return "POST", "/faults/clock", {"broker": args.broker, "skew_ms": args.skew_ms}
    if a == "heal":
        return "DELETE", "/faults", None
    assert a == "versions", a
    if not hasattr(args, "caps") and not hasattr(args, "preset"):
        return "GET", f"/versions/{args.broker}", None
    body = {k: getattr(args, k) for k in ("caps", "preset") if hasattr(args, k)}
    return "PUT", f"/versions/{args.broker}", body


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if (args.port is None) == (args.url is None):
        parser.error("give the control API's --port or --url (one of them)")
    url = args.url or f"http://127.0.0.1:{args.port}"
    try:
        method, path, body = _request(args)
    except ValueError as e:
        parser.error(str(e))
    try:
        answer = ControlClient(url).call(method, path, body)
    except ControlRefused as e:
        print(f"kafkagen control: {e}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as e:
        print(f"kafkagen control: cannot reach {url}: {e}", file=sys.stderr)
        return 2
    print(json.dumps(answer, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
