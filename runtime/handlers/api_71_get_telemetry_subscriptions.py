"""GetTelemetrySubscriptions (key 71): the metrics a client instance is asked to push.

Advertised when ``kafkagen.client.telemetry.enable`` is true (Kafka: with a telemetry
reporter configured), and answered either way, as Kafka does. A client sending the zero
uuid is given an instance id; the answer carries the subscription
`kafkagen.runtime.broker.telemetry.client_telemetry` computes for it from the client
metrics resources it matches, the codecs a push may use, the push interval,
``telemetry.max.bytes`` and delta temporality. Asking again within the interval answers
THROTTLING_QUOTA_EXCEEDED.
"""

from __future__ import annotations

from kafkagen.generated.get_telemetry_subscriptions import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.telemetry.client_telemetry import ACCEPTED_COMPRESSION
from kafkagen.runtime.errors import KafkaError
from kafkagen.runtime.handlers._util import client_selectors

API_KEY = 71
R = GetTelemetrySubscriptionsResponse


def handle(ctx: RequestContext, request: GetTelemetrySubscriptionsRequest) -> None:
    telemetry = ctx.broker.telemetry
    try:
        granted = telemetry.subscription(
            request.client_instance_id, client_selectors(ctx), ctx.session
        )
    except KafkaError as e:
        ctx.respond(R(error_code=e.code))
        return
    ctx.respond(
        R(
            error_code=0,
            client_instance_id=granted.instance_id,
            subscription_id=granted.subscription_id,
            accepted_compression_types=[int(c) for c in ACCEPTED_COMPRESSION],
            push_interval_ms=granted.interval_ms,
            telemetry_max_bytes=telemetry.max_bytes,
            delta_temporality=True,
            requested_metrics=granted.metrics,
        )
    )
