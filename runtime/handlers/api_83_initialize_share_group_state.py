"""InitializeShareGroupState (key 83, KIP-932): the share coordinator starts share
partitions' state at an offset and state epoch (a ShareSnapshot record), unless the
partition has a newer state epoch (FENCED_STATE_EPOCH)."""

from __future__ import annotations

from typing import Any

from kafkagen.generated.initialize_share_group_state import (
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.handlers._util import share_state_answer

API_KEY = 83
R = InitializeShareGroupStateResponse


def handle(ctx: RequestContext, request: InitializeShareGroupStateRequest) -> None:
    def fill(key: Any, p: Any, _: Any) -> None:
        ctx.broker.share_coordinator.initialize_state(key, p.state_epoch, p.start_offset)

    share_state_answer(ctx, request, R, R.InitializeStateResult, R.PartitionResult, fill)
