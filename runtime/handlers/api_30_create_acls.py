"""CreateAcls (key 30): store ACL bindings (kept and described, never enforced)."""

from __future__ import annotations

from kafkagen.generated.create_acls import CreateAclsRequest, CreateAclsResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import (
    AclBinding,
    AclOperation,
    PatternType,
    ResourceType,
)
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import ClusterAuthorizationFailedError as ClusterAuthFailed
from kafkagen.runtime.errors import KafkaError
from kafkagen.runtime.handlers._util import require

API_KEY = 30


def handle(ctx: RequestContext, request: CreateAclsRequest) -> None:
    store = ctx.broker.metadata.acls
    results = []
    for c in request.creations:
        result = CreateAclsResponse.AclCreationResult(error_code=0, error_message=None)
        try:
            require(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME, ClusterAuthFailed)
            store.add(
                AclBinding(
                    c.resource_type,
                    c.resource_name,
                    c.resource_pattern_type if ctx.api_version >= 1 else PatternType.LITERAL,
                    c.principal,
                    c.host,
                    c.operation,
                    c.permission_type,
                )
            )
        except KafkaError as e:
            result.error_code = e.code
            result.error_message = e.message
        results.append(result)
    ctx.respond(CreateAclsResponse(results=results))
