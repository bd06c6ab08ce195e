"""Workloads for the codec benchmark (``kafkagen bench codecs``).

Each workload builds its content once, as a kafkagen message, from a seeded RNG; the kio and
kafka-python objects are converted from that message field by field, so the three libraries
encode exactly the same content. The converters run once, outside the timed loops.

Peer field names differ from kafkagen's in a few places: kio says ``throttle_time`` and
``timeout`` (``datetime.timedelta``) and wraps error codes in its ``ErrorCode`` enum;
kafka-python keeps authorized operations as a set of bit numbers (``None`` for Kafka's
"not requested" value, -2**31).
"""

from __future__ import annotations

import base64
import datetime
import random
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    # Type checkers read the source tree, where kafkagen.runtime is the runtime/ folder; the
    # generated classes are typed Any anyway.
    from runtime.records import Record, build_batch

    def message_type(api_key: int, kind: str) -> Any: ...

else:
    from kafkagen.generated import message_type
    from kafkagen.runtime.records import Record, build_batch

Kind = Literal["request", "response"]
Build = Callable[[random.Random], Any]
#: (kafkagen message, kio schema module of the version run) -> kio entity
ToKio = Callable[[Any, ModuleType], Any]
#: (kafkagen message, kafka-python message class) -> kafka-python message
ToKafkaPython = Callable[[Any, Any], Any]

NOT_REQUESTED = -(2**31)  # authorized-operations value when the client did not ask for them


@dataclass(frozen=True)
class Workload:
    """One message type, version and size, with a builder for each library."""

    key: str  # short name for --workload
    api_key: int
    kind: Kind
    version: int
    size: str  # what the content holds, for the table
    build: Build
    kio_module: str  # kio.schema.<kio_module>.v<N>.<kind>
    to_kio: ToKio
    kafka_python_module: str  # kafka.protocol.<module>
    to_kafka_python: ToKafkaPython

    @property
    def class_name(self) -> str:
        """The message class name, the same in all three libraries."""
        return str(message_type(self.api_key, self.kind).__name__)

    @property
    def title(self) -> str:
        return f"{self.class_name} v{self.version}"


# -- realistic names -----------------------------------------------------------------------

# fmt: off
_DOMAINS = (
    "orders", "payments", "inventory", "shipments", "clickstream", "user-profiles", "audit",
    "notifications", "billing", "search-index", "fraud-signals", "sessions", "pricing",
    "catalog", "recommendations", "ledger",
)
_EVENTS = ("created", "updated", "deleted", "changelog", "events", "snapshot", "dlq", "retry")
_ENVS = ("prod", "prod-eu", "staging")
_SERVICES = (
    "checkout", "fulfilment", "risk-engine", "analytics", "mailer", "search", "crm", "reporting",
    "warehouse-sync", "billing-worker",
)
# fmt: on


def topic_names(rng: random.Random, n: int) -> list[str]:
    """``n`` distinct topic names of the usual ``env.domain.event.vN`` shape."""
    names: dict[str, None] = {}
    while len(names) < n:
        env, domain, event = rng.choice(_ENVS), rng.choice(_DOMAINS), rng.choice(_EVENTS)
        names[f"{env}.{domain}.{event}.v{rng.randint(1, 4)}"] = None
    return list(names)


def group_ids(rng: random.Random, n: int) -> list[str]:
    ids: dict[str, None] = {}
    while len(ids) < n:
        ids[f"{rng.choice(_SERVICES)}-{rng.choice(_DOMAINS)}-consumer-{rng.randint(1, 99)}"] = None
    return list(ids)


