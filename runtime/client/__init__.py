"""kafkagen's Kafka client side: version negotiation, request builders, an asyncio client.

``async with await connect("127.0.0.1", 9092) as client:`` then
``await client.find_coordinators(["g1", "g2"])``: one FindCoordinator v4+ request when the
broker supports it, one request per group otherwise, and the same per-group result.
`kafkagen.runtime.client.admin` has the helpers that walk the cursor pagination of the
paged admin APIs to the end (``await admin.list_groups_all(client)``).
"""

from kafkagen.runtime.topic_partition import TopicPartition

from . import admin
from .admin import PaginationError
from .builders import (
    BatchedKeysBuilder,
    BatchingUnsupportedError,
    CommittedOffset,
    CoordinatorType,
    Exchange,
    FindCoordinatorBuilder,
    GroupOffsets,
    Node,
    OffsetFetchBuilder,
    RequestBuilder,
)
from .client import CLIENT_CONFIGS, KafkaClient, connect, handshake
from .connection import Connection
from .versions import (
    BrokerVersions,
    VersionMismatchError,
    VersionRange,
    api_name,
    client_versions,
)

__all__ = [
    "CLIENT_CONFIGS",
    "BatchedKeysBuilder",
    "BatchingUnsupportedError",
    "BrokerVersions",
    "CommittedOffset",
    "Connection",
    "CoordinatorType",
    "Exchange",
    "FindCoordinatorBuilder",
    "GroupOffsets",
    "KafkaClient",
    "Node",
    "OffsetFetchBuilder",
    "PaginationError",
    "RequestBuilder",
    "TopicPartition",
    "VersionMismatchError",
    "VersionRange",
    "admin",
    "api_name",
    "client_versions",
    "connect",
    "handshake",
]
