"""SaslAuthenticate (key 36): one token of the SASL exchange chosen by SaslHandshake v1.

A failed exchange is answered with SASL_AUTHENTICATION_FAILED and its reason, and the
connection closed, as Kafka does. Sessions do not expire (session_lifetime_ms 0), so
clients never re-authenticate.
"""

from __future__ import annotations

from kafkagen.generated.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.sasl import AuthenticationFailed
from kafkagen.runtime.errors import IllegalSaslStateError, SaslAuthenticationFailedError

API_KEY = 36


def handle(ctx: RequestContext, request: SaslAuthenticateRequest) -> None:
    if ctx.session.authenticated:
        # A plaintext listener, or after authentication (sessions never need renewing).
        ctx.respond(
            SaslAuthenticateResponse(
                error_code=IllegalSaslStateError.code,
                error_message="SaslAuthenticate outside a SASL exchange",
                auth_bytes=b"",
            )
        )
        return
    try:
        answer = ctx.session.authenticate(bytes(request.auth_bytes))
    except AuthenticationFailed as e:
        ctx.respond(
            SaslAuthenticateResponse(
                error_code=SaslAuthenticationFailedError.code,
                error_message=str(e),
                auth_bytes=b"",
            )
        )
        ctx.close_connection(f"SASL authentication failed: {e}")
        return
    ctx.respond(SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=answer))
