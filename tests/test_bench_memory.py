"""``kafkagen bench memory``: its clean-up removes through the Kafka API what requests
create, and its verdicts read the rounds' memory as documented."""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter
from typing import Any

from broker_helpers import WireClient
from kafkagen.bench.memory import (
    Reading,
    clean_up,
    internal_log_bytes,
    make_internal_topics,
    round_of_requests,
    verdict,
)
from kafkagen.chaos.requests import _name_pool
from kafkagen.generated import message_type
from kafkagen.runtime.broker.cluster import BackgroundCluster

CREATE_TOPICS, OFFSET_COMMIT, CREATE_ACLS, DESCRIBE_ACLS = 19, 8, 30, 29
ALTER_QUOTAS, DESCRIBE_QUOTAS, ALTER_SCRAM, DESCRIBE_SCRAM = 49, 48, 51, 50
METADATA, LIST_GROUPS, FIND_COORDINATOR = 3, 16, 10
LIST_TRANSACTIONS = 66


def _create(w: WireClient) -> None:
    """A topic, a group with a committed offset, an ACL, a client quota, a SCRAM user."""
    T: Any = message_type(CREATE_TOPICS, "request")
    topic = T.CreatableTopic(name="made", num_partitions=2, replication_factor=1)
    assert w.call(CREATE_TOPICS, 5, T(topics=[topic], timeout_ms=5000)).topics[0].error_code == 0
    F: Any = message_type(FIND_COORDINATOR, "request")
    assert w.call(FIND_COORDINATOR, 3, F(key="made-group", key_type=0)).error_code == 0
    C: Any = message_type(OFFSET_COMMIT, "request")
    commit = C(
        group_id="made-group",
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            C.OffsetCommitRequestTopic(
                name="made",
                partitions=[C.OffsetCommitRequestPartition(partition_index=0, committed_offset=0)],
            )
        ],
    )
    r = w.call(OFFSET_COMMIT, 8, commit)
    assert r.topics[0].partitions[0].error_code == 0
    A: Any = message_type(CREATE_ACLS, "request")
    acl = A.AclCreation(
        resource_type=2,
        resource_name="made",
        resource_pattern_type=3,
        principal="User:u",
        host="*",
        operation=3,
        permission_type=3,
    )
    assert w.call(CREATE_ACLS, 3, A(creations=[acl])).results[0].error_code == 0
    Q: Any = message_type(ALTER_QUOTAS, "request")
    entry = Q.EntryData(
        entity=[Q.EntityData(entity_type="client-id", entity_name="made-client")],
        ops=[Q.OpData(key="producer_byte_rate", value=1024.0, remove=False)],
    )
    assert w.call(ALTER_QUOTAS, 1, Q(entries=[entry])).entries[0].error_code == 0
    S: Any = message_type(ALTER_SCRAM, "request")
    upsert = S.ScramCredentialUpsertion(
        name="made-user", mechanism=1, iterations=4096, salt=b"s" * 16, salted_password=b"p" * 32
    )
    assert w.call(ALTER_SCRAM, 0, S(deletions=[], upsertions=[upsert])).results[0].error_code == 0


def _left(w: WireClient) -> dict[str, int]:
    md = w.call(METADATA, 12, message_type(METADATA, "request")(topics=None))
    acls = w.call(
        DESCRIBE_ACLS,
        3,
        message_type(DESCRIBE_ACLS, "request")(
            resource_type_filter=1,
            resource_name_filter=None,
            pattern_type_filter=1,
            principal_filter=None,
            host_filter=None,
            operation=1,
            permission_type=1,
        ),
    )
    quotas = w.call(
        DESCRIBE_QUOTAS, 1, message_type(DESCRIBE_QUOTAS, "request")(components=[], strict=False)
    )
    scram = w.call(DESCRIBE_SCRAM, 0, message_type(DESCRIBE_SCRAM, "request")(users=None))
    groups = w.call(LIST_GROUPS, 4, message_type(LIST_GROUPS, "request")(states_filter=[]))
    return {
        "topics": sum(1 for t in md.topics if not t.is_internal),
        "groups": len(groups.groups),
        "ACLs": sum(len(r.acls) for r in acls.resources),
        "client quotas": len(quotas.entries or []),
        "SCRAM users": len(scram.results),
    }