def random_uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def cluster_id(rng: random.Random) -> str:
    """Kafka's cluster id form: a UUID in URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(random_uuid(rng).bytes).rstrip(b"=").decode()


BROKERS = [
    (i, f"b-{i}.kafka-prod.internal.example.com", 9092, f"use1-az{(i - 1) % 3 + 1}")
    for i in range(1, 7)
]


def record_batch(rng: random.Random, base_offset: int, size: int = 1024) -> bytes:
    """A real v2 record batch of exactly ``size`` bytes: 6 JSON-ish records, one padded."""
    ts = 1_718_000_000_000 + rng.randint(0, 10**7)

    def batch(pad: int) -> bytes:
        records = [
            Record(
                timestamp=ts + i,
                key=f"customer-{rng_keys[i]:06d}".encode(),
                value=(
                    f'{{"seq":{base_offset + i},"amount":{amounts[i]},"note":"'.encode()
                    + b"x" * (pad if i == 0 else 40)
                    + b'"}'
                ),
                headers=[("trace-id", trace_ids[i])],
            )
            for i in range(6)
        ]
        return build_batch(records, base_offset=base_offset)

    rng_keys = [rng.randint(0, 999_999) for _ in range(6)]
    amounts = [rng.randint(100, 99_999) for _ in range(6)]
    trace_ids = [rng.randbytes(16).hex().encode() for _ in range(6)]
    pad = 40 + size - len(batch(40))
    for _ in range(4):  # varint lengths can shift by a byte; settle in a few steps
        out = batch(pad)
        if len(out) == size:
            return out
        pad += size - len(out)
    raise AssertionError(f"could not build a {size}-byte batch")


def timedelta_ms(ms: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=ms)


def operation_bits(value: int) -> set[int] | None:
    """kafka-python's form of an authorized-operations int32."""
    if value == NOT_REQUESTED:
        return None
    return {b for b in range(32) if value >> b & 1}


def _kio_error(code: int) -> Any:
    from kio.schema.errors import ErrorCode

    return ErrorCode(code)


