"""SASL on the broker side: PLAIN, SCRAM-SHA-256/512 (RFC 5802, RFC 7677) and OAUTHBEARER
with unsecured JWS tokens, plus the users and SCRAM credentials they check against.

A mechanism is a small state machine: `SaslMechanism.evaluate` takes the client's next
token and returns the server's answer; it raises `AuthenticationFailed` when the client
cannot be let in, and sets ``principal`` once it is in. Nothing a client sends (bad UTF-8,
missing attributes, a huge iteration count) raises anything else.

SCRAM credentials are kept as Kafka keeps them: salt, iterations, stored key and server key,
never the password. ``--user NAME:PASSWORD`` on ``kafkagen serve`` makes a PLAIN user and a
SCRAM credential for each SCRAM mechanism.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "MECHANISMS",
    "SCRAM_MECHANISMS",
    "AuthenticationFailed",
    "Credentials",
    "SaslMechanism",
    "ScramCredential",
    "new_mechanism",
]

#: AlterUserScramCredentials' mechanism codes.
SCRAM_MECHANISMS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
#: Kafka's bounds on SCRAM iterations.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


class AuthenticationFailed(Exception):
    """The client is not let in; the text is what the client is told."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def from_salted_password(
        cls, mechanism: str, salt: bytes, iterations: int, salted: bytes
    ) -> ScramCredential:
        h = _HASHES[mechanism]
        client_key = hmac.new(salted, b"Client Key", h).digest()
        server_key = hmac.new(salted, b"Server Key", h).digest()
        return cls(salt, iterations, hashlib.new(h, client_key).digest(), server_key)

    @classmethod
    def from_password(
        cls, mechanism: str, password: str, iterations: int = MIN_ITERATIONS
    ) -> ScramCredential:
        salt = os.urandom(24)
        salted = hashlib.pbkdf2_hmac(_HASHES[mechanism], password.encode(), salt, iterations)
        return cls.from_salted_password(mechanism, salt, iterations, salted)


