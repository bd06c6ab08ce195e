"""DeleteGroups (key 42): empty groups and their offsets go (tombstones in the offsets topic);
an empty share group goes with its share partitions' state.

v3 adds an error message to each group's result; like Kafka 4.4.0, the broker leaves it
null for the errors a deletion meets here (a group that is not empty or does not exist).
"""

from __future__ import annotations

from kafkagen.generated.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import ErrorCode, KafkaError
from kafkagen.runtime.message import KeyedList

API_KEY = 42


def handle(ctx: RequestContext, request: DeleteGroupsRequest) -> None:
    names = list(request.groups_names)

    def done(results: dict[str, int]) -> None:
        ctx.respond(
            DeleteGroupsResponse(
                results=KeyedList(
                    DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=results[g])
                    for g in dict.fromkeys(names)
                )
            )
        )

    answered: dict[str, int] = {
        g: ErrorCode.GROUP_AUTHORIZATION_FAILED
        for g in dict.fromkeys(names)
        if not ctx.allowed(AclOperation.DELETE, ResourceType.GROUP, g)
    }
    # Share groups live in their own coordinator: an empty one goes with its share state.
    shares = ctx.broker.share_groups
    for g in dict.fromkeys(names):
        if g not in answered and shares.groups.get(g) is not None:
            try:
                shares.delete(g)
                answered[g] = 0
            except KafkaError as e:
                answered[g] = e.code
    allowed = [g for g in dict.fromkeys(names) if g not in answered]
    if not allowed:
        done(answered)
        return
    ctx.broker.group_coordinator.delete_groups(
        allowed, lambda results: done({**results, **answered})
    )
