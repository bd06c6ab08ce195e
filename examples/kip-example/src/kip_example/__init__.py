"""Topic labels over the Kafka protocol: the DescribeTopicLabels API (key 1000) of this
example, next to Kafka's own ApiVersions, whose codecs are generated at build time into
``kip_example.protocol`` from the specs in ``specs/``."""

from __future__ import annotations

from collections.abc import Mapping

from kip_example.protocol import message_type
from kip_example.protocol.api_versions import ApiVersionsResponse
from kip_example.protocol.describe_topic_labels import (
    DescribeTopicLabelsRequest,
    DescribeTopicLabelsResponse,
)

LABELS_API_KEY = 1000

Labels = dict[str, str | None]


def labels_request(
    topics: list[str], *, include_defaults: bool = False
) -> DescribeTopicLabelsRequest:
    return DescribeTopicLabelsRequest(topics=topics, include_defaults=include_defaults)


def labels_response(
    labels: Mapping[str, Mapping[str, str | None]],
    defaults: Mapping[str, str | None] | None = None,
) -> DescribeTopicLabelsResponse:
    """A broker's answer: each topic's labels, then the cluster defaults it does not set
    itself (marked as defaults, which versions before 1 cannot tell apart)."""
    response = DescribeTopicLabelsResponse()
    for topic, own in labels.items():
        entry = DescribeTopicLabelsResponse.TopicLabels(name=topic)
        for key, value in own.items():
            entry.labels.append(DescribeTopicLabelsResponse.Label(key=key, value=value))
        for key, value in (defaults or {}).items():
            if key not in own:
                label = DescribeTopicLabelsResponse.Label(key=key, value=value, is_default=True)
                entry.labels.append(label)
        response.topics.append(entry)
    return response


def labels_of(response: DescribeTopicLabelsResponse) -> dict[str, Labels]:
    """The labels a response carries, topic by topic."""
    return {t.name: {label.key: label.value for label in t.labels} for t in response.topics}


def advertise(response: ApiVersionsResponse) -> ApiVersionsResponse:
    """``response`` with the labels API added to the versions a broker advertises."""
    labels = message_type(LABELS_API_KEY, "request")
    response.api_keys.append(
        ApiVersionsResponse.ApiVersion(
            api_key=LABELS_API_KEY,
            min_version=labels.LOWEST_VERSION,
            max_version=labels.HIGHEST_VERSION,
        )
    )
    return response