def _tuple(items: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(items)


# -- 1. MetadataResponse v12: 100 topics x 10 partitions -----------------------------------


def build_metadata(rng: random.Random) -> Any:
    cls = message_type(3, "response")
    broker_ids = [b[0] for b in BROKERS]
    topics = []
    for name in topic_names(rng, 100):
        partitions = []
        for p in range(10):
            replicas = rng.sample(broker_ids, 3)
            partitions.append(
                cls.MetadataResponsePartition(
                    error_code=0,
                    partition_index=p,
                    leader_id=replicas[0],
                    leader_epoch=rng.randint(0, 40),
                    replica_nodes=replicas,
                    isr_nodes=rng.sample(replicas, 3),
                    offline_replicas=[],
                )
            )
        topics.append(
            cls.MetadataResponseTopic(
                error_code=0,
                name=name,
                topic_id=random_uuid(rng),
                is_internal=False,
                partitions=partitions,
                topic_authorized_operations=NOT_REQUESTED,
            )
        )
    return cls(
        throttle_time_ms=0,
        brokers=[
            cls.MetadataResponseBroker(node_id=i, host=h, port=port, rack=rack)
            for i, h, port, rack in BROKERS
        ],
        cluster_id=cluster_id(rng),
        controller_id=rng.choice(broker_ids),
        topics=topics,
    )


def metadata_to_kio(o: Any, m: ModuleType) -> Any:
    return m.MetadataResponse(
        throttle_time=timedelta_ms(o.throttle_time_ms),
        brokers=_tuple(
            m.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
            for b in o.brokers
        ),
        cluster_id=o.cluster_id,
        controller_id=o.controller_id,
        topics=_tuple(
            m.MetadataResponseTopic(
                error_code=_kio_error(t.error_code),
                name=t.name,
                topic_id=t.topic_id,
                is_internal=t.is_internal,
                partitions=_tuple(
                    m.MetadataResponsePartition(
                        error_code=_kio_error(p.error_code),
                        partition_index=p.partition_index,
                        leader_id=p.leader_id,
                        leader_epoch=p.leader_epoch,
                        replica_nodes=tuple(p.replica_nodes),
                        isr_nodes=tuple(p.isr_nodes),
                        offline_replicas=tuple(p.offline_replicas),
                    )
                    for p in t.partitions
                ),
                topic_authorized_operations=t.topic_authorized_operations,
            )
            for t in o.topics
        ),
    )


def metadata_to_kafka_python(o: Any, cls: Any) -> Any:
    topic_cls = cls.MetadataResponseTopic
    partition_cls = topic_cls.MetadataResponsePartition
    return cls(
        throttle_time_ms=o.throttle_time_ms,
        brokers=[
            cls.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
            for b in o.brokers
        ],
        cluster_id=o.cluster_id,
        controller_id=o.controller_id,
        topics=[
            topic_cls(
                error_code=t.error_code,
                name=t.name,
                topic_id=t.topic_id,
                is_internal=t.is_internal,
                partitions=[
                    partition_cls(
                        error_code=p.error_code,
                        partition_index=p.partition_index,
                        leader_id=p.leader_id,
                        leader_epoch=p.leader_epoch,
                        replica_nodes=list(p.replica_nodes),
                        isr_nodes=list(p.isr_nodes),
                        offline_replicas=list(p.offline_replicas),
                    )
                    for p in t.partitions
                ],
                authorized_operations=operation_bits(t.topic_authorized_operations),
            )
            for t in o.topics
        ],
    )


# -- 2. FindCoordinatorResponse v4: 100 coordinators ---------------------------------------


def build_find_coordinator(rng: random.Random) -> Any:
    cls = message_type(10, "response")
    coordinators = []
    for n, key in enumerate(group_ids(rng, 100)):
        if n % 25 == 24:  # a few keys whose coordinator is still loading
            coordinators.append(
                cls.Coordinator(
                    key=key,
                    node_id=-1,
                    host="",
                    port=-1,
                    error_code=15,
                    error_message="The coordinator is not available.",
                )
            )
            continue
        node_id, host, port, _ = rng.choice(BROKERS)
        coordinators.append(
            cls.Coordinator(
                key=key, node_id=node_id, host=host, port=port, error_code=0, error_message=None
            )
        )
    return cls(throttle_time_ms=0, coordinators=coordinators)


def find_coordinator_to_kio(o: Any, m: ModuleType) -> Any:
    return m.FindCoordinatorResponse(
        throttle_time=timedelta_ms(o.throttle_time_ms),
        coordinators=_tuple(
            m.Coordinator(
                key=c.key,
                node_id=c.node_id,
                host=c.host,
                port=c.port,
                error_code=_kio_error(c.error_code),
                error_message=c.error_message,
            )
            for c in o.coordinators
        ),
    )


def find_coordinator_to_kafka_python(o: Any, cls: Any) -> Any:
    return cls(
        throttle_time_ms=o.throttle_time_ms,
        coordinators=[
            cls.Coordinator(
                key=c.key,
                node_id=c.node_id,
                host=c.host,
                port=c.port,
                error_code=c.error_code,
                error_message=c.error_message,
            )
            for c in o.coordinators
        ],
    )


# -- 3. OffsetFetchResponse v9: 20 groups x 10 topics x 10 partitions ----------------------


def build_offset_fetch(rng: random.Random) -> Any:
    cls = message_type(9, "response")
    names = topic_names(rng, 40)
    groups = []
    for group_id in group_ids(rng, 20):
        topics = [
            cls.OffsetFetchResponseTopics(
                name=name,
                partitions=[
                    cls.OffsetFetchResponsePartitions(
                        partition_index=p,
                        committed_offset=rng.randint(0, 5_000_000_000),
                        committed_leader_epoch=rng.randint(0, 40),
                        metadata="",
                        error_code=0,
                    )
                    for p in range(10)
                ],
            )
            for name in rng.sample(names, 10)
        ]
        groups.append(cls.OffsetFetchResponseGroup(group_id=group_id, topics=topics, error_code=0))
    return cls(throttle_time_ms=0, groups=groups)


def offset_fetch_to_kio(o: Any, m: ModuleType) -> Any:
    return m.OffsetFetchResponse(
        throttle_time=timedelta_ms(o.throttle_time_ms),
        groups=_tuple(
            m.OffsetFetchResponseGroup(
                group_id=g.group_id,
                topics=_tuple(
                    m.OffsetFetchResponseTopics(
                        name=t.name,
                        partitions=_tuple(
                            m.OffsetFetchResponsePartitions(
                                partition_index=p.partition_index,
                                committed_offset=p.committed_offset,
                                committed_leader_epoch=p.committed_leader_epoch,
                                metadata=p.metadata,
                                error_code=_kio_error(p.error_code),
                            )
                            for p in t.partitions
                        ),
                    )
                    for t in g.topics
                ),
                error_code=_kio_error(g.error_code),
            )
            for g in o.groups
        ),
    )


def offset_fetch_to_kafka_python(o: Any, cls: Any) -> Any:
    group_cls = cls.OffsetFetchResponseGroup
    topic_cls = group_cls.OffsetFetchResponseTopics
    partition_cls = topic_cls.OffsetFetchResponsePartitions
    return cls(
        throttle_time_ms=o.throttle_time_ms,
        groups=[
            group_cls(
                group_id=g.group_id,
                topics=[
                    topic_cls(
                        name=t.name,
                        partitions=[
                            partition_cls(
                                partition_index=p.partition_index,
                                committed_offset=p.committed_offset,
                                committed_leader_epoch=p.committed_leader_epoch,
                                metadata=p.metadata,
                                error_code=p.error_code,
                            )
                            for p in t.partitions
                        ],
                    )
                    for t in g.topics
                ],
                error_code=g.error_code,
            )
            for g in o.groups
        ],
    )


# -- 4. ProduceRequest v9: 10 partitions of 1 KiB batches ----------------------------------


def build_produce(rng: random.Random) -> Any:
    cls = message_type(0, "request")
    return cls(
        transactional_id=None,
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            cls.TopicProduceData(
                name=topic_names(rng, 1)[0],
                partition_data=[
                    cls.PartitionProduceData(index=p, records=record_batch(rng, 0))
                    for p in range(10)
                ],
            )
        ],
    )


