"""ShareAcknowledge (key 79, KIP-932): accept, release, reject (and from v2 renew) records
the member acquired, within its share session; epoch -1 closes the session after. A
session error is the request's error, a partition's refused acknowledgement its own.
"""

from __future__ import annotations

from kafkagen.generated.share_acknowledge import ShareAcknowledgeRequest, ShareAcknowledgeResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.share.share_partition_manager import PartitionResult
from kafkagen.runtime.errors import ErrorCode, KafkaError, TopicAuthorizationFailedError
from kafkagen.runtime.handlers._util import share_acks, share_answer

API_KEY = 79
R = ShareAcknowledgeResponse


def handle(ctx: RequestContext, request: ShareAcknowledgeRequest) -> None:
    manager = ctx.broker.share_partitions
    lock_ms = manager.lock_duration_ms(request.group_id or "")
    # As Kafka: a request's error comes without message or lock duration.
    if not ctx.broker.share_groups.enabled():  # share.version 0, as Kafka 4.4
        ctx.respond(R(error_code=ErrorCode.UNSUPPORTED_VERSION))
        return
    if not request.group_id or not request.member_id:
        ctx.respond(R(error_code=ErrorCode.INVALID_REQUEST))
        return
    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        ctx.respond(R(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED))
        return
    md = ctx.broker.metadata
    denied = []
    acks = share_acks(request.topics)
    for key in list(acks):
        name = md.topic_names.get(key[0])
        if name is not None and not ctx.allowed(AclOperation.READ, ResourceType.TOPIC, name):
            denied.append(PartitionResult(key, error=TopicAuthorizationFailedError()))
            del acks[key]
    try:
        results = manager.share_acknowledge(
            request.group_id, request.member_id, request.share_session_epoch, acks
        )
    except KafkaError as e:
        ctx.respond(R(error_code=e.code))
        return
    share_answer(
        ctx,
        R(error_code=0, acquisition_lock_timeout_ms=lock_ms),
        R.ShareAcknowledgeTopicResponse,
        [*results, *denied],
        _fill,
    )


def _fill(pd: R.PartitionData, r: PartitionResult) -> None:
    if r.error is not None:
        pd.error_code, pd.error_message = r.error.code, r.error.message
