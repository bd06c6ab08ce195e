"""DescribeClientQuotas (key 48): the stored client quotas a filter selects.

Needs DESCRIBE_CONFIGS on the cluster. A malformed filter is INVALID_REQUEST, an unknown
entity type UNSUPPORTED_VERSION, each with Kafka's message and no entries.
"""

from __future__ import annotations

from kafkagen.generated.describe_client_quotas import (
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.metadata.client_quotas import QuotaRequestError, QuotaTypeError
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import (
    ClusterAuthorizationFailedError,
    InvalidRequestError,
    KafkaError,
    UnsupportedVersionError,
)

API_KEY = 48
Response = DescribeClientQuotasResponse


def handle(ctx: RequestContext, request: DescribeClientQuotasRequest) -> None:
    if not ctx.allowed(AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
        ctx.respond(_error(ClusterAuthorizationFailedError, None))
        return
    components = [(c.entity_type, c.match_type, c.match) for c in request.components]
    try:
        found = ctx.broker.metadata.client_quotas.describe(components, request.strict)
    except QuotaTypeError as e:
        ctx.respond(_error(UnsupportedVersionError, str(e)))
        return
    except QuotaRequestError as e:
        ctx.respond(_error(InvalidRequestError, str(e)))
        return
    ctx.respond(
        Response(
            error_code=0,
            entries=[
                Response.EntryData(
                    entity=[Response.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                    values=[Response.ValueData(key=k, value=v) for k, v in sorted(values.items())],
                )
                for entity, values in sorted(found.items(), key=_order)
            ],
        )
    )


def _order(item: tuple[tuple[tuple[str, str | None], ...], object]) -> list[tuple[str, str]]:
    # Default entities (None) before named ones of the same type.
    return [(t, "" if n is None else "\0" + n) for t, n in item[0]]


def _error(kind: type[KafkaError], message: str | None) -> DescribeClientQuotasResponse:
    return Response(error_code=kind.code, error_message=message, entries=None)
