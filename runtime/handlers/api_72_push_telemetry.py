"""PushTelemetry (key 72): a client instance's metrics, taken by kafkagen's receiver.

Advertised when ``kafkagen.client.telemetry.enable`` is true, and answered either way:
without it a good push is dropped, as Kafka without a telemetry reporter does. The zero
uuid answers INVALID_REQUEST, a push after a terminating one too; a push within the
interval THROTTLING_QUOTA_EXCEEDED (a terminating push is always let through that check), a
stale subscription id UNKNOWN_SUBSCRIPTION_ID, a codec id Kafka does not know
UNSUPPORTED_COMPRESSION_TYPE, a payload over ``telemetry.max.bytes`` TELEMETRY_TOO_LARGE,
and one the receiver cannot read INVALID_RECORD, in that order, as in Kafka.
"""

from __future__ import annotations

from kafkagen.generated.push_telemetry import PushTelemetryRequest, PushTelemetryResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.errors import KafkaError
from kafkagen.runtime.handlers._util import client_selectors

API_KEY = 72


def handle(ctx: RequestContext, request: PushTelemetryRequest) -> None:
    try:
        ctx.broker.telemetry.push(
            request.client_instance_id,
            client_selectors(ctx),
            request.subscription_id,
            request.terminating,
            request.compression_type,
            bytes(request.metrics),
            ctx.session,
        )
    except KafkaError as e:
        ctx.respond(PushTelemetryResponse(error_code=e.code))
        return
    ctx.respond(PushTelemetryResponse(error_code=0))
