"""EndTxn (key 26): commit or abort the producer's transaction.

Answered once the coordinator has durably prepared the outcome; the COMMIT or ABORT
markers then go to every partition of the transaction. From v5 (transactions v2,
KIP-890) every transaction ends under the next epoch, and the answer gives the producer id
and epoch to go on with (a new producer id at epoch 0 once the epochs run out).
"""

from __future__ import annotations

from kafkagen.generated.end_txn import EndTxnRequest, EndTxnResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import ErrorCode

API_KEY = 26
#: PRODUCER_FENCED exists from v2; older clients get INVALID_PRODUCER_EPOCH instead.
FENCED_SINCE = 2
#: Transactions v2: the epoch is bumped at the end of every transaction.
EPOCH_BUMP_SINCE = 5


def handle(ctx: RequestContext, request: EndTxnRequest) -> None:
    v = ctx.api_version

    def answer(code: int, pid: int = -1, epoch: int = -1) -> None:
        if code == ErrorCode.PRODUCER_FENCED and v < FENCED_SINCE:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        ctx.respond(EndTxnResponse(error_code=code, producer_id=pid, producer_epoch=epoch))

    if not request.transactional_id:
        answer(ErrorCode.INVALID_REQUEST)
        return
    if not ctx.allowed(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return
    ctx.broker.txn_coordinator.end_txn(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        request.committed,
        answer,
        bump_epoch=v >= EPOCH_BUMP_SINCE,
    )