def produce_to_kio(o: Any, m: ModuleType) -> Any:
    return m.ProduceRequest(
        transactional_id=o.transactional_id,
        acks=o.acks,
        timeout=timedelta_ms(o.timeout_ms),
        topic_data=_tuple(
            m.TopicProduceData(
                name=t.name,
                partition_data=_tuple(
                    m.PartitionProduceData(index=p.index, records=p.records)
                    for p in t.partition_data
                ),
            )
            for t in o.topic_data
        ),
    )


def produce_to_kafka_python(o: Any, cls: Any) -> Any:
    topic_cls = cls.TopicProduceData
    return cls(
        transactional_id=o.transactional_id,
        acks=o.acks,
        timeout_ms=o.timeout_ms,
        topic_data=[
            topic_cls(
                name=t.name,
                partition_data=[
                    topic_cls.PartitionProduceData(index=p.index, records=p.records)
                    for p in t.partition_data
                ],
            )
            for t in o.topic_data
        ],
    )


# -- 5. FetchResponse v12: 10 partitions of 1 KiB batches ----------------------------------


def build_fetch(rng: random.Random) -> Any:
    cls = message_type(1, "response")
    partitions = []
    for p in range(10):
        high_watermark = rng.randint(1_000_000, 50_000_000)
        partitions.append(
            cls.PartitionData(
                partition_index=p,
                error_code=0,
                high_watermark=high_watermark,
                last_stable_offset=high_watermark,
                log_start_offset=high_watermark - rng.randint(100_000, 900_000),
                aborted_transactions=None,
                preferred_read_replica=-1,
                records=record_batch(rng, high_watermark - 8),
            )
        )
    return cls(
        throttle_time_ms=0,
        error_code=0,
        session_id=rng.randint(1, 2**31 - 1),
        responses=[cls.FetchableTopicResponse(topic=topic_names(rng, 1)[0], partitions=partitions)],
    )


def _tagged_default(value: Any, default_cls: Any) -> bool:
    """Whether a kafkagen tagged struct still holds its defaults (so peers leave it unset)."""
    return bool(value == default_cls())


def fetch_to_kio(o: Any, m: ModuleType) -> Any:
    def partition(p: Any) -> Any:
        kw: dict[str, Any] = {}
        if not _tagged_default(p.diverging_epoch, type(p.diverging_epoch)):
            kw["diverging_epoch"] = m.EpochEndOffset(
                epoch=p.diverging_epoch.epoch, end_offset=p.diverging_epoch.end_offset
            )
        if not _tagged_default(p.current_leader, type(p.current_leader)):
            kw["current_leader"] = m.LeaderIdAndEpoch(
                leader_id=p.current_leader.leader_id, leader_epoch=p.current_leader.leader_epoch
            )
        if not _tagged_default(p.snapshot_id, type(p.snapshot_id)):
            kw["snapshot_id"] = m.SnapshotId(
                end_offset=p.snapshot_id.end_offset, epoch=p.snapshot_id.epoch
            )
        aborted = p.aborted_transactions
        return m.PartitionData(
            partition_index=p.partition_index,
            error_code=_kio_error(p.error_code),
            high_watermark=p.high_watermark,
            last_stable_offset=p.last_stable_offset,
            log_start_offset=p.log_start_offset,
            aborted_transactions=(
                None
                if aborted is None
                else _tuple(
                    m.AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                    for a in aborted
                )
            ),
            preferred_read_replica=p.preferred_read_replica,
            records=p.records,
            **kw,
        )

    return m.FetchResponse(
        throttle_time=timedelta_ms(o.throttle_time_ms),
        error_code=_kio_error(o.error_code),
        session_id=o.session_id,
        responses=_tuple(
            m.FetchableTopicResponse(
                topic=t.topic, partitions=_tuple(partition(p) for p in t.partitions)
            )
            for t in o.responses
        ),
    )


