"""AddOffsetsToTxn (key 25): a group's offsets partition joins the open transaction, so
that the producer can commit the group's offsets with it (TxnOffsetCommit)."""

from __future__ import annotations

from kafkagen.generated.add_offsets_to_txn import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.types import OFFSETS_TOPIC
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 25
#: PRODUCER_FENCED exists from v2; older clients get INVALID_PRODUCER_EPOCH instead.
FENCED_SINCE = 2


def handle(ctx: RequestContext, request: AddOffsetsToTxnRequest) -> None:
    v = ctx.api_version

    def answer(code: int) -> None:
        if code == ErrorCode.PRODUCER_FENCED and v < FENCED_SINCE:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        ctx.respond(AddOffsetsToTxnResponse(error_code=code))

    if not request.transactional_id:
        answer(ErrorCode.INVALID_REQUEST)  # Kafka checks the transactional id first
        return
    if not request.group_id:
        answer(ErrorCode.INVALID_GROUP_ID)
        return
    if not ctx.allowed(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return
    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        answer(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return
    gc = ctx.broker.group_coordinator
    if not gc.ensure_offsets_topic():
        answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return
    tp = TopicPartition(OFFSETS_TOPIC, gc.log.partition_of(request.group_id))
    ctx.broker.txn_coordinator.add_partitions(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        [tp],
        lambda errors: answer(errors[tp]),
    )
