"""DescribeUserScramCredentials (key 50): the SCRAM mechanisms and iterations of users.

Needs DESCRIBE on the cluster. No users (or null) describes every user that has a
credential; a user named twice is DUPLICATE_RESOURCE, one without credentials
RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

from collections import Counter

from kafkagen.generated.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.broker.security.sasl import SCRAM_MECHANISMS
from kafkagen.runtime.errors import (
    ClusterAuthorizationFailedError,
    DuplicateResourceError,
    ResourceNotFoundError,
)

API_KEY = 50
Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
Info = DescribeUserScramCredentialsResponse.CredentialInfo


def handle(ctx: RequestContext, request: DescribeUserScramCredentialsRequest) -> None:
    if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        ctx.respond(
            DescribeUserScramCredentialsResponse(
                error_code=ClusterAuthorizationFailedError.code,
                error_message="DESCRIBE on the cluster is not authorized",
                results=[],
            )
        )
        return
    scram = ctx.broker.credentials.scram
    names = [u.name for u in request.users or ()]
    if not names:
        names = sorted(user for user, creds in scram.items() if creds)
    counts = Counter(names)
    results = []
    for name in dict.fromkeys(names):
        if counts[name] > 1:
            results.append(
                Result(
                    user=name,
                    error_code=DuplicateResourceError.code,
                    error_message="a user may be described once per request",
                    credential_infos=[],
                )
            )
        elif not scram.get(name):
            results.append(
                Result(
                    user=name,
                    error_code=ResourceNotFoundError.code,
                    error_message=f"user {name!r} has no SCRAM credential",
                    credential_infos=[],
                )
            )
        else:
            infos = [
                Info(mechanism=SCRAM_MECHANISMS[mech], iterations=cred.iterations)
                for mech, cred in sorted(scram[name].items())
            ]
            # Success leaves the error messages at their spec default, "", as Kafka does.
            results.append(Result(user=name, error_code=0, credential_infos=infos))
    ctx.respond(DescribeUserScramCredentialsResponse(error_code=0, results=results))
