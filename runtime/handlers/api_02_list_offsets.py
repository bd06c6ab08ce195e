"""ListOffsets (key 2): offsets by timestamp, or the earliest, latest and max-timestamp ones.

Special timestamps: -1 latest (the high watermark; the log end for a replica), -2 earliest,
-3 the record with the largest timestamp (v7+), -4 earliest local (v8+), -5 latest tiered
(v9+; there is no tiered storage, so never found). v11 (unstable, seed 001) pages the
partitions in request order; NextCursor names the partition the next page starts at. A
cursor naming a partition not asked for, or a negative index, answers INVALID_REQUEST for
every partition.
"""

from __future__ import annotations

from kafkagen.generated.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from kafkagen.runtime.broker.api import RequestContext, register
from kafkagen.runtime.broker.metadata import TopicPartition
from kafkagen.runtime.errors import InvalidRequestError, KafkaError, UnsupportedVersionError
from kafkagen.runtime.handlers._util import Pager, pagination_limit

API_KEY = 2
TopicResponse = ListOffsetsResponse.ListOffsetsTopicResponse
PartitionResponse = ListOffsetsResponse.ListOffsetsPartitionResponse

# The first version that may ask for each special timestamp.
_SINCE = {-3: 7, -4: 8, -5: 9}


@register(API_KEY, 0, 10, max_unstable_version=11)
def handle(ctx: RequestContext, request: ListOffsetsRequest) -> None:
    v = ctx.api_version
    rm = ctx.broker.replica_manager
    isolation = request.isolation_level if v >= 2 else 0
    seen: set[TopicPartition] = set()
    topics = []
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            out = PartitionResponse(partition_index=p.partition_index)
            try:
                if tp in seen:
                    raise InvalidRequestError(f"{tp} is listed twice")
                seen.add(tp)
                if v < _SINCE.get(p.timestamp, 0):
                    raise UnsupportedVersionError(
                        f"timestamp {p.timestamp} needs ListOffsets v{_SINCE[p.timestamp]}"
                    )
                offset, timestamp, epoch = rm.list_offset(
                    tp,
                    p.timestamp,
                    isolation_level=isolation,
                    current_leader_epoch=p.current_leader_epoch,
                    replica_id=request.replica_id,
                )
            except KafkaError as e:
                out.error_code = e.code
                partitions.append(out)
                continue
            if v == 0:
                out.old_style_offsets = [offset] if offset >= 0 and p.max_num_offsets > 0 else []
            else:
                out.offset = offset
                out.timestamp = timestamp
                if v >= 4:
                    out.leader_epoch = epoch
            partitions.append(out)
        topics.append(TopicResponse(name=t.name, partitions=partitions))
    response = ListOffsetsResponse(topics=topics)
    if v >= 11:
        c = request.cursor
        if c is not None and (
            c.partition_index < 0 or TopicPartition(c.topic_name, c.partition_index) not in seen
        ):
            # A cursor outside the request (or with a negative index): every partition says so.
            bad = InvalidRequestError.code
            for out_topic in topics:
                out_topic.partitions = [
                    PartitionResponse(partition_index=r.partition_index, error_code=bad)
                    for r in out_topic.partitions
                ]
            ctx.respond(response)
            return
        pager = Pager(
            pagination_limit(ctx, request.response_pagination_limit),
            None if c is None else (c.topic_name, c.partition_index),
            sorted_keys=False,
        )
        page = []
        for out_topic in topics:
            out_topic.partitions = [
                p for p in out_topic.partitions if pager.take((out_topic.name, p.partition_index))
            ]
            if out_topic.partitions:
                page.append(out_topic)
        response.topics = page
        if pager.next is not None:
            name, index = pager.next
            assert isinstance(name, str) and isinstance(index, int)
            response.next_cursor = ListOffsetsResponse.Cursor(
                topic_name=name, partition_index=index
            )
    ctx.respond(response)
