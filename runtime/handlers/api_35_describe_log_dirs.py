"""DescribeLogDirs (key 35): this broker's replicas and their sizes.

Each broker reports one log directory: its folder under ``--log-dir`` when logs are kept
on disk, else ``memory:broker-<id>``; none is ever cordoned (v5's IsCordoned stays false).
v6 (unstable, seed 001) pages the partitions (by topic then partition for all of them, in
request order for those named); NextCursor names where the next page starts. A cursor naming
a partition not asked for, or a negative index, answers INVALID_REQUEST.
"""

from __future__ import annotations

from kafkagen.generated.describe_log_dirs import DescribeLogDirsRequest, DescribeLogDirsResponse
from kafkagen.runtime.broker.api import RequestContext, register
from kafkagen.runtime.broker.metadata import TopicPartition
from kafkagen.runtime.broker.partition import Partition
from kafkagen.runtime.errors import InvalidRequestError
from kafkagen.runtime.handlers._util import Pager, pagination_limit
from kafkagen.runtime.pagination import paged_version

API_KEY = 35
PAGED = paged_version(API_KEY)
Result = DescribeLogDirsResponse.DescribeLogDirsResult
Topic = DescribeLogDirsResponse.DescribeLogDirsTopic
PartitionOut = DescribeLogDirsResponse.DescribeLogDirsPartition


@register(API_KEY, 0, 4, max_unstable_version=PAGED)
def handle(ctx: RequestContext, request: DescribeLogDirsRequest) -> None:
    rm = ctx.broker.replica_manager
    chosen: dict[str, list[Partition]] = {}
    if request.topics is None:
        for tp, p in sorted(rm.partitions.items()):
            chosen.setdefault(tp.topic, []).append(p)
    else:
        for t in request.topics:
            for index in t.partitions:
                found = rm.partitions.get(TopicPartition(t.topic, index))
                if found is not None:
                    chosen.setdefault(t.topic, []).append(found)
    storage = rm.storage
    log_dir = (
        f"memory:broker-{ctx.broker.node_id}" if storage is None else str(storage.path.resolve())
    )
    pager = None
    if ctx.api_version >= PAGED:
        c = request.cursor
        if c is not None and (
            c.partition_index < 0
            or (
                request.topics is not None
                and not any(
                    t.topic == c.topic_name and c.partition_index in t.partitions
                    for t in request.topics
                )
            )
        ):
            error = InvalidRequestError(
                f"the cursor {c.topic_name}-{c.partition_index} is negative or was not asked for"
            )
            ctx.respond(DescribeLogDirsResponse(error_code=error.code, results=[]))
            return
        pager = Pager(
            pagination_limit(ctx, request.response_pagination_limit),
            None if c is None else (c.topic_name, c.partition_index),
            sorted_keys=request.topics is None,
        )
        chosen = {
            name: kept
            for name, parts in chosen.items()
            if (kept := [p for p in parts if pager.take((name, p.tp.partition))])
        }
    topics = [
        Topic(
            name=name,
            partitions=[
                PartitionOut(
                    partition_index=p.tp.partition,
                    partition_size=p.log.size_in_bytes,
                    # Followers lag by what the leader has and they do not; leaders by nothing.
                    offset_lag=0
                    if p.is_leader
                    else max(0, p.high_watermark - p.log.log_end_offset),
                    is_future_key=False,
                )
                for p in parts
            ],
        )
        for name, parts in chosen.items()
    ]
    result = Result(
        error_code=0,
        log_dir=log_dir,
        topics=topics,
        total_bytes=-1,
        usable_bytes=-1,
    )
    response = DescribeLogDirsResponse(error_code=0, results=[result])
    if pager is not None and pager.next is not None:
        next_topic, next_index = pager.next
        assert isinstance(next_topic, str) and isinstance(next_index, int)
        response.next_cursor = DescribeLogDirsResponse.Cursor(
            topic_name=next_topic, partition_index=next_index, log_dir=log_dir
        )
    ctx.respond(response)