def test_the_clean_up_removes_what_requests_created() -> None:
    with BackgroundCluster(brokers=1) as c, WireClient(c.bootstrap) as w:
        _create(w)
        made = {"topics": 1, "groups": 1, "ACLs": 1, "client quotas": 1, "SCRAM users": 1}
        assert _left(w) == made
        removed = asyncio.run(clean_up(c.bootstrap))
        assert removed["topics"] == 1 and removed["groups"] == 1 and removed["ACLs"] == 1
        assert removed["client quotas"] == 1 and removed["SCRAM credentials"] == 1
        assert _left(w) == dict.fromkeys(made, 0)


def test_the_internal_topics_are_made_before_the_first_reading() -> None:
    """One FindCoordinator of each key type makes all three internal topics, which random
    requests would otherwise make in whichever round first asked."""
    with BackgroundCluster(brokers=1) as c:
        assert asyncio.run(internal_log_bytes(c.bootstrap)) == {}
        asyncio.run(make_internal_topics(c.bootstrap))
        assert set(asyncio.run(internal_log_bytes(c.bootstrap))) == {
            "__consumer_offsets",
            "__share_group_state",
            "__transaction_state",
        }


def _reading(label: str, mib: float) -> Reading:
    return Reading(label, 0, Counter(), 0.0, int(mib * 2**20), 10)


def test_verdicts_compare_the_second_half_with_half_way_and_the_clean_up_with_round_1() -> None:
    level = [_reading(f"round {i + 1}", m) for i, m in enumerate([50, 52, 54, 55, 57, 59])]
    lines = verdict([*level, _reading("clean-up", 54)])
    assert lines[0].startswith("levels off: yes") and "+9.3% on round 3's 54.0 MiB" in lines[0]
    assert lines[1].startswith("back after the clean-up: yes") and "+8.0%" in lines[1]
    growing = [_reading(f"round {i + 1}", 50 + 4 * i) for i in range(6)]
    lines = verdict([*growing, _reading("clean-up", 56)])
    assert lines[0].startswith("levels off: no") and "+20.7% on round 3's 58.0 MiB" in lines[0]
    assert lines[1].startswith("back after the clean-up: no") and "+12.0%" in lines[1]


def _named(w: WireClient) -> set[str]:
    """The topics, groups and transactional ids the broker keeps."""
    md = w.call(METADATA, 12, message_type(METADATA, "request")(topics=None))
    groups = w.call(LIST_GROUPS, 4, message_type(LIST_GROUPS, "request")(states_filter=[]))
    L: Any = message_type(LIST_TRANSACTIONS, "request")
    txns = w.call(LIST_TRANSACTIONS, 0, L(state_filters=[], producer_id_filters=[]))
    return (
        {t.name for t in md.topics if not t.is_internal}
        | {g.group_id for g in groups.groups}
        | {t.transactional_id for t in txns.transaction_states}
    )


def test_rounds_name_ids_from_one_pool_so_what_they_create_stays_bounded() -> None:
    """Rounds 1 and 2 of a run (uncorrupted, so no flipped bit makes a name of its own)
    leave topics, groups and transactional ids named only from the pool of ``--seed``: no
    Kafka API removes a transactional id, so a pool per round would grow them for good."""
    args = argparse.Namespace(seed=3, requests=800, names=6, connections=4)
    pool = set(_name_pool(3, 6))
    with BackgroundCluster(brokers=1) as c, WireClient(c.bootstrap) as w:
        for i in range(2):
            # A silent answer (acks=0) waits out ``limit`` before its probe: keep it short.
            rounds = round_of_requests(c.bootstrap, args, i, 60.0, corrupt_every=10**9, limit=2.0)
            stats = asyncio.run(rounds)
            assert stats.sent == 800 and stats.failures == 0
        named = _named(w)
        logs = asyncio.run(internal_log_bytes(c.bootstrap))
    assert len(named) >= 3, named  # the rounds did create state
    assert named <= pool, named - pool
    assert logs.get("__consumer_offsets", 0) > 0, logs
