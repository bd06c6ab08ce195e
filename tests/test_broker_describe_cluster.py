"""DescribeCluster over real sockets: the live brokers, and from v2 the fenced ones on request."""

from __future__ import annotations

import pytest
from broker_helpers import WireClient
from kafkagen.generated.describe_cluster import DescribeClusterRequest
from kafkagen.runtime.broker.cluster import BackgroundCluster

pytestmark = pytest.mark.timeout(60)
KEY = 60


def _brokers(w: WireClient, version: int, include_fenced: bool = False) -> dict[int, bool]:
    r = w.call(KEY, version, DescribeClusterRequest(include_fenced_brokers=include_fenced))
    assert r.error_code == 0
    return {b.broker_id: b.is_fenced for b in r.brokers}


def test_a_paused_broker_is_listed_as_fenced_only_when_asked_for() -> None:
    with BackgroundCluster(3) as c:
        assert c.cluster is not None
        cl = c.cluster
        first = cl.brokers[0].info
        with WireClient(f"{first.host}:{first.port}") as w:
            assert _brokers(w, 2, include_fenced=True) == {0: False, 1: False, 2: False}
            c.run(cl.pause_broker(2))
            assert _brokers(w, 2, include_fenced=True) == {0: False, 1: False, 2: True}
            assert _brokers(w, 2, include_fenced=False) == {0: False, 1: False}
            assert _brokers(w, 1) == {0: False, 1: False}
