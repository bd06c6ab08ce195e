"""Every handler, at every version it serves, answers well-formed requests of any content.

Random requests (the generated seeded builders) are valid on the wire but mostly nonsense
for the broker: each must still get a response that decodes at its version, on a
connection that stays open. Then a few API behaviours that need the wire to show.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator

import pytest
from broker_helpers import WireClient
from kafkagen.fuzz.builders import random_message
from kafkagen.generated import message_type
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.handlers import load_handlers

pytestmark = pytest.mark.timeout(120)

SEEDS = 3


@pytest.fixture(scope="module")
def cluster() -> Iterator[BackgroundCluster]:
    with BackgroundCluster(
        configs={
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "2",
            "auto.create.topics.enable": "false",
            "unstable.api.versions.enable": "true",
        }
    ) as c:
        yield c


def _cases() -> list[tuple[int, int]]:
    return [
        (key, v)
        for key, h in sorted(load_handlers().items())
        for v in range(h.min_version, h.max_unstable_version + 1)
    ]


@pytest.mark.parametrize(("api_key", "version"), _cases(), ids=lambda x: str(x))
def test_random_requests_get_decodable_answers(
    cluster: BackgroundCluster, api_key: int, version: int
) -> None:
    cls = message_type(api_key, "request")
    with WireClient(cluster.bootstrap, timeout=10) as w:
        for seed in range(SEEDS):
            req = random_message(cls, version, seed)
            if api_key == 1:
                req.max_wait_ms = 50  # type: ignore[attr-defined]  # no long polls here
            if api_key == 0 and req.acks == 0:  # type: ignore[attr-defined]
                req.acks = 1  # type: ignore[attr-defined]  # acks=0 has no response
            if api_key == 18 and version >= 3:
                req.client_software_name = "t"  # type: ignore[attr-defined]
                req.client_software_version = "1"  # type: ignore[attr-defined]
            cid = w.send(api_key, version, req)
            got, _ = w.receive(api_key, version)
            assert got == cid


def test_find_coordinator_v4_answers_each_key(cluster: BackgroundCluster) -> None:
    Req = message_type(10, "request")
    with WireClient(cluster.bootstrap) as w:
        r = w.call(10, 4, Req(key_type=0, coordinator_keys=["a", "", "b"]))
        errors = [(c.key, c.error_code) for c in r.coordinators]
        assert errors == [("a", 0), ("", ErrorCode.INVALID_REQUEST), ("b", 0)]
        assert all(c.port > 0 for c in r.coordinators if c.error_code == 0)
        r = w.call(10, 4, Req(key_type=1, coordinator_keys=["txn", ""]))
        errors = [(c.key, c.error_code) for c in r.coordinators]
        assert errors == [("txn", 0), ("", ErrorCode.INVALID_REQUEST)]
        r = w.call(10, 4, Req(key_type=2, coordinator_keys=["share"]))
        assert r.coordinators[0].error_code == ErrorCode.INVALID_REQUEST


def test_metadata_does_not_auto_create_by_default(cluster: BackgroundCluster) -> None:
    Req = message_type(3, "request")
    with WireClient(cluster.bootstrap) as w:
        r = w.call(3, 12, Req(topics=[Req.MetadataRequestTopic(name="nope")]))
        assert r.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        r = w.call(3, 12, Req(topics=[Req.MetadataRequestTopic(name="bad name!")]))
        assert r.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_metadata_auto_creates_when_enabled() -> None:
    Req = message_type(3, "request")
    with BackgroundCluster(configs={"auto.create.topics.enable": "true"}) as c:
        with WireClient(c.bootstrap) as w:
            r = w.call(3, 12, Req(topics=[Req.MetadataRequestTopic(name="auto")]))
            assert r.topics[0].error_code == 0 and len(r.topics[0].partitions) == 1
            r = w.call(
                3,
                12,
                Req(topics=[Req.MetadataRequestTopic(name="no")], allow_auto_topic_creation=False),
            )
            assert r.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_fetch_session_ids_are_refused_so_clients_fall_back_to_full_fetches(
    cluster: BackgroundCluster,
) -> None:
    Req = message_type(1, "request")
    with WireClient(cluster.bootstrap) as w:
        r = w.call(1, 12, Req(session_id=7, session_epoch=1, max_wait_ms=0))
        assert r.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        r = w.call(1, 12, Req(session_id=0, session_epoch=0, max_wait_ms=0))
        assert r.error_code == 0 and r.session_id == 0
        # A full fetch naming a session (Kafka closes it) and an incremental one without.
        r = w.call(1, 12, Req(session_id=7, session_epoch=-1, max_wait_ms=0))
        assert r.error_code == 0 and r.session_id == 0
        r = w.call(1, 12, Req(session_id=0, session_epoch=3, max_wait_ms=0))
        assert r.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_shutdown_answers_a_parked_fetch() -> None:
    from kafkagen.runtime.records import Record, build_batch

    c = BackgroundCluster().start()
    try:
        assert c.cluster is not None
        topic = c.call(lambda: c.cluster.metadata.create_topic("parked", 1, 1))  # type: ignore[union-attr]
        Produce = message_type(0, "request")
        Fetch = message_type(1, "request")
        with WireClient(c.bootstrap) as w:
            data = build_batch([Record(-1, 1, b"k", b"v")])
            w.call(
                0,
                9,
                Produce(
                    acks=1,
                    timeout_ms=1000,
                    topic_data=[
                        Produce.TopicProduceData(
                            name="parked",
                            partition_data=[Produce.PartitionProduceData(index=0, records=data)],
                        )
                    ],
                ),
            )
            fetch = Fetch(
                max_wait_ms=30_000,
                min_bytes=1,
                topics=[
                    Fetch.FetchTopic(
                        topic_id=topic.topic_id,
                        partitions=[
                            Fetch.FetchPartition(
                                partition=0, fetch_offset=1, partition_max_bytes=1 << 20
                            )
                        ],
                    )
                ],
            )
            cid = w.send(1, 13, fetch)
            time.sleep(0.2)
            started = time.monotonic()
            c.stop()
            got, r = w.receive(1, 13)
            assert got == cid and r.responses[0].partitions[0].high_watermark == 1
            assert time.monotonic() - started < 5
            assert w.is_closed()
    finally:
        c.stop()


def test_fetch_v18_reads_as_v17_whatever_high_watermark_it_carries() -> None:
    # v18's HighWatermark is a fetching replica's (KIP-1166); a consumer's fetch reads the same.
    from kafkagen.runtime.records import Record, build_batch, iter_records

    with BackgroundCluster() as c:
        assert c.cluster is not None
        topic = c.call(lambda: c.cluster.metadata.create_topic("v18", 1, 1))  # type: ignore[union-attr]
        Produce = message_type(0, "request")
        Fetch = message_type(1, "request")
        with WireClient(c.bootstrap) as w:
            records = [Record(-1, i, b"k", b"v%d" % i) for i in range(3)]
            produce = Produce(
                acks=1,
                timeout_ms=1000,
                topic_data=[
                    Produce.TopicProduceData(
                        name="v18",
                        partition_data=[
                            Produce.PartitionProduceData(index=0, records=build_batch(records))
                        ],
                    )
                ],
            )
            assert w.call(0, 9, produce).responses[0].partition_responses[0].error_code == 0
            answers = []
            for version, high_watermark in ((17, None), (18, 1), (18, 2**63 - 1)):
                partition = Fetch.FetchPartition(
                    partition=0, fetch_offset=1, partition_max_bytes=1 << 20
                )
                if high_watermark is not None:
                    partition.high_watermark = high_watermark
                fetch = Fetch(
                    max_wait_ms=0,
                    min_bytes=1,
                    topics=[Fetch.FetchTopic(topic_id=topic.topic_id, partitions=[partition])],
                )
                p = w.call(1, version, fetch).responses[0].partitions[0]
                values = [r.value for r in iter_records(p.records)]
                answers.append((p.error_code, p.high_watermark, values))
            assert answers == [(0, 3, [b"v0", b"v1", b"v2"])] * 3  # the whole batch holding 1


def test_acks_zero_failure_closes_the_connection(cluster: BackgroundCluster) -> None:
    Produce = message_type(0, "request")
    with WireClient(cluster.bootstrap) as w:
        req = Produce(
            acks=0,
            timeout_ms=1000,
            topic_data=[
                Produce.TopicProduceData(
                    name="no-such-topic",
                    partition_data=[Produce.PartitionProduceData(index=0, records=b"")],
                )
            ],
        )
        w.send(0, 9, req)
        assert w.is_closed()


def test_api_versions_v0_header_layout_for_too_new_request(cluster: BackgroundCluster) -> None:
    with WireClient(cluster.bootstrap) as w:
        frame = struct.pack(">hhi", 18, 127, 5) + b"\x00\x01x\x00"
        w.send_raw(struct.pack(">i", len(frame)) + frame)
        data = w.read_frame()
        # Header v0 (correlation id only), then error code 35 and the key array.
        assert struct.unpack_from(">ih", data) == (5, 35)


def test_too_many_partitions_in_one_request_are_refused_before_any_is_made(
    cluster: BackgroundCluster,
) -> None:
    C = message_type(19, "request")
    P = message_type(37, "request")
    topic = C.CreatableTopic
    with WireClient(cluster.bootstrap) as w:
        # 6,000 + 5,000 + 1 > 10,000 in all: every topic is refused, as Kafka's controller does
        r = w.call(
            19,
            7,
            C(
                topics=[
                    topic(name="cap-a", num_partitions=6000, replication_factor=1),
                    topic(name="cap-b", num_partitions=5000, replication_factor=1),
                    topic(name="cap-c", num_partitions=1, replication_factor=1),
                ],
                timeout_ms=1000,
            ),
        )
        assert [(t.error_code, t.error_message) for t in r.topics] == [
            (ErrorCode.POLICY_VIOLATION, "Excessively large number of partitions per request.")
        ] * 3
        r = w.call(
            19,
            7,
            C(
                topics=[topic(name="cap-d", num_partitions=1, replication_factor=1)],
                timeout_ms=1000,
            ),
        )
        assert r.topics[0].error_code == 0
        started = time.monotonic()
        r = w.call(
            37,
            3,
            P(topics=[P.CreatePartitionsTopic(name="cap-d", count=2**31 - 1)], timeout_ms=1000),
        )
        assert time.monotonic() - started < 5
        assert [(x.error_code, x.error_message) for x in r.results] == [
            (
                ErrorCode.POLICY_VIOLATION,
                "Excessively large number of additional partitions per request.",
            )
        ]
