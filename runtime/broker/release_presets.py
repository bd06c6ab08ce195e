"""Release presets: the API versions a given Kafka release's broker advertised.

The table (``release_presets.json`` beside this module) is derived from each release's
own spec files, the ``common/message/*Request.json`` of its ``kafka-clients`` jar, by
``python -m kafkagen.presets_from_jars`` (which a test re-runs): an API is in a release when
its request spec lists a broker listener (or, before listeners were written down, lists
none), from its lowest valid version to its highest stable one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

__all__ = [
    "PRESET_CONFIG",
    "preset_caps",
    "preset_floors",
    "preset_gaps",
    "preset_listed_floors",
    "preset_names",
    "preset_ranges",
]

#: The broker config that picks a preset, e.g. ``kafkagen.api.version.preset=2.8``.
PRESET_CONFIG = "kafkagen.api.version.preset"


@cache
def _table() -> dict[str, Any]:
    # Imported here: importlib.resources costs a broker's start more than the table does.
    from importlib import resources

    text = resources.files(__package__).joinpath("release_presets.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def preset_names() -> list[str]:
    """The releases there is a preset for (``"2.4"``, ..., ``"4.4"``)."""
    return list(_table()["releases"])


def preset_ranges(release: str) -> dict[int, tuple[int, int]]:
    """API key -> (lowest, highest) version the release's broker advertised."""
    releases = _table()["releases"]
    if release not in releases:
        raise ValueError(f"no preset for Kafka {release!r}; presets: {', '.join(releases)}")
    return {int(k): (lo, hi) for k, (lo, hi) in releases[release]["apis"].items()}


#: API key -> the version Kafka's ApiVersions lists an API from though it serves it only from
#: a higher one: Kafka 4.x serves Produce from v3 (v0-2 went with the message formats v0
#: and v1) yet lists it from v0, as older librdkafka releases compress only for a broker
#: listing v0; a request below v3 still closes the connection.
_LISTED_BELOW_SERVED = {0: 0}


def preset_listed_floors(release: str) -> dict[int, int]:
    """API key -> the lowest version ``release``'s ApiVersions listed, where that is below
    the lowest it served (`preset_floors`)."""
    ranges = preset_ranges(release)
    return {k: v for k, v in _LISTED_BELOW_SERVED.items() if k in ranges and ranges[k][0] > v}


def preset_floors(release: str, api_keys: Iterable[int]) -> dict[int, int]:
    """The lowest version of each of ``api_keys`` that ``release`` advertised (those it had)."""
    ranges = preset_ranges(release)
    return {key: ranges[key][0] for key in api_keys if key in ranges}


def preset_gaps(
    release: str, served: Mapping[int, tuple[int, int]]
) -> dict[int, list[tuple[int, int]]]:
    """API key -> the version ranges ``release`` advertised that ``served`` (key -> (min,
    max)) lacks: its whole range for an API not served, else the part outside."""
    gaps: dict[int, list[tuple[int, int]]] = {}
    for key, (lo, hi) in sorted(preset_ranges(release).items()):
        if key not in served:
            gaps[key] = [(lo, hi)]
            continue
        have_lo, have_hi = served[key]
        pieces = [(lo, min(hi, have_lo - 1)), (max(lo, have_hi + 1), hi)]
        missing = [(a, b) for a, b in pieces if a <= b]
        if missing:
            gaps[key] = missing
    return gaps


def preset_caps(release: str, api_keys: list[int]) -> dict[int, int]:
    """Caps for ``api_keys`` that play ``release``: its highest version of each API, and
    -1 (hidden) for an API the release did not have."""
    ranges = preset_ranges(release)
    return {key: ranges[key][1] if key in ranges else -1 for key in api_keys}
