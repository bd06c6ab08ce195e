"""InitProducerId (key 22): a producer id and epoch.

Without a transactional id every call gets a new id at epoch 0, as in Kafka. With one, the
transaction coordinator answers: the id's producer id with its epoch bumped (fencing the
previous producer), after aborting a transaction that producer left open. v6 (KIP-939,
unstable in Kafka 4.4, so served only with ``unstable.api.versions.enable``) adds the
two-phase commit flags, which the coordinator judges.
"""

from __future__ import annotations

from kafkagen.generated.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import ErrorCode

API_KEY = 22
#: PRODUCER_FENCED exists from v4; older clients get INVALID_PRODUCER_EPOCH instead.
FENCED_SINCE = 4
#: From v3 a producer may name the id and epoch it had (KIP-360).
EXPECTED_SINCE = 3


def handle(ctx: RequestContext, request: InitProducerIdRequest) -> None:
    v = ctx.api_version
    enable_2pc = v >= 6 and request.enable2_pc
    error = _unauthorized(ctx, request.transactional_id, enable_2pc)
    if error:
        ctx.respond(InitProducerIdResponse(error_code=error, producer_id=-1, producer_epoch=-1))
        return
    if v >= EXPECTED_SINCE and (request.producer_id == -1) != (request.producer_epoch == -1):
        # As Kafka: an expected producer id comes with its epoch, or neither is given.
        ctx.respond(
            InitProducerIdResponse(
                error_code=ErrorCode.INVALID_REQUEST, producer_id=-1, producer_epoch=-1
            )
        )
        return
    if request.transactional_id is None:
        pid = ctx.broker.metadata.allocate_producer_id()
        ctx.respond(InitProducerIdResponse(error_code=0, producer_id=pid, producer_epoch=0))
        return

    def done(error: int, pid: int, epoch: int) -> None:
        if error == ErrorCode.PRODUCER_FENCED and v < FENCED_SINCE:
            error = ErrorCode.INVALID_PRODUCER_EPOCH
        ctx.respond(InitProducerIdResponse(error_code=error, producer_id=pid, producer_epoch=epoch))

    ctx.broker.txn_coordinator.init_producer_id(
        request.transactional_id,
        request.transaction_timeout_ms,
        request.producer_id if v >= EXPECTED_SINCE else -1,
        request.producer_epoch if v >= EXPECTED_SINCE else -1,
        done,
        enable_2pc=enable_2pc,
        keep_prepared=v >= 6 and request.keep_prepared_txn,
    )


def _unauthorized(ctx: RequestContext, transactional_id: str | None, enable_2pc: bool) -> int:
    """WRITE on the transactional id (and TWO_PHASE_COMMIT on it for a two-phase commit
    producer); without one, IDEMPOTENT_WRITE on the cluster or WRITE on some topic (as
    Kafka accepts an idempotent producer)."""
    if transactional_id is not None:
        needed = [AclOperation.WRITE] + [AclOperation.TWO_PHASE_COMMIT] * enable_2pc
        if all(ctx.allowed(op, ResourceType.TRANSACTIONAL_ID, transactional_id) for op in needed):
            return 0
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if ctx.allowed(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME):
        return 0
    authz = ctx.broker.authorizer
    if authz.authorize_any(ctx.principal, ctx.client_host, AclOperation.WRITE, ResourceType.TOPIC):
        return 0
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
