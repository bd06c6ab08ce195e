"""AlterUserScramCredentials (key 51): adds, replaces and deletes users' SCRAM credentials.

Needs ALTER on the cluster. The client sends the salted password (never the password);
the broker keeps the stored and server keys derived from it. Each user gets one result;
a user whose changes are not all valid is left as it was: unknown mechanism
UNSUPPORTED_SASL_MECHANISM, an empty name or iterations outside 4096..16384
UNACCEPTABLE_CREDENTIAL, one mechanism changed twice DUPLICATE_RESOURCE, a deletion of a
credential that does not exist RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

from collections import Counter

from kafkagen.generated.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.broker.security.sasl import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    SCRAM_MECHANISMS,
    ScramCredential,
)
from kafkagen.runtime.errors import (
    ClusterAuthorizationFailedError,
    DuplicateResourceError,
    KafkaError,
    ResourceNotFoundError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
)

API_KEY = 51
Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
Upsertion = AlterUserScramCredentialsRequest.ScramCredentialUpsertion
_MECHANISM_NAMES = {code: name for name, code in SCRAM_MECHANISMS.items()}


def handle(ctx: RequestContext, request: AlterUserScramCredentialsRequest) -> None:
    changes: dict[str, list[tuple[int, Upsertion | None]]] = {}
    for d in request.deletions:
        changes.setdefault(d.name, []).append((d.mechanism, None))
    for u in request.upsertions:
        changes.setdefault(u.name, []).append((u.mechanism, u))
    if not ctx.allowed(AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        results = [
            Result(
                user=name,
                error_code=ClusterAuthorizationFailedError.code,
                error_message="ALTER on the cluster is not authorized",
            )
            for name in changes
        ]
        ctx.respond(AlterUserScramCredentialsResponse(results=results))
        return
    store = ctx.broker.credentials.scram
    results = []
    for name, ops in changes.items():
        try:
            updated = _apply(name, ops, dict(store.get(name, {})))
        except KafkaError as e:
            results.append(Result(user=name, error_code=e.code, error_message=e.message))
            continue
        if updated:
            store[name] = updated
        else:
            store.pop(name, None)
        results.append(Result(user=name, error_code=0, error_message=None))
    ctx.respond(AlterUserScramCredentialsResponse(results=results))


def _apply(
    name: str, ops: list[tuple[int, Upsertion | None]], creds: dict[str, ScramCredential]
) -> dict[str, ScramCredential]:
    """``creds`` after ``ops``; raises the KafkaError of the first invalid change."""
    if not name:
        raise UnacceptableCredentialError("the user name is empty")
    counts = Counter(mech for mech, _ in ops)
    for mech_code, upsert in ops:
        mech = _MECHANISM_NAMES.get(mech_code)
        if mech is None:
            raise UnsupportedSaslMechanismError(f"unknown SCRAM mechanism {mech_code}")
        if counts[mech_code] > 1:
            raise DuplicateResourceError(f"{mech} of user {name!r} is changed twice")
        if upsert is None:
            if mech not in creds:
                raise ResourceNotFoundError(f"user {name!r} has no {mech} credential to delete")
            del creds[mech]
            continue
        iterations = upsert.iterations
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise UnacceptableCredentialError(
                f"iterations {iterations} outside {MIN_ITERATIONS}..{MAX_ITERATIONS}"
            )
        salt, salted = bytes(upsert.salt), bytes(upsert.salted_password)
        if not salt or not salted:
            raise UnacceptableCredentialError("the salt and salted password must not be empty")
        creds[mech] = ScramCredential.from_salted_password(mech, salt, iterations, salted)
    return creds
