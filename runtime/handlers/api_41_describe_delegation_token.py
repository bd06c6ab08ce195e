"""DescribeDelegationToken (key 41): no tokens; `token_request_error` says why."""

from __future__ import annotations

from kafkagen.generated.describe_delegation_token import (
    DescribeDelegationTokenRequest,
    DescribeDelegationTokenResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.handlers._util import token_request_error

API_KEY = 41


def handle(ctx: RequestContext, request: DescribeDelegationTokenRequest) -> None:
    ctx.respond(DescribeDelegationTokenResponse(error_code=token_request_error(ctx), tokens=[]))
