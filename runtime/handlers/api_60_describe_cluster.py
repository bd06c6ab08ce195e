"""DescribeCluster (key 60): the cluster id, the controller and the brokers.

From v2 (KIP-1073) a client may ask for fenced brokers too: here the brokers that are
stopped or paused, which stay registered, listed with IsFenced set.
"""

from __future__ import annotations

from kafkagen.generated.describe_cluster import DescribeClusterRequest, DescribeClusterResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.errors import (
    KafkaError,
    MismatchedEndpointTypeError,
    UnsupportedEndpointTypeError,
)
from kafkagen.runtime.handlers._util import NOT_REQUESTED
from kafkagen.runtime.message import KeyedList

API_KEY = 60
BROKERS_ENDPOINT = 1
CONTROLLERS_ENDPOINT = 2
FENCED_SINCE = 2


def handle(ctx: RequestContext, request: DescribeClusterRequest) -> None:
    md = ctx.broker.image
    if ctx.api_version >= 1 and request.endpoint_type != BROKERS_ENDPOINT:
        # Controllers are not separate nodes here: a broker only answers for brokers.
        err: KafkaError = (
            MismatchedEndpointTypeError("this is a broker; ask it for broker endpoints")
            if request.endpoint_type == CONTROLLERS_ENDPOINT
            else UnsupportedEndpointTypeError(f"no endpoint type {request.endpoint_type}")
        )
        ctx.respond(
            DescribeClusterResponse(
                error_code=err.code,
                error_message=err.message,
                cluster_id="",
            )
        )
        return
    with_fenced = ctx.api_version >= FENCED_SINCE and request.include_fenced_brokers
    ops = (
        ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)
        if request.include_cluster_authorized_operations
        else NOT_REQUESTED
    )
    ctx.respond(
        DescribeClusterResponse(
            error_code=0,
            cluster_id=md.cluster_id,
            controller_id=md.controller_id,
            brokers=KeyedList(
                DescribeClusterResponse.DescribeClusterBroker(
                    broker_id=b.node_id,
                    host=b.host,
                    port=b.port,
                    rack=b.rack,
                    is_fenced=not b.alive,
                )
                for b in sorted(map(ctx.advertised, md.brokers.values()), key=lambda b: b.node_id)
                if b.alive or with_fenced
            ),
            cluster_authorized_operations=ops,
        )
    )
