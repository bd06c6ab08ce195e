"""AddPartitionsToTxn (key 24): partitions join the producer's open transaction.

v0-v3 are the producer's form: one transaction, per-partition errors. v4+ batch several
transactions (the form brokers use among themselves) and may only verify that partitions
are already in their transaction (VerifyOnly) without adding them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from kafkagen.generated.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import ErrorCode
from kafkagen.runtime.message import KeyedList
from kafkagen.runtime.topic_partition import TopicPartition

API_KEY = 24
R = AddPartitionsToTxnResponse
#: PRODUCER_FENCED exists from v2; older clients get INVALID_PRODUCER_EPOCH instead.
FENCED_SINCE = 2
#: From v5 (KIP-890) a verification finding the partition outside the transaction answers
#: TRANSACTION_ABORTABLE, as Kafka 4.4 does.
ABORTABLE_SINCE = 5

Topics = Sequence[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic]


def handle(ctx: RequestContext, request: AddPartitionsToTxnRequest) -> None:
    v = ctx.api_version
    if v <= 3:

        def answer(results: KeyedList[R.AddPartitionsToTxnTopicResult]) -> None:
            ctx.respond(R(results_by_topic_v3_and_below=results))

        _add(
            ctx,
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            request.v3_and_below_topics,
            False,
            answer,
        )
        return
    transactions = list(request.transactions)
    results: list[R.AddPartitionsToTxnResult | None] = [None] * len(transactions)
    remaining = len(transactions)
    if not transactions:
        ctx.respond(R(error_code=0, results_by_transaction=KeyedList()))
        return

    def one_done(i: int, topics: KeyedList[R.AddPartitionsToTxnTopicResult]) -> None:
        nonlocal remaining
        results[i] = R.AddPartitionsToTxnResult(
            transactional_id=transactions[i].transactional_id, topic_results=topics
        )
        remaining -= 1
        if remaining == 0:
            ctx.respond(R(error_code=0, results_by_transaction=KeyedList(r for r in results if r)))

    for i, t in enumerate(transactions):
        _add(
            ctx,
            t.transactional_id,
            t.producer_id,
            t.producer_epoch,
            t.topics,
            t.verify_only,
            functools.partial(one_done, i),
        )


def _add(
    ctx: RequestContext,
    transactional_id: str,
    pid: int,
    epoch: int,
    topics: Topics,
    verify_only: bool,
    answer: Callable[[KeyedList[R.AddPartitionsToTxnTopicResult]], None],
) -> None:
    v = ctx.api_version
    order = [(t.name, list(t.partitions)) for t in topics]
    tps = [TopicPartition(name, i) for name, indexes in order for i in indexes]

    def done(errors: dict[TopicPartition, int]) -> None:
        out: KeyedList[R.AddPartitionsToTxnTopicResult] = KeyedList()
        for name, indexes in order:
            partitions = []
            for i in indexes:
                code = errors[TopicPartition(name, i)]
                if code == ErrorCode.PRODUCER_FENCED and v < FENCED_SINCE:
                    code = ErrorCode.INVALID_PRODUCER_EPOCH
                partitions.append(
                    R.AddPartitionsToTxnPartitionResult(
                        partition_index=i, partition_error_code=code
                    )
                )
            out.append(R.AddPartitionsToTxnTopicResult(name=name, results_by_partition=partitions))
        answer(out)

    denied = _denials(ctx, transactional_id, order)
    if denied:
        done(denied)
        return
    coordinator = ctx.broker.txn_coordinator
    if verify_only:
        verify = functools.partial(coordinator.verify_partition, transactional_id, pid, epoch)
        done({tp: _verification_answer(verify(tp), v) for tp in tps})
        return
    coordinator.add_partitions(transactional_id, pid, epoch, tps, done)


def _verification_answer(code: int, version: int) -> int:
    """A verification's error as Kafka answers a broker: a stale epoch is fenced (the code
    a Produce gets is INVALID_PRODUCER_EPOCH), and from v5 a partition outside the
    transaction makes it abortable."""
    if code == ErrorCode.INVALID_PRODUCER_EPOCH:
        return ErrorCode.PRODUCER_FENCED
    if code == ErrorCode.INVALID_TXN_STATE and version >= ABORTABLE_SINCE:
        return ErrorCode.TRANSACTION_ABORTABLE
    return code


def _denials(
    ctx: RequestContext, transactional_id: str, order: list[tuple[str, list[int]]]
) -> dict[TopicPartition, int]:
    """Errors for every partition when the sender may not add them all: 53 without WRITE on
    the transactional id; else 29 for topics without WRITE, the others not attempted."""
    every = [TopicPartition(name, i) for name, indexes in order for i in indexes]
    if not ctx.allowed(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return dict.fromkeys(every, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    refused = {n for n, _ in order if not ctx.allowed(AclOperation.WRITE, ResourceType.TOPIC, n)}
    if not refused:
        return {}
    return {
        tp: (
            ErrorCode.TOPIC_AUTHORIZATION_FAILED
            if tp.topic in refused
            else ErrorCode.OPERATION_NOT_ATTEMPTED
        )
        for tp in every
    }
