"""The live server's memory under rounds of random requests, and after a clean-up.

Starts ``kafkagen serve --brokers 3`` in a process of its own and sends it rounds of random
requests (`kafkagen.chaos.requests.send_random_requests`: every API and version, a quarter
of them corrupted), round ``i`` with seed ``--seed + i`` and every string drawn from one
pool of ``--names`` strings shared by all rounds, so what the requests create is bounded.
After each round the server's resident memory (VmRSS) and open files are read from /proc,
the bytes of the internal topics' logs (all replicas) through DescribeLogDirs, and with
``--objects`` its live objects by type through the control API (``GET /memory``). Before
the first reading one FindCoordinator of each key type makes the three internal topics
(150 partitions each over the three brokers), which would otherwise appear in whichever
round first asks for them and count as growth. A last phase removes through the Kafka API
what the run created (topics, groups, ACLs, client quotas, SCRAM users, client-metrics
subscriptions) and, after ``--linger`` seconds for the expiries to pass, reads them again.

It reports whether the memory levels off (the second half's highest reading within 10% of
the reading half-way) and whether it comes back after the clean-up (within 10% of the
first round's reading: the first round loads every handler and codec once). What random
requests leave behind that no Kafka API removes goes only when its expiry passes:
transactional ids (``transactional.id.expiration.ms``), offsets
(``offsets.retention.minutes``), the compacted logs' tombstones
(``log.cleaner.delete.retention.ms``) and client telemetry instances (15 minutes after
their last request); `docs/chaos.md` gives the command with these shortened.

Run: kafkagen bench memory [--help]. Figures, not a test; exit status 1 when a request
hung or got an answer that does not decode, 2 when the server did not start.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import sys
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkagen.chaos.campaign import SERVE_CONFIGS
from kafkagen.chaos.command import _serve, _usage
from kafkagen.chaos.requests import RequestStats, send_random_requests
from kafkagen.generated.alter_client_quotas import AlterClientQuotasRequest
from kafkagen.generated.alter_user_scram_credentials import AlterUserScramCredentialsRequest
from kafkagen.generated.delete_acls import DeleteAclsRequest
from kafkagen.generated.delete_groups import DeleteGroupsRequest
from kafkagen.generated.delete_topics import DeleteTopicsRequest
from kafkagen.generated.describe_client_quotas import DescribeClientQuotasRequest
from kafkagen.generated.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
)
from kafkagen.generated.incremental_alter_configs import IncrementalAlterConfigsRequest
from kafkagen.generated.list_config_resources import ListConfigResourcesRequest
from kafkagen.runtime.client import admin
from kafkagen.runtime.client.builders import CoordinatorType
from kafkagen.runtime.client.client import KafkaClient, connect
from kafkagen.runtime.errors import KafkaError

__all__ = ["main"]

#: Seconds after a round before the server is read: sessions the requests opened
#: (their timeouts cut under 100 ms) expire and answered waits are let go.
SETTLE_S = 3.0
#: Readings within this fraction count as level, or as back.
WITHIN = 0.10
_ANY, _MATCH = 1, 3  # ACL filter: any resource, pattern or operation; "match" pattern
_CLIENT_METRICS = 16
_CLIENT_METRICS_KEYS = ("metrics", "interval.ms", "match")
_SCRAM_MECHANISMS = (1, 2)


@dataclass
class Reading:
    label: str
    requests: int
    outcomes: Counter[str]
    seconds: float
    rss: int
    fds: int
    objects: dict[str, Any] | None = None
    #: Bytes of each internal topic's log, summed over its replicas.
    logs: dict[str, int] = field(default_factory=dict)


@dataclass
class Run:
    readings: list[Reading] = field(default_factory=list)
    removed: Counter[str] = field(default_factory=Counter)
    failures: int = 0


def _control_get(control: str, path: str) -> Any:
    with urllib.request.urlopen(control.rstrip("/") + path, timeout=120) as r:
        return json.loads(r.read())


async def clean_up(bootstrap: str) -> Counter[str]:
    """Remove through the Kafka API what random requests create; how many of each."""
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    removed: Counter[str] = Counter()
    client = await connect(host, int(port), request_timeout=60.0)
    try:
        await _delete_groups(client, removed)
        await _delete_topics(client, removed)
        await _delete_acls(client, removed)
        await _delete_quotas(client, removed)
        await _delete_scram(client, removed)
        await _delete_client_metrics(client, removed)
    finally:
        await client.close()
    return removed


async def make_internal_topics(bootstrap: str) -> None:
    """Ask for a coordinator of each key type, so that every internal topic exists."""
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    client = await connect(host, int(port), request_timeout=60.0)
    keys = {
        CoordinatorType.GROUP: "kafkagen-bench-memory",
        CoordinatorType.TRANSACTION: "kafkagen-bench-memory",
        CoordinatorType.SHARE: f"kafkagen-bench-memory:{uuid.UUID(int=1)}:0",
    }
    try:
        for key_type, key in keys.items():
            # The topic is made by the first request; the coordinator is ready a moment later.
            for _ in range(100):
                found = (await client.find_coordinators([key], key_type))[key]
                if not isinstance(found, KafkaError):
                    break
                await asyncio.sleep(0.1)
            else:
                raise RuntimeError(f"no {key_type.name.lower()} coordinator: {found}")
    finally:
        await client.close()


async def _delete_topics(client: KafkaClient, removed: Counter[str]) -> None:
    md = await admin.list_topics_all(client)
    names = [t.name for t in md.topics if t.name and not t.is_internal]
    for i in range(0, len(names), 500):
        chunk = names[i : i + 500]
        r: Any = await client.request(
            DeleteTopicsRequest(
                topics=[DeleteTopicsRequest.DeleteTopicState(name=n) for n in chunk],
                topic_names=chunk,
                timeout_ms=30_000,
            )
        )
        removed["topics"] += sum(1 for t in r.responses if not t.error_code)


async def _delete_groups(client: KafkaClient, removed: Counter[str]) -> None:
    listed = await admin.list_groups_all(client)
    ids = sorted({g.group_id for g in listed.groups})
    if not ids:
        return
    found = await client.find_coordinators(ids, CoordinatorType.GROUP)
    by_node: dict[tuple[str, int], list[str]] = {}
    for gid in ids:
        where = found[gid]
        if not isinstance(where, KafkaError):
            by_node.setdefault((where.host, where.port), []).append(gid)
    for (host, port), gids in by_node.items():
        other = await client.for_node(host, port)
        r: Any = await other.request(DeleteGroupsRequest(groups_names=gids))
        removed["groups"] += sum(1 for g in r.results if not g.error_code)
        removed["groups not deleted"] += sum(1 for g in r.results if g.error_code)


async def _delete_acls(client: KafkaClient, removed: Counter[str]) -> None:
    f = DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=_ANY,
        resource_name_filter=None,
        pattern_type_filter=_ANY,
        principal_filter=None,
        host_filter=None,
        operation=_ANY,
        permission_type=_ANY,
    )
    r: Any = await client.request(DeleteAclsRequest(filters=[f]))
    removed["ACLs"] += sum(len(fr.matching_acls) for fr in r.filter_results)


async def _delete_quotas(client: KafkaClient, removed: Counter[str]) -> None:
    r: Any = await client.request(DescribeClientQuotasRequest(components=[], strict=False))
    entries = []
    for e in r.entries or []:
        entity = [
            AlterClientQuotasRequest.EntityData(
                entity_type=d.entity_type, entity_name=d.entity_name
            )
            for d in e.entity
        ]
        ops = [AlterClientQuotasRequest.OpData(key=v.key, value=0.0, remove=True) for v in e.values]
        entries.append(AlterClientQuotasRequest.EntryData(entity=entity, ops=ops))
    if entries:
        a: Any = await client.request(AlterClientQuotasRequest(entries=entries))
        removed["client quotas"] += sum(1 for e in a.entries if not e.error_code)


async def _delete_scram(client: KafkaClient, removed: Counter[str]) -> None:
    r: Any = await client.request(DescribeUserScramCredentialsRequest(users=None))
    deletions = [
        AlterUserScramCredentialsRequest.ScramCredentialDeletion(name=u.user, mechanism=c.mechanism)
        for u in r.results
        if not u.error_code
        for c in u.credential_infos
        if c.mechanism in _SCRAM_MECHANISMS
    ]
    if deletions:
        a: Any = await client.request(AlterUserScramCredentialsRequest(deletions=deletions))
        removed["SCRAM credentials"] += sum(1 for u in a.results if not u.error_code)


async def _delete_client_metrics(client: KafkaClient, removed: Counter[str]) -> None:
    r: Any = await client.request(ListConfigResourcesRequest(resource_types=[_CLIENT_METRICS]))
    names = [c.resource_name for c in r.config_resources]
    if not names:
        return
    delete = 1  # IncrementalAlterConfigs operation DELETE
    resources = [
        IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=_CLIENT_METRICS,
            resource_name=n,
            configs=[
                IncrementalAlterConfigsRequest.AlterableConfig(
                    name=k, config_operation=delete, value=None
                )
                for k in _CLIENT_METRICS_KEYS
            ],
        )
        for n in names
    ]
    a: Any = await client.request(IncrementalAlterConfigsRequest(resources=resources))
    removed["client-metrics subscriptions"] += sum(1 for x in a.responses if not x.error_code)


async def round_of_requests(
    bootstrap: str, args: argparse.Namespace, i: int, seconds: float, **options: Any
) -> RequestStats:
    """Round ``i`` of random requests: seed ``--seed + i``, names from the one pool of
    ``--seed``. Each round naming new ids would make the state grow for good: no Kafka API
    removes a transactional id (it stays for ``transactional.id.expiration.ms``, 7 days),
    so the clean-up could not bring the memory back."""
    return await send_random_requests(
        bootstrap,
        count=args.requests,
        seconds=seconds,
        seed=args.seed + i,
        names=args.names,
        names_seed=args.seed,
        connections=args.connections,
        **options,
    )


async def internal_log_bytes(bootstrap: str) -> dict[str, int]:
    """Each internal topic's log bytes over all its replicas (DescribeLogDirs)."""
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    client = await connect(host, int(port), request_timeout=60.0)
    try:
        answers = await admin.describe_log_dirs_all(client)
    finally:
        await client.close()
    out: Counter[str] = Counter()
    for answer in answers.values():
        for d in answer.results:
            for t in d.topics:
                if t.name.startswith("__"):
                    out[t.name] += sum(p.partition_size for p in t.partitions)
    return dict(sorted(out.items()))


