"""ListGroups (key 16): the groups this broker coordinates, filtered by state and type.

Groups of the consumer protocol (KIP-848) are listed with type and protocol type "consumer",
share groups (KIP-932) with "share", streams groups (KIP-1071) with type "streams" and
protocol type "streams".

v6 (unstable, seed 001) pages the answer: groups come sorted by id, at most the pagination
limit of them, and NextCursor names the first group of the next page. A page starts with a
bisect in the coordinator's sorted ids, so it costs its own size.
"""

from __future__ import annotations

import heapq
import itertools

from kafkagen.generated.list_groups import ListGroupsRequest, ListGroupsResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.group.consumer_group import ConsumerGroup
from kafkagen.runtime.broker.group.group_model import Group
from kafkagen.runtime.broker.group.streams_group import StreamsGroup
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.broker.share.share_group import ShareGroup
from kafkagen.runtime.handlers._util import pagination_limit
from kafkagen.runtime.pagination import paged_version

API_KEY = 16
PAGED = paged_version(API_KEY)
CLASSIC = "classic"
CONSUMER = "consumer"
SHARE = "share"
STREAMS = "streams"


def handle(ctx: RequestContext, request: ListGroupsRequest) -> None:
    v = ctx.api_version
    states = {s.lower() for s in request.states_filter} if v >= 4 else set()
    types = {t.lower() for t in request.types_filter} if v >= 5 else set()
    gc = ctx.broker.group_coordinator
    response = ListGroupsResponse(error_code=0)
    if v >= PAGED:
        # Groups come by id from the cursor on, so a page costs its own size.
        start = None if request.cursor is None else request.cursor.group_id
        others: list[ShareGroup | StreamsGroup] = [*ctx.broker.share_groups.owned_groups()]
        others += gc.streams.owned_groups()
        shared = sorted(
            (g for g in others if start is None or g.group_id >= start),
            key=lambda g: g.group_id,
        )
        merged = heapq.merge(gc.groups_from(start), shared, key=lambda g: g.group_id)
        wanted = (g for g in map(_listed, merged) if _kept(g, states, types))
        limit = pagination_limit(ctx, request.response_pagination_limit)
        kept = list(itertools.islice(wanted, limit + 1))
        if len(kept) > limit:
            response.next_cursor = ListGroupsResponse.GroupCursor(group_id=kept[limit][0])
            del kept[limit:]
    else:
        listed = [_listed(g) for g in gc.list_groups()]
        listed += [_listed(g) for g in gc.consumer.owned_groups(gc.owned)]
        listed += [_listed(g) for g in ctx.broker.share_groups.owned_groups()]
        listed += [_listed(g) for g in gc.streams.owned_groups()]
        kept = [g for g in sorted(listed) if _kept(g, states, types)]
    # Without DESCRIBE on the cluster, only the groups the sender may describe are listed.
    if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        kept = [g for g in kept if ctx.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, g[0])]
    response.groups = [
        ListGroupsResponse.ListedGroup(
            group_id=group_id,
            protocol_type=protocol_type,
            group_state=state,
            group_type=group_type,
        )
        for group_id, protocol_type, state, group_type in kept
    ]
    ctx.respond(response)


def _listed(g: Group | ConsumerGroup | ShareGroup | StreamsGroup) -> tuple[str, str, str, str]:
    """(group id, protocol type, state, group type) as ListGroups answers them."""
    if isinstance(g, StreamsGroup):
        return g.group_id, STREAMS, g.state.value, STREAMS
    if isinstance(g, ShareGroup):
        return g.group_id, SHARE, g.state, SHARE
    if isinstance(g, ConsumerGroup):
        return g.group_id, CONSUMER, g.state.value, CONSUMER
    return g.group_id, g.protocol_type or "", g.state.value, CLASSIC


def _kept(g: tuple[str, str, str, str], states: set[str], types: set[str]) -> bool:
    return (not states or g[2].lower() in states) and (not types or g[3] in types)
