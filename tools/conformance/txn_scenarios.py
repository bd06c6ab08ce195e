"""Transactions: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit,
EndTxn, read_committed fetches, and the transaction listings."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kafkagen.generated.add_offsets_to_txn import AddOffsetsToTxnRequest
from kafkagen.generated.add_partitions_to_txn import AddPartitionsToTxnRequest
from kafkagen.generated.describe_producers import DescribeProducersRequest
from kafkagen.generated.describe_transactions import DescribeTransactionsRequest
from kafkagen.generated.end_txn import EndTxnRequest
from kafkagen.generated.init_producer_id import InitProducerIdRequest
from kafkagen.generated.list_transactions import ListTransactionsRequest
from kafkagen.generated.txn_offset_commit import TxnOffsetCommitRequest

from .core import Session, SetupError, scenario
from .group_scenarios import _fetch_offsets
from .messages import batch, fetch, list_offsets, produce

#: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, CONCURRENT_TRANSACTIONS.
_RETRIABLE = (14, 15, 51)
NOT_COORDINATOR = 16
#: The versions of AddPartitionsToTxn clients use (v4+ is for brokers).
ADD_PARTITIONS_CLIENT_VERSION = 3
#: The last versions of transactions v1, where the client adds partitions and offsets
#: itself and the epoch stays for the producer's life: Produce, EndTxn, TxnOffsetCommit.
PRODUCE_V1, END_TXN_V1, TXN_OFFSET_COMMIT_V1 = 11, 4, 4


def _init(tid: str | None, timeout_ms: int = 60000) -> InitProducerIdRequest:
    return InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=timeout_ms)


def _add_partitions(tid: str, pid: int, epoch: int, topic: str) -> AddPartitionsToTxnRequest:
    A = AddPartitionsToTxnRequest
    return A(
        v3_and_below_transactional_id=tid,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[A.AddPartitionsToTxnTopic(name=topic, partitions=[0])],
    )


def _end(tid: str, pid: int, epoch: int, commit: bool) -> EndTxnRequest:
    return EndTxnRequest(
        transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit
    )


class _Txn:
    """A transactional producer's ids on one broker, found by set-up."""

    def __init__(self, s: Session, tid: str, node: int, pid: int, epoch: int) -> None:
        self.s, self.tid, self.node, self.pid, self.epoch = s, tid, node, pid, epoch

    async def add(self, topic: str, record: bool = True) -> Any:
        req = _add_partitions(self.tid, self.pid, self.epoch, topic)
        v = ADD_PARTITIONS_CLIENT_VERSION
        if record:
            return await self.s.call(req, v, node=self.node)
        return await self.s.setup(req, v, node=self.node)

    def batch(self, count: int = 2, seq: int = 0, **kw: Any) -> bytes:
        return batch(
            count,
            **kw,
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=seq,
            transactional=True,
        )


async def _txn(s: Session, part: str = "tx") -> _Txn:
    tid = s.name(part)
    node = await s.coordinator(tid, 1)
    for _ in range(100):  # bounded: a coordinator still loading its partition says so
        r = await s.setup(_init(tid), node=node)
        if r.error_code == NOT_COORDINATOR:  # a cluster just started may still move it
            node = await s.coordinator(tid, 1)
        elif r.error_code not in _RETRIABLE:
            break
        await asyncio.sleep(0.1)
    if r.error_code != 0:
        raise SetupError(f"InitProducerId {tid}: error {r.error_code}")
    return _Txn(s, tid, node, int(r.producer_id), int(r.producer_epoch))


async def _settled(s: Session, topic: str, node: int) -> None:
    """Wait (set-up) until the transaction's markers are written: the read_committed end
    of the log reaches the read_uncommitted one. EndTxn may answer before that."""
    for _ in range(100):
        committed = await s.setup(list_offsets(topic, -1, isolation=1), node=node)
        latest = await s.setup(list_offsets(topic, -1), node=node)
        if committed.topics[0].partitions[0].offset == latest.topics[0].partitions[0].offset:
            return
        await asyncio.sleep(0.05)
    raise SetupError(f"{topic}: the transaction markers were not written in 5 s")