def measure(args: argparse.Namespace, say: Any = print) -> Run:
    run = Run()
    env = {"PYTHONTRACEMALLOC": "1"} if args.tracemalloc else None
    configs = (*SERVE_CONFIGS, *args.config)
    deadline = time.monotonic() + args.seconds
    with _serve(3, configs=configs, env=env) as (bootstrap, control, pid):

        def read(
            label: str, sent: int, outcomes: Counter[str], took: float, wait: float
        ) -> Reading:
            time.sleep(wait)
            usage = _usage(pid) or (0, 0)
            objects = _control_get(control, f"/memory?top={args.objects}") if args.objects else None
            logs = asyncio.run(internal_log_bytes(bootstrap))
            reading = Reading(label, sent, outcomes, took, usage[0], usage[1], objects, logs)
            run.readings.append(reading)
            say(_row(reading, run.readings[0]))
            return reading

        asyncio.run(make_internal_topics(bootstrap))
        say(_HEADER)
        read("start", 0, Counter(), 0.0, args.settle)
        sent = 0
        outcomes: Counter[str] = Counter()
        for i in range(args.rounds):
            left = deadline - time.monotonic()
            if left <= 0:
                say(f"stopped after {i} rounds: --seconds {args.seconds:.0f} passed")
                break
            stats = asyncio.run(round_of_requests(bootstrap, args, i, left))
            sent += stats.sent
            outcomes.update(stats.outcomes)
            run.failures += stats.failures
            for outcome, examples in stats.examples.items():
                for example in examples:
                    say(f"    {outcome}: {example}")
            read(f"round {i + 1}", sent, Counter(outcomes), stats.seconds, args.settle)
        started = time.monotonic()
        run.removed = asyncio.run(clean_up(bootstrap))
        took = time.monotonic() - started
        read("clean-up", sent, Counter(outcomes), took, max(args.settle, args.linger))
    return run


