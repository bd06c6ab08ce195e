"""Version negotiation: the highest version that both the client and a broker support.

The client's side of an API is the generated request class's range (without an unstable
latest version unless asked), narrowed to what the response class can decode. The broker's
side is what it advertised in ApiVersions. Like Kafka's ``NodeApiVersions``, a request goes
out at the highest version in both ranges, and an empty intersection is an error that names
the API and both sides' ranges instead of a connection the broker closes without a word.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import NamedTuple

from kafkagen.generated import APIS, message_type
from kafkagen.generated.api_versions import ApiVersionsResponse
from kafkagen.runtime.errors import UnsupportedVersionError

__all__ = [
    "BrokerVersions",
    "VersionMismatchError",
    "VersionRange",
    "api_name",
    "client_versions",
]


class VersionRange(NamedTuple):
    """An inclusive range of API versions."""

    min: int
    max: int

    def __str__(self) -> str:
        return f"v{self.min}" if self.min == self.max else f"v{self.min}-{self.max}"

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.min <= version <= self.max

    def intersect(self, other: VersionRange) -> VersionRange | None:
        """The versions in both ranges, or None when they do not overlap."""
        low, high = max(self.min, other.min), min(self.max, other.max)
        return VersionRange(low, high) if low <= high else None


class VersionMismatchError(UnsupportedVersionError):
    """No version of an API is usable with a broker: it lacks the API, or the ranges are
    disjoint. Carries both sides so callers can decide what to fall back to."""

    def __init__(
        self,
        api_key: int,
        wanted: VersionRange,
        broker_range: VersionRange | None,
        broker_ranges: Mapping[int, VersionRange],
    ) -> None:
        self.api_key = api_key
        self.wanted = wanted
        self.broker_range = broker_range
        self.broker_ranges = dict(broker_ranges)
        name = f"{api_name(api_key)} (API key {api_key})"
        if broker_range is None:
            listed = ", ".join(f"{api_name(k)} {r}" for k, r in sorted(self.broker_ranges.items()))
            text = (
                f"the broker does not support {name}; the client needs {wanted}; "
                f"the broker supports: {listed or 'nothing'}"
            )
        else:
            text = (
                f"no common version of {name}: the client needs {wanted}, "
                f"the broker supports {broker_range}"
            )
        super().__init__(text)


def api_name(api_key: int) -> str:
    """Kafka's name of an API (``FindCoordinator``), or ``API <key>`` for unknown keys."""
    entry = APIS.get(api_key)
    return entry[1].removesuffix("Request") if entry else f"API {api_key}"


def client_versions(
    api_key: int, *, unstable: bool = False, package: ModuleType | None = None
) -> VersionRange:
    """The versions this client can write and read for ``api_key``, with the classes of
    ``package`` when it has the API (a user's generated package; default the built-in).

    An unstable latest version is left out unless ``unstable``: brokers only advertise it
    when configured to, and its layout may still change.
    """
    types = (
        package.message_type if package is not None and api_key in package.APIS else message_type
    )
    request = types(api_key, "request")
    response = types(api_key, "response")
    high = request.HIGHEST_VERSION
    if request.LATEST_VERSION_UNSTABLE and not unstable:
        high -= 1
    high = min(high, response.HIGHEST_VERSION)
    return VersionRange(max(request.LOWEST_VERSION, response.LOWEST_VERSION), high)


class BrokerVersions:
    """The API version ranges one broker advertised in its ApiVersions response."""

    def __init__(
        self,
        ranges: Mapping[int, tuple[int, int]] | Iterable[tuple[int, int, int]],
        package: ModuleType | None = None,
    ) -> None:
        #: The generated package whose versions this client speaks (None: the built-in).
        self.package = package
        if isinstance(ranges, Mapping):
            self.ranges: dict[int, VersionRange] = {k: VersionRange(*r) for k, r in ranges.items()}
        else:
            self.ranges = {k: VersionRange(lo, hi) for k, lo, hi in ranges}

    @classmethod
    def from_response(cls, response: ApiVersionsResponse) -> BrokerVersions:
        return cls((a.api_key, a.min_version, a.max_version) for a in response.api_keys)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}: {r}" for k, r in sorted(self.ranges.items()))
        return f"BrokerVersions({{{inner}}})"

    def get(self, api_key: int) -> VersionRange | None:
        return self.ranges.get(api_key)

    def __contains__(self, api_key: object) -> bool:
        return api_key in self.ranges

    def usable(
        self, api_key: int, wanted: VersionRange | None = None, *, unstable: bool = False
    ) -> VersionRange:
        """The versions of ``api_key`` both sides support.

        ``wanted`` narrows the client's side (a request that needs a feature of v4+, say);
        it defaults to `client_versions`. Raises `VersionMismatchError` when nothing is left.
        """
        ours = client_versions(api_key, unstable=unstable, package=self.package)
        if wanted is not None:
            narrowed = ours.intersect(wanted)
            if narrowed is None:
                raise UnsupportedVersionError(
                    f"{api_name(api_key)} {wanted} is outside what kafkagen can write ({ours})"
                )
            ours = narrowed
        theirs = self.ranges.get(api_key)
        both = None if theirs is None else ours.intersect(theirs)
        if both is None:
            raise VersionMismatchError(api_key, ours, theirs, self.ranges)
        return both

    def choose(
        self, api_key: int, wanted: VersionRange | None = None, *, unstable: bool = False
    ) -> int:
        """The highest version of ``api_key`` both sides support."""
        return self.usable(api_key, wanted, unstable=unstable).max
