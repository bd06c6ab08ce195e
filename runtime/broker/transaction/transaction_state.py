"""A transactional id's state: Kafka's transaction states, the coordinator's view of an id,
and that view as a record of ``__transaction_state`` (Kafka's TransactionLog key and value,
so Kafka's tools read what the broker writes).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kafkagen.generated.transaction_log_key import TransactionLogKey
from kafkagen.generated.transaction_log_value import TransactionLogValue
from kafkagen.runtime.message import Message
from kafkagen.runtime.topic_partition import TopicPartition

from ..coordinator import record_format

__all__ = [
    "NO_EPOCH",
    "NO_PRODUCER_ID",
    "TWO_PHASE_TIMEOUT_MS",
    "TxnMetadata",
    "TxnSnapshot",
    "TxnState",
    "decode_txn_key",
    "decode_txn_value",
    "txn_key",
    "txn_value",
]

NO_PRODUCER_ID = -1
NO_EPOCH = -1
#: The timeout a two-phase commit transaction (KIP-939) is kept under, in the state log
#: too: the largest int32, which marks it as one that never times out, as in Kafka.
TWO_PHASE_TIMEOUT_MS = 2**31 - 1


class TxnState(enum.Enum):
    """Kafka's transaction states, with the names ListTransactions reports."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"


# The state's byte in the state log (Kafka's ids).
_STATE_IDS = {s: i for i, s in enumerate(TxnState)}
_STATES_BY_ID = dict(enumerate(TxnState))


@dataclass(frozen=True, slots=True)
class TxnSnapshot:
    """What one state-log record says about a transactional id."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    start_ms: int
    update_ms: int
    #: Transactions v2: the transaction ends under the next epoch.
    ends_with_bump: bool = False
    #: In a Prepare state: the producer id the id moves to once complete (-1: none).
    next_producer_id: int = NO_PRODUCER_ID


@dataclass(eq=False, slots=True)
class TxnMetadata:
    """The coordinator's view of one transactional id."""

    transactional_id: str
    producer_id: int
    last_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_EPOCH
    last_producer_epoch: int = NO_EPOCH
    timeout_ms: int = 60000
    state: TxnState = TxnState.EMPTY
    partitions: frozenset[TopicPartition] = frozenset()
    #: Wall-clock ms when the current (or last) transaction started; -1 before any.
    start_ms: int = -1
    update_ms: int = -1
    #: The state being written, or None: while set, other changes must wait.
    pending: TxnState | None = None
    #: Bumped on every applied change, so a stale timeout can tell it is stale.
    version: int = 0
    #: The state-log partition the id hashes onto.
    log_partition: int = -1
    #: The transaction is a transactions v2 one (its partitions were added by the broker,
    #: or EndTxn v5 ended it): its end bumps the epoch, so a fence bumps it twice.
    ends_with_bump: bool = False

    def snapshot(self, **changes: object) -> TxnSnapshot:
        values: dict[str, object] = {
            "producer_id": self.producer_id,
            "last_producer_id": self.last_producer_id,
            "producer_epoch": self.producer_epoch,
            "last_producer_epoch": self.last_producer_epoch,
            "timeout_ms": self.timeout_ms,
            "state": self.state,
            "partitions": self.partitions,
            "start_ms": self.start_ms,
            "update_ms": self.update_ms,
            "ends_with_bump": self.ends_with_bump,
        }
        values.update(changes)
        return TxnSnapshot(**values)  # type: ignore[arg-type]

    def apply(self, s: TxnSnapshot) -> None:
        self.producer_id = s.producer_id
        self.last_producer_id = s.last_producer_id
        self.producer_epoch = s.producer_epoch
        self.last_producer_epoch = s.last_producer_epoch
        self.timeout_ms = s.timeout_ms
        self.state = s.state
        self.partitions = s.partitions
        self.start_ms = s.start_ms
        self.update_ms = s.update_ms
        self.ends_with_bump = s.ends_with_bump
        self.version += 1

    @property
    def two_phase(self) -> bool:
        """The producer takes part in two-phase commits: its transactions never time out."""
        return self.timeout_ms == TWO_PHASE_TIMEOUT_MS

    def topics(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for tp in sorted(self.partitions):
            out.setdefault(tp.topic, []).append(tp.partition)
        return out


# -- the state log's records (Kafka's TransactionLog key and value) -----------------------

#: The value versions written: 0, the layout of Kafka's first transaction protocol, and 1
#: for transactions v2 (the client's transaction version and the producer ids it moves
#: between, as tagged fields), as Kafka writes them.
TXN_VALUE_VERSION, TXN_V2_VALUE_VERSION = 0, 1
#: ClientTransactionVersion of a transactions v2 record.
_TRANSACTIONS_V2 = 2
_KEY_TYPES: dict[int, type[Message]] = {0: TransactionLogKey}


def txn_key(transactional_id: str) -> bytes:
    return record_format.key_bytes(TransactionLogKey(transactional_id=transactional_id))


def txn_value(s: TxnSnapshot) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(s.partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    value = TransactionLogValue(
        producer_id=s.producer_id,
        producer_epoch=s.producer_epoch,
        transaction_timeout_ms=s.timeout_ms,
        transaction_status=_STATE_IDS[s.state],
        transaction_partitions=[
            TransactionLogValue.PartitionsSchema(topic=topic, partition_ids=indexes)
            for topic, indexes in by_topic.items()
        ],
        transaction_last_update_timestamp_ms=s.update_ms,
        transaction_start_timestamp_ms=s.start_ms,
    )
    if not s.ends_with_bump:
        return record_format.value_bytes(value, TXN_VALUE_VERSION)
    value.previous_producer_id = s.last_producer_id
    value.next_producer_id = s.next_producer_id
    value.client_transaction_version = _TRANSACTIONS_V2
    return record_format.value_bytes(value, TXN_V2_VALUE_VERSION)


def decode_txn_key(data: bytes) -> str | None:
    """The transactional id of a state-log key; None for a key of another record type."""
    key = record_format.decode_key(data, _KEY_TYPES)
    return key.transactional_id if isinstance(key, TransactionLogKey) else None


def decode_txn_value(data: bytes) -> TxnSnapshot:
    v = record_format.decode_value(TransactionLogValue, data)
    if v.transaction_status not in _STATES_BY_ID:
        raise ValueError(f"transaction log value: unknown status {v.transaction_status}")
    partitions = frozenset(
        TopicPartition(t.topic, i) for t in v.transaction_partitions or () for i in t.partition_ids
    )
    return TxnSnapshot(
        v.producer_id,
        v.previous_producer_id,
        v.producer_epoch,
        NO_EPOCH,
        v.transaction_timeout_ms,
        _STATES_BY_ID[v.transaction_status],
        partitions,
        v.transaction_start_timestamp_ms,
        v.transaction_last_update_timestamp_ms,
        v.client_transaction_version >= _TRANSACTIONS_V2,
        v.next_producer_id,
    )
