"""DescribeTransactions (key 65): state, producer, timing and partitions of each id asked.

Every requested id gets an answer in request order: its transaction, or NOT_COORDINATOR,
TRANSACTIONAL_ID_NOT_FOUND and the like. v1 (unstable, seed 001) pages the answers: at
most max(min(the broker's max.request.pagination.size.limit, ResponsePaginationLimit), 1)
of them, starting at the cursor's id, which must be one of the requested ids; NextCursor
names the first id left out, null at the end. An id listed twice, or a cursor outside the
request, is answered INVALID_REQUEST on every id.
"""

from __future__ import annotations

from kafkagen.generated.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.errors import (
    ErrorCode,
    InvalidRequestError,
    KafkaError,
    TransactionalIdAuthorizationFailedError,
)
from kafkagen.runtime.handlers._util import pagination_limit, repeated, require
from kafkagen.runtime.message import KeyedList
from kafkagen.runtime.pagination import paged_version

API_KEY = 65
PAGED = paged_version(API_KEY)
R = DescribeTransactionsResponse


def handle(ctx: RequestContext, request: DescribeTransactionsRequest) -> None:
    v = ctx.api_version
    ids = list(request.transactional_ids)
    cursor = request.cursor if v >= PAGED else None
    start = 0
    if v >= PAGED:
        problem = repeated(ids, "the transactional id")
        if problem is None and cursor is not None and cursor.transactional_id not in ids:
            problem = f"the cursor's id {cursor.transactional_id!r} was not asked for"
        if problem is not None:
            ctx.respond(
                R(
                    transaction_states=[
                        R.TransactionState(
                            error_code=ErrorCode.INVALID_REQUEST,
                            transactional_id=tid,
                            transaction_state="",
                            topics=KeyedList(),
                        )
                        for tid in ids
                    ]
                )
            )
            return
        if cursor is not None:
            start = ids.index(cursor.transactional_id)
    end = len(ids)
    if v >= PAGED:
        end = min(end, start + pagination_limit(ctx, request.response_pagination_limit))
    tc = ctx.broker.txn_coordinator
    states = []
    next_cursor = None
    for i, tid in enumerate(ids[start:], start):
        out = R.TransactionState(
            error_code=0,
            transactional_id=tid,
            transaction_state="",
            transaction_timeout_ms=0,
            # An id refused or not found keeps these at zero, as in Kafka's answer.
            transaction_start_time_ms=0,
            producer_id=0,
            producer_epoch=0,
            topics=KeyedList(),
        )
        try:
            require(
                ctx,
                AclOperation.DESCRIBE,
                ResourceType.TRANSACTIONAL_ID,
                tid,
                TransactionalIdAuthorizationFailedError,
            )
            if not tid:
                raise InvalidRequestError("a transactional id may not be empty")
            txn = tc.describe(tid)
        except KafkaError as e:
            out.error_code = e.code
        else:
            out.transaction_state = txn.state.value
            out.transaction_timeout_ms = txn.timeout_ms
            out.transaction_start_time_ms = txn.start_ms
            out.producer_id = txn.producer_id
            out.producer_epoch = txn.producer_epoch
            out.topics = KeyedList(
                R.TopicData(topic=topic, partitions=indexes)
                for topic, indexes in txn.topics().items()
            )
        if i >= end:
            next_cursor = R.TransactionalCursor(transactional_id=tid, producer_id=out.producer_id)
            break
        states.append(out)
    ctx.respond(R(transaction_states=states, next_cursor=next_cursor))
