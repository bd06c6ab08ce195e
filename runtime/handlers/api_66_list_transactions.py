"""ListTransactions (key 66): the transactional ids this broker coordinates.

Filtered by state (names Kafka uses; unknown ones are echoed in UnknownStateFilters), by
producer id, from v1 by duration (only transactions running longer than that many ms) and
from v2 by a regular expression the whole id must match (KIP-1152; Python's ``re`` dialect,
which agrees with Java's on the usual patterns; a bad one answers INVALID_REGULAR_EXPRESSION).
Ids come sorted. v3 (unstable, seed 001) pages them: at most max(min(the broker's
max.request.pagination.size.limit, ResponsePaginationLimit), 1) ids, starting at the first
id at or after the cursor's; NextCursor names the first id left out, null at the end.
"""

from __future__ import annotations

import bisect
import itertools
import re

from kafkagen.generated.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.transaction.transaction_state import TxnMetadata, TxnState
from kafkagen.runtime.errors import ErrorCode, KafkaError
from kafkagen.runtime.handlers._util import pagination_limit
from kafkagen.runtime.pagination import paged_version

API_KEY = 66
PAGED = paged_version(API_KEY)
R = ListTransactionsResponse
_STATES = {s.value: s for s in TxnState}


def handle(ctx: RequestContext, request: ListTransactionsRequest) -> None:
    v = ctx.api_version
    cursor = request.cursor if v >= PAGED else None
    if cursor is not None and (cursor.producer_id < 0 or not cursor.transactional_id):
        ctx.respond(R(error_code=ErrorCode.INVALID_REQUEST, transaction_states=[]))
        return
    try:
        txns = ctx.broker.txn_coordinator.list_transactions()
    except KafkaError as e:
        ctx.respond(R(error_code=e.code, transaction_states=[]))
        return
    states = {_STATES[s] for s in request.state_filters if s in _STATES}
    unknown = [s for s in request.state_filters if s not in _STATES]
    response = R(error_code=0, unknown_state_filters=unknown, transaction_states=[])
    if request.state_filters and not states:
        ctx.respond(response)  # nothing can match only unknown states
        return
    pattern = None
    if v >= 2 and request.transactional_id_pattern:
        try:
            pattern = re.compile(request.transactional_id_pattern)
        except re.error:
            ctx.respond(
                R(
                    error_code=ErrorCode.INVALID_REGULAR_EXPRESSION,
                    unknown_state_filters=unknown,
                    transaction_states=[],
                )
            )
            return
    pids = set(request.producer_id_filters)
    duration = request.duration_filter if v >= 1 else -1
    now = ctx.broker.replica_manager.time_ms()
    start = 0
    if cursor is not None:
        start = bisect.bisect_left(txns, cursor.transactional_id, key=lambda t: t.transactional_id)
    limit = pagination_limit(ctx, request.response_pagination_limit) if v >= PAGED else len(txns)
    listed: list[TxnMetadata] = []
    for t in itertools.islice(txns, start, None):
        if states and t.state not in states:
            continue
        if pids and t.producer_id not in pids:
            continue
        if not ctx.allowed(
            AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, t.transactional_id
        ):
            continue  # listed only to those who may describe it, as Kafka does
        if pattern is not None and pattern.fullmatch(t.transactional_id) is None:
            continue
        if duration >= 0 and now - t.start_ms <= duration:
            continue
        if len(listed) == limit:
            response.next_cursor = R.TransactionalCursor(
                transactional_id=t.transactional_id, producer_id=t.producer_id
            )
            break
        listed.append(t)
    response.transaction_states = [
        R.TransactionState(
            transactional_id=t.transactional_id,
            producer_id=t.producer_id,
            transaction_state=t.state.value,
        )
        for t in listed
    ]
    ctx.respond(response)
