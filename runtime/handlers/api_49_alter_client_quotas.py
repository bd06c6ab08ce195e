"""AlterClientQuotas (key 49): set and remove client quota values, entity by entity.

Needs ALTER_CONFIGS on the cluster (else every entity answers CLUSTER_AUTHORIZATION_FAILED).
Each entity is checked on its own, as Kafka's controller does (a type named twice in one
entity keeps its last name, as Kafka reads it into a map): an entity named twice, a
malformed entity, a key named twice, a key its type does not have or a fractional byte
rate gets INVALID_REQUEST and nothing of it is written. ``validate_only`` checks and
writes nothing.
"""

from __future__ import annotations

from collections import Counter

from kafkagen.generated.alter_client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.metadata.client_quotas import Entity, QuotaRequestError
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import ClusterAuthorizationFailedError, InvalidRequestError

API_KEY = 49
Response = AlterClientQuotasResponse


def handle(ctx: RequestContext, request: AlterClientQuotasRequest) -> None:
    allowed = ctx.allowed(AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)
    named = Counter(_key(e) for e in request.entries)
    answers = []
    for entry in request.entries:
        code, message = 0, None
        if not allowed:
            code = ClusterAuthorizationFailedError.code
        else:
            try:
                _alter(ctx, entry, named[_key(entry)] > 1, request.validate_only)
            except QuotaRequestError as e:
                code, message = InvalidRequestError.code, str(e)
        answers.append(
            Response.EntryData(
                error_code=code,
                error_message=message,
                entity=[
                    Response.EntityData(entity_type=t, entity_name=name)
                    for t, name in _pairs(entry).items()
                ],
            )
        )
    ctx.respond(Response(entries=answers))


def _alter(
    ctx: RequestContext,
    entry: AlterClientQuotasRequest.EntryData,
    named_twice: bool,
    validate_only: bool,
) -> None:
    """Check one entity's changes and (unless ``validate_only``) write them."""
    quotas = ctx.broker.metadata.client_quotas
    if named_twice:
        raise QuotaRequestError(f"Ignoring duplicate entity {_describe(entry)}")
    entity: Entity = quotas.entity(_pairs(entry).items())
    keys = Counter(op.key for op in entry.ops)
    twice = [k for k, n in keys.items() if n > 1]
    if twice:
        raise QuotaRequestError(
            f"Duplicate quota key {twice[0]} not updating quota for this entity {_describe(entry)}"
        )
    ops = {op.key: None if op.remove else op.value for op in entry.ops}
    quotas.check(entity, ops)
    if not validate_only:
        quotas.alter(entity, ops)


def _pairs(entry: AlterClientQuotasRequest.EntryData) -> dict[str, str | None]:
    """The entity as Kafka reads it: a map of type to name, a type named twice keeping
    its last name (and the answer names the entity so)."""
    return {e.entity_type: e.entity_name for e in entry.entity}


def _key(entry: AlterClientQuotasRequest.EntryData) -> tuple[tuple[str, str | None], ...]:
    return tuple(sorted(_pairs(entry).items(), key=lambda p: p[0]))


def _describe(entry: AlterClientQuotasRequest.EntryData) -> str:
    return "{" + ", ".join(f"{t}={n}" for t, n in _key(entry)) + "}"
