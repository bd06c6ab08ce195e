"""Client quotas (KIP-546): rates stored per entity, altered and described as Kafka does.

An entity is a user, a client id, both, or an IP address; a name of None is the default
entity of its type. Each holds quota values by key. The store only keeps them: kafkagen
throttles nobody, as a broker whose quotas are all unset would.

The checks and their messages follow Kafka's controller: entity types, their
combinations, the keys each allows and integral values for the byte rates; a filter names
each entity type once, never IP with a user or client id.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterable, Mapping

__all__ = [
    "CLIENT_ID",
    "IP",
    "MATCH_ANY",
    "MATCH_DEFAULT",
    "MATCH_EXACT",
    "USER",
    "ClientQuotas",
    "Entity",
    "QuotaRequestError",
    "QuotaTypeError",
]

USER, CLIENT_ID, IP = "user", "client-id", "ip"
#: A filter component's match types: this name, the default entity, any entity of the type.
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2

_RATES = {
    "producer_byte_rate": True,  # True: the value must be a whole number
    "consumer_byte_rate": True,
    "request_percentage": False,
    "controller_mutation_rate": False,
}
_IP_RATES = {"connection_creation_rate": True}

#: An entity: (type, name or None for the default) pairs, sorted by type.
Entity = tuple[tuple[str, str | None], ...]


class QuotaRequestError(ValueError):
    """A request Kafka answers with INVALID_REQUEST; the message says why."""


class QuotaTypeError(ValueError):
    """An entity type Kafka's filter does not know: UNSUPPORTED_VERSION."""


class ClientQuotas:
    """The cluster's client quotas: entity -> {key: value}."""

    def __init__(self) -> None:
        self._quotas: dict[Entity, dict[str, float]] = {}

    def entities(self) -> dict[Entity, dict[str, float]]:
        return {e: dict(v) for e, v in self._quotas.items()}

    @staticmethod
    def entity(pairs: Iterable[tuple[str, str | None]]) -> Entity:
        """A checked entity from (type, name) pairs, a type named twice keeping its last
        name (Kafka reads the pairs into a map); QuotaRequestError if Kafka refuses it."""
        seen = dict(pairs)
        for entity_type, name in seen.items():
            if entity_type not in (USER, CLIENT_ID, IP):
                raise QuotaRequestError(f"Unhandled client quota entity type: {entity_type}")
            if name is not None and not name:
                raise QuotaRequestError(f"Empty {entity_type} not supported")
        if not seen:
            raise QuotaRequestError("Invalid empty client quota entity")
        if IP in seen and len(seen) > 1:
            raise QuotaRequestError("Invalid empty client quota entity")
        ip = seen.get(IP)
        if ip is not None and not _valid_ip(ip):
            raise QuotaRequestError(f"{ip} is not a valid IP or resolvable host.")
        return tuple(sorted(seen.items()))

    def check(self, entity: Entity, ops: Mapping[str, float | None]) -> None:
        """QuotaRequestError if ``ops`` are not keys and values ``entity`` may have."""
        allowed = _IP_RATES if entity[0][0] == IP else _RATES
        for key, value in ops.items():
            if value is None:
                continue
            if key not in allowed:
                raise QuotaRequestError(f"Invalid configuration key {key}")
            if allowed[key] and (not math.isfinite(value) or abs(round(value) - value) > 1e-6):
                raise QuotaRequestError(f"Configuration {key} must be a Long value")

    def alter(self, entity: Entity, ops: Mapping[str, float | None]) -> None:
        """Apply checked ``ops``: set each value, remove each None; an entity left with no
        values is gone."""
        values = self._quotas.setdefault(entity, {})
        for key, value in ops.items():
            if value is None:
                values.pop(key, None)
            else:
                values[key] = value
        if not values:
            del self._quotas[entity]

    def describe(
        self, components: Iterable[tuple[str, int, str | None]], strict: bool
    ) -> dict[Entity, dict[str, float]]:
        """The entities a filter of (entity type, match type, match) components selects.

        Each component narrows: an exact name, the default entity, or any entity having the
        type. ``strict`` keeps only entities with no other types than the filter's; an
        empty filter selects everything unless strict.
        """
        wanted: dict[str, tuple[int, str | None]] = {}
        for entity_type, match_type, match in components:
            if not entity_type:
                raise QuotaRequestError("Invalid empty entity type.")
            if entity_type in wanted:
                raise QuotaRequestError(
                    f"Entity type {entity_type} cannot appear more than once in the filter."
                )
            if entity_type not in (USER, CLIENT_ID, IP):
                raise QuotaTypeError(f"Unsupported entity type {entity_type}")
            if match_type == MATCH_EXACT and match is None:
                raise QuotaRequestError(
                    "Request specified MATCH_TYPE_EXACT, but set match string to null."
                )
            if match_type == MATCH_DEFAULT and match is not None:
                raise QuotaRequestError(
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                )
            if match_type == MATCH_ANY and match is not None:
                raise QuotaRequestError(
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                )
            if match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY):
                raise QuotaRequestError(f"Unknown match type {match_type}")
            wanted[entity_type] = (match_type, match)
        if IP in wanted and (USER in wanted or CLIENT_ID in wanted):
            raise QuotaRequestError(
                "Invalid entity filter component combination. IP filter component should "
                "not be used with user or clientId filter component."
            )
        out = {}
        for entity, values in self._quotas.items():
            names = dict(entity)
            if strict and set(names) != set(wanted):
                continue
            if not wanted and strict:
                continue
            if all(
                t in names and (m == MATCH_ANY or names[t] == name)
                for t, (m, name) in wanted.items()
            ):
                out[entity] = dict(values)
        return out


def _valid_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
