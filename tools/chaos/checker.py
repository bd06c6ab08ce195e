"""Reads a campaign's history afterwards and reports what Kafka's guarantees forbid.

Each log partition is treated as a list that writers append to and readers scan (the
model of Jepsen's Kafka analyses). The checker first settles what every offset holds,
from producers' acknowledgements and from every read, then looks for:

================== =================================================================
lost               an acknowledged write that a read passed over and nobody ever read
wrong-offset       a write read at an offset other than the one acknowledged
inconsistent       two reads that disagree on what one offset holds
duplicated         a write of an idempotent or transactional producer seen twice
reordered          one producer's writes to a partition stored out of the order sent
phantom            a value read that no operation ever wrote
failed-write-read  a write whose send certainly failed, read anyway
skipped            a pass over a partition that left out a write it should return
partial-txn        a committed transaction seen in part by one reader
poll-backwards     a consumer's position moving back without a change of assignment
commit-backwards   a group's committed offset moving back (commits that did not overlap)
double-owner       two consumers of one group owning a partition at the same time (a
                   fenced one, which learns so late, only if it commits meanwhile)
G0                 a cycle of transactions ordered by their writes alone (write cycle)
G1a                a read_committed read of a write of an aborted transaction
G1b                a read of a transaction's earlier write whose pass covered its later
                   write to the same partition without returning it (intermediate read)
G1c                a cycle of write and read dependencies (circular information flow)
================== =================================================================

``python -m kafkagen.chaos.checker HISTORY.jsonl`` prints the report; exit 1 on an anomaly.
"""

from __future__ import annotations

import argparse
import bisect
import sys
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .history import Completed, History, HistoryError, Read, TopicPartition

__all__ = ["ANOMALIES", "Report", "check", "main"]

ANOMALIES = (
    "lost",
    "wrong-offset",
    "inconsistent",
    "duplicated",
    "reordered",
    "phantom",
    "failed-write-read",
    "skipped",
    "partial-txn",
    "poll-backwards",
    "commit-backwards",
    "double-owner",
    "G0",
    "G1a",
    "G1b",
    "G1c",
)
EXAMPLES = 5
#: A node of the dependency graph: a transaction's op id, or (op id, value) for one send.
Node = Hashable
WRITERS = ("send", "txn")


