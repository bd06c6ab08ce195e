"""DescribeAcls (key 29): stored bindings matching a filter, grouped by resource.

v4 (unstable, seed 001) pages the resources, sorted by type, then name, then pattern type;
NextCursor names the resource type and name the next page starts at. Resources that share a
type and name (a LITERAL and a PREFIXED pattern) count as one and stay on one page. A page
starts with a bisect in the ACL store's sorted resources, so it costs its own size.
"""

from __future__ import annotations

from kafkagen.generated.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import (
    AclBinding,
    AclFilter,
    AclOperation,
    PatternType,
    ResourceType,
)
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import ClusterAuthorizationFailedError as ClusterAuthFailed
from kafkagen.runtime.errors import KafkaError
from kafkagen.runtime.handlers._util import pagination_limit, require
from kafkagen.runtime.pagination import paged_version

API_KEY = 29
PAGED = paged_version(API_KEY)
Resource = DescribeAclsResponse.DescribeAclsResource
Description = DescribeAclsResponse.AclDescription


def handle(ctx: RequestContext, request: DescribeAclsRequest) -> None:
    flt = AclFilter(
        request.resource_type_filter,
        request.resource_name_filter,
        request.pattern_type_filter if ctx.api_version >= 1 else PatternType.LITERAL,
        request.principal_filter,
        request.host_filter,
        request.operation,
        request.permission_type,
    )
    try:
        require(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME, ClusterAuthFailed)
        flt.validate()
    except KafkaError as e:
        ctx.respond(DescribeAclsResponse(error_code=e.code, error_message=e.message, resources=[]))
        return
    if ctx.api_version >= PAGED:
        _page(ctx, request, flt)
        return
    grouped: dict[tuple[int, str, int], list[Description]] = {}
    for b in ctx.broker.metadata.acls.find(flt):
        grouped.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(
            _description(b)
        )
    resources = [
        Resource(resource_type=rt, resource_name=name, pattern_type=pt, acls=acls)
        for (rt, name, pt), acls in grouped.items()
    ]
    ctx.respond(DescribeAclsResponse(error_code=0, error_message=None, resources=resources))


def _description(b: AclBinding) -> Description:
    return Description(
        principal=b.principal,
        host=b.host,
        operation=b.operation,
        permission_type=b.permission_type,
    )


def _page(ctx: RequestContext, request: DescribeAclsRequest, flt: AclFilter) -> None:
    """v4: the store's resources from the cursor on, only as many as the page holds."""
    c = request.cursor
    room = pagination_limit(ctx, request.response_pagination_limit)
    response = DescribeAclsResponse(error_code=0, error_message=None)
    page: list[Resource] = []
    start = None if c is None else (c.resource_type, c.resource_name)
    for (rt, name, pt), bindings in ctx.broker.metadata.acls.resources_from(flt, start):
        # The cursor cannot tell a LITERAL from a PREFIXED resource of the same type and
        # name, so they never straddle two pages: a resumed page would repeat one.
        if not (page and (page[-1].resource_type, page[-1].resource_name) == (rt, name)):
            if room <= 0:
                response.next_cursor = DescribeAclsResponse.ResourceCursor(
                    resource_name=name, resource_type=rt
                )
                break
            room -= 1
        page.append(
            Resource(
                resource_type=rt,
                resource_name=name,
                pattern_type=pt,
                acls=[_description(b) for b in bindings],
            )
        )
    response.resources = page
    ctx.respond(response)
