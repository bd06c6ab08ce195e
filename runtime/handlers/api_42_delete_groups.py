"""DeleteGroups (key 42): empty groups and their offsets go (tombstones in the offsets topic).

From v3 each failed group also carries an error message saying why.
"""

from __future__ import annotations

from kafkagen.generated.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.errors import error_for_code
from kafkagen.runtime.message import KeyedList

API_KEY = 42
MESSAGES_SINCE = 3


def handle(ctx: RequestContext, request: DeleteGroupsRequest) -> None:
    names = list(request.groups_names)
    with_messages = ctx.api_version >= MESSAGES_SINCE

    def message(code: int) -> str | None:
        return error_for_code(code).message if code and with_messages else None

    def done(results: dict[str, int]) -> None:
        ctx.respond(
            DeleteGroupsResponse(
                results=KeyedList(
                    DeleteGroupsResponse.DeletableGroupResult(
                        group_id=g, error_code=results[g], error_message=message(results[g])
                    )
                    for g in dict.fromkeys(names)
                )
            )
        )

    ctx.broker.group_coordinator.delete_groups(list(dict.fromkeys(names)), done)