@dataclass
class Report:
    """Counts of each anomaly with a few examples, and what the history held."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ANOMALIES, 0))
    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    stats: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    @property
    def valid(self) -> bool:
        return not any(self.counts.values())

    def add(self, kind: str, example: str) -> None:
        self.counts[kind] += 1
        if len(self.examples[kind]) < EXAMPLES:
            self.examples[kind].append(example)

    def render(self) -> str:
        lines = [f"{k}: {v:,}" for k, v in sorted(self.stats.items())]
        lines.append("")
        for kind in ANOMALIES:
            lines.append(f"{kind:<18} {self.counts[kind]:>9,}")
            lines.extend(f"    {e}" for e in self.examples.get(kind, ()))
        lines.append("")
        lines.append("valid: no anomalies" if self.valid else "INVALID: anomalies found")
        return "\n".join(lines)


def check(history: History) -> Report:
    return _Checker(history).run()


def _tp(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


class _Checker:
    def __init__(self, history: History) -> None:
        self.h = history
        self.report = Report()
        #: value -> the operation that wrote it
        self.writer: dict[Any, Completed] = {}
        #: (tp, offset) -> value, from acknowledgements and reads
        self.at: dict[tuple[TopicPartition, int], Any] = {}
        #: value -> the (tp, offset) places it was read at
        self.seen: dict[Any, set[tuple[TopicPartition, int]]] = defaultdict(set)
        #: every pass over a partition: (reader, isolation, read)
        self.passes: list[tuple[Completed, str, Read]] = []
        #: tp -> sorted offsets holding a known value
        self.offsets: dict[TopicPartition, list[Node]] = {}

    def run(self) -> Report:
        self._index()
        self._writes()
        self._passes()
        self._consumers()
        self._commits()
        self._owners()
        self._graph()
        return self.report

    # ------------------------------------------------------------------ what each offset holds
    def _index(self) -> None:
        r, stats = self.report, self.report.stats
        for op in self.h.completed:
            stats[f"{op.f} {op.type}"] += 1
            if op.f in WRITERS:
                for w in op.writes():
                    self.writer.setdefault(w.value, op)
                    if op.type == "ok" and w.offset is not None:
                        self._place(w.tp, int(w.offset), w.value, f"acknowledged to {op.process}")
                        stats["acknowledged writes"] += 1
            isolation = (
                "read_committed" if op.f == "txn" else op.value.get("isolation", "read_uncommitted")
            )
            if op.type == "ok" or op.f == "final":
                for rd in op.reads():
                    self.passes.append((op, isolation, rd))
                    for offset, value in rd.records:
                        self._place(rd.tp, offset, value, f"read by {op.process}")
                        self.seen[value].add((rd.tp, offset))
        by_tp: dict[TopicPartition, list[Node]] = defaultdict(list)
        for tp, offset in self.at:
            by_tp[tp].append(offset)
        self.offsets = {tp: sorted(v) for tp, v in by_tp.items()}
        for value in self.seen:
            if value not in self.writer:
                r.add("phantom", f"{value!r} read at {sorted(self.seen[value])[:3]}")

    def _place(self, tp: TopicPartition, offset: int, value: Any, how: str) -> None:
        old = self.at.setdefault((tp, offset), value)
        if old != value:
            self.report.add(
                "inconsistent", f"{_tp(tp)}@{offset} holds {old!r} and {value!r} ({how})"
            )

    # ------------------------------------------------------------------ writes
    def _writes(self) -> None:
        r = self.report
        scanned = self._scanned()
        last: dict[tuple[str, TopicPartition], tuple[int, Any]] = {}
        for op in self.h.completed:
            if op.f not in WRITERS:
                continue
            promised = op.f == "txn" or bool(op.value.get("idempotent"))
            for w in op.writes():
                places = self.seen.get(w.value, set())
                if op.type == "fail" and op.f == "send" and places:
                    r.add("failed-write-read", f"{w.value!r} of {op.process} (op {op.id})")
                if promised and len(places) > 1:
                    r.add("duplicated", f"{w.value!r} at {sorted(places)}")
                if op.type != "ok" or w.offset is None:
                    continue
                where = (w.tp, int(w.offset))
                if places and where not in places:
                    r.add(
                        "wrong-offset",
                        f"{w.value!r} acknowledged at {_tp(w.tp)}@{w.offset}, read at "
                        f"{sorted(places)[:3]}",
                    )
                if not places:
                    if _covered(scanned.get(w.tp, ()), int(w.offset)):
                        r.add(
                            "lost",
                            f"{w.value!r} acknowledged to {op.process} at {_tp(w.tp)}@{w.offset}",
                        )
                    else:
                        r.stats["acknowledged writes never passed over"] += 1
                key = (op.process, w.tp)
                if key in last and last[key][0] >= int(w.offset):
                    r.add(
                        "reordered",
                        f"{op.process} wrote {last[key][1]!r} then {w.value!r} to {_tp(w.tp)}, "
                        f"stored at {last[key][0]} and {w.offset}",
                    )
                last[key] = (int(w.offset), w.value)

    def _scanned(self) -> dict[TopicPartition, list[tuple[int, int]]]:
        """The merged ranges of offsets some reader passed over, per partition."""
        ranges: dict[TopicPartition, list[tuple[int, int]]] = defaultdict(list)
        for _, _, rd in self.passes:
            if rd.end > rd.start:
                ranges[rd.tp].append((rd.start, rd.end))
        merged = {}
        for tp, rs in ranges.items():
            rs.sort()
            out = [rs[0]]
            for s, e in rs[1:]:
                if s <= out[-1][1]:
                    out[-1] = (out[-1][0], max(out[-1][1], e))
                else:
                    out.append((s, e))
            merged[tp] = out
        return merged

    # ------------------------------------------------------------------ passes over partitions
    def _visible(self, value: Any, isolation: str) -> bool | None:
        """Whether a pass must return ``value``: None when nobody can know."""
        op = self.writer.get(value)
        if op is None:
            return None
        if op.f == "send":
            return True
        if op.type == "ok":
            return True
        if op.type == "fail":
            return isolation == "read_uncommitted"
        return None

    def _passes(self) -> None:
        r = self.report
        #: reader process -> the transactions it saw some write of
        saw_txn: dict[str, set[int]] = defaultdict(set)
        for reader, _, rd in self.passes:
            for _, value in rd.records:
                op = self.writer.get(value)
                if op is not None and op.f == "txn":
                    saw_txn[reader.process].add(op.id)
        for reader, isolation, rd in self.passes:
            returned = {o for o, _ in rd.records}
            for offset, value in rd.records:
                op = self.writer.get(value)
                if (
                    op is not None
                    and op.f == "txn"
                    and op.type == "fail"
                    and (isolation == "read_committed")
                ):
                    r.add(
                        "G1a",
                        f"{reader.process} (op {reader.id}, {isolation}) read {value!r} at "
                        f"{_tp(rd.tp)}@{offset}, written by aborted op {op.id}",
                    )
            offsets = self.offsets.get(rd.tp, [])
            lo = bisect.bisect_left(offsets, rd.start)
            hi = bisect.bisect_left(offsets, rd.end)
            for offset in offsets[lo:hi]:
                if offset in returned:
                    continue
                value = self.at[(rd.tp, offset)]
                # A write nobody read at all is lost (or never acknowledged), not skipped.
                if value not in self.seen or not self._visible(value, isolation):
                    continue
                what = f"{reader.process} passed {_tp(rd.tp)} {rd.start}..{rd.end} ({isolation})"
                op = self.writer[value]
                if op.f == "txn" and self._earlier_of_txn_returned(op, rd, offset):
                    r.add(
                        "G1b",
                        f"{what} and read an earlier write of op {op.id} but not "
                        f"{value!r}@{offset}",
                    )
                elif op.f == "txn" and op.id in saw_txn[reader.process]:
                    r.add(
                        "partial-txn",
                        f"{what}: missed {value!r}@{offset} of op {op.id}, saw others",
                    )
                else:
                    r.add("skipped", f"{what}: missed {value!r}@{offset}")

    def _earlier_of_txn_returned(self, op: Completed, rd: Read, offset: int) -> bool:
        values = {v for o, v in rd.records if o < offset}
        return any(w.tp == rd.tp and w.value in values for w in op.writes())

    # ------------------------------------------------------------------ consumers
    def _consumers(self) -> None:
        """A consumer's position only moves back when its assignment changed."""
        position: dict[tuple[str, TopicPartition], int] = {}
        for op in self.h.completed:
            if op.f in ("assign", "revoke", "lost"):
                for tp in op.partitions():
                    position.pop((op.process, tp), None)
            if op.f != "poll" or op.type != "ok":
                continue
            for rd in op.reads():
                key = (op.process, rd.tp)
                if key in position and rd.start < position[key]:
                    self.report.add(
                        "poll-backwards",
                        f"{op.process} at {_tp(rd.tp)} moved from {position[key]} back to "
                        f"{rd.start} (op {op.id})",
                    )
                position[key] = rd.end

    def _commits(self) -> None:
        """A commit may not go below one that finished before it began."""
        by_key: dict[tuple[str, TopicPartition], list[tuple[float, float, int, int]]] = defaultdict(
            list
        )
        for op in self.h.completed:
            if op.type != "ok" or op.f not in ("commit", "txn"):
                continue
            group = op.value.get("group", "")
            for tp, offset in op.offsets():
                by_key[(group, tp)].append((op.invoke.time, op.end.time, offset, op.id))
        for (group, tp), commits in by_key.items():
            by_end = sorted(commits, key=lambda c: c[1])
            i, best = 0, None
            for inv, _, offset, op_id in sorted(commits):
                while i < len(by_end) and by_end[i][1] < inv:
                    if best is None or by_end[i][2] > best[2]:
                        best = by_end[i]
                    i += 1
                if best is not None and offset < best[2]:
                    self.report.add(
                        "commit-backwards",
                        f"group {group} {_tp(tp)}: op {op_id} committed {offset} after op "
                        f"{best[3]} committed {best[2]}",
                    )

    def _owners(self) -> None:
        """Intervals of ownership per group and partition may not overlap, except where the
        earlier owner was fenced: the group gave the partition on without it, and it learns
        so later ("lost"). Such a zombie may not commit offsets of the partition while the
        next owner has it: that is what fencing promises."""
        start: dict[tuple[str, str, TopicPartition], float] = {}
        spans: dict[tuple[str, TopicPartition], list[tuple[float, float, str, bool]]] = defaultdict(
            list
        )
        commits: dict[tuple[str, str, TopicPartition], list[tuple[float, int]]] = defaultdict(list)
        for op in self.h.completed:
            group = op.value.get("group", "")
            if op.f == "assign" and op.type == "ok":
                for tp in op.partitions():
                    start.setdefault((op.process, group, tp), op.end.time)
            elif op.f in ("revoke", "lost"):
                for tp in op.partitions():
                    began = start.pop((op.process, group, tp), None)
                    if began is not None:
                        spans[(group, tp)].append(
                            (began, op.invoke.time, op.process, op.f == "lost")
                        )
            elif op.f in ("commit", "txn") and op.type == "ok":
                for tp, _ in op.offsets():
                    commits[(op.process, group, tp)].append((op.end.time, op.id))
        for (process, group, tp), began in start.items():
            spans[(group, tp)].append((began, self.h.end_time, process, False))
        for (group, tp), intervals in spans.items():
            intervals.sort()
            end, owner, fenced = float("-inf"), "", False
            for s, e, process, lost in intervals:
                if s < end and process != owner:
                    zombie = [i for t, i in commits[(owner, group, tp)] if s <= t <= end]
                    if not fenced or zombie:
                        why = f", and committed it after (op {zombie[0]})" if zombie else ""
                        self.report.add(
                            "double-owner",
                            f"group {group} {_tp(tp)}: {owner} until {end:.3f}s, {process} "
                            f"from {s:.3f}s{why}",
                        )
                if e > end:
                    end, owner, fenced = e, process, lost

    # ------------------------------------------------------------------ dependency cycles
    def _graph(self) -> None:
        ww: dict[Node, set[Node]] = defaultdict(set)
        wr: dict[Node, set[Node]] = defaultdict(set)
        # Each write counts once, at its first place: a duplicate is reported as such,
        # not again as a cycle of the writers around it.
        first: dict[Any, tuple[TopicPartition, int]] = {}
        for tp, offsets in self.offsets.items():
            for offset in offsets:
                first.setdefault(self.at[(tp, offset)], (tp, offset))
        for tp, offsets in self.offsets.items():
            prev = None
            for offset in offsets:
                value = self.at[(tp, offset)]
                op = self.writer.get(value)
                if op is None or op.type == "fail" or first[value] != (tp, offset):
                    continue
                node = _node(op, value)
                if prev is not None and prev != node:
                    ww[prev].add(node)
                prev = node
        for op in self.h.completed:
            if op.f != "txn" or op.type != "ok":
                continue
            for rd in op.reads():
                for _, value in rd.records:
                    w = self.writer.get(value)
                    if w is not None and w.id != op.id:
                        wr[_node(w, value)].add(op.id)
        self.report.stats["dependency edges"] = sum(map(len, ww.values())) + sum(
            map(len, wr.values())
        )
        for cycle in _cycles(ww):
            self.report.add("G0", "write cycle: " + " -> ".join(map(_name, cycle)))
        both: dict[Node, set[Node]] = defaultdict(set)
        for g in (ww, wr):
            for a, bs in g.items():
                both[a] |= bs
        for cycle in _cycles(both, through=wr):
            self.report.add("G1c", "cycle: " + " -> ".join(map(_name, cycle)))