async def _completed(s: Session, x: _Txn) -> None:
    """Wait (set-up) until the coordinator has written the transaction's Complete state,
    which follows the markers."""
    for _ in range(100):
        r = await s.setup(DescribeTransactionsRequest(transactional_ids=[x.tid]), node=x.node)
        if r.transaction_states[0].transaction_state.startswith("Complete"):
            return
        await asyncio.sleep(0.05)
    raise SetupError(f"{x.tid}: the transaction did not complete in 5 s")


# ---------------------------------------------------------------------- InitProducerId


@scenario("InitProducerId", "idempotent", "a producer id for an idempotent producer")
async def init_idempotent(s: Session) -> None:
    await s.call(_init(None))


@scenario("InitProducerId", "transactional-twice", "the same transactional id: the epoch bumps")
async def init_twice(s: Session) -> None:
    tid = s.name("tx")
    node = await s.coordinator(tid, 1)
    await s.call(_init(tid), node=node)
    await s.call(_init(tid), node=node)


@scenario("InitProducerId", "timeout-too-large", "a transaction timeout above the maximum")
async def init_bad_timeout(s: Session) -> None:
    tid = s.name("tx")
    await s.call(_init(tid, 3_600_000), node=await s.coordinator(tid, 1))


@scenario("InitProducerId", "id-without-epoch", "a producer id named with no epoch")
async def init_id_without_epoch(s: Session) -> None:
    req = _init(None)
    req.producer_id, req.producer_epoch = 7, -1
    await s.call(req)


@scenario("InitProducerId", "idempotent-names-a-producer", "no transactional id, an old id")
async def init_idempotent_named(s: Session) -> None:
    req = _init(None)
    req.producer_id, req.producer_epoch = 424242, 3
    await s.call(req)


@scenario("InitProducerId", "new-id-names-a-producer", "a new transactional id, an old id")
async def init_new_named(s: Session) -> None:
    tid = s.name("tx")
    req = _init(tid)
    req.producer_id, req.producer_epoch = 424242, 3
    await s.call(req, node=await s.coordinator(tid, 1))


@scenario("InitProducerId", "not-coordinator", "to a broker that does not coordinate it", brokers=2)
async def init_not_coordinator(s: Session) -> None:
    tid = s.name("tx")
    await s.call(_init(tid), node=s.other_node(await s.coordinator(tid, 1)))


# ---------------------------------------------------------------------- a transaction


