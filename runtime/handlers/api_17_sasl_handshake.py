"""SaslHandshake (key 17): picks the SASL mechanism of a connection on a SASL listener.

An unknown or disabled mechanism is answered with UNSUPPORTED_SASL_MECHANISM and the
enabled ones, and the connection closed. After v0 the exchange goes on in bare tokens,
after v1 in SaslAuthenticate requests (`kafkagen.runtime.broker.security.listeners.Session`).
"""

from __future__ import annotations

from kafkagen.generated.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.listeners import SaslState
from kafkagen.runtime.errors import IllegalSaslStateError, UnsupportedSaslMechanismError

API_KEY = 17


def handle(ctx: RequestContext, request: SaslHandshakeRequest) -> None:
    session = ctx.session
    enabled = session.mechanisms
    if session.state is not SaslState.HANDSHAKE:
        # A plaintext listener, or a connection already authenticated: answered as
        # Kafka's request handler answers it (no mechanisms listed), and the connection stays.
        ctx.respond(SaslHandshakeResponse(error_code=IllegalSaslStateError.code, mechanisms=[]))
        return
    if not session.handshake(request.mechanism, ctx.api_version):
        ctx.respond(
            SaslHandshakeResponse(error_code=UnsupportedSaslMechanismError.code, mechanisms=enabled)
        )
        ctx.close_connection(f"SASL mechanism {request.mechanism!r} is not enabled")
        return
    ctx.respond(SaslHandshakeResponse(error_code=0, mechanisms=enabled))
