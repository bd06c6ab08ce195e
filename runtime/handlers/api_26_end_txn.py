"""EndTxn (key 26): commit or abort the producer's transaction.

Answered once the coordinator has durably prepared the outcome; the COMMIT or ABORT
markers then go to every partition of the transaction. v5 (a new epoch after every
transaction) is not served.
"""

from __future__ import annotations

from kafkagen.generated.end_txn import EndTxnRequest, EndTxnResponse
from kafkagen.runtime.broker.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.errors import ErrorCode

API_KEY = 26
#: PRODUCER_FENCED exists from v2; older clients get INVALID_PRODUCER_EPOCH instead.
FENCED_SINCE = 2


def handle(ctx: RequestContext, request: EndTxnRequest) -> None:
    v = ctx.api_version

    def answer(code: int) -> None:
        if code == ErrorCode.PRODUCER_FENCED and v < FENCED_SINCE:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        ctx.respond(EndTxnResponse(error_code=code))

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
    )
