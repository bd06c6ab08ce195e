"""DescribeAcls (key 29): stored bindings matching a filter, grouped by resource.

v4 (unstable, seed 001) pages the resources, sorted by type, then name, then pattern type;
NextCursor names the resource type and name the next page starts at. Resources that share a
type and name (a LITERAL and a PREFIXED pattern) count as one and stay on one page.
"""

from __future__ import annotations

from kafkagen.generated.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from kafkagen.runtime.broker.acls import AclFilter, PatternType
from kafkagen.runtime.broker.api import RequestContext, register
from kafkagen.runtime.errors import KafkaError
from kafkagen.runtime.handlers._util import Pager, pagination_limit

API_KEY = 29
Resource = DescribeAclsResponse.DescribeAclsResource
Description = DescribeAclsResponse.AclDescription


@register(API_KEY, 0, 3, max_unstable_version=4)
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
        flt.validate()
    except KafkaError as e:
        ctx.respond(DescribeAclsResponse(error_code=e.code, error_message=e.message, resources=[]))
        return
    grouped: dict[tuple[int, str, int], list[Description]] = {}
    for b in ctx.broker.metadata.acls.find(flt):
        grouped.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(
            Description(
                principal=b.principal,
                host=b.host,
                operation=b.operation,
                permission_type=b.permission_type,
            )
        )
    resources = [
        Resource(resource_type=rt, resource_name=name, pattern_type=pt, acls=acls)
        for (rt, name, pt), acls in grouped.items()
    ]
    response = DescribeAclsResponse(error_code=0, error_message=None, resources=resources)
    if ctx.api_version >= 4:
        c = request.cursor
        pager = Pager(
            pagination_limit(ctx, request.response_pagination_limit),
            None if c is None else (c.resource_type, c.resource_name),
            sorted_keys=True,
        )
        ordered = sorted(
            resources, key=lambda r: (r.resource_type, r.resource_name, r.pattern_type)
        )
        page: list[Resource] = []
        for r in ordered:
            key = (r.resource_type, r.resource_name)
            # The cursor cannot tell a LITERAL from a PREFIXED resource of the same type and
            # name, so they never straddle two pages: a resumed page would repeat one.
            if page and (page[-1].resource_type, page[-1].resource_name) == key:
                page.append(r)
            elif pager.take(key):
                page.append(r)
            elif pager.full:
                break
        response.resources = page
        if pager.next is not None:
            rtype, name = pager.next
            assert isinstance(name, str) and isinstance(rtype, int)
            response.next_cursor = DescribeAclsResponse.ResourceCursor(
                resource_name=name, resource_type=rtype
            )
    ctx.respond(response)
