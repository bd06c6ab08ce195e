"""Listeners as Kafka configures them, TLS contexts from PEM files, and each connection's
authentication state (`Session`).

``listeners`` (``NAME://host:port,...``) names each listener; its security protocol is the
name itself or what ``listener.security.protocol.map`` maps it to (PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL). Broker ``i`` of a cluster listens on each listener's port
``+ i``. TLS takes PEM files: ``ssl.keystore.location`` (certificate chain and private key,
``ssl.key.password`` if the key is encrypted) and ``ssl.truststore.location`` (the CAs
client certificates are checked against); ``ssl.client.auth`` is ``none``, ``requested``
or ``required`` on SSL listeners. The principal is ``User:ANONYMOUS`` on PLAINTEXT,
``User:<subject DN>`` for a client certificate on SSL, and the SASL identity on SASL
listeners.

A SASL connection goes as Kafka's server authenticator goes: ApiVersions and
SaslHandshake first; after SaslHandshake v1, SaslAuthenticate requests; after v0, bare
size-prefixed tokens. Any other request before authentication closes the connection. A
failed authentication is answered and the connection closed.
"""

from __future__ import annotations

import enum
import logging
import ssl
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from ..config.definitions import ConfigError
from ..config.store import ConfigStore
from .sasl import MECHANISMS, AuthenticationFailed, Credentials, SaslMechanism, new_mechanism

_log = logging.getLogger("kafkagen.broker")

__all__ = [
    "ANONYMOUS",
    "Listener",
    "SaslState",
    "SecurityProtocol",
    "Session",
    "parse_listeners",
    "ssl_context",
]

ANONYMOUS = "User:ANONYMOUS"
API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36


class SecurityProtocol(enum.Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


@dataclass(frozen=True, slots=True)
class Listener:
    name: str
    protocol: SecurityProtocol
    host: str
    #: The port of broker 0 (0: an ephemeral port for every broker).
    port: int


def parse_listeners(configs: ConfigStore) -> list[Listener] | None:
    """The ``listeners`` config, or None when it is not set; ConfigError names what is wrong."""
    raw = configs.broker_raw("listeners")[0]
    if not raw or not raw.strip():
        return None
    mapping: dict[str, SecurityProtocol] = {}
    for entry in (configs.broker_raw("listener.security.protocol.map")[0] or "").split(","):
        if not entry.strip():
            continue
        name, sep, proto = entry.strip().partition(":")
        try:
            mapping[name.upper()] = SecurityProtocol(proto.strip().upper())
        except ValueError:
            raise ConfigError(
                f"listener.security.protocol.map: {entry.strip()!r} does not map a name "
                f"to one of {', '.join(p.value for p in SecurityProtocol)}"
            ) from None
    out: list[Listener] = []
    for entry in raw.split(","):
        entry = entry.strip()
        name, sep, address = entry.partition("://")
        host, colon, port_text = address.rpartition(":")
        if not sep or not colon or not port_text.isdigit():
            raise ConfigError(f"listeners: {entry!r} is not NAME://host:port")
        name = name.upper()
        if name in mapping:
            protocol = mapping[name]
        else:
            try:
                protocol = SecurityProtocol(name)
            except ValueError:
                raise ConfigError(
                    f"listeners: {name} is not a security protocol and "
                    f"listener.security.protocol.map does not name it"
                ) from None
        if any(other.name == name for other in out):
            raise ConfigError(f"listeners: {name} is named twice")
        out.append(Listener(name, protocol, host.strip("[]") or "127.0.0.1", int(port_text)))
    return out


def enabled_mechanisms(configs: ConfigStore) -> list[str]:
    raw = configs.broker_raw("sasl.enabled.mechanisms")[0] or ""
    names = [m.strip().upper() for m in raw.split(",") if m.strip()]
    for m in names:
        if m not in MECHANISMS:
            raise ConfigError(
                f"sasl.enabled.mechanisms: {m} is not supported (only {', '.join(MECHANISMS)})"
            )
    return names


def ssl_context(configs: ConfigStore, listener: Listener) -> ssl.SSLContext:
    """The server-side TLS context of ``listener`` from the ``ssl.*`` PEM configs."""
    keystore = configs.broker_raw("ssl.keystore.location")[0]
    if not keystore:
        raise ConfigError(f"listener {listener.name} uses TLS but ssl.keystore.location is not set")
    for name in ("ssl.keystore.type", "ssl.truststore.type"):
        kind = (configs.broker_raw(name)[0] or "PEM").upper()
        if kind != "PEM":
            raise ConfigError(f"{name}: only PEM files are read, not {kind}")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    password = configs.broker_raw("ssl.key.password")[0] or None
    try:
        ctx.load_cert_chain(keystore, password=password)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"ssl.keystore.location {keystore}: {e}") from None
    truststore = configs.broker_raw("ssl.truststore.location")[0]
    if truststore:
        try:
            ctx.load_verify_locations(cafile=truststore)
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"ssl.truststore.location {truststore}: {e}") from None
    client_auth = (configs.broker_raw("ssl.client.auth")[0] or "none").lower()
    if listener.protocol is SecurityProtocol.SSL and client_auth != "none":
        if not truststore:
            raise ConfigError(f"ssl.client.auth={client_auth} needs ssl.truststore.location")
        ctx.verify_mode = ssl.CERT_REQUIRED if client_auth == "required" else ssl.CERT_OPTIONAL
    return ctx


