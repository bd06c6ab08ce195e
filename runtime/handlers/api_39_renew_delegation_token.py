"""RenewDelegationToken (key 39): no token to renew; `token_request_error` says why."""

from __future__ import annotations

from kafkagen.generated.renew_delegation_token import (
    RenewDelegationTokenRequest,
    RenewDelegationTokenResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.handlers._util import token_request_error

API_KEY = 39


def handle(ctx: RequestContext, request: RenewDelegationTokenRequest) -> None:
    ctx.respond(
        RenewDelegationTokenResponse(error_code=token_request_error(ctx), expiry_timestamp_ms=-1)
    )
