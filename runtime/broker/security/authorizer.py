"""Authorisation with the semantics of Kafka's StandardAuthorizer, over the stored ACLs.

Enabled by ``authorizer.class.name`` (any non-empty value: the ACLs of `acls.AclStore`
are then enforced). A request by ``principal`` from ``host`` for ``operation`` on a resource
is decided so:

1. a principal named in ``super.users`` is allowed everything;
2. the ACLs that apply are those whose pattern matches the resource (LITERAL with its name
   or ``*``, PREFIXED with a prefix of it), whose principal is the principal or ``User:*``
   and whose host is the host or ``*``;
3. a DENY for the operation (or ALL) wins over any ALLOW;
4. an ALLOW for the operation, for ALL, or for an operation that implies it (READ, WRITE,
   DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows it;
5. a resource no ACL applies to at all is allowed only if
   ``allow.everyone.if.no.acl.found``; otherwise the answer is deny.
"""

from __future__ import annotations

from collections.abc import Callable

from ..config.store import ConfigStore
from .acls import WILDCARD, AclBinding, AclOperation, AclPermission, AclStore, PatternType
from .acls import ResourceType as RT

__all__ = ["CLUSTER_NAME", "Authorizer", "OPERATIONS_BY_TYPE"]

#: Where the authorizer finds the current ACLs (the store a log directory may replace).
AclStoreSource = Callable[[], AclStore]
#: The one cluster resource's name.
CLUSTER_NAME = "kafka-cluster"
_IMPLIED = {
    AclOperation.DESCRIBE: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    ),
    AclOperation.DESCRIBE_CONFIGS: (AclOperation.ALTER_CONFIGS,),
}
#: The operations a resource type knows, as authorized-operations fields report them.
OPERATIONS_BY_TYPE: dict[int, tuple[AclOperation, ...]] = {
    RT.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    RT.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    RT.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
    ),
    RT.TRANSACTIONAL_ID: (AclOperation.WRITE, AclOperation.DESCRIBE),
}


class Authorizer:
    """Decides every request once ``authorizer.class.name`` is set; allows all otherwise."""

    def __init__(self, configs: ConfigStore, acls_of: AclStoreSource) -> None:
        self.enabled = bool((configs.broker_raw("authorizer.class.name")[0] or "").strip())
        raw = configs.broker_raw("super.users")[0] or ""
        self.super_users = frozenset(p.strip() for p in raw.split(";") if p.strip())
        self.allow_if_no_acl = configs.broker_bool("allow.everyone.if.no.acl.found")
        self._acls_of = acls_of

    def authorize(
        self, principal: str, host: str, operation: int, resource_type: int, name: str
    ) -> bool:
        if not self.enabled or principal in self.super_users:
            return True
        host = host.removeprefix("/")
        applicable = self._resource_acls(resource_type, name)
        if not applicable:
            return self.allow_if_no_acl
        mine = [
            b
            for b in applicable
            if b.principal in (principal, "User:*") and b.host in (host, WILDCARD)
        ]
        for b in mine:
            if b.permission_type == AclPermission.DENY and b.operation in (
                operation,
                AclOperation.ALL,
            ):
                return False
        allowing = (operation, AclOperation.ALL, *_IMPLIED.get(AclOperation(operation), ()))
        return any(
            b.permission_type == AclPermission.ALLOW and b.operation in allowing for b in mine
        )

    def authorized_operations(
        self, principal: str, host: str, resource_type: int, name: str
    ) -> int:
        """The bit set responses carry: bit ``op`` for each operation allowed on it."""
        bits = 0
        for op in OPERATIONS_BY_TYPE.get(resource_type, ()):
            if self.authorize(principal, host, op, resource_type, name):
                bits |= 1 << op
        return bits

    def authorize_any(self, principal: str, host: str, operation: int, resource_type: int) -> bool:
        """Whether ``operation`` is allowed on some resource of the type (Kafka's
        authorizeByResourceType): an ALLOW for the principal that no DENY of the same
        pattern, nor a DENY on all resources of the type, takes back."""
        if not self.enabled or principal in self.super_users:
            return True
        host = host.removeprefix("/")
        store = self._acls_of()
        mine = [
            b
            for b in store.all()
            if b.resource_type == resource_type
            and b.principal in (principal, "User:*")
            and b.host in (host, WILDCARD)
            and b.operation in (operation, AclOperation.ALL)
        ]
        denied = {
            (b.resource_name, b.pattern_type)
            for b in mine
            if b.permission_type == AclPermission.DENY
        }
        if (WILDCARD, PatternType.LITERAL) in denied:
            return False
        return any(
            b.permission_type == AclPermission.ALLOW
            and (b.resource_name, b.pattern_type) not in denied
            for b in mine
        )

    def _resource_acls(self, resource_type: int, name: str) -> list[AclBinding]:
        return [
            b
            for b in self._acls_of().all()
            if b.resource_type == resource_type
            and (
                (b.pattern_type == PatternType.LITERAL and b.resource_name in (name, WILDCARD))
                or (b.pattern_type == PatternType.PREFIXED and name.startswith(b.resource_name))
            )
        ]
