"""CreateDelegationToken (key 38): refused as Kafka refuses it without token support.

The owner defaults to the sender; asking for another owner needs CREATE_TOKENS on that
user (else DELEGATION_TOKEN_AUTHORIZATION_FAILED), and renewers must be ``User``
principals (else INVALID_PRINCIPAL_TYPE); what passes gets `token_request_error`.
"""

from __future__ import annotations

from kafkagen.generated.create_delegation_token import (
    CreateDelegationTokenRequest,
    CreateDelegationTokenResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import (
    DelegationTokenAuthorizationFailedError,
    DelegationTokenRequestNotAllowedError,
    InvalidPrincipalTypeError,
)
from kafkagen.runtime.handlers._util import token_request_error

API_KEY = 38
#: The first version that names who asked for the token (KIP-373).
REQUESTER_SINCE = 3


def handle(ctx: RequestContext, request: CreateDelegationTokenRequest) -> None:
    requester = ctx.principal
    owner = (
        f"{request.owner_principal_type}:{request.owner_principal_name}"
        if request.owner_principal_name
        else requester
    )
    code = token_request_error(ctx)
    if code == DelegationTokenRequestNotAllowedError.code:
        pass
    elif owner != requester and not ctx.allowed(
        AclOperation.CREATE_TOKENS, ResourceType.USER, owner
    ):
        code = DelegationTokenAuthorizationFailedError.code
    elif any(r.principal_type != "User" for r in request.renewers):
        code = InvalidPrincipalTypeError.code
    owner_type, _, owner_name = owner.partition(":")
    requester_type, _, requester_name = requester.partition(":")
    response = CreateDelegationTokenResponse(
        error_code=code,
        principal_type=owner_type,
        principal_name=owner_name,
        issue_timestamp_ms=-1,
        expiry_timestamp_ms=-1,
        max_timestamp_ms=-1,
        token_id="",
        hmac=b"",
    )
    if ctx.api_version >= REQUESTER_SINCE:
        response.token_requester_principal_type = requester_type
        response.token_requester_principal_name = requester_name
    ctx.respond(response)
