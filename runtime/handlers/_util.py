"""Small helpers shared by the handlers."""

from __future__ import annotations

from kafkagen.runtime.broker.acls import AclOperation

__all__ = ["authorized_operations", "TOPIC_OPERATIONS", "CLUSTER_OPERATIONS", "GROUP_OPERATIONS"]

#: Nothing is enforced, so every operation a resource type knows is allowed.
TOPIC_OPERATIONS = (
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.CREATE,
    AclOperation.DELETE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
)
CLUSTER_OPERATIONS = (
    AclOperation.CREATE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
    AclOperation.CLUSTER_ACTION,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
    AclOperation.IDEMPOTENT_WRITE,
)
GROUP_OPERATIONS = (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE)

#: What a response says when the client did not ask for authorized operations.
NOT_REQUESTED = -(2**31)


def authorized_operations(ops: tuple[AclOperation, ...]) -> int:
    """The bit field responses carry: bit ``op`` set for each allowed operation."""
    bits = 0
    for op in ops:
        bits |= 1 << op
    return bits
