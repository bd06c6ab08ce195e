"""The history checker: silent on histories a correct Kafka produces, and finding each
anomaly when one is planted."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafkagen.chaos.checker import ANOMALIES, check
from kafkagen.chaos.history import History, HistoryError, Recorder

T = "t"


class Run:
    """A hand-written history: each call adds an invoke and its end."""

    def __init__(self) -> None:
        self.rec = Recorder()
        self.clock = 0.0

    def op(self, process: str, f: str, value: dict[str, Any], end: str = "ok", **done: Any) -> None:
        self.clock += 1
        self.rec.add(process, "invoke", f, self.clock, value)
        self.clock += 1
        self.rec.add(process, end, f, self.clock, {**value, **done} if end == "ok" else {})

    def send(self, process: str, p: int, value: str, offset: int | None, end: str = "ok") -> None:
        v = {"writes": [[T, p, value, None]], "idempotent": True}
        self.op(process, "send", v, end, writes=[[T, p, value, offset]])

    def poll(
        self,
        process: str,
        p: int,
        start: int,
        records: list[tuple[int, str]],
        end: int | None = None,
        isolation: str = "read_committed",
        group: str = "g",
    ) -> None:
        stop = end if end is not None else (records[-1][0] + 1 if records else start)
        reads = [[T, p, start, stop, [list(r) for r in records]]]
        self.op(process, "poll", {"group": group, "isolation": isolation}, reads=reads)

    def history(self) -> History:
        return self.rec.history()


def anomalies(h: History) -> dict[str, int]:
    report = check(h)
    return {k: v for k, v in report.counts.items() if v}


def test_a_clean_history_has_no_anomalies() -> None:
    r = Run()
    r.send("p0", 0, "a", 0)
    r.send("p0", 0, "b", 1)
    r.op("tx", "txn", {"writes": [[T, 0, "c", 2], [T, 1, "d", 0]], "offsets": []})
    r.poll("c0", 0, 0, [(0, "a"), (1, "b"), (2, "c")], end=4)
    r.poll("c0", 1, 0, [(0, "d")], end=2)
    report = check(r.history())
    assert report.valid, report.render()
    assert report.stats["acknowledged writes"] == 4
    assert "valid: no anomalies" in report.render()


def test_lost_acknowledged_write() -> None:
    r = Run()
    r.send("p0", 0, "a", 0)
    r.send("p0", 0, "b", 1)
    r.poll("c0", 0, 0, [(0, "a")], end=3)
    assert anomalies(r.history()) == {"lost": 1}


def test_a_write_nobody_passed_over_is_not_lost() -> None:
    r = Run()
    r.send("p0", 0, "a", 0)
    r.send("p0", 0, "b", 1)
    r.poll("c0", 0, 0, [(0, "a")], end=1)
    report = check(r.history())
    assert report.valid
    assert report.stats["acknowledged writes never passed over"] == 1


def test_wrong_offset_and_inconsistent_offsets() -> None:
    r = Run()
    r.send("p0", 0, "a", 0)
    r.poll("c0", 0, 0, [(0, "x"), (1, "a")], end=2)
    found = anomalies(r.history())
    assert found["wrong-offset"] == 1
    assert found["inconsistent"] == 1  # offset 0: acknowledged "a", read "x"


def test_duplicates_only_where_promised() -> None:
    r = Run()
    r.send("p0", 0, "a", 0)
    r.op("p1", "send", {"writes": [[T, 0, "b", None]]}, writes=[[T, 0, "b", 1]])
    r.poll("c0", 0, 0, [(0, "a"), (1, "b"), (2, "a"), (3, "b")], end=4)
    # "a" is idempotent, "b" was sent without that promise
    assert anomalies(r.history()) == {"duplicated": 1}


def test_reordered_writes_of_one_producer() -> None:
    r = Run()
    r.send("p0", 0, "a", 5)
    r.send("p0", 0, "b", 4)
    assert anomalies(r.history()) == {"reordered": 1}


def test_phantom_and_failed_write_read() -> None:
    r = Run()
    r.send("p0", 0, "a", None, end="fail")
    r.poll("c0", 0, 0, [(0, "a"), (1, "ghost")], end=2)
    assert anomalies(r.history()) == {"phantom": 1, "failed-write-read": 1}


def test_aborted_read_under_read_committed_is_g1a() -> None:
    r = Run()
    r.op("tx", "txn", {"writes": [[T, 0, "a", None]]}, end="fail")
    r.poll("ru", 0, 0, [(0, "a")], end=2, isolation="read_uncommitted")
    assert check(r.history()).valid
    r.poll("rc", 0, 0, [(0, "a")], end=2)
    assert anomalies(r.history()) == {"G1a": 1}


def test_skipped_and_partial_transaction() -> None:
    r = Run()
    r.op("tx", "txn", {"writes": [[T, 0, "a", 0], [T, 1, "b", 0]]})
    r.send("p0", 0, "c", 2)
    r.poll("c1", 0, 0, [(0, "a"), (2, "c")], end=3)
    r.poll("c1", 1, 0, [(0, "b")], end=2)
    r.poll("c0", 0, 0, [(0, "a")], end=3)  # misses "c" at 2
    r.poll("c0", 1, 0, [], end=2)  # passes "b" without it, after seeing "a" of the same txn
    assert anomalies(r.history()) == {"skipped": 1, "partial-txn": 1}


def test_intermediate_read_is_g1b() -> None:
    r = Run()
    r.op("tx", "txn", {"writes": [[T, 0, "a", 0], [T, 0, "b", 1]]})
    r.poll("c1", 0, 0, [(0, "a"), (1, "b")], end=3)
    r.poll("c0", 0, 0, [(0, "a")], end=3)
    assert anomalies(r.history()) == {"G1b": 1}


def test_poll_backwards_unless_reassigned() -> None:
    r = Run()
    r.send("p0", 0, "a", 0)
    r.poll("c0", 0, 0, [(0, "a")], end=1)
    r.op("c0", "revoke", {"group": "g", "partitions": [[T, 0]]})
    r.op("c0", "assign", {"group": "g", "partitions": [[T, 0]]})
    r.poll("c0", 0, 0, [(0, "a")], end=1)
    assert check(r.history()).valid
    r.poll("c0", 0, 0, [(0, "a")], end=1)
    assert anomalies(r.history()) == {"poll-backwards": 1}


def test_commit_backwards_only_when_commits_do_not_overlap() -> None:
    r = Run()
    r.op("c0", "commit", {"group": "g", "offsets": [[T, 0, 10]]})
    r.op("c1", "commit", {"group": "g", "offsets": [[T, 0, 7]]})
    r.op("c1", "commit", {"group": "other", "offsets": [[T, 0, 3]]})
    assert anomalies(r.history()) == {"commit-backwards": 1}
    # Overlapping commits may land in either order.
    o = Recorder()
    o.add("c0", "invoke", "commit", 1, {"group": "g", "offsets": [[T, 0, 10]]})
    o.add("c1", "invoke", "commit", 2, {"group": "g", "offsets": [[T, 0, 7]]})
    o.add("c0", "ok", "commit", 3, {})
    o.add("c1", "ok", "commit", 4, {})
    assert check(o.history()).valid


def test_two_owners_of_one_partition() -> None:
    r = Run()
    r.op("c0", "assign", {"group": "g", "partitions": [[T, 0]]})
    r.op("c1", "assign", {"group": "g", "partitions": [[T, 1]]})
    r.op("c0", "revoke", {"group": "g", "partitions": [[T, 0]]})
    r.op("c1", "assign", {"group": "g", "partitions": [[T, 0]]})
    assert check(r.history()).valid
    r.op("c2", "assign", {"group": "g", "partitions": [[T, 1]]})
    r.op("c3", "assign", {"group": "h", "partitions": [[T, 1]]})  # another group: fine
    assert anomalies(r.history()) == {"double-owner": 1}


def test_a_fenced_owner_overlaps_only_while_it_commits_nothing() -> None:
    """A member the group fenced keeps its partitions until it hears so ("lost"); the
    overlap with the next owner is fencing at work, unless the zombie's commit got through."""
    r = Run()
    r.op("c0", "assign", {"group": "g", "partitions": [[T, 0]]})
    r.op("c0", "commit", {"group": "g", "offsets": [[T, 0, 1]]})  # before the next owner
    r.op("c1", "assign", {"group": "g", "partitions": [[T, 0]]})
    r.op("c0", "lost", {"group": "g", "partitions": [[T, 0]]})
    assert check(r.history()).valid
    z = Run()
    z.op("c0", "assign", {"group": "g", "partitions": [[T, 0]]})
    z.op("c1", "assign", {"group": "g", "partitions": [[T, 0]]})
    z.op("c0", "txn", {"group": "g", "offsets": [[T, 0, 2]]})
    z.op("c0", "lost", {"group": "g", "partitions": [[T, 0]]})
    assert anomalies(z.history()) == {"double-owner": 1}
    assert "committed it after" in check(z.history()).examples["double-owner"][0]
    # A revoke is not a fencing: overlapping it is a double owner whatever was committed.
    v = Run()
    v.op("c0", "assign", {"group": "g", "partitions": [[T, 0]]})
    v.op("c1", "assign", {"group": "g", "partitions": [[T, 0]]})
    v.op("c0", "revoke", {"group": "g", "partitions": [[T, 0]]})
    assert anomalies(v.history()) == {"double-owner": 1}


