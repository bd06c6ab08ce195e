"""ShareFetch (key 78, KIP-932): acknowledge what the member processed, then acquire records
for it from the partitions of its share session. The share-partition manager keeps the
sessions and records; a session error (unknown session, wrong epoch) is the request's
error, answered without message or lock duration as Kafka does. v2 adds renew
acknowledgements: with IsRenewAck the request only renews locks and
acquires nothing.
"""

from __future__ import annotations

from kafkagen.generated.share_fetch import ShareFetchRequest, ShareFetchResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.share.share_partition_manager import PartitionResult
from kafkagen.runtime.errors import (
    ErrorCode,
    InvalidRequestError,
    KafkaError,
    TopicAuthorizationFailedError,
)
from kafkagen.runtime.handlers._util import share_acks, share_answer

API_KEY = 78
R = ShareFetchResponse


def handle(ctx: RequestContext, request: ShareFetchRequest) -> None:
    manager = ctx.broker.share_partitions
    lock_ms = manager.lock_duration_ms(request.group_id or "")

    def fail(code: int) -> None:
        # As Kafka: a request's error comes without message or lock duration.
        ctx.respond(R(error_code=code))

    if not ctx.broker.share_groups.enabled():  # share.version 0, as Kafka 4.4
        fail(ErrorCode.UNSUPPORTED_VERSION)
        return
    if not request.group_id or not request.member_id:
        fail(ErrorCode.INVALID_REQUEST)
        return
    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        fail(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return
    denied: list[PartitionResult] = []
    wanted = []
    md = ctx.broker.metadata
    for t in request.topics:
        name = md.topic_names.get(t.topic_id)
        for p in t.partitions:
            key = (t.topic_id, p.partition_index)
            if name is not None and not ctx.allowed(AclOperation.READ, ResourceType.TOPIC, name):
                denied.append(PartitionResult(key, error=TopicAuthorizationFailedError()))
            else:
                wanted.append(key)
    refused = {r.key for r in denied}
    acks = {k: v for k, v in share_acks(request.topics).items() if k not in refused}
    forgotten = [(t.topic_id, p) for t in request.forgotten_topics_data for p in t.partitions]

    def respond(results: list[PartitionResult]) -> None:
        share_answer(
            ctx,
            R(error_code=0, acquisition_lock_timeout_ms=lock_ms),
            R.ShareFetchableTopicResponse,
            [*results, *denied],
            _fill,
        )

    renew_only = ctx.api_version >= 2 and request.is_renew_ack
    try:
        if renew_only and request.max_wait_ms:
            raise InvalidRequestError("a share fetch that renews locks does not wait")
        manager.share_fetch(
            group_id=request.group_id,
            member_id=request.member_id,
            epoch=request.share_session_epoch,
            wanted=wanted,
            forgotten=forgotten,
            acks=acks,
            max_wait_ms=request.max_wait_ms,
            max_bytes=request.max_bytes,
            max_records=request.max_records if request.max_records > 0 else request.batch_size,
            renew_only=renew_only,
            respond=respond,
            connection=ctx.session,
        )
    except KafkaError as e:
        fail(e.code)


def _fill(pd: R.PartitionData, r: PartitionResult) -> None:
    if r.error is not None:
        pd.error_code, pd.error_message = r.error.code, r.error.message
    if r.ack_error is not None:
        pd.acknowledge_error_code = r.ack_error.code
        pd.acknowledge_error_message = r.ack_error.message
    pd.records = r.records
    pd.acquired_records = [
        R.AcquiredRecords(first_offset=first, last_offset=last, delivery_count=count)
        for first, last, count in r.acquired
    ]
