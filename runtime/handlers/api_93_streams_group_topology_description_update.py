"""StreamsGroupTopologyDescriptionUpdate (key 93, KIP-1331): a Streams client sends its
topology's description for StreamsGroupDescribe to show.

Kafka 4.4.0 keeps such descriptions only through a plugin
(`group.streams.topology.description.plugin.class`), and has none by default: it answers
every update UNSUPPORTED_VERSION with the message below, and its heartbeats never ask for
one (TopologyDescriptionRequired stays false). kafkagen has no plugin either and answers
as such a broker does: UNSUPPORTED_VERSION without a message while the streams protocol
is off, GROUP_AUTHORIZATION_FAILED without READ on the group, else the plugin's absence.
"""

from __future__ import annotations

from kafkagen.generated.streams_group_topology_description_update import (
    StreamsGroupTopologyDescriptionUpdateRequest,
    StreamsGroupTopologyDescriptionUpdateResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import ErrorCode

API_KEY = 93
R = StreamsGroupTopologyDescriptionUpdateResponse
#: What Kafka 4.4.0 answers without a description plugin.
NO_PLUGIN = "The broker has no streams group topology description plugin configured."


def handle(ctx: RequestContext, request: StreamsGroupTopologyDescriptionUpdateRequest) -> None:
    if not ctx.broker.group_coordinator.streams.enabled():
        ctx.respond(R(error_code=ErrorCode.UNSUPPORTED_VERSION))
    elif not ctx.allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        ctx.respond(R(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED))
    else:
        ctx.respond(R(error_code=ErrorCode.UNSUPPORTED_VERSION, error_message=NO_PLUGIN))
