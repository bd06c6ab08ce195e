"""How share partitions' leaders and the group coordinator reach share partitions' state:
kafkagen's persister, a client of the share coordinators (Kafka's DefaultStatePersister).

Each broker has its own persister, which sends the share-group state APIs' requests
(InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState,
DeleteShareGroupState, ReadShareGroupStateSummary) to the broker coordinating the share
partition (`ShareCoordinator`), whose state is kept in ``__share_group_state``. The
requests and their answers are encoded and decoded at the versions Kafka 4.4's brokers
send, and take the brokers' inter-broker path (`ShareStateChannel`): a broker cut off
from the coordinator's gets no answer (NETWORK_EXCEPTION, as a lost connection). As in
Kafka 4.4's persister, that, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS and UNKNOWN_TOPIC_OR_PARTITION make the persister find the
coordinator again and retry, `FIND_COORDINATOR_ATTEMPTS` times in all; the last error is
then the operation's. Any other error fails it at once.

The persister speaks the leaders' terms (`PartitionState`: a start, an end and each
in-flight record's state and delivery count) and the coordinator Kafka's (batches of
records in the same state). A leader writes only the batches that changed since its last
write, with its start offset; the coordinator lays them over the state it keeps.

Besides the leaders' own writes, the group coordinator resets a partition's state
(AlterShareGroupOffsets) or deletes it (DeleteShareGroupOffsets, DeleteGroups): the
leaders hear of it through `on_reset` and drop what they hold of it, reading the new state
on their next use.
"""

from __future__ import annotations

import functools
import importlib
import logging
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from kafkagen.runtime.errors import (
    CoordinatorNotAvailableError,
    ErrorCode,
    KafkaError,
    NetworkExceptionError,
    NotLeaderOrFollowerError,
    UnknownServerError,
    error_for_code,
)
from kafkagen.runtime.message import Message

from .share_coordinator import Key, StateBatch
from .share_partition import PartitionState


@functools.cache
def _request(module: str) -> Any:
    """The request class of a share-state API, imported on first use: a broker that never
    serves share groups loads no share-state codecs (start-up imports only what it needs)."""
    name = "".join(part.title() for part in module.split("_")) + "Request"
    return getattr(importlib.import_module(f"kafkagen.generated.{module}"), name)


__all__ = ["FIND_COORDINATOR_ATTEMPTS", "ShareStateChannel", "ShareStatePersister", "leader_error"]

_log = logging.getLogger("kafkagen.broker")

#: How many times an operation finds the share coordinator and sends to it (Kafka's 5).
FIND_COORDINATOR_ATTEMPTS = 5

#: The versions Kafka 4.4's persister sends (the highest each coordinator serves).
INITIALIZE_VERSION = 0
READ_VERSION = 0
WRITE_VERSION = 1
DELETE_VERSION = 0
SUMMARY_VERSION = 1

_RETRIABLE = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
)
_COORDINATOR_GONE = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)


class ShareStateChannel(Protocol):
    """How a broker's persister reaches the share coordinators (the cluster implements it)."""

    def share_coordinator_node(self, sender: int, key: Key) -> int:
        """The broker coordinating ``key`` as broker ``sender`` finds it (Kafka's
        FindCoordinator, key type SHARE); -1 if none is available."""
        ...

    def send_share_state(
        self, sender: int, node: int, request: Message, version: int
    ) -> Message | None:
        """Broker ``node``'s answer to ``request`` sent by broker ``sender`` at
        ``version``; None when it does not reach ``node`` (cut off, not serving)."""
        ...

    def share_state_keys(self, group_id: str) -> list[Key]:
        """The share partitions of ``group_id`` that have state on any coordinator."""
        ...


def leader_error(e: KafkaError) -> KafkaError:
    """A persister's error as a share partition's leader answers it, as Kafka 4.4's
    SharePartition maps them: a coordinator gone (NOT_COORDINATOR and the like) is
    COORDINATOR_NOT_AVAILABLE, a fenced leader or state epoch NOT_LEADER_OR_FOLLOWER,
    GROUP_ID_NOT_FOUND and UNKNOWN_TOPIC_OR_PARTITION themselves, anything else (a
    coordinator out of reach: NETWORK_EXCEPTION) UNKNOWN_SERVER_ERROR."""
    code = e.code
    if code in _COORDINATOR_GONE:
        return CoordinatorNotAvailableError(e.message)
    if code in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        return e
    if code in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.FENCED_STATE_EPOCH):
        return NotLeaderOrFollowerError(e.message)
    return UnknownServerError(e.message)


