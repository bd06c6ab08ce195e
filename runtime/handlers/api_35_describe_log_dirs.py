"""DescribeLogDirs (key 35): this broker's replicas and their sizes.

Each broker reports one log directory: its folder under ``--log-dir`` when logs are kept
on disk, else ``memory:broker-<id>``; none is ever cordoned (v5's IsCordoned stays false).
v6 (unstable, seed 001) pages the partitions (by topic then partition for all of them, in
request order for those named); NextCursor names where the next page starts, and a cursor at
a partition deleted since resumes at the next one. A partition named twice, or a cursor
naming a partition not asked for or with a negative index, answers INVALID_REQUEST.
"""

from __future__ import annotations

import bisect
import itertools

from kafkagen.generated.describe_log_dirs import DescribeLogDirsRequest, DescribeLogDirsResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.broker.storage.partition import Partition
from kafkagen.runtime.errors import ErrorCode, InvalidRequestError
from kafkagen.runtime.handlers._util import log_dir as log_dir_of
from kafkagen.runtime.handlers._util import pagination_limit, repeated
from kafkagen.runtime.pagination import paged_version
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 35
PAGED = paged_version(API_KEY)
Result = DescribeLogDirsResponse.DescribeLogDirsResult
Topic = DescribeLogDirsResponse.DescribeLogDirsTopic
PartitionOut = DescribeLogDirsResponse.DescribeLogDirsPartition


def handle(ctx: RequestContext, request: DescribeLogDirsRequest) -> None:
    if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        # Kafka answers an empty list; v3 and later also say why.
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED if ctx.api_version >= 3 else 0
        ctx.respond(DescribeLogDirsResponse(error_code=code, results=[]))
        return
    rm = ctx.broker.replica_manager
    log_dir = log_dir_of(ctx)
    # What is asked, in answer order: all replicas by topic then partition, or the named
    # partitions in request order, a topic's partitions together where it is first named.
    keys: list[tuple[str, int]]
    if request.topics is None:
        keys = [(tp.topic, tp.partition) for tp in sorted(rm.partitions)]
    else:
        named: dict[str, list[int]] = {}
        for t in request.topics:
            named.setdefault(t.topic, []).extend(t.partitions)
        keys = [(name, index) for name, indexes in named.items() for index in indexes]
    next_cursor = None
    if ctx.api_version >= PAGED:
        first, limit = 0, pagination_limit(ctx, request.response_pagination_limit)
        c = request.cursor
        problem = None if request.topics is None else repeated(keys, "the partition")
        if problem is None and c is not None:
            at = (c.topic_name, c.partition_index)
            if c.partition_index < 0:
                problem = f"the cursor's partition index {c.partition_index} is negative"
            elif request.topics is None:
                first = bisect.bisect_left(keys, at)
            elif at in keys:
                # A partition deleted since is skipped below: the page starts at the next.
                first = keys.index(at)
            else:
                problem = f"the cursor {c.topic_name}-{c.partition_index} was not asked for"
        if problem is not None:
            error = InvalidRequestError(problem)
            ctx.respond(DescribeLogDirsResponse(error_code=error.code, results=[]))
            return
        page: list[tuple[str, int]] = []
        for key in itertools.islice(keys, first, None):
            if TopicPartition(*key) not in rm.partitions:
                continue  # gone, or not a replica of this broker: nothing to count
            if len(page) == limit:
                next_cursor = DescribeLogDirsResponse.Cursor(
                    topic_name=key[0], partition_index=key[1], log_dir=log_dir
                )
                break
            page.append(key)
        keys = page
    chosen: dict[str, list[Partition]] = {}
    for name, index in keys:
        found = rm.partitions.get(TopicPartition(name, index))
        if found is not None:
            chosen.setdefault(name, []).append(found)
    topics = [
        Topic(
            name=name,
            partitions=[
                PartitionOut(
                    partition_index=p.tp.partition,
                    partition_size=p.log.size_in_bytes,
                    # Followers lag by what the leader has and they do not; leaders by nothing.
                    offset_lag=(
                        0 if p.is_leader else max(0, p.high_watermark - p.log.log_end_offset)
                    ),
                    is_future_key=False,
                )
                for p in parts
            ],
        )
        for name, parts in chosen.items()
    ]
    if rm.storage is not None and rm.storage.writer.offline:
        # As Kafka: an offline directory is listed with the error and no replicas.
        error_code: int = ErrorCode.KAFKA_STORAGE_ERROR
        topics = []
    else:
        error_code = 0
    result = Result(
        error_code=error_code,
        log_dir=log_dir,
        topics=topics,
        total_bytes=-1,
        usable_bytes=-1,
    )
    ctx.respond(DescribeLogDirsResponse(error_code=0, results=[result], next_cursor=next_cursor))
