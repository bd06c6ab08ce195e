"""ListGroups (key 16): the groups this broker coordinates, filtered by state and type."""

from __future__ import annotations

from kafkagen.generated.list_groups import ListGroupsRequest, ListGroupsResponse
from kafkagen.runtime.broker.api import RequestContext, register

API_KEY = 16
CLASSIC = "classic"


@register(API_KEY, 0, 5)
def handle(ctx: RequestContext, request: ListGroupsRequest) -> None:
    v = ctx.api_version
    states = {s.lower() for s in request.states_filter} if v >= 4 else set()
    types = {t.lower() for t in request.types_filter} if v >= 5 else set()
    groups = []
    for g in ctx.broker.group_coordinator.list_groups():
        if states and g.state.value.lower() not in states:
            continue
        if types and CLASSIC not in types:
            continue
        groups.append(
            ListGroupsResponse.ListedGroup(
                group_id=g.group_id,
                protocol_type=g.protocol_type or "",
                group_state=g.state.value,
                group_type=CLASSIC,
            )
        )
    ctx.respond(ListGroupsResponse(error_code=0, groups=groups))
