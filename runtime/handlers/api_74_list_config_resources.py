"""ListConfigResources (key 74; ListClientMetricsResources until 4.1): v0 only.

v0 lists the client metrics config resources. kafkagen's configs have no such resource
type (IncrementalAlterConfigs refuses it), so there is never one to list: the answer is
empty, as a Kafka broker's with none configured. Needs DESCRIBE_CONFIGS on the cluster.
v1 (KIP-1142: every config resource type) is not served.
"""

from __future__ import annotations

from kafkagen.generated.list_config_resources import (
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
)
from kafkagen.runtime.broker.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import ClusterAuthorizationFailedError

API_KEY = 74


def handle(ctx: RequestContext, request: ListConfigResourcesRequest) -> None:
    if not ctx.allowed(AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
        code = ClusterAuthorizationFailedError.code
    else:
        code = 0
    ctx.respond(ListConfigResourcesResponse(error_code=code, config_resources=[]))
