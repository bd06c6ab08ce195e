"""A share group and its members as the coordinator holds them (`share_group` serves
them, `share_group_records` writes and reads them in Kafka's record formats)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

__all__ = ["Assignment", "ShareGroup", "ShareMember"]

#: Topic id -> partitions.
Assignment = dict[uuid.UUID, list[int]]


@dataclass(slots=True)
class ShareMember:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed: list[str]
    assignment: Assignment = field(default_factory=dict)
    #: When the member's session ends without a heartbeat (coordinator ms).
    deadline: int = 0


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    #: The partitions whose share state the group's coordinator has initialised.
    initialized: Assignment = field(default_factory=dict)
    #: What the group's state records last said: member id ("" for the group's own) ->
    #: record key -> value; a change writes only the records that differ.
    persisted: dict[str, dict[bytes, bytes]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"
