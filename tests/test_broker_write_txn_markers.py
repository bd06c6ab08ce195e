"""WriteTxnMarkers (API 27): the admin client's way to end a hanging transaction, on the
broker's own marker path."""

from __future__ import annotations

from typing import Any

from broker_helpers import WireClient
from kafkagen.generated.describe_producers import DescribeProducersRequest
from kafkagen.generated.write_txn_markers import WriteTxnMarkersRequest
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.errors import ErrorCode

R = WriteTxnMarkersRequest


def open_producer(w: WireClient, topic: str) -> Any:
    """The one producer DescribeProducers knows on partition 0 of ``topic``."""
    request = DescribeProducersRequest(
        topics=[DescribeProducersRequest.TopicRequest(name=topic, partition_indexes=[0])]
    )
    (state,) = w.call(61, 0, request).topics[0].partitions[0].active_producers
    return state


def abort(w: WireClient, topic: str, pid: int, epoch: int, coordinator_epoch: int) -> int:
    marker = R.WritableTxnMarker(
        producer_id=pid,
        producer_epoch=epoch,
        transaction_result=False,
        topics=[R.WritableTxnMarkerTopic(name=topic, partition_indexes=[0])],
        coordinator_epoch=coordinator_epoch,
    )
    answer = w.call(27, 1, R(markers=[marker])).markers[0]
    assert answer.producer_id == pid
    return int(answer.topics[0].partitions[0].error_code)


def test_an_abort_marker_ends_an_open_transaction_as_kafkas_admin_client_sends_it() -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    with BackgroundCluster(1) as c, WireClient(c.bootstrap) as w:
        admin = AdminClient({"bootstrap.servers": c.bootstrap})  # alive until answered
        admin.create_topics([NewTopic("hanging", 1, 1)])["hanging"].result(10)
        p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "t1"})
        p.init_transactions(10)
        p.begin_transaction()
        p.produce("hanging", b"v", partition=0)
        assert p.flush(10) == 0
        state = open_producer(w, "hanging")
        assert state.current_txn_start_offset == 0
        pid, epoch = state.producer_id, state.producer_epoch
        assert abort(w, "unknown-topic", pid, epoch, 0) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert abort(w, "hanging", pid, epoch, 0) == 0
        assert open_producer(w, "hanging").current_txn_start_offset == -1