@scenario("EndTxn", "commit", "add a partition, write two records, commit, read_committed")
async def txn_commit(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    await x.add(t)
    leader = await s.leader(t)
    await s.call(produce(t, x.batch(), transactional_id=x.tid), node=leader)
    await s.call(fetch(t, s.topic_uuids[t], isolation=1), node=leader)
    await s.call(_end(x.tid, x.pid, x.epoch, True), node=x.node)
    await _settled(s, t, leader)
    await s.call(fetch(t, s.topic_uuids[t], isolation=1), node=leader)


@scenario("EndTxn", "abort", "abort: read_committed lists the aborted transaction")
async def txn_abort(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    await x.add(t, record=False)
    leader = await s.leader(t)
    await s.setup(produce(t, x.batch(), transactional_id=x.tid), node=leader)
    await s.call(_end(x.tid, x.pid, x.epoch, False), node=x.node)
    await _settled(s, t, leader)
    await s.call(list_offsets(t, -1, isolation=1), node=leader)
    await s.call(fetch(t, s.topic_uuids[t], isolation=1), node=leader)


@scenario("EndTxn", "no-transaction", "commit with no transaction open")
async def txn_end_idle(s: Session) -> None:
    x = await _txn(s)
    await s.call(_end(x.tid, x.pid, x.epoch, True), node=x.node)


@scenario("EndTxn", "wrong-epoch", "commit at an epoch below the producer's")
async def txn_end_fenced(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    await x.add(t, record=False)
    await s.call(_end(x.tid, x.pid, x.epoch + 3, True), node=x.node)


@scenario("EndTxn", "unknown-producer-id", "a producer id the transactional id does not have")
async def txn_end_unknown_pid(s: Session) -> None:
    x = await _txn(s)
    await s.call(_end(x.tid, x.pid + 1000, x.epoch, True), node=x.node)


@scenario("EndTxn", "not-coordinator", "to a broker that does not coordinate it", brokers=2)
async def txn_end_not_coordinator(s: Session) -> None:
    x = await _txn(s)
    await s.call(_end(x.tid, x.pid, x.epoch, True), node=s.other_node(x.node))


@scenario("EndTxn", "abort-nothing-open", "v5+: an abort with no transaction open")
async def txn_end_abort_idle(s: Session) -> None:
    x = await _txn(s)
    await s.call(_end(x.tid, x.pid, x.epoch, False), node=x.node)
    await _completed(s, x)
    await s.call(DescribeTransactionsRequest(transactional_ids=[x.tid]), node=x.node)


@scenario("EndTxn", "retry", "v5+: the same commit again after it completed, then at the new epoch")
async def txn_end_retry(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    leader = await s.leader(t)
    await s.setup(produce(t, x.batch(), transactional_id=x.tid), node=leader)
    await s.call(_end(x.tid, x.pid, x.epoch, True), node=x.node)
    await _completed(s, x)
    await s.call(_end(x.tid, x.pid, x.epoch, True), node=x.node)
    await s.call(_end(x.tid, x.pid, x.epoch + 1, True), node=x.node)


@scenario("EndTxn", "v4-commit", "v4: add, write, commit: the epoch stays")
async def txn_end_v4(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    await x.add(t, record=False)
    leader = await s.leader(t)
    await s.setup(produce(t, x.batch(), transactional_id=x.tid), PRODUCE_V1, node=leader)
    await s.call(_end(x.tid, x.pid, x.epoch, True), END_TXN_V1, node=x.node)
    await _completed(s, x)
    await s.call(DescribeTransactionsRequest(transactional_ids=[x.tid]), node=x.node)


@scenario("AddPartitionsToTxn", "ordinary", "add a partition, then again (idempotent)")
async def add_partitions(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    await x.add(t)
    await x.add(t)


@scenario("AddPartitionsToTxn", "unknown-topic", "a topic that does not exist")
async def add_partitions_unknown(s: Session) -> None:
    x = await _txn(s)
    await x.add(s.name("missing"))


@scenario("AddPartitionsToTxn", "fenced-epoch", "after a second InitProducerId bumped the epoch")
async def add_partitions_fenced(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    await s.setup(_init(x.tid), node=x.node)
    await x.add(t)


@scenario("AddPartitionsToTxn", "unknown-producer-id", "a producer id never issued")
async def add_partitions_bad_pid(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    x.pid += 1000
    await x.add(t)


@scenario("AddPartitionsToTxn", "not-coordinator", "to another broker", brokers=2)
async def add_partitions_not_coordinator(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    x.node = s.other_node(x.node)
    await x.add(t)


@scenario(
    "Produce", "transactional-not-added", "v11: a transactional batch to a partition not added"
)
async def produce_txn_not_added(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    req = produce(t, x.batch(), transactional_id=x.tid)
    await s.call(req, PRODUCE_V1, node=await s.leader(t))


@scenario(
    "Produce", "transactional-adds-partition", "v12+: the broker adds the partition, then commit"
)
async def produce_txn_adds(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    leader = await s.leader(t)
    await s.call(produce(t, x.batch(), transactional_id=x.tid), node=leader)
    await s.call(DescribeTransactionsRequest(transactional_ids=[x.tid]), node=x.node)
    await s.call(_end(x.tid, x.pid, x.epoch, True), node=x.node)
    await _settled(s, t, leader)
    await s.call(list_offsets(t, -1, isolation=1), node=leader)


@scenario("Produce", "fenced-transactional", "a batch at the old epoch after a re-init")
async def produce_txn_fenced(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    await x.add(t, record=False)
    await s.setup(_init(x.tid), node=x.node)
    await s.call(produce(t, x.batch(), transactional_id=x.tid), node=await s.leader(t))


def _txn_offsets(x: _Txn, group: str, topic: str) -> TxnOffsetCommitRequest:
    T = TxnOffsetCommitRequest
    return T(
        transactional_id=x.tid,
        group_id=group,
        producer_id=x.pid,
        producer_epoch=x.epoch,
        topics=[
            T.TxnOffsetCommitRequestTopic(
                name=topic,
                topic_id=x.s.topic_uuids[topic],
                partitions=[
                    T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=4)
                ],
            )
        ],
    )


@scenario("TxnOffsetCommit", "ordinary", "AddOffsetsToTxn, TxnOffsetCommit, commit")
async def txn_offsets(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    x = await _txn(s)
    await s.call(
        AddOffsetsToTxnRequest(
            transactional_id=x.tid, producer_id=x.pid, producer_epoch=x.epoch, group_id=g
        ),
        node=x.node,
    )
    await s.call(_txn_offsets(x, g, t), node=await s.coordinator(g))
    await s.call(_end(x.tid, x.pid, x.epoch, True), node=x.node)


@scenario("TxnOffsetCommit", "without-add-offsets", "offsets for a group not added")
async def txn_offsets_not_added(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    x = await _txn(s)
    await s.call(_txn_offsets(x, g, t), node=await s.coordinator(g))


@scenario("TxnOffsetCommit", "without-add-offsets-v4", "v4: offsets for a group not added")
async def txn_offsets_not_added_v4(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    x = await _txn(s)
    await s.call(_txn_offsets(x, g, t), TXN_OFFSET_COMMIT_V1, node=await s.coordinator(g))


@scenario("TxnOffsetCommit", "adds-offsets", "v5+: the broker adds the group, then commit")
async def txn_offsets_adds(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    x = await _txn(s)
    await s.call(_txn_offsets(x, g, t), node=await s.coordinator(g))
    await s.call(DescribeTransactionsRequest(transactional_ids=[x.tid]), node=x.node)
    await s.call(_end(x.tid, x.pid, x.epoch, True), node=x.node)


@scenario("TxnOffsetCommit", "not-coordinator", "to a broker not coordinating the group", brokers=2)
async def txn_offsets_not_coordinator(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    x = await _txn(s)
    await s.call(_txn_offsets(x, g, t), node=s.other_node(await s.coordinator(g)))


@scenario("AddOffsetsToTxn", "fenced-epoch", "at an epoch below the producer's")
async def add_offsets_fenced(s: Session) -> None:
    x = await _txn(s)
    await s.setup(_init(x.tid), node=x.node)
    await s.call(
        AddOffsetsToTxnRequest(
            transactional_id=x.tid, producer_id=x.pid, producer_epoch=x.epoch, group_id=s.name("g")
        ),
        node=x.node,
    )


# ---------------------------------------------------------------------- listings


@scenario("DescribeTransactions", "ongoing", "a transaction with one partition added")
async def describe_txn(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    await x.add(t, record=False)
    await s.call(DescribeTransactionsRequest(transactional_ids=[x.tid]), node=x.node)


@scenario("DescribeTransactions", "unknown-id", "a transactional id never used")
async def describe_txn_unknown(s: Session) -> None:
    tid = s.name("tx")
    await s.call(
        DescribeTransactionsRequest(transactional_ids=[tid]), node=await s.coordinator(tid, 1)
    )


@scenario("ListTransactions", "mine", "this scenario's transactional ids among all")
async def list_txns(s: Session) -> None:
    x = await _txn(s)

    def keep(data: Any) -> Any:
        data["transactionStates"] = [
            t for t in data["transactionStates"] if t["transactionalId"].startswith(s.prefix)
        ]
        return data

    await s.call(ListTransactionsRequest(), node=x.node, keep=keep)


def _now_ms() -> int:
    """A create time for batches whose producer state a scenario reads: Kafka expires a
    producer whose last batch was created a day before its periodic check (every ten
    minutes), so the suite's fixed 2023 timestamps would let that check empty the answer."""
    return int(time.time() * 1000)


async def _idempotent_batch(s: Session) -> bytes:
    """Two records of a new idempotent producer (set-up), created now."""
    r = await s.setup(_init(None))
    return batch(
        2,
        producer_id=r.producer_id,
        producer_epoch=r.producer_epoch,
        base_sequence=0,
        timestamp=_now_ms(),
    )


@scenario("DescribeProducers", "idempotent", "the producer state after an idempotent write")
async def describe_producers(s: Session) -> None:
    t = await s.create_topic()
    data = await _idempotent_batch(s)
    await s.produced(t, data)
    D = DescribeProducersRequest
    req = D(topics=[D.TopicRequest(name=t, partition_indexes=[0])])
    await s.call(req, node=await s.leader(t))


@scenario("DescribeProducers", "not-leader", "to a broker that is not the leader", brokers=2)
async def describe_producers_not_leader(s: Session) -> None:
    t = await s.create_topic()
    D = DescribeProducersRequest
    req = D(topics=[D.TopicRequest(name=t, partition_indexes=[0])])
    await s.call(req, node=s.other_node(await s.leader(t)))


@scenario("DescribeProducers", "unknown-topic", "a topic that does not exist")
async def describe_producers_unknown(s: Session) -> None:
    D = DescribeProducersRequest
    await s.call(D(topics=[D.TopicRequest(name=s.name("missing"), partition_indexes=[0])]))


@scenario("DescribeProducers", "invalid-topic-name", "a name topics may not have")
async def describe_producers_invalid(s: Session) -> None:
    D = DescribeProducersRequest
    await s.call(D(topics=[D.TopicRequest(name=s.name("bad/name"), partition_indexes=[0])]))


@scenario("DescribeTransactions", "empty-id", "a transactional id of no characters")
async def describe_txn_empty(s: Session) -> None:
    await s.call(DescribeTransactionsRequest(transactional_ids=[""]))


async def _roles(s: Session, topic: str) -> tuple[int, int, int]:
    """The leader, the follower and a broker without a replica of ``topic``-0 (two
    replicas on three brokers)."""
    md = await s.metadata([topic])
    p = md.topics[0].partitions[0]
    follower = next(r for r in p.replica_nodes if r != p.leader_id)
    outside = next(n for n in sorted(s.target.nodes) if n not in p.replica_nodes)
    return int(p.leader_id), int(follower), outside


async def _describe_producers_everywhere(s: Session, topic: str) -> None:
    leader, follower, outside = await _roles(s, topic)
    D = DescribeProducersRequest
    req = D(topics=[D.TopicRequest(name=topic, partition_indexes=[0])])
    for node in (leader, follower, outside):
        await s.call(req, node=node)


@scenario(
    "DescribeProducers",
    "every-replica",
    "an idempotent write (acks=-1) seen from the leader, the follower and a non-replica",
    brokers=3,
)
async def describe_producers_every_replica(s: Session) -> None:
    t = await s.create_topic(replication=2)
    data = await _idempotent_batch(s)
    await s.produced(t, data, acks=-1)
    await _describe_producers_everywhere(s, t)


@scenario(
    "DescribeProducers",
    "follower-transaction",
    "an open transaction, then its commit, seen from every broker",
    brokers=3,
)
async def describe_producers_follower_txn(s: Session) -> None:
    t = await s.create_topic(replication=2)
    x = await _txn(s)
    await x.add(t, record=False)
    leader = await s.leader(t)
    txn_batch = x.batch(timestamp=_now_ms())
    await s.setup(produce(t, txn_batch, transactional_id=x.tid, acks=-1), node=leader)
    await _describe_producers_everywhere(s, t)
    await s.setup(_end(x.tid, x.pid, x.epoch, True), node=x.node)
    # Settled on the leader: the high watermark is past the marker, so the follower has it.
    await _settled(s, t, leader)
    await _describe_producers_everywhere(s, t)


# ---------------------------------------------------------------------- transactions v2 (KIP-890)
# At the run's versions (InitProducerId 5, Produce 12+, EndTxn 5, TxnOffsetCommit 5+): the
# broker adds partitions and groups, every EndTxn ends under the next epoch. InitProducerId
# v6 (two-phase commit) is unstable in Kafka 4.4 and not compared here: tests/test_txn_java.py
# checks it on the wire against both brokers with unstable versions enabled.


def _init_as(x: _Txn, pid: int, epoch: int) -> InitProducerIdRequest:
    return InitProducerIdRequest(
        transactional_id=x.tid, transaction_timeout_ms=60000, producer_id=pid, producer_epoch=epoch
    )


async def _open_v2(s: Session, x: _Txn, topic: str) -> int:
    """A transactions v2 transaction opened by a Produce (set-up); the topic's leader."""
    leader = await s.leader(topic)
    await s.setup(produce(topic, x.batch(), transactional_id=x.tid), node=leader)
    return leader


async def _commit_v2(s: Session, x: _Txn, topic: str) -> None:
    """Set-up: write to ``topic`` and commit under transactions v2; ``x`` goes on under the
    bumped epoch (sequences start again at 0)."""
    await _open_v2(s, x, topic)
    r = await s.setup(_end(x.tid, x.pid, x.epoch, True), node=x.node)
    if r.error_code:
        raise SetupError(f"EndTxn {x.tid}: error {r.error_code}")
    x.pid, x.epoch = int(r.producer_id), int(r.producer_epoch)
    await _completed(s, x)


@scenario("InitProducerId", "v5-resume", "the current producer id and epoch named: the next epoch")
async def init_resume(s: Session) -> None:
    x = await _txn(s)
    await s.call(_init_as(x, x.pid, x.epoch), node=x.node)


@scenario("InitProducerId", "v5-stale-epoch", "an epoch below the current one named: fenced")
async def init_stale_epoch(s: Session) -> None:
    x = await _txn(s)
    await s.setup(_init(x.tid), node=x.node)
    await s.call(_init_as(x, x.pid, x.epoch), node=x.node)


@scenario("InitProducerId", "v5-other-producer-id", "a producer id the transactional id lacks")
async def init_other_pid(s: Session) -> None:
    x = await _txn(s)
    await s.call(_init_as(x, x.pid + 1000, 0), node=x.node)


@scenario(
    "InitProducerId",
    "v5-fences-open-v2-transaction",
    "a new producer while a Produce-opened transaction is open: aborted, then two epochs on",
)
async def init_fences_v2(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    leader = await _open_v2(s, x, t)
    await s.call(_init(x.tid), node=x.node)  # CONCURRENT_TRANSACTIONS while it aborts
    await _completed(s, x)
    await s.call(_init(x.tid), node=x.node)
    await _settled(s, t, leader)
    await s.call(list_offsets(t, -1, isolation=1), node=leader)


@scenario("EndTxn", "v5-two-transactions", "two commits in a row: each answers the next epoch")
async def end_v2_twice(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    for _ in range(2):
        await _open_v2(s, x, t)
        r = await s.call(_end(x.tid, x.pid, x.epoch, True), node=x.node)
        x.epoch = int(r.producer_epoch)
        await _completed(s, x)
    await s.call(DescribeTransactionsRequest(transactional_ids=[x.tid]), node=x.node)


@scenario("EndTxn", "v5-stale-epoch", "after a commit bumped the epoch, an EndTxn two epochs back")
async def end_v2_stale(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    await _commit_v2(s, x, t)
    await s.call(_end(x.tid, x.pid, x.epoch - 2, True), node=x.node)
    await s.call(_end(x.tid, x.pid, x.epoch - 2, False), node=x.node)


@scenario("EndTxn", "v5-other-outcome-retry", "an abort, then a commit naming the epoch before it")
async def end_v2_other_outcome(s: Session) -> None:
    x = await _txn(s)
    await s.setup(_end(x.tid, x.pid, x.epoch, False), node=x.node)
    await _completed(s, x)
    await s.call(_end(x.tid, x.pid, x.epoch, True), node=x.node)


@scenario(
    "EndTxn",
    "v5-fenced-producer",
    "the old producer's commit after a new one aborted its transaction",
)
async def end_v2_fenced(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    await _open_v2(s, x, t)
    await s.setup(_init(x.tid), node=x.node)
    await _completed(s, x)
    await s.call(_end(x.tid, x.pid, x.epoch, True), node=x.node)


def _verify(x: _Txn, topic: str, partitions: list[int], verify_only: bool) -> Any:
    A = AddPartitionsToTxnRequest
    return A(
        transactions=[
            A.AddPartitionsToTxnTransaction(
                transactional_id=x.tid,
                producer_id=x.pid,
                producer_epoch=x.epoch,
                verify_only=verify_only,
                topics=[A.AddPartitionsToTxnTopic(name=topic, partitions=partitions)],
            )
        ]
    )


@scenario(
    "AddPartitionsToTxn",
    "v5-verify-only",
    "a broker's verification: a partition in the transaction and one not in it",
)
async def add_partitions_verify(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    x = await _txn(s)
    await _open_v2(s, x, t)
    await s.call(_verify(x, t, [0], True), node=x.node)
    await s.call(_verify(x, t, [1], True), node=x.node)


@scenario("AddPartitionsToTxn", "v5-verify-only-idle", "verification with no transaction open")
async def add_partitions_verify_idle(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    await s.call(_verify(x, t, [0], True), node=x.node)


@scenario("AddPartitionsToTxn", "v5-verify-only-fenced", "verification at an older epoch")
async def add_partitions_verify_fenced(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    await s.setup(_init(x.tid), node=x.node)
    await s.call(_verify(x, t, [0], True), node=x.node)


@scenario("AddPartitionsToTxn", "v5-add", "the broker form adding a partition, then described")
async def add_partitions_v5(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    await s.call(_verify(x, t, [0], False), node=x.node)
    await s.call(DescribeTransactionsRequest(transactional_ids=[x.tid]), node=x.node)


@scenario(
    "TxnOffsetCommit", "v5-abort", "v5+: offsets that add the group, then an abort: none committed"
)
async def txn_offsets_abort(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    x = await _txn(s)
    group_node = await s.coordinator(g)
    await s.call(_txn_offsets(x, g, t), node=group_node)
    await s.call(_end(x.tid, x.pid, x.epoch, False), node=x.node)
    await _completed(s, x)
    await s.call(_fetch_offsets(g, t), node=group_node)


@scenario("TxnOffsetCommit", "v5-stale-epoch", "after a commit bumped the epoch, the old epoch")
async def txn_offsets_stale(s: Session) -> None:
    t = await s.create_topic()
    g = s.name("g")
    x = await _txn(s)
    await _commit_v2(s, x, t)
    x.epoch -= 1
    await s.call(_txn_offsets(x, g, t), node=await s.coordinator(g))


@scenario("Produce", "v12-stale-epoch", "after a commit bumped the epoch, a batch at the old one")
async def produce_v2_stale(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    await _commit_v2(s, x, t)
    x.epoch -= 1
    await s.call(produce(t, x.batch(seq=2), transactional_id=x.tid), node=await s.leader(t))


@scenario(
    "Produce", "v12-unknown-producer-id", "a transactional batch of a producer id the id lacks"
)
async def produce_v2_bad_pid(s: Session) -> None:
    t = await s.create_topic()
    x = await _txn(s)
    x.pid += 1000
    await s.call(produce(t, x.batch(), transactional_id=x.tid), node=await s.leader(t))


@scenario(
    "Produce",
    "v12-second-partition",
    "v12+: batches to two partitions join one transaction, then abort",
)
async def produce_v2_two_partitions(s: Session) -> None:
    t = await s.create_topic(partitions=2)
    x = await _txn(s)
    leader0 = await s.leader(t, 0)
    await s.call(produce(t, x.batch(), transactional_id=x.tid), node=leader0)
    req = produce(t, x.batch(), partition=1, transactional_id=x.tid)
    await s.call(req, node=await s.leader(t, 1))

    def sorted_partitions(data: Any) -> Any:
        # A set in both brokers: Kafka lists it in its hash order.
        for topic in data["transactionStates"][0]["topics"]:
            topic["partitions"].sort()
        return data

    describe = DescribeTransactionsRequest(transactional_ids=[x.tid])
    await s.call(describe, node=x.node, keep=sorted_partitions)
    await s.call(_end(x.tid, x.pid, x.epoch, False), node=x.node)
    await _settled(s, t, leader0)
    await s.call(list_offsets(t, -1, isolation=1), node=leader0)
