"""ListGroups (key 16): the groups this broker coordinates, filtered by state and type.

Groups of the consumer protocol (KIP-848) are listed with type and protocol type "consumer".

v6 (unstable, seed 001) pages the answer: groups come sorted by id, at most the pagination
limit of them, and NextCursor names the first group of the next page.
"""

from __future__ import annotations

import bisect

from kafkagen.generated.list_groups import ListGroupsRequest, ListGroupsResponse
from kafkagen.runtime.broker.api import RequestContext, register
from kafkagen.runtime.handlers._util import pagination_limit

API_KEY = 16
CLASSIC = "classic"
CONSUMER = "consumer"


@register(API_KEY, 0, 5, max_unstable_version=6)
def handle(ctx: RequestContext, request: ListGroupsRequest) -> None:
    v = ctx.api_version
    states = {s.lower() for s in request.states_filter} if v >= 4 else set()
    types = {t.lower() for t in request.types_filter} if v >= 5 else set()
    gc = ctx.broker.group_coordinator
    # (group id, protocol type, state, group type) of both protocols' groups.
    listed = [(g.group_id, g.protocol_type or "", g.state.value, CLASSIC) for g in gc.list_groups()]
    listed += [
        (g.group_id, CONSUMER, g.state.value, CONSUMER) for g in gc.consumer.owned_groups(gc.owned)
    ]
    kept = [
        (group_id, protocol_type, state, group_type)
        for group_id, protocol_type, state, group_type in sorted(listed)
        if (not states or state.lower() in states) and (not types or group_type in types)
    ]
    response = ListGroupsResponse(error_code=0)
    if v >= 6:
        if request.cursor is not None:
            kept = kept[bisect.bisect_left(kept, request.cursor.group_id, key=lambda g: g[0]) :]
        limit = pagination_limit(ctx, request.response_pagination_limit)
        if len(kept) > limit:
            response.next_cursor = ListGroupsResponse.GroupCursor(group_id=kept[limit][0])
        kept = kept[:limit]  # only the page is built
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
