"""FindCoordinator (key 10): which broker coordinates a group or a transactional id.

A group's coordinator leads the ``__consumer_offsets`` partition its id hashes onto, a
transactional id's the ``__transaction_state`` partition; each topic is created on its
first lookup. v4+ batches keys, each answered on its own. A share partition's key
(``group:topicId:partition``, key type 2) finds its share coordinator, the leader of the
``__share_group_state`` partition the key hashes onto; brokers ask it (CLUSTER_ACTION).
"""

from __future__ import annotations

from kafkagen.generated.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import (
    ClusterAuthorizationFailedError,
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    InvalidRequestError,
    KafkaError,
    TransactionalIdAuthorizationFailedError,
)

API_KEY = 10
GROUP_KEY = 0
TRANSACTION_KEY = 1
SHARE_KEY = 2


def handle(ctx: RequestContext, request: FindCoordinatorRequest) -> None:
    v = ctx.api_version
    key_type = request.key_type if v >= 1 else GROUP_KEY
    if v >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            c = FindCoordinatorResponse.Coordinator(key=key)
            try:
                c.node_id, c.host, c.port = _lookup(ctx, key_type, key)
                c.error_code = 0
            except KafkaError as e:
                c.node_id, c.host, c.port = -1, "", -1
                c.error_code = e.code
                c.error_message = e.message
            coordinators.append(c)
        ctx.respond(FindCoordinatorResponse(coordinators=coordinators))
        return
    response = FindCoordinatorResponse()
    try:
        response.node_id, response.host, response.port = _lookup(ctx, key_type, request.key)
        response.error_code = 0
        response.error_message = "NONE"  # Kafka names the error even when there is none
    except KafkaError as e:
        response.node_id, response.host, response.port = -1, "", -1
        response.error_code = e.code
        response.error_message = e.message
    ctx.respond(response)


def _lookup(ctx: RequestContext, key_type: int, key: str) -> tuple[int, str, int]:
    if key_type == GROUP_KEY:
        if not key:
            raise InvalidRequestError("a group id cannot be empty")
        if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, key):
            raise GroupAuthorizationFailedError()
        node = ctx.broker.group_coordinator.coordinator_for(key)
    elif key_type == TRANSACTION_KEY:
        if not key:
            raise InvalidRequestError("a transactional id cannot be empty")
        if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
            raise TransactionalIdAuthorizationFailedError()
        node = ctx.broker.txn_coordinator.coordinator_for(key)
    elif key_type == SHARE_KEY:
        if ctx.api_version < 6:
            raise InvalidRequestError("share partitions' coordinators are found from v6")
        group, _, rest = key.partition(":")
        topic_id, _, partition = rest.partition(":")
        if not (group and topic_id and partition.lstrip("-").isdigit()):
            raise InvalidRequestError(f"{key!r} is not a share partition's key")
        if not ctx.allowed(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
            raise ClusterAuthorizationFailedError()
        node = ctx.broker.share_coordinator.log.coordinator_for(key)
    else:
        raise InvalidRequestError(f"coordinator key type {key_type} is not supported")
    broker = ctx.broker.image.brokers.get(node)
    if broker is None or not broker.alive:
        raise CoordinatorNotAvailableError(f"no broker coordinates {key!r} right now")
    broker = ctx.advertised(broker)
    return broker.node_id, broker.host, broker.port
