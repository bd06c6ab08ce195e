"""DeleteAcls (key 31): remove the bindings each filter matches, and list them."""

from __future__ import annotations

from kafkagen.generated.delete_acls import DeleteAclsRequest, DeleteAclsResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclFilter, AclOperation, PatternType, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import ClusterAuthorizationFailedError as ClusterAuthFailed
from kafkagen.runtime.errors import KafkaError
from kafkagen.runtime.handlers._util import require

API_KEY = 31
FilterResult = DeleteAclsResponse.DeleteAclsFilterResult
Matching = DeleteAclsResponse.DeleteAclsMatchingAcl


def handle(ctx: RequestContext, request: DeleteAclsRequest) -> None:
    store = ctx.broker.metadata.acls
    results = []
    for f in request.filters:
        flt = AclFilter(
            f.resource_type_filter,
            f.resource_name_filter,
            f.pattern_type_filter if ctx.api_version >= 1 else PatternType.LITERAL,
            f.principal_filter,
            f.host_filter,
            f.operation,
            f.permission_type,
        )
        try:
            require(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME, ClusterAuthFailed)
            flt.validate()
        except KafkaError as e:
            results.append(
                FilterResult(error_code=e.code, error_message=e.message, matching_acls=[])
            )
            continue
        gone = store.delete(flt)
        results.append(
            FilterResult(
                error_code=0,
                error_message=None,
                matching_acls=[
                    Matching(
                        error_code=0,
                        error_message=None,
                        resource_type=b.resource_type,
                        resource_name=b.resource_name,
                        pattern_type=b.pattern_type,
                        principal=b.principal,
                        host=b.host,
                        operation=b.operation,
                        permission_type=b.permission_type,
                    )
                    for b in gone
                ],
            )
        )
    ctx.respond(DeleteAclsResponse(filter_results=results))
