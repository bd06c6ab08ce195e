"""InitProducerId (key 22): a fresh producer id for idempotent producers.

Without a transactional id every call gets a new id at epoch 0, as in Kafka. Transactions
are not supported: a transactional id gets INVALID_REQUEST (fatal for clients) rather than
an answer they would retry forever.
"""

from __future__ import annotations

from kafkagen.generated.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from kafkagen.runtime.broker.api import RequestContext, register
from kafkagen.runtime.errors import InvalidRequestError

API_KEY = 22


@register(API_KEY, 0, 5)
def handle(ctx: RequestContext, request: InitProducerIdRequest) -> None:
    if request.transactional_id:
        ctx.respond(
            InitProducerIdResponse(
                error_code=InvalidRequestError.code, producer_id=-1, producer_epoch=-1
            )
        )
        return
    pid = ctx.broker.metadata.allocate_producer_id()
    ctx.respond(InitProducerIdResponse(error_code=0, producer_id=pid, producer_epoch=0))
