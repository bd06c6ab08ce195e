"""The generated codecs round-trip the example's messages at every version."""

from __future__ import annotations

import pytest
from kip_example import advertise, labels_of, labels_request, labels_response
from kip_example.protocol import message_type
from kip_example.protocol.api_versions import ApiVersionsResponse
from kip_example.protocol.describe_topic_labels import (
    DescribeTopicLabelsRequest,
    DescribeTopicLabelsResponse,
)

LABELS = {"orders": {"team": "payments", "tier": None}, "audit": {}}
DEFAULTS = {"region": "eu-west"}


def test_the_labels_api_is_registered_under_its_key() -> None:
    assert message_type(1000, "request") is DescribeTopicLabelsRequest
    assert message_type(1000, "response") is DescribeTopicLabelsResponse


@pytest.mark.parametrize("version", [0, 1])
def test_a_request_round_trips(version: int) -> None:
    request = labels_request(["orders", "audit"], include_defaults=version >= 1)
    wire = request.encode(version)
    assert DescribeTopicLabelsRequest.decode(wire, version) == request


def test_version_0_request_is_two_strings_in_an_int32_counted_array() -> None:
    wire = labels_request(["ab", "c"]).encode(0)
    assert wire == b"\x00\x00\x00\x02" + b"\x00\x02ab" + b"\x00\x01c"


@pytest.mark.parametrize("version", [0, 1])
def test_a_response_round_trips_with_its_labels(version: int) -> None:
    response = labels_response(LABELS)
    decoded = DescribeTopicLabelsResponse.decode(response.encode(version), version)
    assert decoded == response
    assert labels_of(decoded) == LABELS


def test_defaults_are_marked_from_version_1() -> None:
    response = labels_response(LABELS, DEFAULTS)
    decoded = DescribeTopicLabelsResponse.decode(response.encode(1), 1)
    (orders, _) = decoded.topics
    assert [(label.key, label.is_default) for label in orders.labels] == [
        ("team", False),
        ("tier", False),
        ("region", True),
    ]
    assert labels_of(decoded)["audit"] == DEFAULTS


def test_version_0_carries_defaults_as_plain_labels() -> None:
    # IsDefault is ignorable: an older client gets the label without the marker
    response = labels_response(LABELS, DEFAULTS)
    decoded = DescribeTopicLabelsResponse.decode(response.encode(0), 0)
    assert labels_of(decoded)["audit"] == DEFAULTS
    assert not any(label.is_default for t in decoded.topics for label in t.labels)


@pytest.mark.parametrize("version", range(0, 6))
def test_api_versions_advertises_the_labels_api(version: int) -> None:
    response = advertise(ApiVersionsResponse())
    decoded = ApiVersionsResponse.decode(response.encode(version), version)
    assert [(k.api_key, k.min_version, k.max_version) for k in decoded.api_keys] == [(1000, 0, 1)]
