"""kafkagen's Kafka client side: version negotiation, request builders, an asyncio client.

``async with await connect("127.0.0.1", 9092) as client:`` then
``await client.find_coordinators(["g1", "g2"])``: one FindCoordinator v4+ request when the
broker supports it, one request per group otherwise, and the same per-group result.
"""

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
    TopicPartition,
)
from .client import KafkaClient, connect, handshake
from .connection import Connection
from .versions import (
    BrokerVersions,
    VersionMismatchError,
    VersionRange,
    api_name,
    client_versions,
)

__all__ = [
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
    "RequestBuilder",
    "TopicPartition",
    "VersionMismatchError",
    "VersionRange",
    "api_name",
    "client_versions",
    "connect",
    "handshake",
]
