"""What two brokers may legitimately answer differently, and the field-by-field comparison.

Responses are compared in Kafka's JSON form (``response.to_json(version)``). Before the
comparison each one goes through `Normaliser`, which rewrites only values that name or
time things the broker chose for itself:

- node ids (``nodeId``, ``leaderId``, ``controllerId``, ... and the replica lists) become
  ``"<node>"`` (-1, "no node", stays): which broker leads or coordinates is a placement
  choice, so only "some node" versus "none" is compared; replica lists keep their length;
- ``host`` and ``port`` become ``"<host>"`` and ``"<port>"``, ``clusterId`` ``"<cluster>"``;
- topic ids become the name of the topic they were created as (``"<id of NAME>"``), or
  ``"<topic-id>"``; the zero id stays;
- producer ids and group member ids become ``"<producer 1>"``, ``"<member 1>"``, ... in
  order of first appearance in the scenario, so "the same id again" is still compared;
- timestamps (``timestamp``, ``logAppendTimeMs``, start and fetch times; not timeouts)
  above 0 become ``"<time>"`` (-1 and 0 mean "none" and stay); ``throttleTimeMs``
  becomes 0;
- ``errorMessage`` text becomes ``"<message>"`` (null and "" stay): the error code is
  the contract, the text is for people;
- ``logDir`` paths become ``"<log dir>"`` and a disk's ``totalBytes`` and ``usableBytes``
  ``"<bytes>"``: they describe the machine, not the protocol;
- record batches are compared field by field (producer ids as above, the CRC as
  "valid or not", control batches without their timestamps);
- arrays of structs are compared as sets (sorted by their normalised JSON): Kafka's
  protocol keeps no order in its topic, partition and member lists.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from kafkagen.runtime.errors import ERRORS, KafkaError
from kafkagen.runtime.records import iter_batches

__all__ = ["Normaliser", "first_difference"]

_NODE_KEYS = frozenset(
    {
        "nodeId",
        "leaderId",
        "controllerId",
        "brokerId",
        "coordinatorId",
        "replicaId",
    }
)
_NODE_LIST_KEYS = frozenset(
    {
        "replicaNodes",
        "isrNodes",
        "offlineReplicas",
        "replicas",
        "isr",
        "addingReplicas",
        "removingReplicas",
        "eligibleLeaderReplicas",
        "lastKnownElr",
    }
)
_TIME_KEYS = frozenset(
    {
        "timestamp",
        "logAppendTimeMs",
        "lastTimestamp",
        "transactionStartTimeMs",
        "currentTxnStartTimestamp",
        "lastFetchTimestamp",
        "lastCaughtUpTimestamp",
    }
)
_ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


class Normaliser:
    """Normalises the responses of one scenario on one broker, in the order they came."""

    def __init__(self, topic_ids: dict[str, str] | None = None) -> None:
        #: Topic id (Kafka's text form) -> the name it was created as.
        self.topic_ids = topic_ids if topic_ids is not None else {}
        self._producers: dict[int, str] = {}
        self._members: dict[str, str] = {}

    def __call__(self, value: Any) -> Any:
        return self._walk(value, "")

    def _walk(self, value: Any, key: str) -> Any:
        if isinstance(value, dict):
            return {k: self._walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            if key in _NODE_LIST_KEYS:
                return [self._node(v) for v in value]
            items = [self._walk(v, key) for v in value]
            if items and all(isinstance(v, dict) for v in items):
                items.sort(key=lambda v: json.dumps(v, sort_keys=True))
            return items
        return self._scalar(value, key)

    def _records(self, value: str) -> Any:
        """Record batches (base64 in the JSON form), field by field: the producer id a
        batch carries is normalised like any other, and with it goes the CRC (checked
        instead); control batches carry the broker's clock."""
        raw = base64.b64decode(value)
        if not raw:
            return value
        out: list[Any] = []
        try:
            for b in iter_batches(raw, verify_crc=False):
                control = b.is_control
                out.append(
                    {
                        "baseOffset": b.base_offset,
                        "partitionLeaderEpoch": b.partition_leader_epoch,
                        "attributes": b.attributes,
                        "lastOffsetDelta": b.last_offset_delta,
                        "crcValid": b.is_valid(),
                        "timestamps": "<time>" if control else [b.base_timestamp, b.max_timestamp],
                        "producerId": self._scalar(b.producer_id, "producerId"),
                        "producerEpoch": b.producer_epoch,
                        "baseSequence": b.base_sequence,
                        "records": [
                            (
                                [r.offset, r.key, r.value, r.headers]
                                if control
                                else [r.offset, r.timestamp, r.key, r.value, r.headers]
                            )
                            for r in b.records()
                        ],
                    }
                )
        except (ValueError, KafkaError) as e:
            out.append({"unreadable": str(e)})
        return json.loads(json.dumps(out, default=lambda v: base64.b64encode(v).decode()))

    def _scalar(self, value: Any, key: str) -> Any:
        if key == "records" and isinstance(value, str):
            return self._records(value)
        if key == "leader" and isinstance(value, str):  # JoinGroup's leader is a member id
            return self._member(value)
        if key in _NODE_KEYS:
            return self._node(value)
        if key == "host":
            return "<host>"
        if key == "port":
            return "<port>"
        if key == "clusterId":
            return None if value is None else "<cluster>"
        if key == "throttleTimeMs":
            return 0
        if key == "errorMessage":
            return value if not value else "<message>"
        if key == "logDir":
            return "<log dir>"
        if key in ("totalBytes", "usableBytes") and isinstance(value, int) and value >= 0:
            return "<bytes>"
        if key == "topicId":
            if value == _ZERO_UUID:
                return value
            name = self.topic_ids.get(value)
            return f"<id of {name}>" if name is not None else "<topic-id>"
        if key == "clientInstanceId" and value != _ZERO_UUID:
            return "<client instance>"  # a random id each broker hands out (KIP-714)
        if key == "subscriptionId":
            return "<subscription>"  # a hash over that random id
        if key == "producerId" and isinstance(value, int) and value >= 0:
            return self._producers.setdefault(value, f"<producer {len(self._producers) + 1}>")
        if key == "memberId":
            return self._member(value)
        if key in _TIME_KEYS and isinstance(value, int) and value > 0:
            return "<time>"
        return value

    @staticmethod
    def _node(value: Any) -> Any:
        return "<node>" if isinstance(value, int) and value >= 0 else value

    def _member(self, value: Any) -> Any:
        if not isinstance(value, str) or not value:
            return value
        return self._members.setdefault(value, f"<member {len(self._members) + 1}>")


def _show(value: Any, key: str) -> str:
    text = json.dumps(value, sort_keys=True)
    if len(text) > 120:
        text = text[:117] + "..."
    if key.endswith("rrorCode") and isinstance(value, int):
        known = ERRORS.get(value)
        text += f" {known.name}" if known is not None else ""
    return text


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where ``a`` and ``b`` first differ, as ``path: a-value != b-value``; None if equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            where = f"{path}.{k}" if path else k
            if k not in a or k not in b:
                return f"{where}: only in {'the broker' if k in a else 'the reference'}'s answer"
            found = first_difference(a[k], b[k], where)
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found is not None:
                return found
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)} items"
        return None
    if a == b and type(a) is type(b):
        return None
    key = path.rsplit(".", 1)[-1]
    return f"{path or 'value'}: {_show(a, key)} != {_show(b, key)}"
