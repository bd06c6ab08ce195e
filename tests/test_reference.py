"""The reference Apache Kafka: it starts, answers, fails loudly and leaves nothing behind."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from kafkagen.generated import message_type
from kafkagen.reference import KafkaReference, ReferenceError
from kafkagen.runtime.client import connect

pytestmark = pytest.mark.slow


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers kill(0); its state in /proc says it is done.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ", 1)[1].startswith("Z")


async def _metadata(bootstrap: str, topics: list[str] | None = None) -> Any:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    Req: Any = message_type(3, "request")
    async with await connect(host, int(port)) as client:
        wanted = None if topics is None else [Req.MetadataRequestTopic(name=t) for t in topics]
        return await client.request(Req(topics=wanted), 12)


def test_one_node_answers_and_stops_without_trace() -> None:
    kafka = KafkaReference(nodes=1).start(timeout=180)
    pids, home = kafka.pids(), kafka.dir
    try:
        md = asyncio.run(_metadata(kafka.bootstrap))
        assert [b.node_id for b in md.brokers] == [0]
        assert md.controller_id == 0
        assert kafka.startup_s is not None and kafka.startup_s < 180
    finally:
        kafka.stop()
    assert all(_gone(p) for p in pids)
    assert home is not None and not home.exists()
    with pytest.raises(ReferenceError, match="not running"):
        _ = kafka.bootstrap


def test_three_nodes_replicate_a_new_topic(kafka_reference: KafkaReference) -> None:
    from kafkagen.generated.create_topics import CreateTopicsRequest

    async def run() -> Any:
        host, port = kafka_reference.bootstrap.split(",")[0].rsplit(":", 1)
        async with await connect(host, int(port)) as client:
            created: Any = await client.request(
                CreateTopicsRequest(
                    topics=[
                        CreateTopicsRequest.CreatableTopic(
                            name="reference-rf3", num_partitions=2, replication_factor=3
                        )
                    ],
                    timeout_ms=30000,
                ),
                7,
            )
            assert created.topics[0].error_code == 0
            for _ in range(50):
                md = await _metadata(kafka_reference.bootstrap, ["reference-rf3"])
                parts = md.topics[0].partitions
                if md.topics[0].error_code == 0 and all(p.leader_id >= 0 for p in parts):
                    return md
                await asyncio.sleep(0.1)
            raise AssertionError(f"no leaders for reference-rf3: {md}")

    md = asyncio.run(run())
    assert sorted(b.node_id for b in md.brokers) == [0, 1, 2]
    for p in md.topics[0].partitions:
        assert sorted(p.replica_nodes) == [0, 1, 2]
        assert sorted(p.isr_nodes) == [0, 1, 2]


def test_a_start_that_fails_reports_the_log_and_leaves_nothing() -> None:
    kafka = KafkaReference(nodes=1, configs={"num.network.threads": "not-a-number"})
    with pytest.raises(ReferenceError) as failed:
        kafka.start(timeout=120)
    assert "num.network.threads" in str(failed.value)
    assert not kafka.running and kafka.dir is None


def test_cluster_ids_never_look_like_options() -> None:
    from kafkagen.reference import _kafka_uuid

    ids = [_kafka_uuid() for _ in range(5000)]  # about 78 would start with '-' unchecked
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
    assert len(set(ids)) == len(ids)
