"""The metadata a broker cut off from the controller keeps serving.

In Kafka a broker learns of metadata changes by fetching the controller quorum's log; cut
off from the controller it keeps the image it last had, and its leaderships, until it
reaches the controller again. kafkagen's brokers share the controller's `ClusterMetadata`,
so a cut-off broker is given a copy of it, taken when it lost the controller: its Metadata
and DescribeCluster answers come from that copy, and the changes the controller makes
meanwhile are held back from it (`ClusterMetadata.stale_images`) until the heal.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass

from ..types import BrokerInfo, PartitionInfo, TopicInfo

__all__ = ["MetadataImage"]


@dataclass(slots=True)
class MetadataImage:
    """A frozen copy of what Metadata and DescribeCluster answer from."""

    cluster_id: str
    controller_id: int
    brokers: dict[int, BrokerInfo]
    topics: dict[str, TopicInfo]
    topic_names: dict[uuid.UUID, str]

    def topic(self, name: str) -> TopicInfo | None:
        return self.topics.get(name)

    def partition(self, topic: str, index: int) -> PartitionInfo | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= index < len(t.partitions):
            return None
        return t.partitions[index]

    @classmethod
    def copy_of(
        cls,
        cluster_id: str,
        controller_id: int,
        brokers: dict[int, BrokerInfo],
        topics: dict[str, TopicInfo],
    ) -> MetadataImage:
        topics = copy.deepcopy(topics)
        return cls(
            cluster_id,
            controller_id,
            copy.deepcopy(brokers),
            topics,
            {t.topic_id: name for name, t in topics.items()},
        )
