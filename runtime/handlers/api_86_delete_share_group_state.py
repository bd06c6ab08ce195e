"""DeleteShareGroupState (key 86, KIP-932): the share coordinator forgets share
partitions' state (a tombstone); a partition without state is no error."""

from __future__ import annotations

from typing import Any

from kafkagen.generated.delete_share_group_state import (
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.handlers._util import share_state_answer

API_KEY = 86
R = DeleteShareGroupStateResponse


def handle(ctx: RequestContext, request: DeleteShareGroupStateRequest) -> None:
    def fill(key: Any, _: Any, __: Any) -> None:
        ctx.broker.share_coordinator.delete_state(key)

    share_state_answer(ctx, request, R, R.DeleteStateResult, R.PartitionResult, fill)