def test_write_cycle_is_g0() -> None:
    r = Run()
    r.op("t1", "txn", {"writes": [[T, 0, "a1", 0], [T, 1, "a2", 1]]})
    r.op("t2", "txn", {"writes": [[T, 0, "b1", 1], [T, 1, "b2", 0]]})
    found = anomalies(r.history())
    assert found == {"G0": 1}
    assert "op 0" in check(r.history()).examples["G0"][0]


def test_batches_of_plain_sends_order_nothing() -> None:
    r = Run()
    # Two producers' batches interleave in two partitions: no transaction, no cycle.
    r.op("p0", "send", {"writes": [[T, 0, "a1", 0], [T, 1, "a2", 1]]})
    r.op("p1", "send", {"writes": [[T, 0, "b1", 1], [T, 1, "b2", 0]]})
    assert check(r.history()).valid


def test_read_cycle_is_g1c() -> None:
    r = Run()
    # t1 reads what t2 wrote and t2 reads what t1 wrote: each saw the other first.
    r.op("t1", "txn", {"writes": [[T, 0, "a", 0]], "reads": [[T, 1, 0, 1, [[0, "b"]]]]})
    r.op("t2", "txn", {"writes": [[T, 1, "b", 0]], "reads": [[T, 0, 0, 1, [[0, "a"]]]]})
    found = anomalies(r.history())
    assert found == {"G1c": 1}


