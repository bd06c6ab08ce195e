"""Version negotiation: the highest version both sides support, and clear errors when none."""

from __future__ import annotations

import pytest
from kafkagen.generated import message_type
from kafkagen.generated.api_versions import ApiVersionsResponse
from kafkagen.runtime.client import (
    BrokerVersions,
    VersionMismatchError,
    VersionRange,
    api_name,
    client_versions,
)
from kafkagen.runtime.errors import ErrorCode, UnsupportedVersionError

FIND_COORDINATOR = 10
OFFSET_FETCH = 9
API_VERSIONS = 18


def test_client_range_is_the_generated_class_range() -> None:
    cls = message_type(FIND_COORDINATOR, "request")
    assert not cls.LATEST_VERSION_UNSTABLE
    assert client_versions(FIND_COORDINATOR) == VersionRange(
        cls.LOWEST_VERSION, cls.HIGHEST_VERSION
    )


def test_unstable_latest_version_is_left_out_unless_asked() -> None:
    cls = message_type(OFFSET_FETCH, "request")
    assert cls.LATEST_VERSION_UNSTABLE
    assert client_versions(OFFSET_FETCH).max == cls.HIGHEST_VERSION - 1
    assert client_versions(OFFSET_FETCH, unstable=True).max == cls.HIGHEST_VERSION


def test_highest_common_version_is_chosen() -> None:
    top = client_versions(FIND_COORDINATOR).max
    assert BrokerVersions({FIND_COORDINATOR: (0, 3)}).choose(FIND_COORDINATOR) == 3
    # A newer broker than the client: the client's highest.
    assert BrokerVersions({FIND_COORDINATOR: (0, top + 5)}).choose(FIND_COORDINATOR) == top
    assert BrokerVersions({FIND_COORDINATOR: (2, 4)}).usable(FIND_COORDINATOR) == (2, 4)


def test_unstable_version_is_used_only_when_asked_and_advertised() -> None:
    top = message_type(OFFSET_FETCH, "request").HIGHEST_VERSION
    broker = BrokerVersions({OFFSET_FETCH: (0, top)})
    assert broker.choose(OFFSET_FETCH) == top - 1
    assert broker.choose(OFFSET_FETCH, unstable=True) == top


def test_wanted_range_narrows_the_client_side() -> None:
    broker = BrokerVersions({FIND_COORDINATOR: (0, 6)})
    assert broker.choose(FIND_COORDINATOR, VersionRange(0, 3)) == 3
    assert broker.usable(FIND_COORDINATOR, VersionRange(4, 100)) == (4, 6)


def test_missing_api_names_the_api_and_the_broker_ranges() -> None:
    broker = BrokerVersions({API_VERSIONS: (0, 4), 3: (0, 12)})
    with pytest.raises(UnsupportedVersionError) as info:
        broker.choose(FIND_COORDINATOR)
    e = info.value
    assert isinstance(e, VersionMismatchError)
    assert e.code == ErrorCode.UNSUPPORTED_VERSION
    assert e.api_key == FIND_COORDINATOR and e.broker_range is None
    assert e.broker_ranges == {API_VERSIONS: (0, 4), 3: (0, 12)}
    text = str(e)
    assert "does not support FindCoordinator (API key 10)" in text
    assert "ApiVersions v0-4" in text and "Metadata v0-12" in text


def test_disjoint_ranges_name_both_sides() -> None:
    broker = BrokerVersions({FIND_COORDINATOR: (0, 3)})
    with pytest.raises(VersionMismatchError) as info:
        broker.choose(FIND_COORDINATOR, VersionRange(6, 6))
    assert info.value.broker_range == (0, 3)
    assert "client needs v6, the broker supports v0-3" in str(info.value)


def test_wanted_range_outside_the_codec_is_an_error() -> None:
    broker = BrokerVersions({FIND_COORDINATOR: (0, 50)})
    with pytest.raises(UnsupportedVersionError, match="outside what kafkagen can write"):
        broker.choose(FIND_COORDINATOR, VersionRange(40, 50))


def test_broker_versions_from_an_api_versions_response() -> None:
    av = ApiVersionsResponse.ApiVersion
    response = ApiVersionsResponse(
        api_keys=[av(api_key=18, min_version=0, max_version=4), av(api_key=10, max_version=3)]
    )
    # Through the wire, as a client sees it.
    decoded = ApiVersionsResponse.decode(response.encode(3), 3)
    broker = BrokerVersions.from_response(decoded)
    assert broker.get(FIND_COORDINATOR) == (0, 3) and broker.get(OFFSET_FETCH) is None
    assert FIND_COORDINATOR in broker and OFFSET_FETCH not in broker


def test_version_range_helpers() -> None:
    r = VersionRange(1, 3)
    assert 1 in r and 3 in r and 4 not in r and 0 not in r
    assert r.intersect(VersionRange(3, 9)) == (3, 3)
    assert r.intersect(VersionRange(4, 9)) is None
    assert str(r) == "v1-3" and str(VersionRange(4, 4)) == "v4"
    assert api_name(10) == "FindCoordinator" and api_name(9999) == "API 9999"
