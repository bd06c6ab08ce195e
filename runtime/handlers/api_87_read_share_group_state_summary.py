"""ReadShareGroupStateSummary (key 87, KIP-932): a share partition's start offset, leader
and state epochs and (v1) how many records past the start are done, without its batches;
a partition without state answers start offset -1, no error."""

from __future__ import annotations

from typing import Any

from kafkagen.generated.read_share_group_state_summary import (
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.handlers._util import share_state_answer

API_KEY = 87
R = ReadShareGroupStateSummaryResponse


def handle(ctx: RequestContext, request: ReadShareGroupStateSummaryRequest) -> None:
    def fill(key: Any, _: Any, r: Any) -> None:
        state = ctx.broker.share_coordinator.summary(key)
        if state is None:
            r.start_offset, r.leader_epoch, r.state_epoch = -1, 0, 0
            return
        r.start_offset, r.leader_epoch = state.start_offset, state.leader_epoch
        r.state_epoch, r.delivery_complete_count = state.state_epoch, state.delivery_complete_count

    share_state_answer(ctx, request, R, R.ReadStateSummaryResult, R.PartitionResult, fill)
