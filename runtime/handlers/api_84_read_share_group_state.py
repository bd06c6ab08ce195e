"""ReadShareGroupState (key 84, KIP-932): a share partition's state from its share
coordinator, for its leader; a read at a newer leader epoch records that epoch, an older
one is FENCED_LEADER_EPOCH, a partition without state INVALID_REQUEST."""

from __future__ import annotations

from typing import Any

from kafkagen.generated.read_share_group_state import (
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.handlers._util import share_state_answer

API_KEY = 84
R = ReadShareGroupStateResponse


def handle(ctx: RequestContext, request: ReadShareGroupStateRequest) -> None:
    def fill(key: Any, p: Any, r: Any) -> None:
        state = ctx.broker.share_coordinator.read_state(key, p.leader_epoch)
        r.state_epoch, r.start_offset = state.state_epoch, state.start_offset
        r.state_batches = [
            R.StateBatch(first_offset=f, last_offset=lo, delivery_state=s, delivery_count=c)
            for f, lo, s, c in state.batches
        ]

    share_state_answer(ctx, request, R, R.ReadStateResult, R.PartitionResult, fill)