class ShareStatePersister:
    """One broker's client of the share coordinators: the durable state of each (group,
    topic id, partition)."""

    def __init__(
        self,
        node_id: int,
        channel: ShareStateChannel,
        on_reset: list[Callable[[str, uuid.UUID, int], None]] | None = None,
    ) -> None:
        self.node_id = node_id
        self._channel = channel
        #: Called with (group id, topic id, partition) when the coordinator replaces or
        #: deletes a partition's state (shared by every broker's persister).
        self.on_reset: list[Callable[[str, uuid.UUID, int], None]] = (
            [] if on_reset is None else on_reset
        )

    # -- sending ------------------------------------------------------------------------

    def _result(self, key: Key, request: Message, version: int) -> Any:
        """The coordinator's result for ``key``'s partition; raises the error of the last
        attempt when every attempt met a retriable one (NOT_COORDINATOR and the like,
        NETWORK_EXCEPTION when the coordinator could not be reached)."""
        error: KafkaError = CoordinatorNotAvailableError("no share coordinator is available")
        for _ in range(FIND_COORDINATOR_ATTEMPTS):
            node = self._channel.share_coordinator_node(self.node_id, key)
            if node < 0:
                continue
            response = self._channel.send_share_state(self.node_id, node, request, version)
            if response is None:
                error = NetworkExceptionError(f"share coordinator {node} is not reachable")
                continue
            result = _partition_result(response, key)
            if result.error_code in _RETRIABLE:
                error = error_for_code(result.error_code)(result.error_message)
                continue
            return result
        raise error

    # -- a partition's leader ------------------------------------------------------------

    def read(
        self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int
    ) -> PartitionState | None:
        """The partition's state for its leader at ``leader_epoch`` (ReadShareGroupState),
        None if it has none; raises the leader's error."""
        R = _request("read_share_group_state")
        request = R(
            group_id=group_id,
            topics=[
                R.ReadStateData(
                    topic_id=topic_id,
                    partitions=[R.PartitionData(partition=partition, leader_epoch=leader_epoch)],
                )
            ],
        )
        try:
            r = self._result((group_id, topic_id, partition), request, READ_VERSION)
            if r.error_code == ErrorCode.INVALID_REQUEST and partition >= 0:
                return None  # no state: the partition was never initialised
            if r.error_code:
                raise error_for_code(r.error_code)(r.error_message)
        except KafkaError as e:
            raise leader_error(e) from None
        batches = [
            (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in r.state_batches
        ]
        return _partition_state(r.start_offset, batches, leader_epoch, r.state_epoch)

    def write(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        state: PartitionState,
        batches: list[StateBatch],
    ) -> None:
        """Write ``batches`` (the records that changed) and the start offset of ``state``
        (WriteShareGroupState); raises the leader's error."""
        R = _request("write_share_group_state")
        data = R.PartitionData(
            partition=partition,
            state_epoch=state.state_epoch,
            leader_epoch=state.leader_epoch,
            start_offset=state.start_offset,
            delivery_complete_count=state.delivery_complete_count(),
            state_batches=[
                R.StateBatch(first_offset=f, last_offset=lo, delivery_state=s, delivery_count=c)
                for f, lo, s, c in batches
            ],
        )
        request = R(
            group_id=group_id, topics=[R.WriteStateData(topic_id=topic_id, partitions=[data])]
        )
        try:
            r = self._result((group_id, topic_id, partition), request, WRITE_VERSION)
            if r.error_code:
                raise error_for_code(r.error_code)(r.error_message)
        except KafkaError as e:
            raise leader_error(e) from None

    # -- the group coordinator -------------------------------------------------------------

    def create(
        self, group_id: str, topic_id: uuid.UUID, partition: int, start_offset: int = -1
    ) -> None:
        """Give a partition new to the group its state (InitializeShareGroupState at state
        epoch 0); raises the coordinator's error."""
        self._initialize((group_id, topic_id, partition), 0, start_offset)

    def initialize(
        self, group_id: str, topic_id: uuid.UUID, partition: int, start_offset: int
    ) -> None:
        """The partition starts again at ``start_offset``, nothing in flight, at the next
        state epoch; the leaders drop what they hold of it. An error is logged."""
        key = (group_id, topic_id, partition)
        try:
            old = self.summary(*key)
            known = old.start_offset >= 0 or old.state_epoch or old.leader_epoch
            self._initialize(key, old.state_epoch + 1 if known else 0, start_offset)
        except KafkaError as e:
            _log.warning("share state of %s not initialised: %s", key, e)
        self._reset(key)

    def _initialize(self, key: Key, state_epoch: int, start_offset: int) -> None:
        R = _request("initialize_share_group_state")
        request = R(
            group_id=key[0],
            topics=[
                R.InitializeStateData(
                    topic_id=key[1],
                    partitions=[
                        R.PartitionData(
                            partition=key[2], state_epoch=state_epoch, start_offset=start_offset
                        )
                    ],
                )
            ],
        )
        r = self._result(key, request, INITIALIZE_VERSION)
        if r.error_code:
            raise error_for_code(r.error_code)(r.error_message)

    def summary(self, group_id: str, topic_id: uuid.UUID, partition: int) -> PartitionState:
        """The partition's start, epochs and records done (ReadShareGroupStateSummary), no
        batches; a start of -1 if it has no state or no leader used it yet. Raises the
        coordinator's error."""
        R = _request("read_share_group_state_summary")
        request = R(
            group_id=group_id,
            topics=[
                R.ReadStateSummaryData(
                    topic_id=topic_id,
                    partitions=[R.PartitionData(partition=partition, leader_epoch=-1)],
                )
            ],
        )
        r = self._result((group_id, topic_id, partition), request, SUMMARY_VERSION)
        if r.error_code:
            raise error_for_code(r.error_code)(r.error_message)
        state = PartitionState(
            r.start_offset, r.start_offset, {}, r.leader_epoch, state_epoch=r.state_epoch
        )
        state.complete = max(r.delivery_complete_count, 0)
        return state

    def delete(self, group_id: str, topic_ids: list[uuid.UUID] | None = None) -> None:
        """Forget the group's state of those topics (of every topic when None)
        (DeleteShareGroupState); an error is logged."""
        wanted = None if topic_ids is None else set(topic_ids)
        for key in self._channel.share_state_keys(group_id):
            if wanted is not None and key[1] not in wanted:
                continue
            R = _request("delete_share_group_state")
            request = R(
                group_id=key[0],
                topics=[
                    R.DeleteStateData(
                        topic_id=key[1], partitions=[R.PartitionData(partition=key[2])]
                    )
                ],
            )
            try:
                r = self._result(key, request, DELETE_VERSION)
                if r.error_code:
                    raise error_for_code(r.error_code)(r.error_message)
            except KafkaError as e:
                _log.warning("share state of %s not deleted: %s", key, e)
            self._reset(key)

    def partitions_of(self, group_id: str) -> dict[tuple[uuid.UUID, int], PartitionState]:
        """The summary of each partition the group has state for; one whose coordinator
        does not answer is left out."""
        out = {}
        for key in self._channel.share_state_keys(group_id):
            try:
                out[key[1], key[2]] = self.summary(*key)
            except KafkaError:
                continue
        return out

    def _reset(self, key: Key) -> None:
        for listener in self.on_reset:
            listener(*key)


def _partition_result(response: Any, key: Key) -> Any:
    """The result of ``key``'s partition in a state API's answer."""
    for topic in response.results:
        if topic.topic_id == key[1]:
            for p in topic.partitions:
                if p.partition == key[2]:
                    return p
    raise UnknownServerError(f"the share coordinator did not answer for {key}")


def _partition_state(
    start_offset: int, batches: list[StateBatch], leader_epoch: int, state_epoch: int
) -> PartitionState:
    records = {
        offset: (s, count) for first, last, s, count in batches for offset in range(first, last + 1)
    }
    end = max(records, default=start_offset - 1) + 1
    return PartitionState(
        start_offset, max(end, start_offset), records, leader_epoch, state_epoch=state_epoch
    )