def test_every_anomaly_is_exercised_above() -> None:
    source = Path(__file__).read_text()
    missing = [a for a in ANOMALIES if f'"{a}"' not in source]
    assert missing == []


# --------------------------------------------------------------------------- a model Kafka
def simulate(seed: int, steps: int = 200) -> History:
    """A history a correct broker produces: idempotent sends, transactions that commit or
    abort, consume-transform-produce reads, consumers of both isolations, final reads."""
    rnd = random.Random(seed)
    logs: dict[int, list[tuple[str, str | None]]] = {0: [], 1: [], 2: []}  # (value, txn state)
    aborted: set[str] = set()
    r = Run()
    positions: dict[tuple[str, int], int] = {}
    for n in range(steps):
        kind = rnd.random()
        p = rnd.randrange(3)
        if kind < 0.35:
            value = f"s{n}"
            logs[p].append((value, None))
            r.send(f"p{n % 2}", p, value, len(logs[p]) - 1)
        elif kind < 0.6:
            commit = rnd.random() < 0.7
            writes = []
            for q in rnd.sample(range(3), 2):
                value = f"x{n}-{q}"
                logs[q].append((value, "txn"))
                writes.append([T, q, value, len(logs[q]) - 1])
                if not commit:
                    aborted.add(value)
            for q in logs:  # the commit or abort marker takes an offset too
                if any(w[1] == q for w in writes):
                    logs[q].append(("", "marker"))
            reads = []
            if commit:
                src = rnd.randrange(3)
                reads.append(_pass(logs[src], src, 0, "read_committed", aborted))
            r.op(
                f"tx{n % 3}",
                "txn",
                {"writes": writes, "reads": reads},
                end="ok" if commit else "fail",
            )
        else:
            consumer = f"c{n % 2}"
            isolation = "read_committed" if consumer == "c0" else "read_uncommitted"
            start = positions.get((consumer, p), 0)
            read = _pass(logs[p], p, start, isolation, aborted)
            positions[(consumer, p)] = read[3]
            r.op(consumer, "poll", {"group": "g", "isolation": isolation}, reads=[read])
    for isolation in ("read_committed", "read_uncommitted"):
        reads = [_pass(logs[q], q, 0, isolation, aborted) for q in logs]
        r.op("final", "final", {"isolation": isolation}, reads=reads)
    return r.history()


