"""Small helpers shared by the handlers."""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from kafkagen.runtime.broker.api import RequestContext
from kafkagen.runtime.broker.config.definitions import ConfigResourceType
from kafkagen.runtime.broker.security.acls import AclOperation, ResourceType
from kafkagen.runtime.broker.security.authorizer import CLUSTER_NAME
from kafkagen.runtime.broker.security.listeners import ANONYMOUS, SecurityProtocol
from kafkagen.runtime.broker.share.share_partition_manager import PartitionResult
from kafkagen.runtime.errors import (
    ClusterAuthorizationFailedError,
    DelegationTokenAuthDisabledError,
    DelegationTokenRequestNotAllowedError,
    ErrorCode,
    GroupAuthorizationFailedError,
    KafkaError,
    TopicAuthorizationFailedError,
)
from kafkagen.runtime.topic_partition import TopicPartition

__all__ = [
    "Pager",
    "client_selectors",
    "log_dir",
    "token_request_error",
    "pagination_limit",
    "repeated",
    "commit_denials",
    "in_transaction",
    "require_config_access",
    "require",
    "share_acks",
    "share_answer",
    "share_state_answer",
]


def log_dir(ctx: RequestContext) -> str:
    """The one log directory of this broker: its folder under ``--log-dir`` when logs are
    kept on disk, else ``memory:broker-<id>``."""
    storage = ctx.broker.replica_manager.storage
    if storage is None:
        return f"memory:broker-{ctx.broker.node_id}"
    return str(storage.path.resolve())


def token_request_error(ctx: RequestContext) -> int:
    """What a delegation token request gets: kafkagen keeps no token secret, so, as Kafka
    without ``delegation.token.secret.key``, DELEGATION_TOKEN_AUTH_DISABLED, except on a
    connection Kafka never lets ask (plaintext, or TLS without a client certificate):
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED."""
    listener = ctx.session.listener
    protocol = SecurityProtocol.PLAINTEXT if listener is None else listener.protocol
    if protocol is SecurityProtocol.PLAINTEXT or (
        protocol is SecurityProtocol.SSL and ctx.session.principal == ANONYMOUS
    ):
        return DelegationTokenRequestNotAllowedError.code
    return DelegationTokenAuthDisabledError.code


def client_selectors(ctx: RequestContext) -> dict[str, str | None]:
    """What a client metrics ``match`` may select on, but the instance id (None: unknown)."""
    software = ctx.session.client_software
    return {
        "client_id": ctx.client_id,
        "client_software_name": software and software[0],
        "client_software_version": software and software[1],
        "client_source_address": ctx.client_host.removeprefix("/") or None,
        "client_source_port": str(ctx.client_port) if ctx.client_port >= 0 else None,
    }


#: What a response says when the client did not ask for authorized operations.
NOT_REQUESTED = -(2**31)


def require(
    ctx: RequestContext, operation: int, resource_type: int, name: str, error: type[KafkaError]
) -> None:
    """Raise ``error`` unless the sender may do ``operation`` on the resource."""
    if not ctx.allowed(operation, resource_type, name):
        raise error()


def require_config_access(
    ctx: RequestContext, resource_type: int, name: str, operation: int
) -> None:
    """DESCRIBE_CONFIGS or ALTER_CONFIGS on a config resource: the topic for a topic (29
    otherwise), the group for a group (30 otherwise), the cluster for a broker or its
    loggers (31 otherwise)."""
    if resource_type == ConfigResourceType.TOPIC:
        require(ctx, operation, ResourceType.TOPIC, name, TopicAuthorizationFailedError)
    elif resource_type == ConfigResourceType.GROUP:
        require(ctx, operation, ResourceType.GROUP, name, GroupAuthorizationFailedError)
    else:
        require(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME, ClusterAuthorizationFailedError)


