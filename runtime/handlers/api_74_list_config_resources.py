"""ListConfigResources (key 74; ListClientMetricsResources until 4.1): what configs are about.

v0 lists the client metrics config resources only. v1 (KIP-1142) takes a list of config
resource types (empty: every type the version knows, topic, broker, broker logger, client
metrics and group) and answers the resources of those types, in Kafka's order: groups,
client metrics, broker loggers, brokers (one of each per live broker, named by its id),
then topics (internal ones included). A type the version does not know fails the whole
request with UNSUPPORTED_VERSION, as Kafka does.

kafkagen has no group configs (IncrementalAlterConfigs refuses them), so that type never
lists anything: a Kafka broker with none configured answers the same. Needs
DESCRIBE_CONFIGS on the cluster.
"""

from __future__ import annotations

import enum

from kafkagen.generated.list_config_resources import (
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import ClusterAuthorizationFailedError, UnsupportedVersionError

API_KEY = 74
Resource = ListConfigResourcesResponse.ConfigResource


class ListedType(enum.IntEnum):
    """Config resource types as this API numbers them (Kafka's ConfigResource.Type)."""

    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


#: The types each version lists (a request naming another is refused).
KNOWN_TYPES = {0: frozenset({ListedType.CLIENT_METRICS}), 1: frozenset(ListedType)}


def handle(ctx: RequestContext, request: ListConfigResourcesRequest) -> None:
    if not ctx.allowed(AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
        _fail(ctx, ClusterAuthorizationFailedError.code)
        return
    known = KNOWN_TYPES[min(ctx.api_version, max(KNOWN_TYPES))]
    asked = set(request.resource_types) if ctx.api_version >= 1 else set()
    if asked - known:
        _fail(ctx, UnsupportedVersionError.code)
        return
    wanted = asked or known
    md = ctx.broker.metadata
    brokers = [str(node) for node in md.alive_brokers()]
    resources: list[Resource] = []
    # Groups are listed when they have configs set, as Kafka lists them.
    for rtype, names in (
        (ListedType.GROUP, sorted(md.group_configs)),
        (ListedType.CLIENT_METRICS, sorted(md.client_metrics)),
        (ListedType.BROKER_LOGGER, brokers),
        (ListedType.BROKER, brokers),
        (ListedType.TOPIC, sorted(md.topics)),
    ):
        if rtype in wanted:
            resources.extend(Resource(resource_name=n, resource_type=rtype) for n in names)
    ctx.respond(ListConfigResourcesResponse(error_code=0, config_resources=resources))


def _fail(ctx: RequestContext, code: int) -> None:
    ctx.respond(ListConfigResourcesResponse(error_code=code, config_resources=[]))
