"""ExpireDelegationToken (key 40): no token to expire; `token_request_error` says why."""

from __future__ import annotations

from kafkagen.generated.expire_delegation_token import (
    ExpireDelegationTokenRequest,
    ExpireDelegationTokenResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.handlers._util import token_request_error

API_KEY = 40


def handle(ctx: RequestContext, request: ExpireDelegationTokenRequest) -> None:
    ctx.respond(
        ExpireDelegationTokenResponse(error_code=token_request_error(ctx), expiry_timestamp_ms=-1)
    )