_DN_NAMES = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def certificate_principal(peercert: Mapping[str, Any] | None) -> str:
    """``User:`` and the subject as an RFC 2253 name (last RDN first), as Kafka's default
    principal builder names a client certificate; ANONYMOUS without one."""
    subject = (peercert or {}).get("subject")
    if not subject:
        return ANONYMOUS
    rdns = []
    for rdn in reversed(subject):
        rdns.append("+".join(f"{_DN_NAMES.get(k, k)}={v}" for k, v in rdn))
    return "User:" + ",".join(rdns)


class SaslState(enum.Enum):
    HANDSHAKE = "handshake"  # ApiVersions or SaslHandshake expected
    AUTHENTICATE = "authenticate"  # SaslAuthenticate expected
    RAW_TOKENS = "raw tokens"  # after SaslHandshake v0: bare tokens
    DONE = "done"


class Session:
    """Who is on one connection, and how far its SASL exchange has got."""

    def __init__(
        self,
        listener: Listener | None,
        credentials: Credentials | None = None,
        mechanisms: list[str] | None = None,
        principal: str = ANONYMOUS,
        now_ms: Callable[[], float] | None = None,
    ) -> None:
        self.listener = listener
        self.principal = principal
        self.credentials = credentials or Credentials()
        self.mechanisms = mechanisms or []
        self.now_ms = now_ms
        sasl = listener is not None and listener.protocol.sasl
        self.state = SaslState.HANDSHAKE if sasl else SaslState.DONE
        self._mechanism: SaslMechanism | None = None
        #: The client software's name and version, as its ApiVersions v3+ named them.
        self.client_software: tuple[str, str] | None = None
        self._closers: dict[Hashable, Callable[[], None]] = {}

    def on_close(self, name: Hashable, fn: Callable[[], None]) -> None:
        """Run ``fn`` when the connection closes, as Kafka's disconnect listeners run: what
        a client keeps on a broker through its connection goes with it. One ``fn`` for each
        ``name``: a later one replaces it."""
        self._closers[name] = fn

    def closed(self) -> None:
        """The connection closed: run what `on_close` was given, each once."""
        closers, self._closers = self._closers, {}
        for fn in closers.values():
            try:
                fn()
            except Exception:
                _log.exception("a listener of a closing connection failed")

    @property
    def authenticated(self) -> bool:
        return self.state is SaslState.DONE

    def refusal(self, api_key: int) -> str | None:
        """Why request ``api_key`` may not come now (the connection is closed), or None."""
        state = self.state
        if state is SaslState.DONE:
            return None
        if state is SaslState.HANDSHAKE and api_key in (API_VERSIONS, SASL_HANDSHAKE):
            return None
        if state is SaslState.AUTHENTICATE and api_key == SASL_AUTHENTICATE:
            return None
        return f"unexpected request (API key {api_key}) while SASL is in state {state.value}"

    def handshake(self, mechanism: str, version: int) -> bool:
        """SaslHandshake: False if ``mechanism`` is not enabled (the caller answers
        UNSUPPORTED_SASL_MECHANISM and closes)."""
        if self.state is not SaslState.HANDSHAKE or mechanism not in self.mechanisms:
            return False
        self._mechanism = new_mechanism(mechanism, self.credentials, self.now_ms)
        self.state = SaslState.AUTHENTICATE if version >= 1 else SaslState.RAW_TOKENS
        return True

    def authenticate(self, token: bytes) -> bytes:
        """One token of the exchange; the answer to send. Raises AuthenticationFailed."""
        mech = self._mechanism
        if mech is None or self.state not in (SaslState.AUTHENTICATE, SaslState.RAW_TOKENS):
            raise AuthenticationFailed("no SASL exchange in progress")
        answer = mech.evaluate(token)
        if mech.principal is not None:
            self.principal = mech.principal
            self.state = SaslState.DONE
        return answer