def _pass(
    log: list[tuple[str, str | None]], p: int, start: int, isolation: str, aborted: set[str]
) -> list[Any]:
    records = [
        [o, v]
        for o, (v, state) in enumerate(log)
        if o >= start and state != "marker" and not (isolation == "read_committed" and v in aborted)
    ]
    return [T, p, start, len(log), records]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32))
def test_no_anomaly_in_what_a_correct_broker_produces(seed: int) -> None:
    report = check(simulate(seed))
    assert report.valid, report.render()


def test_the_command_reads_a_file_and_exits_by_verdict(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    simulate(7).dump(good)
    run = [sys.executable, "-m", "kafkagen.chaos.checker"]
    ok = subprocess.run([*run, str(good)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "valid: no anomalies" in ok.stdout
    bad = tmp_path / "bad.jsonl"
    lines = good.read_text().splitlines()
    # Plant a lost write: acknowledge a value at an offset the final reads pass over.
    lines.append(
        json.dumps(
            {
                "process": "late",
                "type": "invoke",
                "f": "send",
                "time": 1e6,
                "value": {"writes": [[T, 0, "lost-one", None]]},
            }
        )
    )
    lines.append(
        json.dumps(
            {
                "process": "late",
                "type": "ok",
                "f": "send",
                "time": 1e6 + 1,
                "value": {"writes": [[T, 0, "lost-one", 0]]},
            }
        )
    )
    bad.write_text("\n".join(lines) + "\n")
    out = subprocess.run([*run, str(bad)], capture_output=True, text=True)
    assert out.returncode == 1
    assert "lost" in out.stdout and "INVALID" in out.stdout
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"process": "p", "type": "invoke"}\n')
    err = subprocess.run([*run, str(broken)], capture_output=True, text=True)
    assert err.returncode == 2
    assert "broken.jsonl:1: no 'f'" in err.stderr


def test_bad_histories_are_refused_with_the_line() -> None:
    r = Recorder()
    r.add("p", "ok", "send", 1, {})
    with pytest.raises(HistoryError, match="op 0: p ends send it never invoked"):
        r.history()
    r = Recorder()
    r.add("p", "invoke", "send", 1, {})
    r.add("p", "invoke", "send", 2, {})
    with pytest.raises(HistoryError, match="still open"):
        r.history()