class Credentials:
    """PLAIN passwords and SCRAM credentials, by user name (one store per cluster)."""

    def __init__(self) -> None:
        self.plain: dict[str, str] = {}
        #: user -> mechanism name -> credential.
        self.scram: dict[str, dict[str, ScramCredential]] = {}

    def add_user(self, name: str, password: str, scram_mechanisms: list[str]) -> None:
        """A PLAIN user and a SCRAM credential for each of ``scram_mechanisms``."""
        if not name:
            raise ValueError("a user needs a name")
        self.plain[name] = password
        for mech in scram_mechanisms:
            self.scram.setdefault(name, {})[mech] = ScramCredential.from_password(mech, password)

    def scram_credential(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.scram.get(user, {}).get(mechanism)


class SaslMechanism:
    """One authentication exchange on one connection."""

    name = ""

    def __init__(self) -> None:
        #: ``User:NAME`` once the exchange succeeded.
        self.principal: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        raise NotImplementedError

    @property
    def complete(self) -> bool:
        return self.principal is not None


def _text(token: bytes) -> str:
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        raise AuthenticationFailed("the SASL token is not UTF-8") from None


class Plain(SaslMechanism):
    """RFC 4616: ``authzid NUL authcid NUL password`` in one message."""

    name = "PLAIN"

    def __init__(self, credentials: Credentials) -> None:
        super().__init__()
        self.credentials = credentials

    def evaluate(self, token: bytes) -> bytes:
        parts = _text(token).split("\0")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = parts
        if not user or not password:
            raise AuthenticationFailed("Authentication failed: username or password is empty")
        if authzid and authzid != user:
            raise AuthenticationFailed(
                "Authentication failed: the authorization id differs from the user name"
            )
        known = self.credentials.plain.get(user)
        if known is None or not hmac.compare_digest(known.encode(), password.encode()):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        self.principal = f"User:{user}"
        return b""


def _scram_attributes(message: str) -> dict[str, str]:
    out = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise AuthenticationFailed(f"Invalid SCRAM message attribute {part[:20]!r}")
        out[key] = value
    return out


class Scram(SaslMechanism):
    """RFC 5802: client-first, server-first, client-final (proof checked), server-final."""

    def __init__(self, mechanism: str, credentials: Credentials) -> None:
        super().__init__()
        self.name = mechanism
        self.hash = _HASHES[mechanism]
        self.credentials = credentials
        self._step = 0
        self._user = ""
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    def evaluate(self, token: bytes) -> bytes:
        text = _text(token)
        if self._step == 0:
            return self._first(text)
        if self._step == 1:
            return self._final(text)
        raise AuthenticationFailed("SCRAM exchange already finished")

    def _first(self, text: str) -> bytes:
        # gs2 header ("n,," or "y,," or with "a=authzid"), then the bare message.
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y"):
            raise AuthenticationFailed("Invalid SCRAM client-first message")
        authzid = parts[1]
        bare = parts[2]
        attrs = _scram_attributes(bare)
        user = attrs.get("n", "").replace("=2C", ",").replace("=3D", "=")
        cnonce = attrs.get("r", "")
        if not user or not cnonce:
            raise AuthenticationFailed("Invalid SCRAM client-first message: no user or nonce")
        if authzid and authzid != f"a={user}":
            raise AuthenticationFailed("Authentication failed: authorization id differs from user")
        credential = self.credentials.scram_credential(user, self.name)
        if credential is None:
            raise AuthenticationFailed(
                f"Authentication failed during authentication due to invalid credentials "
                f"with SASL mechanism {self.name}"
            )
        self._user, self._credential, self._client_first_bare = user, credential, bare
        self._nonce = cnonce + base64.b64encode(os.urandom(18)).decode()
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        self._step = 1
        return self._server_first.encode()

    def _final(self, text: str) -> bytes:
        assert self._credential is not None
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        if not sep:
            raise AuthenticationFailed("Invalid SCRAM client-final message: no proof")
        attrs = _scram_attributes(without_proof)
        if attrs.get("r") != self._nonce:
            raise AuthenticationFailed("Invalid SCRAM client-final message: nonce mismatch")
        try:
            proof = base64.b64decode(proof_b64, validate=True)
        except (binascii.Error, ValueError):
            raise AuthenticationFailed("Invalid SCRAM client-final message: bad proof") from None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        cred = self._credential
        signature = hmac.new(cred.stored_key, auth_message, self.hash).digest()
        if len(proof) != len(signature):
            raise AuthenticationFailed("Invalid SCRAM client-final message: bad proof length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self.hash, client_key).digest(), cred.stored_key):
            raise AuthenticationFailed(
                f"Authentication failed during authentication due to invalid credentials "
                f"with SASL mechanism {self.name}"
            )
        self._step = 2
        self.principal = f"User:{self._user}"
        server_signature = hmac.new(cred.server_key, auth_message, self.hash).digest()
        return b"v=" + base64.b64encode(server_signature)


def _b64url_json(part: str) -> dict[str, object]:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        value = json.loads(raw)
    except (binascii.Error, ValueError):
        raise AuthenticationFailed("the token is not a JWS of base64url JSON parts") from None
    if not isinstance(value, dict):
        raise AuthenticationFailed("a JWS part is not a JSON object")
    return value


class OAuthBearer(SaslMechanism):
    """RFC 7628 with unsecured JWS tokens (``alg: none``) as Kafka's default validator
    accepts them: the ``sub`` claim is the principal, ``exp`` must lie ahead. A rejected
    token is answered with an error JSON; the client acknowledges it with ``0x01`` and the
    exchange fails then, as the RFC has it."""

    name = "OAUTHBEARER"

    def __init__(self, now_ms: Callable[[], float]) -> None:
        super().__init__()
        self.now_ms = now_ms
        self._failure: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if self._failure is not None:
            raise AuthenticationFailed(self._failure)
        text = _text(token)
        gs2, sep, rest = text.partition("\x01")
        if not sep or not gs2.startswith(("n,", "y,")):
            raise AuthenticationFailed("Invalid OAUTHBEARER client first message")
        fields = {}
        for kv in rest.split("\x01"):
            key, eq, value = kv.partition("=")
            if eq:
                fields[key] = value
        auth = fields.get("auth", "")
        if not auth.startswith("Bearer "):
            raise AuthenticationFailed("Invalid OAUTHBEARER client first message: no bearer token")
        try:
            self.principal = "User:" + self._validate(auth[len("Bearer ") :].strip())
        except AuthenticationFailed as e:
            self._failure = f"Authentication failed: {e}"
            return json.dumps({"status": "invalid_token"}).encode()
        return b""

    def _validate(self, jws: str) -> str:
        parts = jws.split(".")
        if len(parts) != 3 or parts[2]:
            raise AuthenticationFailed("an unsecured JWS has three parts and no signature")
        header, claims = _b64url_json(parts[0]), _b64url_json(parts[1])
        if header.get("alg") != "none":
            raise AuthenticationFailed("an unsecured JWS must have alg none")
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub.strip():
            raise AuthenticationFailed("the token has no sub claim")
        exp = claims.get("exp")
        if not isinstance(exp, int | float) or isinstance(exp, bool):
            raise AuthenticationFailed("the token has no numeric exp claim")
        if exp * 1000 <= self.now_ms():
            raise AuthenticationFailed("the token has expired")
        return sub


def new_mechanism(
    name: str, credentials: Credentials, now_ms: Callable[[], float] | None = None
) -> SaslMechanism:
    """A fresh exchange of mechanism ``name`` (one of `MECHANISMS`)."""
    if name == "PLAIN":
        return Plain(credentials)
    if name in _HASHES:
        return Scram(name, credentials)
    if name == "OAUTHBEARER":
        return OAuthBearer(now_ms or (lambda: time.time() * 1000))
    raise ValueError(f"unsupported SASL mechanism {name!r}")