def commit_denials(
    ctx: RequestContext,
    group_id: str,
    order: list[tuple[str, list[int]]],
    transactional_id: str | None = None,
) -> dict[TopicPartition, int]:
    """The partitions of an offset commit that the group never sees, with their error:
    every one when WRITE on the transactional id (53) or READ on the group (30) is
    missing, else those of topics without READ (29), then, as Kafka, those that do not
    exist (3), before the group checks the member."""
    every = [TopicPartition(name, i) for name, indexes in order for i in indexes]
    if transactional_id is not None and not ctx.allowed(
        AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        return dict.fromkeys(every, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, group_id):
        return dict.fromkeys(every, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    readable = {name: ctx.allowed(AclOperation.READ, ResourceType.TOPIC, name) for name, _ in order}
    md = ctx.broker.metadata
    refused: dict[TopicPartition, int] = {}
    for tp in every:
        if not readable[tp.topic]:
            refused[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif md.partition(tp.topic, tp.partition) is None:
            refused[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return refused


def in_transaction(
    ctx: RequestContext,
    transactional_id: str,
    producers: dict[tuple[int, int], list[TopicPartition]],
    add: bool,
    then: Callable[[dict[TopicPartition, int]], None],
    *,
    retriable: int,
    abortable: bool,
    wait_out_completion: bool = False,
) -> None:
    """Ask the transaction coordinator of ``transactional_id`` about the partitions each
    (producer id, epoch) writes to: whether its open transaction has them, or with ``add``
    (transactions v2) to add them, opening a transaction if none is open.

    ``then(codes)`` gets the partitions refused, with the error the writing request answers
    (Produce, TxnOffsetCommit): the coordinator being busy, moving or not serving is
    ``retriable``, a fenced epoch INVALID_PRODUCER_EPOCH, and a partition outside the
    transaction TRANSACTION_ABORTABLE when the request's version knows it (``abortable``),
    else INVALID_TXN_STATE.

    ``wait_out_completion`` is a transactions v2 Produce, whose first batch commonly
    arrives while the previous transaction's markers are still being written, or while
    another partition is being added: as Kafka's broker does, the coordinator is asked
    again every ``add.partitions.to.txn.retry.backoff.ms`` while it answers
    CONCURRENT_TRANSACTIONS, for up to ``add.partitions.to.txn.retry.backoff.max.ms``;
    after that CONCURRENT_TRANSACTIONS itself is the answer, which such a producer retries.
    """

    def answer(code: int) -> int:
        if code == ErrorCode.CONCURRENT_TRANSACTIONS and wait_out_completion:
            return code
        if code in _COORDINATOR_BUSY:
            return retriable
        if code == ErrorCode.PRODUCER_FENCED:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if code == ErrorCode.INVALID_TXN_STATE and abortable:
            return ErrorCode.TRANSACTION_ABORTABLE
        return code

    node = ctx.broker.txn_coordinator.coordinator_for(transactional_id)
    coordinator = ctx.broker.peers.txn_coordinator_of(node)
    if coordinator is None or not add:
        refused: dict[TopicPartition, int] = {}
        for (pid, epoch), tps in producers.items():
            for tp in tps:
                code = (
                    ErrorCode.COORDINATOR_NOT_AVAILABLE
                    if coordinator is None
                    else coordinator.verify_partition(transactional_id, pid, epoch, tp)
                )
                if code:
                    refused[tp] = answer(code)
        then(refused)
        return
    if not producers:
        then({})
        return
    clock = ctx.broker.replica_manager
    cfg = functools.partial(ctx.broker.configs.broker_int, broker_id=ctx.broker.node_id)
    give_up_ms = 0.0
    # Kafka reads a connection's next request only once the last is answered, so a
    # producer's batches reach its log in the order sent; here a later request of the
    # same transactional id waits behind one that is waiting out the coordinator.
    waiting = ctx.broker.txn_coordinator.waiting_produces

    def start() -> None:
        nonlocal give_up_ms
        give_up_ms = clock.now() + cfg("add.partitions.to.txn.retry.backoff.max.ms")
        ask()

    def finish(codes: dict[TopicPartition, int]) -> None:
        try:
            then({tp: answer(code) for tp, code in codes.items() if code})
        finally:
            if wait_out_completion:
                queue = waiting[transactional_id]
                queue.popleft()
                if queue:
                    queue[0]()
                else:
                    del waiting[transactional_id]

    def ask() -> None:
        codes: dict[TopicPartition, int] = {}
        pending = len(producers)

        def added(result: dict[TopicPartition, int]) -> None:
            nonlocal pending
            codes.update(result)
            pending -= 1
            if pending:
                return
            if (
                wait_out_completion
                and ErrorCode.CONCURRENT_TRANSACTIONS in codes.values()
                and clock.now() < give_up_ms
                and _call_later(cfg("add.partitions.to.txn.retry.backoff.ms"), ask)
            ):
                return
            finish(codes)

        for (pid, epoch), tps in producers.items():
            coordinator.add_partitions(
                transactional_id, pid, epoch, tps, added, ends_with_bump=True
            )

    if not wait_out_completion:
        ask()
        return
    queue = waiting.setdefault(transactional_id, deque())
    queue.append(start)
    if len(queue) == 1:
        start()


def _call_later(delay_ms: int, fn: Callable[[], None]) -> bool:
    """Run ``fn`` on the serving loop after ``delay_ms``; False when no loop is running."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    loop.call_later(delay_ms / 1000, fn)
    return True


#: The transaction coordinator's answers that mean "not now": busy, loading or moving.
_COORDINATOR_BUSY = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NOT_ENOUGH_REPLICAS,
    }
)


def pagination_limit(ctx: RequestContext, requested: int) -> int:
    """Items a paginated response may hold (seed 001, as KIP-966 does it):
    max(min(broker max.request.pagination.size.limit, ResponsePaginationLimit), 1)."""
    cap = ctx.broker.configs.broker_int("max.request.pagination.size.limit", ctx.broker.node_id)
    return max(min(cap, requested), 1)


def repeated(entries: Iterable[Hashable], noun: str) -> str | None:
    """Why a paged request is refused for naming an entry twice, or None (seed 001).

    A cursor names an entry by its key, not by its place in the request, so with a repeat it
    could resume at either copy and a walk might never end. Every paged API therefore
    refuses such a request with INVALID_REQUEST, the way it refuses a cursor outside the
    request; ``entries`` are the request's entries in order, as the cursor names them.
    """
    seen: set[Hashable] = set()
    for entry in entries:
        if entry in seen:
            return f"the request lists {noun} {entry!r} more than once"
        seen.add(entry)
    return None


class Pager:
    """Cuts a paginated response (seed 001): skips what lies before the cursor, takes items
    until the limit, and remembers the first item left out (the next cursor).

    Items are identified by tuples. With ``sorted_keys`` items come in key order and the page
    starts at the first key at or after the cursor (so a cursor whose item went away still
    works); otherwise (request order) it starts at the item equal to the cursor. With
    ``request_prefix`` n, the first n fields name an entry of the request (request order,
    matched exactly) and the rest come sorted within it: the page starts at the first item of
    the cursor's entry at or after the cursor, or at the next entry when none is left. With
    ``entry_start``, a cursor whose rest is at or before it (the API's "from the start of
    this entry") means earlier pages did not show the entry, so it is shown even when it
    has no items left (a group whose members all left, a topic deleted since).
    """

    def __init__(
        self,
        limit: int,
        cursor: tuple[object, ...] | None,
        sorted_keys: bool,
        *,
        request_prefix: int = 0,
        entry_start: tuple[object, ...] | None = None,
    ) -> None:
        self.remaining = limit
        self.cursor = cursor
        self.sorted_keys = sorted_keys
        self.prefix = request_prefix
        self.entry_start = entry_start
        self.seeking = cursor is not None
        self._in_entry = False
        self.next: tuple[object, ...] | None = None

    @property
    def full(self) -> bool:
        return self.next is not None

    def reaches(self, entry: tuple[object, ...]) -> bool:
        """Whether a request entry with no items to count (an error, an empty group), named
        by the ``request_prefix`` fields, belongs on this page."""
        if self.next is not None:
            return False
        if not self.seeking:
            return True
        if self.prefix and self.cursor is not None and self.cursor[: self.prefix] == entry:
            self._in_entry = True
            start = self.entry_start
            if start is not None and self.cursor[self.prefix :] <= start:
                self.seeking = False  # the page starts at this entry, which has no items now
                return True
            return False  # earlier pages showed the entry with its items before the cursor
        return self.prefix > 0 and self._in_entry

    def take(self, key: tuple[object, ...]) -> bool:
        """Whether the item ``key`` belongs to this page."""
        if self.next is not None:
            return False
        if self.seeking:
            assert self.cursor is not None
            if self.sorted_keys:
                before = key < self.cursor
            elif self.prefix:
                n = self.prefix
                if key[:n] == self.cursor[:n]:
                    self._in_entry = True
                    before = key[n:] < self.cursor[n:]
                else:
                    before = not self._in_entry  # past the cursor's entry: start here
            else:
                before = key != self.cursor
            if before:
                return False
            self.seeking = False
        if self.remaining <= 0:
            self.next = key
            return False
        self.remaining -= 1
        return True


def share_acks(
    topics: Iterable[Any],
) -> dict[tuple[uuid.UUID, int], list[tuple[int, int, list[int]]]]:
    """The acknowledgement batches of a ShareFetch or ShareAcknowledge request, by
    (topic id, partition)."""
    return {
        (t.topic_id, p.partition_index): [
            (b.first_offset, b.last_offset, list(b.acknowledge_types))
            for b in p.acknowledgement_batches
        ]
        for t in topics
        for p in t.partitions
        if p.acknowledgement_batches
    }


def share_answer(
    ctx: RequestContext,
    response: Any,
    topic_cls: type[Any],
    results: Iterable[PartitionResult],
    fill: Callable[[Any, PartitionResult], None],
) -> None:
    """Send a ShareFetch or ShareAcknowledge ``response`` with one entry per result, grouped
    by topic (``fill`` sets what differs); a partition that moved names its leader, and the
    leaders' endpoints come along (KIP-951)."""
    cls = type(response)
    topics: dict[uuid.UUID, Any] = {}
    leaders: set[int] = set()
    md = ctx.broker.metadata
    for r in results:
        topic_id, index = r.key
        topic = topics.setdefault(topic_id, topic_cls(topic_id=topic_id, partitions=[]))
        pd = cls.PartitionData(partition_index=index)
        leader, epoch = r.current_leader
        pd.current_leader = cls.LeaderIdAndEpoch(leader_id=leader, leader_epoch=epoch)
        if r.error is not None and r.error.code == ErrorCode.NOT_LEADER_OR_FOLLOWER and leader >= 0:
            leaders.add(leader)
        fill(pd, r)
        topic.partitions.append(pd)
    response.responses = list(topics.values())
    response.node_endpoints = [
        cls.NodeEndpoint(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
        for b in (ctx.advertised(md.brokers[n]) for n in sorted(leaders) if n in md.brokers)
    ]
    ctx.respond(response)


def share_state_answer(
    ctx: RequestContext,
    request: Any,
    results: Any,
    result_type: Any,
    partition_type: Any,
    fill: Callable[[tuple[str, uuid.UUID, int], Any, Any], None],
) -> None:
    """Answer one of the share-group state APIs (83-87) partition by partition: ``fill(key,
    the request's partition, its result)`` runs the share coordinator's operation, whose
    error becomes the partition's; what the request writes goes out as one batch per
    ``__share_group_state`` partition. As Kafka: CLUSTER_ACTION on the cluster is needed
    (CLUSTER_AUTHORIZATION_FAILED for every partition), and an empty group id or a topic
    without partitions answers no results."""
    if not request.group_id or any(not t.partitions for t in request.topics):
        ctx.respond(results(results=[]))
        return
    allowed = ctx.allowed(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
    out = []
    with ctx.broker.share_coordinator.writing_together():
        for t in request.topics:
            parts = []
            for p in t.partitions:
                r = partition_type(partition=p.partition, error_code=0, error_message=None)
                try:
                    if not allowed:
                        raise ClusterAuthorizationFailedError()
                    fill((request.group_id, t.topic_id, p.partition), p, r)
                except KafkaError as e:
                    r.error_code, r.error_message = e.code, e.message
                parts.append(r)
            out.append(result_type(topic_id=t.topic_id, partitions=parts))
    ctx.respond(results(results=out))