def fetch_to_kafka_python(o: Any, cls: Any) -> Any:
    topic_cls = cls.FetchableTopicResponse
    partition_cls = topic_cls.PartitionData

    def partition(p: Any) -> Any:
        # kafka-python writes a tagged field when its value differs from the default, so
        # only set the ones kafkagen would write.
        kw: dict[str, Any] = {}
        if not _tagged_default(p.diverging_epoch, type(p.diverging_epoch)):
            kw["diverging_epoch"] = partition_cls.EpochEndOffset(
                epoch=p.diverging_epoch.epoch, end_offset=p.diverging_epoch.end_offset
            )
        if not _tagged_default(p.current_leader, type(p.current_leader)):
            kw["current_leader"] = partition_cls.LeaderIdAndEpoch(
                leader_id=p.current_leader.leader_id, leader_epoch=p.current_leader.leader_epoch
            )
        if not _tagged_default(p.snapshot_id, type(p.snapshot_id)):
            kw["snapshot_id"] = partition_cls.SnapshotId(
                end_offset=p.snapshot_id.end_offset, epoch=p.snapshot_id.epoch
            )
        aborted = p.aborted_transactions
        return partition_cls(
            partition_index=p.partition_index,
            error_code=p.error_code,
            high_watermark=p.high_watermark,
            last_stable_offset=p.last_stable_offset,
            log_start_offset=p.log_start_offset,
            aborted_transactions=(
                None
                if aborted is None
                else [
                    partition_cls.AbortedTransaction(
                        producer_id=a.producer_id, first_offset=a.first_offset
                    )
                    for a in aborted
                ]
            ),
            preferred_read_replica=p.preferred_read_replica,
            records=p.records,
            **kw,
        )

    return cls(
        throttle_time_ms=o.throttle_time_ms,
        error_code=o.error_code,
        session_id=o.session_id,
        responses=[
            topic_cls(topic=t.topic, partitions=[partition(p) for p in t.partitions])
            for t in o.responses
        ],
    )


# -- 6. ApiVersions v3: the request, and a broker's answer with 60 API keys ----------------


def build_api_versions_request(rng: random.Random) -> Any:
    cls = message_type(18, "request")
    return cls(client_software_name="apache-kafka-java", client_software_version="3.7.1")


def api_versions_request_to_kio(o: Any, m: ModuleType) -> Any:
    return m.ApiVersionsRequest(
        client_software_name=o.client_software_name,
        client_software_version=o.client_software_version,
    )


def api_versions_request_to_kafka_python(o: Any, cls: Any) -> Any:
    return cls(
        client_software_name=o.client_software_name,
        client_software_version=o.client_software_version,
    )


# (api key, highest version) as a 3.7 broker answers; every lowest version is 0.
# fmt: off
_BROKER_APIS = (
    (0, 10), (1, 16), (2, 8), (3, 12), (4, 7), (5, 4), (6, 8), (7, 3), (8, 9), (9, 9),
    (10, 4), (11, 9), (12, 4), (13, 5), (14, 5), (15, 5), (16, 4), (17, 1), (18, 3), (19, 7),
    (20, 6), (21, 2), (22, 4), (23, 4), (24, 4), (25, 3), (26, 3), (27, 1), (28, 3), (29, 3),
    (30, 3), (31, 3), (32, 4), (33, 2), (34, 2), (35, 4), (36, 2), (37, 3), (38, 3), (39, 2),
    (40, 2), (41, 3), (42, 2), (43, 2), (44, 1), (45, 0), (46, 0), (47, 0), (48, 1), (49, 1),
    (50, 0), (51, 0), (56, 3), (57, 1), (58, 0), (60, 1), (61, 0), (64, 0), (65, 0), (66, 0),
)
# fmt: on


