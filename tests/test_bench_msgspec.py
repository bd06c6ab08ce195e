"""``kafkagen bench codecs`` against msgspec: the mirror holds kafkagen's object graph, and a
short run prints the comparison."""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest
from kafkagen.bench import codecs, msgspec_graph
from kafkagen.bench.workloads import WORKLOADS


def leaves(value: Any) -> list[Any]:
    """Every scalar of a kafkagen message in field order, as MessagePack gives them back."""
    if isinstance(value, list):
        return [x for v in value for x in leaves(v)]
    if hasattr(type(value), "_field_table"):
        fields = [f for f in type(value).__slots__ if f != "unknown_tagged_fields"]
        return [x for f in fields for x in leaves(getattr(value, f))]
    if isinstance(value, uuid.UUID):
        return [str(value)]
    if isinstance(value, memoryview):
        return [bytes(value)]
    return [value]


def flatten(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [x for v in value for x in flatten(v)]
    return [value]


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.key)
def test_the_mirror_carries_the_same_graph(workload: Any) -> None:
    msg = workload.build(random.Random(1))
    ns = msgspec_graph.namespace(msg)
    packed = ns["encode"](ns["mirror"])
    back = msgspec.msgpack.decode(packed)  # array_like structs come back as nested lists
    assert flatten(back) == leaves(msg)
    assert len(leaves(msg)) > 1


def test_a_short_run_prints_the_comparison(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_json = tmp_path / "codecs.json"
    status = codecs.main(
        ["--workload", "api_versions_request", "--target", "0.002", "--repeat", "1"]
        + ["--json", str(out_json)]
    )
    assert status == 0
    printed = capsys.readouterr().out
    assert "at most 1.2x msgspec's time" in printed
    (row,) = json.loads(out_json.read_text())["msgspec_encode"]
    assert row["workload"] == "ApiVersionsRequest v3"
    assert row["kafkagen_us_per_op"] > 0 and row["msgspec_us_per_op"] > 0
    ratio = row["kafkagen_us_per_op"] / row["msgspec_us_per_op"]
    assert row["kafkagen_over_msgspec"] == pytest.approx(ratio)
    assert row["verdict"] == ("PASS" if ratio <= 1.2 else "FAIL")
    assert f"{ratio:.2f}x" in printed
