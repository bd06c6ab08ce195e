"""Metadata (key 3): brokers, and topics with their partitions' leaders and replicas.

Unknown topics are created only when the broker allows it (``auto.create.topics.enable``,
off by default) and the request does too (``allow_auto_topic_creation``, v4+). v13 adds a
top-level error code (KIP-1102), always 0 here. v14 (unstable, seed 001) pages the
partitions: at most the pagination limit of them, by topic then partition for all topics and
in request order for named ones, and NextCursor names the topic and partition the next page
starts at. A topic named twice, a negative index, or a topic not asked for is INVALID_REQUEST
on every named topic (on the cursor's topic for a full listing), and nothing is created.
"""

from __future__ import annotations

import bisect
import uuid

from kafkagen.generated.metadata import MetadataRequest, MetadataResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.metadata.cluster_metadata import validate_topic_name
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.broker.types import TopicInfo
from kafkagen.runtime.errors import (
    InvalidRequestError,
    KafkaError,
    LeaderNotAvailableError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from kafkagen.runtime.handlers._util import (
    NOT_REQUESTED,
    Pager,
    pagination_limit,
    repeated,
)
from kafkagen.runtime.message import KeyedList
from kafkagen.runtime.pagination import paged_version

API_KEY = 3
#: Topics may be named by id (and not by name) from this version.
TOPIC_IDS_SINCE = 12
PAGED = paged_version(API_KEY)
Topic = MetadataResponse.MetadataResponseTopic
Partition = MetadataResponse.MetadataResponsePartition
_ZERO = uuid.UUID(int=0)


def handle(ctx: RequestContext, request: MetadataRequest) -> None:
    broker = ctx.broker
    md = broker.image
    v = ctx.api_version
    want_ops = v >= 8 and request.include_topic_authorized_operations

    def topic_ops(name: str) -> int:
        return ctx.authorized_operations(ResourceType.TOPIC, name) if want_ops else NOT_REQUESTED

    def describable(name: str) -> bool:
        return ctx.allowed(AclOperation.DESCRIBE, ResourceType.TOPIC, name)

    topics: KeyedList[Topic] = KeyedList()
    requested = request.topics
    if v < TOPIC_IDS_SINCE and any(t.name is None or t.topic_id != _ZERO for t in requested or []):
        # As Kafka: v10-11 carry a topic id field but may not use it; the whole request
        # fails, each named topic with INVALID_REQUEST, and no broker is listed.
        error = InvalidRequestError(f"topics are named by id only from v{TOPIC_IDS_SINCE}")
        ctx.respond(
            MetadataResponse(
                topics=KeyedList(_error(error, t.name or "", t.topic_id) for t in requested or [])
            )
        )
        return
    all_topics = requested is None or (v == 0 and not requested)
    if v >= PAGED:
        problem = _refusal(ctx, request, all_topics)
        if problem is not None:
            ctx.respond(_response(ctx, _refused(ctx, request, all_topics, problem)))
            return
    if requested is None or all_topics:
        # Topics the sender may not describe are left out, as Kafka hides them.
        infos = sorted((t for t in md.topics.values() if describable(t.name)), key=lambda t: t.name)
        if v >= PAGED:
            infos = _window(ctx, request, infos)
        for info in infos:
            topics.append(_topic(ctx, info, topic_ops(info.name)))
    else:
        allow_create = (v < 4 or request.allow_auto_topic_creation) and broker.configs.broker_bool(
            "auto.create.topics.enable"
        )
        if any(t.topic_id != _ZERO for t in requested):
            # As Kafka: once any topic is asked for by id, the request is read by ids alone
            # (names beside them, and topics named only by name, are passed over).
            requested = [
                MetadataRequest.MetadataRequestTopic(topic_id=t.topic_id, name=None)
                for t in requested
                if t.topic_id != _ZERO
            ]
        room = -1
        if v >= PAGED:
            # A page of named topics costs its own size: start at the cursor's topic (the
            # ones before it were answered by earlier pages) and stop once the limit plus
            # the partition naming the next cursor are covered.
            requested = _from_cursor(request, requested)
            room = pagination_limit(ctx, request.response_pagination_limit) + 1
        for t in requested:
            if room == 0:
                break
            name = t.name
            if name is None:
                # v10+: a topic asked for by id.
                found = md.topic_names.get(t.topic_id)
                if found is None:
                    # The answer's name may be null only from v12; before, it is empty.
                    unnamed = None if v >= 12 else ""
                    topics.append(_error(UnknownTopicIdError(), unnamed, t.topic_id))
                    continue
                name = found
                if not describable(name):
                    # Asked by id: the name is not revealed.
                    topics.append(_error(TopicAuthorizationFailedError(), None, t.topic_id))
                    continue
            elif not describable(name):
                topics.append(_error(TopicAuthorizationFailedError(), name, _ZERO))
                continue
            existing = md.topic(name)
            if existing is None:
                try:
                    validate_topic_name(name)
                    if not allow_create:
                        raise UnknownTopicOrPartitionError()
                    if not (
                        ctx.allowed(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
                        or ctx.allowed(AclOperation.CREATE, ResourceType.TOPIC, name)
                    ):
                        raise TopicAuthorizationFailedError()
                    if not broker.metadata.reaches_controller(broker.node_id):
                        # As Kafka's: the creation is asked of a controller it cannot
                        # reach, and the topic has no leader yet.
                        raise LeaderNotAvailableError()
                    existing = broker.metadata.create_topic(name)
                except KafkaError as e:
                    topics.append(_error(e, name, _ZERO))
                    continue
            topic = _topic(ctx, existing, topic_ops(name))
            topics.append(topic)
            if room > 0:
                c = request.cursor
                after = [
                    p
                    for p in topic.partitions
                    if c is None or name != c.topic_name or p.partition_index >= c.partition_index
                ]
                room = max(room - len(after), 0)
    response = _response(ctx, topics)
    if v >= PAGED:
        _paginate(ctx, request, response, all_topics)
    if 8 <= v <= 10 and request.include_cluster_authorized_operations:
        response.cluster_authorized_operations = ctx.authorized_operations(
            ResourceType.CLUSTER, CLUSTER_NAME
        )
    ctx.respond(response)


def _response(ctx: RequestContext, topics: KeyedList[Topic]) -> MetadataResponse:
    """The answer: the live brokers, the cluster and ``topics``."""
    md = ctx.broker.image
    brokers = KeyedList(
        MetadataResponse.MetadataResponseBroker(
            node_id=b.node_id, host=b.host, port=b.port, rack=b.rack
        )
        for b in sorted(map(ctx.advertised, md.brokers.values()), key=lambda b: b.node_id)
        if b.alive
    )
    return MetadataResponse(
        brokers=brokers, cluster_id=md.cluster_id, controller_id=md.controller_id, topics=topics
    )


def _error(error: KafkaError, name: str | None, topic_id: uuid.UUID) -> Topic:
    return Topic(error_code=error.code, name=name, topic_id=topic_id, partitions=[])


def _topic(ctx: RequestContext, info: TopicInfo, ops: int) -> Topic:
    alive = {b.node_id for b in ctx.broker.image.brokers.values() if b.alive}
    return Topic(
        error_code=0,
        name=info.name,
        topic_id=info.topic_id,
        is_internal=info.internal,
        partitions=[
            Partition(
                # No leader (its last in-sync replica is down): clients wait and retry.
                error_code=0 if p.leader >= 0 else LeaderNotAvailableError.code,
                partition_index=p.index,
                leader_id=p.leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=list(p.isr),
                offline_replicas=[r for r in p.replicas if r not in alive],
            )
            for p in info.partitions
        ],
        topic_authorized_operations=ops,
    )


def _from_cursor(
    request: MetadataRequest, requested: list[MetadataRequest.MetadataRequestTopic]
) -> list[MetadataRequest.MetadataRequestTopic]:
    """The requested topics from the cursor's own on (all of them without a cursor, or when
    the cursor names no requested topic: the pager then answers INVALID_REQUEST)."""
    c = request.cursor
    if c is None:
        return requested
    for i, t in enumerate(requested):
        if t.name == c.topic_name:
            return requested[i:]
    return requested


def _window(
    ctx: RequestContext, request: MetadataRequest, infos: list[TopicInfo]
) -> list[TopicInfo]:
    """The topics (sorted by name) one page of a full listing can reach: from the cursor's
    topic until the limit plus the partition that names the next cursor are covered, so a
    page costs its own size rather than the whole cluster's."""
    c = request.cursor
    if c is not None:
        infos = infos[bisect.bisect_left(infos, c.topic_name, key=lambda t: t.name) :]
    room = pagination_limit(ctx, request.response_pagination_limit) + 1
    out = []
    for info in infos:
        out.append(info)
        if c is not None and info.name == c.topic_name:
            room -= sum(1 for p in info.partitions if p.index >= c.partition_index)
        else:
            room -= len(info.partitions)
        if room <= 0:
            break
    return out


def _refusal(ctx: RequestContext, request: MetadataRequest, all_topics: bool) -> str | None:
    """Why a paged request is INVALID_REQUEST: a topic named twice (by name or by id), or a
    cursor with a negative index or outside the named topics. None when it is not."""
    c = request.cursor
    if not all_topics:
        names = ctx.broker.image.topic_names
        problem = repeated(
            [
                t.name if t.name is not None else names.get(t.topic_id, t.topic_id)
                for t in request.topics or []
            ],
            "the topic",
        )
        if problem is not None:
            return problem
    if c is None:
        return None
    if c.partition_index < 0:
        return f"the cursor's partition index {c.partition_index} is negative"
    if not all_topics and c.topic_name not in {t.name for t in request.topics or []}:
        return f"the cursor's topic {c.topic_name!r} was not asked for"
    return None


def _refused(
    ctx: RequestContext, request: MetadataRequest, all_topics: bool, problem: str
) -> KeyedList[Topic]:
    """Every named topic carries INVALID_REQUEST; a full listing, which names none, gets one
    topic named after the cursor."""
    error = InvalidRequestError(problem)
    if all_topics:
        assert request.cursor is not None
        return KeyedList([_error(error, request.cursor.topic_name, _ZERO)])
    names = ctx.broker.image.topic_names
    return KeyedList(
        _error(error, t.name if t.name is not None else names.get(t.topic_id), t.topic_id)
        for t in request.topics or []
    )


def _paginate(
    ctx: RequestContext, request: MetadataRequest, response: MetadataResponse, ordered: bool
) -> None:
    c = request.cursor
    pager = Pager(
        pagination_limit(ctx, request.response_pagination_limit),
        None if c is None else (c.topic_name, c.partition_index),
        sorted_keys=ordered,
        # Named topics come in request order, their partitions sorted: a cursor at a
        # partition or topic that went away resumes at the next one. A cursor at partition
        # 0 starts its topic, so that topic is answered even if it has gone meanwhile.
        request_prefix=0 if ordered else 1,
        entry_start=None if ordered else (0,),
    )
    page: KeyedList[Topic] = KeyedList()
    for t in response.topics:
        if not t.partitions:
            # An error answer has no partitions to count: it goes where the page is.
            if pager.reaches((t.name,)):
                page.append(t)
            continue
        kept = [p for p in t.partitions if pager.take((t.name, p.partition_index))]
        if kept:
            t.partitions = kept
            page.append(t)
    response.topics = page
    if pager.next is not None:
        name, index = pager.next
        assert isinstance(name, str) and isinstance(index, int)
        response.next_cursor = MetadataResponse.Cursor(topic_name=name, partition_index=index)