def _node(op: Completed, value: Any) -> Node:
    """A transaction is one node; each write of a plain send is a node of its own (a batch
    of sends is not atomic, so its writes order nothing between them)."""
    return op.id if op.f == "txn" else (op.id, value)


def _name(node: Node) -> str:
    return f"op {node}" if isinstance(node, int) else f"op {node[0]} ({node[1]!r})"


def _covered(ranges: Sequence[tuple[int, int]], offset: int) -> bool:
    i = bisect.bisect_right(ranges, (offset, float("inf"))) - 1
    return i >= 0 and ranges[i][0] <= offset < ranges[i][1]


def _cycles(
    graph: dict[Node, set[Node]], through: dict[Node, set[Node]] | None = None
) -> Iterable[list[Node]]:
    """One example cycle per strongly connected component with more than one node; with
    ``through``, only components holding one of its edges, and a cycle along that edge."""
    for component in _components(graph):
        if len(component) < 2:
            continue
        members = set(component)
        if through is None:
            a = component[0]
            b = next(b for b in graph[a] if b in members)
        else:
            edge = next(
                ((a, b) for a in component for b in through.get(a, ()) if b in members), None
            )
            if edge is None:
                continue
            a, b = edge
        yield [a, *_path(graph, members, b, a)]


def _path(graph: dict[Node, set[Node]], members: set[Node], src: Node, dst: Node) -> list[Node]:
    """A shortest path from ``src`` to ``dst`` inside ``members`` (both ends included)."""
    parent: dict[Node, Node] = {src: src}
    queue = [src]
    while queue and dst not in parent:
        nxt = []
        for a in queue:
            for b in graph.get(a, ()):
                if b in members and b not in parent:
                    parent[b] = a
                    nxt.append(b)
        queue = nxt
    path = [dst]
    while path[-1] != src:
        path.append(parent[path[-1]])
    return path[::-1]


def _components(graph: dict[Node, set[Node]]) -> Iterable[list[Node]]:
    """Tarjan's strongly connected components, without recursion."""
    index: dict[Node, int] = {}
    low: dict[Node, int] = {}
    stack: list[Node] = []
    on_stack: set[Node] = set()
    counter = 0
    for root in list(graph):
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    n = stack.pop()
                    on_stack.discard(n)
                    component.append(n)
                    if n == node:
                        break
                yield component


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kafkagen.chaos.checker",
        description="Check a campaign's history (JSON lines) for anomalies.",
    )
    parser.add_argument("history", help="the history file, one operation per line")
    args = parser.parse_args(argv)
    try:
        history = History.load(args.history)
    except (OSError, HistoryError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    report = check(history)
    print(report.render())
    return 0 if report.valid else 1


if __name__ == "__main__":
    raise SystemExit(main())
