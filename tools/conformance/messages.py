"""Requests the scenarios send often, built the same way for both brokers.

Record batches carry fixed timestamps, keys and values, so two brokers that store them
the same way serve back the same bytes (the CRC included).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from kafkagen.generated.fetch import FetchRequest
from kafkagen.generated.join_group import JoinGroupRequest
from kafkagen.generated.list_offsets import ListOffsetsRequest
from kafkagen.generated.produce import ProduceRequest
from kafkagen.runtime.records import Record, build_batch

__all__ = [
    "BASE_TIMESTAMP",
    "batch",
    "fetch",
    "join_group",
    "list_offsets",
    "produce",
]

#: The create time of the first record of every batch (2023-11-14T22:13:20Z).
BASE_TIMESTAMP = 1_700_000_000_000


def batch(
    count: int = 3, *, size: int = 8, first: int = 0, timestamp: int = BASE_TIMESTAMP, **kw: Any
) -> bytes:
    """A v2 batch of ``count`` records with keys ``k<i>`` and ``size``-byte values, created
    at ``timestamp`` (ms) and the following milliseconds."""
    records = [
        Record(
            timestamp=timestamp + i,
            key=f"k{first + i}".encode(),
            value=bytes([65 + (first + i) % 26]) * size,
        )
        for i in range(count)
    ]
    return build_batch(records, **kw)


def produce(
    topic: str,
    records: bytes | None,
    *,
    partition: int = 0,
    acks: int = 1,
    transactional_id: str | None = None,
) -> ProduceRequest:
    P = ProduceRequest
    return P(
        transactional_id=transactional_id,
        acks=acks,
        timeout_ms=10000,
        topic_data=[
            P.TopicProduceData(
                name=topic,
                partition_data=[P.PartitionProduceData(index=partition, records=records)],
            )
        ],
    )


def fetch(
    topic: str,
    topic_id: UUID,
    offset: int = 0,
    *,
    partition: int = 0,
    isolation: int = 0,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    partition_max_bytes: int = 1 << 20,
) -> FetchRequest:
    """A sessionless full fetch (session epoch -1) naming the topic by name and by id, so
    it reads the same at versions before and after topic ids."""
    F = FetchRequest
    return F(
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=1 << 20,
        isolation_level=isolation,
        session_id=0,
        session_epoch=-1,
        topics=[
            F.FetchTopic(
                topic=topic,
                topic_id=topic_id,
                partitions=[
                    F.FetchPartition(
                        partition=partition,
                        fetch_offset=offset,
                        partition_max_bytes=partition_max_bytes,
                    )
                ],
            )
        ],
    )


def list_offsets(
    topic: str, timestamp: int, *, partition: int = 0, isolation: int = 0
) -> ListOffsetsRequest:
    L = ListOffsetsRequest
    return L(
        replica_id=-1,
        isolation_level=isolation,
        topics=[
            L.ListOffsetsTopic(
                name=topic,
                partitions=[L.ListOffsetsPartition(partition_index=partition, timestamp=timestamp)],
            )
        ],
    )


def join_group(
    group: str,
    member_id: str = "",
    *,
    protocol_type: str = "consumer",
    session_timeout_ms: int = 10000,
    rebalance_timeout_ms: int = 10000,
    protocols: tuple[str, ...] = ("range",),
) -> JoinGroupRequest:
    J = JoinGroupRequest
    return J(
        group_id=group,
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms,
        member_id=member_id,
        protocol_type=protocol_type,
        protocols=[J.JoinGroupRequestProtocol(name=p, metadata=b"\x00\x01") for p in protocols],
    )