def build_api_versions_response(rng: random.Random) -> Any:
    cls = message_type(18, "response")
    return cls(
        error_code=0,
        api_keys=[cls.ApiVersion(api_key=k, min_version=0, max_version=v) for k, v in _BROKER_APIS],
        throttle_time_ms=0,
        # Tagged fields, as KRaft brokers send them.
        supported_features=[
            cls.SupportedFeatureKey(name="kraft.version", min_version=0, max_version=1),
            cls.SupportedFeatureKey(name="metadata.version", min_version=1, max_version=19),
        ],
        finalized_features_epoch=rng.randint(1000, 90_000),
        finalized_features=[
            cls.FinalizedFeatureKey(
                name="metadata.version", max_version_level=19, min_version_level=19
            ),
        ],
    )


def api_versions_response_to_kio(o: Any, m: ModuleType) -> Any:
    return m.ApiVersionsResponse(
        error_code=_kio_error(o.error_code),
        api_keys=_tuple(
            m.ApiVersion(api_key=a.api_key, min_version=a.min_version, max_version=a.max_version)
            for a in o.api_keys
        ),
        throttle_time=timedelta_ms(o.throttle_time_ms),
        supported_features=_tuple(
            m.SupportedFeatureKey(name=f.name, min_version=f.min_version, max_version=f.max_version)
            for f in o.supported_features
        ),
        finalized_features_epoch=o.finalized_features_epoch,
        finalized_features=_tuple(
            m.FinalizedFeatureKey(
                name=f.name,
                max_version_level=f.max_version_level,
                min_version_level=f.min_version_level,
            )
            for f in o.finalized_features
        ),
        zk_migration_ready=o.zk_migration_ready,
    )


def api_versions_response_to_kafka_python(o: Any, cls: Any) -> Any:
    kw: dict[str, Any] = {}
    if o.zk_migration_ready:  # kafka-python writes every tagged field that was passed
        kw["zk_migration_ready"] = True
    return cls(
        error_code=o.error_code,
        api_keys=[
            cls.ApiVersion(api_key=a.api_key, min_version=a.min_version, max_version=a.max_version)
            for a in o.api_keys
        ],
        throttle_time_ms=o.throttle_time_ms,
        supported_features=[
            cls.SupportedFeatureKey(
                name=f.name, min_version=f.min_version, max_version=f.max_version
            )
            for f in o.supported_features
        ],
        finalized_features_epoch=o.finalized_features_epoch,
        finalized_features=[
            cls.FinalizedFeatureKey(
                name=f.name,
                max_version_level=f.max_version_level,
                min_version_level=f.min_version_level,
            )
            for f in o.finalized_features
        ],
        **kw,
    )


# fmt: off
WORKLOADS: tuple[Workload, ...] = (
    Workload(
        "metadata", 3, "response", 12, "100 topics x 10 partitions",
        build_metadata, "metadata", metadata_to_kio, "metadata", metadata_to_kafka_python,
    ),
    Workload(
        "find_coordinator", 10, "response", 4, "100 coordinators",
        build_find_coordinator, "find_coordinator", find_coordinator_to_kio,
        "metadata", find_coordinator_to_kafka_python,
    ),
    Workload(
        "offset_fetch", 9, "response", 9, "20 groups x 10 topics x 10 partitions",
        build_offset_fetch, "offset_fetch", offset_fetch_to_kio,
        "consumer", offset_fetch_to_kafka_python,
    ),
    Workload(
        "produce", 0, "request", 9, "10 partitions x 1 KiB batch",
        build_produce, "produce", produce_to_kio, "producer", produce_to_kafka_python,
    ),
    Workload(
        "fetch", 1, "response", 12, "10 partitions x 1 KiB batch",
        build_fetch, "fetch", fetch_to_kio, "consumer", fetch_to_kafka_python,
    ),
    Workload(
        "api_versions_request", 18, "request", 3, "client name and version",
        build_api_versions_request, "api_versions", api_versions_request_to_kio,
        "metadata", api_versions_request_to_kafka_python,
    ),
    Workload(
        "api_versions_response", 18, "response", 3, "60 API keys, features",
        build_api_versions_response, "api_versions", api_versions_response_to_kio,
        "metadata", api_versions_response_to_kafka_python,
    ),
)
# fmt: on
