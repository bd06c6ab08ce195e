"""A smoke run: one random message for every API, kind and version, round-tripped.

Prints a table per API and exits non-zero if any message fails. The Spark fuzz job
(``kafkagen fuzz``) does the same checks at scale; this one needs nothing but the codecs.
"""

from __future__ import annotations

import argparse
import time
import traceback

from kafkagen.fuzz.builders import RandomGen, random_message
from kafkagen.generated import APIS, message_type
from kafkagen.runtime.message import Message


def check_one(cls: type[Message], version: int, gen: RandomGen) -> str | None:
    """None when the message survives encode, decode, re-encode and JSON; else the reason."""
    gen.reset()
    msg = random_message(cls, version, gen)
    try:
        data = msg.encode(version)
        back = cls.decode(data, version)
        if back != msg:
            return "decoded message differs from the original"
        if back.encode(version) != data:
            return "re-encoding is not byte-identical"
        doc = msg.to_json(version)
        if cls.from_json(doc, version).to_json(version) != doc:
            return "JSON round trip differs"
    except Exception as e:  # report every failure kind, never stop the run
        return f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
    return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=1, help="the messages' seed (default 1)")


def run(args: argparse.Namespace) -> int:
    gen = RandomGen(args.seed)
    started = time.perf_counter()
    total = failed = 0
    print(f"{'api':>4}  {'name':<36} {'versions':>9}  {'messages':>8}  failures")
    for key, (_module, req_name, _resp) in sorted(APIS.items()):
        api_msgs = api_fail = 0
        versions = ""
        for kind in ("request", "response"):
            cls = message_type(key, kind)
            versions = f"{cls.LOWEST_VERSION}-{cls.HIGHEST_VERSION}"
            for version in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
                api_msgs += 1
                problem = check_one(cls, version, gen)
                if problem is not None:
                    api_fail += 1
                    print(f"FAIL {cls.__name__} v{version} (seed {args.seed}): {problem}")
        total += api_msgs
        failed += api_fail
        name = req_name.removesuffix("Request")
        print(f"{key:>4}  {name:<36} {versions:>9}  {api_msgs:>8}  {api_fail}")
    took = time.perf_counter() - started
    print(f"{total} messages over {len(APIS)} APIs, {failed} failed, in {took:.2f}s")
    return 1 if failed else 0
