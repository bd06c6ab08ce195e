"""WriteShareGroupState (key 85, KIP-932): a share partition's leader writes the batches
that changed and its start offset (a ShareUpdate record, or a ShareSnapshot when one is
due); older leader or state epochs are fenced, a partition without state is
INVALID_REQUEST."""

from __future__ import annotations

from typing import Any

from kafkagen.generated.write_share_group_state import (
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.handlers._util import share_state_answer

API_KEY = 85
R = WriteShareGroupStateResponse


def handle(ctx: RequestContext, request: WriteShareGroupStateRequest) -> None:
    def fill(key: Any, p: Any, _: Any) -> None:
        batches = [
            (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in p.state_batches
        ]
        ctx.broker.share_coordinator.write_state(
            key, p.leader_epoch, p.state_epoch, p.start_offset, p.delivery_complete_count, batches
        )

    share_state_answer(ctx, request, R, R.WriteStateResult, R.PartitionResult, fill)