_HEADER = (
    f"{'':<10} {'requests':>10} {'answered':>9} {'closed':>8} {'silent':>6} {'hang':>4} "
    f"{'s':>5} {'RSS MiB':>8} {'fds':>4} {'objects':>9} {'logs KiB':>9}"
)


def _row(r: Reading, first: Reading) -> str:
    objects = f"{r.objects['objects']:>9,}" if r.objects else f"{'':>9}"
    o = r.outcomes
    return (
        f"{r.label:<10} {r.requests:>10,} {o['answered']:>9,} {o['closed']:>8,} "
        f"{o['silent']:>6,} {o['hang'] + o['bad answer']:>4} {r.seconds:>5.0f} "
        f"{r.rss / 2**20:>8.1f} {r.fds:>4} {objects} {sum(r.logs.values()) / 1024:>9,.0f}"
    )


def verdict(readings: Sequence[Reading]) -> list[str]:
    """Whether the rounds' memory levels off and whether the clean-up brings it back."""
    rounds = [r for r in readings if r.label.startswith("round")]
    if len(rounds) < 2:
        return ["too few rounds to judge"]
    half = rounds[math.ceil(len(rounds) / 2) - 1]
    later = max(r.rss for r in rounds[rounds.index(half) :])
    level = later <= half.rss * (1 + WITHIN)
    lines = [
        f"levels off: {'yes' if level else 'no'} (highest of the second half "
        f"{later / 2**20:.1f} MiB, {later / half.rss - 1:+.1%} on {half.label}'s "
        f"{half.rss / 2**20:.1f} MiB)"
    ]
    cleaned = readings[-1]
    if cleaned.label == "clean-up":
        back = cleaned.rss <= rounds[0].rss * (1 + WITHIN)
        lines.append(
            f"back after the clean-up: {'yes' if back else 'no'} ({cleaned.rss / 2**20:.1f} "
            f"MiB, {cleaned.rss / rounds[0].rss - 1:+.1%} on round 1's "
            f"{rounds[0].rss / 2**20:.1f} MiB)"
        )
    return lines


