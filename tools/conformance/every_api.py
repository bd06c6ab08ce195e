"""Three scenarios for every API kafkagen serves: a version above every known one, a
request with every field at its default at this run's version, and the same at the
oldest version kafkagen's codecs know (which Kafka 4.x may have removed)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kafkagen.generated import APIS, message_type
from kafkagen.runtime.client.versions import api_name
from kafkagen.runtime.handlers import SERVED

from .core import Scenario, Session, add

#: The APIs `kafkagen serve` answers: its handler table, so a new handler gets scenarios.
SERVED_APIS = tuple(sorted(SERVED))
#: A version no Kafka release has for any API.
TOO_HIGH = 999


def _default_request(api_key: int) -> Any:
    request: Any = message_type(api_key, "request")()
    if api_key == 0:
        request.acks = 1  # acks=0 has no answer to compare
    return request


_NAME_KEYS = ("name", "topic", "groupId", "transactionalId", "resourceName")


def _internal_only(data: Any) -> Any:
    """Drop from listings everything but internal topics: these scenarios create nothing,
    and what other scenarios (or earlier runs) left on either broker is not compared."""
    if isinstance(data, dict):
        return {k: _internal_only(v) for k, v in data.items()}
    if isinstance(data, list):
        return [
            _internal_only(item)
            for item in data
            if not (
                isinstance(item, dict)
                and any(
                    isinstance(item.get(k), str) and not item[k].startswith("__")
                    for k in _NAME_KEYS
                )
            )
        ]
    return data


def _too_high(api_key: int) -> Callable[[Session], Awaitable[None]]:
    async def run(s: Session) -> None:
        await s.raw(api_key, TOO_HIGH, b"")

    return run


def _defaults(api_key: int, oldest: bool) -> Callable[[Session], Awaitable[None]]:
    async def run(s: Session) -> None:
        cls = message_type(api_key, "request")
        version = cls.LOWEST_VERSION if oldest else s.version(api_key)
        await s.call(_default_request(api_key), version, keep=_internal_only)

    return run


for _key in SERVED_APIS:
    assert _key in APIS
    _api = api_name(_key)
    add(
        Scenario(
            f"{_api}/version-{TOO_HIGH}",
            _api,
            f"{_api} at v{TOO_HIGH}: refused (ApiVersions answers UNSUPPORTED_VERSION)",
            _too_high(_key),
        )
    )
    add(
        Scenario(
            f"{_api}/all-defaults",
            _api,
            f"{_api} with every field at its default, at this run's version",
            _defaults(_key, oldest=False),
        )
    )
    add(
        Scenario(
            f"{_api}/oldest-version",
            _api,
            f"{_api} with every field at its default, at the oldest version kafkagen knows",
            _defaults(_key, oldest=True),
        )
    )
