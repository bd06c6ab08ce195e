"""ListOffsets (key 2): offsets by timestamp, or the earliest, latest and max-timestamp ones.

Special timestamps: -1 latest (the high watermark; the log end for a replica), -2 earliest,
-3 the record with the largest timestamp (v7+), -4 earliest local (v8+), -5 latest tiered
(v9+) and -6 earliest pending upload (v11+, KIP-1023); there is no tiered storage, so the
last two are never found. v12 (unstable, seed 001) pages the partitions in request order;
NextCursor names the partition the next page starts at, and only the page's partitions are
looked up. A request that lists a partition twice, or a cursor naming a partition not asked
for or with a negative index, answers INVALID_REQUEST for every partition.
"""

from __future__ import annotations

from kafkagen.generated.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import InvalidRequestError, KafkaError, UnsupportedVersionError
from kafkagen.runtime.errors import TopicAuthorizationFailedError as TopicAuthFailed
from kafkagen.runtime.handlers._util import pagination_limit, repeated, require
from kafkagen.runtime.pagination import paged_version
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 2
PAGED = paged_version(API_KEY)
TopicResponse = ListOffsetsResponse.ListOffsetsTopicResponse
PartitionResponse = ListOffsetsResponse.ListOffsetsPartitionResponse

# The first version that may ask for each special timestamp.
_SINCE = {-3: 7, -4: 8, -5: 9, -6: 11}


def handle(ctx: RequestContext, request: ListOffsetsRequest) -> None:
    if ctx.api_version >= PAGED:
        _page(ctx, request)
        return
    seen: set[TopicPartition] = set()
    topics = [
        TopicResponse(
            name=t.name, partitions=[_answer(ctx, request, t.name, p, seen) for p in t.partitions]
        )
        for t in request.topics
    ]
    ctx.respond(ListOffsetsResponse(topics=topics))


def _answer(
    ctx: RequestContext,
    request: ListOffsetsRequest,
    topic: str,
    p: ListOffsetsRequest.ListOffsetsPartition,
    seen: set[TopicPartition],
) -> PartitionResponse:
    """One partition's answer; ``seen`` holds the partitions answered before it."""
    v = ctx.api_version
    tp = TopicPartition(topic, p.partition_index)
    out = PartitionResponse(partition_index=p.partition_index)
    try:
        if tp in seen:
            raise InvalidRequestError(f"{tp} is listed twice")
        seen.add(tp)
        require(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic, TopicAuthFailed)
        if v < _SINCE.get(p.timestamp, 0):
            raise UnsupportedVersionError(
                f"timestamp {p.timestamp} needs ListOffsets v{_SINCE[p.timestamp]}"
            )
        offset, timestamp, epoch = ctx.broker.replica_manager.list_offset(
            tp,
            p.timestamp,
            isolation_level=request.isolation_level if v >= 2 else 0,
            current_leader_epoch=p.current_leader_epoch,
            replica_id=request.replica_id,
        )
    except KafkaError as e:
        out.error_code = e.code
        return out
    if v == 0:
        out.old_style_offsets = [offset] if offset >= 0 and p.max_num_offsets > 0 else []
    else:
        out.offset = offset
        out.timestamp = timestamp
        if v >= 4:
            out.leader_epoch = epoch
    return out


def _page(ctx: RequestContext, request: ListOffsetsRequest) -> None:
    """v12: the partitions in request order from the cursor's on; only the page's are
    looked up."""
    c = request.cursor
    topics = request.topics
    start = (0, 0)  # (topic, partition) position in the request where the page starts
    problem = repeated(
        ((t.name, p.partition_index) for t in topics for p in t.partitions), "the partition"
    )
    if problem is None and c is not None:
        found = None if c.partition_index < 0 else _find(request, c.topic_name, c.partition_index)
        if found is None:
            problem = f"the cursor {c.topic_name}-{c.partition_index} was not asked for"
        else:
            start = found
    if problem is not None:
        # A repeat, or a cursor outside the request: every partition says so.
        bad = InvalidRequestError(problem).code
        answer = [
            TopicResponse(
                name=t.name,
                partitions=[
                    PartitionResponse(partition_index=p.partition_index, error_code=bad)
                    for p in t.partitions
                ],
            )
            for t in topics
        ]
        ctx.respond(ListOffsetsResponse(topics=answer))
        return
    room = pagination_limit(ctx, request.response_pagination_limit)
    response = ListOffsetsResponse()
    chosen: list[tuple[str, list[ListOffsetsRequest.ListOffsetsPartition]]] = []
    for ti in range(start[0], len(topics)):
        t = topics[ti]
        taken = []
        for pi in range(start[1] if ti == start[0] else 0, len(t.partitions)):
            p = t.partitions[pi]
            if room <= 0:
                response.next_cursor = ListOffsetsResponse.Cursor(
                    topic_name=t.name, partition_index=p.partition_index
                )
                break
            room -= 1
            taken.append(p)
        if taken:
            chosen.append((t.name, taken))
        if response.next_cursor is not None:
            break
    seen: set[TopicPartition] = set()  # no repeats here: the request has none
    response.topics = [
        TopicResponse(name=name, partitions=[_answer(ctx, request, name, p, seen) for p in ps])
        for name, ps in chosen
    ]
    ctx.respond(response)


def _find(request: ListOffsetsRequest, topic: str, partition: int) -> tuple[int, int] | None:
    """Where the request first lists the partition: (topic position, partition position)."""
    for ti, t in enumerate(request.topics):
        if t.name == topic:
            for pi, p in enumerate(t.partitions):
                if p.partition_index == partition:
                    return ti, pi
    return None