def _grown(a: dict[str, Any], b: dict[str, Any], top: int) -> list[str]:
    """The types whose live count grew most from reading ``a`` to ``b``."""
    before, after = a["types"], b["types"]
    deltas = sorted(((after[t] - before.get(t, 0), t) for t in after), reverse=True)
    return [f"    {d:>+9,} {t}" for d, t in deltas[:top] if d > 0]


def _allocators(a: dict[str, Any], b: dict[str, Any], then: str, now: str) -> str:
    """What the allocators held at two readings: CPython's small-object arenas and the
    bytes of blocks in use in them, and the C heap's bytes in use and free (where the
    server can tell)."""
    parts = []
    mib = 2**20
    if "small_objects" in a and "small_objects" in b:
        x, y = a["small_objects"], b["small_objects"]
        parts.append(f"small-object arenas {x['arenas'] / mib:.1f} -> {y['arenas'] / mib:.1f} MiB")
        parts.append(f"in use in them {x['in_use'] / mib:.1f} -> {y['in_use'] / mib:.1f} MiB")
        if "highwater" in y:
            parts.append(f"most arenas ever held {y['highwater'] / mib:.1f} MiB")
    elif "allocated_blocks" in a and "allocated_blocks" in b:
        parts.append(f"small-object blocks {a['allocated_blocks']:,} -> {b['allocated_blocks']:,}")
    if "heap" in a and "heap" in b:
        for key, what in (("in_use", "C heap in use"), ("free", "C heap free")):
            parts.append(f"{what} {a['heap'][key] / mib:.1f} -> {b['heap'][key] / mib:.1f} MiB")
    return f"allocators, {then} -> {now}: " + (", ".join(parts) or "not told")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kafkagen bench memory",
        description="kafkagen serve --brokers 3's resident memory and open files after each "
        "round of random requests, and after removing what they created.",
    )
    parser.add_argument("--rounds", type=int, default=16, help="rounds (16)")
    parser.add_argument("--requests", type=int, default=25_000, help="requests a round (25,000)")
    parser.add_argument(
        "--names", type=int, default=256, help="strings every round's requests draw from (256)"
    )
    parser.add_argument("--seed", type=int, default=0, help="round i uses seed SEED+i (0)")
    parser.add_argument("--connections", type=int, default=32, help="connections (32)")
    parser.add_argument(
        "--seconds", type=float, default=3600.0, help="stop starting rounds after S s (3600)"
    )
    parser.add_argument(
        "--settle", type=float, default=SETTLE_S, help=f"seconds before each reading ({SETTLE_S})"
    )
    parser.add_argument(
        "--linger",
        type=float,
        default=0.0,
        metavar="S",
        help="seconds after the clean-up before the last reading, for expiries to pass "
        "(default: --settle)",
    )
    parser.add_argument(
        "--objects",
        type=int,
        default=0,
        metavar="N",
        help="also read the server's live objects by type (control API GET /memory) and "
        "list the N types that grew most from round 1 to the last reading",
    )
    parser.add_argument(
        "--tracemalloc",
        action="store_true",
        help="run the server with PYTHONTRACEMALLOC=1 and, with --objects, list the source "
        "lines whose traced memory grew most (slower)",
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker config for kafkagen serve (repeatable)",
    )
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.requests < 1 or args.names < 1 or args.connections < 1:
        parser.error("--rounds, --requests, --names and --connections must be at least 1")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load = os.getloadavg()[0]
    print(
        f"kafkagen serve --brokers 3: {args.rounds} rounds of {args.requests:,} random requests, "
        f"seeds {args.seed}-{args.seed + args.rounds - 1}, {args.names} names, "
        f"{args.connections} connections",
        flush=True,
    )
    try:
        run = measure(args, lambda line: print(line, flush=True))
    except (OSError, RuntimeError) as e:
        print(f"kafkagen bench memory: {e}", file=sys.stderr)
        return 2
    print("removed: " + (", ".join(f"{n:,} {what}" for what, n in run.removed.items()) or "none"))
    for line in verdict(run.readings):
        print(line)
    # What grew from round 1 (every handler and codec loaded) to the last reading.
    read = [r for r in run.readings if r.objects and r.label != "start"]
    if len(read) >= 2:
        first, last = read[0], read[-1]
        print(f"live objects that grew most from {first.label} to {last.label}:")
        print("\n".join(_grown(first.objects or {}, last.objects or {}, 20)))
        lines_then, lines_now = (first.objects or {}).get("lines"), (last.objects or {}).get(
            "lines"
        )
        if lines_then is not None and lines_now is not None:
            print("traced memory that grew most (bytes, source line):")
            was = {x["where"]: x["bytes"] for x in lines_then}
            grown = sorted(
                ((x["bytes"] - was.get(x["where"], 0), x["where"]) for x in lines_now),
                reverse=True,
            )
            print("\n".join(f"    {d:>+12,} {w}" for d, w in grown[:20] if d > 0))
        print(_allocators(first.objects or {}, last.objects or {}, first.label, last.label))
    first_round = next((r for r in run.readings if r.label != "start"), None)
    if first_round is not None:
        last = run.readings[-1]
        print(
            f"internal topics' logs (KiB, all replicas), {first_round.label} -> {last.label}: "
            + ", ".join(
                f"{t} {first_round.logs.get(t, 0) / 1024:,.0f} -> {n / 1024:,.0f}"
                for t, n in last.logs.items()
            )
        )
    print(f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    return 1 if run.failures else 0
