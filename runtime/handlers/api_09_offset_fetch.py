"""OffsetFetch (key 9): committed offsets of a group (v8+: of several groups at once).

A partition with nothing committed answers offset -1 and no error, as Kafka does. The
coordinator caches offsets only once they are durable, so there is never an unstable one.
"""

from __future__ import annotations

from typing import Any

from kafkagen.generated.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from kafkagen.runtime.broker.api import RequestContext, register
from kafkagen.runtime.broker.group_coordinator import OffsetEntry
from kafkagen.runtime.broker.metadata import TopicPartition
from kafkagen.runtime.errors import KafkaError

API_KEY = 9
R = OffsetFetchResponse


@register(API_KEY, 0, 9)
def handle(ctx: RequestContext, request: OffsetFetchRequest) -> None:
    v = ctx.api_version
    if v >= 8:
        groups = []
        for g in request.groups:
            wanted = None if g.topics is None else [(t.name, t.partition_indexes) for t in g.topics]
            error, topics = _fetch(
                ctx,
                g.group_id,
                wanted,
                R.OffsetFetchResponseTopics,
                R.OffsetFetchResponsePartitions,
                v,
            )
            groups.append(
                R.OffsetFetchResponseGroup(group_id=g.group_id, topics=topics, error_code=error)
            )
        ctx.respond(OffsetFetchResponse(groups=groups))
        return
    wanted = (
        None if request.topics is None else [(t.name, t.partition_indexes) for t in request.topics]
    )
    error, topics = _fetch(
        ctx, request.group_id, wanted, R.OffsetFetchResponseTopic, R.OffsetFetchResponsePartition, v
    )
    if error and v < 2:
        # No top-level error before v2: every partition carries it.
        for t in topics:
            for p in t.partitions:
                p.error_code = error
    ctx.respond(OffsetFetchResponse(topics=topics, error_code=error if v >= 2 else 0))


def _fetch(
    ctx: RequestContext,
    group_id: str,
    wanted: list[tuple[str, list[int]]] | None,
    topic_cls: Any,
    partition_cls: Any,
    v: int,
) -> tuple[int, list[Any]]:
    gc = ctx.broker.group_coordinator
    tps = None if wanted is None else [TopicPartition(n, i) for n, idx in wanted for i in idx]
    try:
        found = gc.fetch_offsets(group_id, tps)
    except KafkaError as e:
        if wanted is None:
            return e.code, []
        return e.code, [
            topic_cls(name=n, partitions=[_partition(partition_cls, i, None, v) for i in idx])
            for n, idx in wanted
        ]
    by_topic: dict[str, list[Any]] = {}
    for tp, entry in found.items():
        by_topic.setdefault(tp.topic, []).append(_partition(partition_cls, tp.partition, entry, v))
    return 0, [topic_cls(name=name, partitions=parts) for name, parts in by_topic.items()]


def _partition(cls: Any, index: int, entry: OffsetEntry | None, v: int) -> Any:
    out = cls(partition_index=index, error_code=0)
    if entry is None:
        out.committed_offset = -1
        out.metadata = ""
    else:
        out.committed_offset = entry.offset
        out.metadata = entry.metadata
        if v >= 5:
            out.committed_leader_epoch = entry.leader_epoch
    return out
