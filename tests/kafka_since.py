"""What changed between the Kafka 4.0 snapshot the golden vectors come from and Kafka 4.4.0.

The built-in specs state Kafka 4.4.0; the vectors were encoded by a 4.0 snapshot. Two kinds
of change came in between without touching any released wire format, and the tests name
each one here rather than loosening a comparison.
"""

from __future__ import annotations

from typing import Any

#: (api key, version) that were unstable in the snapshot and that Kafka dropped before any
#: release shipped them (share groups restarted at v1).
DROPPED = {(76, 0), (77, 0), (78, 0), (79, 0)}
#: (api key, version) that Kafka redefined in place while unstable: 4.4.0's
#: ReadShareGroupStateSummary v0 is not the snapshot's.
REDEFINED = {(87, 0)}

#: JSON keys Kafka renamed since the snapshot, per API: the bytes stay, the names follow 4.4.0.
RENAMED = {
    28: {"generationId": "generationIdOrMemberEpoch"},
    52: {
        "candidateEpoch": "replicaEpoch",
        "candidateId": "replicaId",
        "candidateDirectoryId": "replicaDirectoryId",
    },
    74: {"clientMetricsResources": "configResources", "name": "resourceName"},
}


def renamed(value: Any, names: dict[str, str]) -> Any:
    """Kafka's JSON with the keys of ``names`` renamed, at any depth."""
    if isinstance(value, dict):
        return {names.get(k, k): renamed(x, names) for k, x in value.items()}
    if isinstance(value, list):
        return [renamed(x, names) for x in value]
    return value


def kafka_json(v: dict[str, Any]) -> Any:
    """A vector's JSON as Kafka 4.4.0's converter names its keys."""
    return renamed(v["json"], RENAMED.get(v["api_key"], {}))


def still_defined(v: dict[str, Any]) -> bool:
    """Whether Kafka 4.4.0 still has the vector's version as the snapshot wrote it."""
    return (v["api_key"], v["version"]) not in DROPPED | REDEFINED
