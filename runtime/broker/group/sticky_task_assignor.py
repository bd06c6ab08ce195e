"""The task assignor of streams groups (KIP-1071), sticky as Kafka's default ``sticky``.

A task is one partition of one subtopology. Every task gets exactly one active owner; a
task keeps the member that owned it in the previous target assignment as long as that
member stays within its fair share, and the rest go to the least loaded members, so that
active counts differ by at most one between members. Standby replicas (as many per task
as ``num_standby``) go to members of other processes than the active owner and of
distinct processes among themselves: their previous holders first, then, as Kafka 4.4's
assignor ranks them, the least loaded of the members that report the task's state (a
changelog offset in their heartbeats; at equal load the highest offset), then the least
loaded; a standby that no other process can take is left out, as Kafka does when capacity
is short. Like Kafka 4.4's, this assignor plans no warm-up tasks.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

__all__ = ["TaskSet", "TaskOffsets", "Tasks", "AssignorMember", "assign", "task_list"]

#: Subtopology id -> task partitions.
TaskSet = dict[str, set[int]]
#: Subtopology id -> task partition -> an offset (of the task's changelog state).
TaskOffsets = dict[str, dict[int, int]]


@dataclass(slots=True)
class Tasks:
    """A member's active, standby and warm-up tasks."""

    active: TaskSet = field(default_factory=dict)
    standby: TaskSet = field(default_factory=dict)
    warmup: TaskSet = field(default_factory=dict)

    def copy(self) -> Tasks:
        return Tasks(_copy(self.active), _copy(self.standby), _copy(self.warmup))

    def kinds(self) -> tuple[TaskSet, TaskSet, TaskSet]:
        return self.active, self.standby, self.warmup

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tasks):
            return NotImplemented
        return all(_copy(a) == _copy(b) for a, b in zip(self.kinds(), other.kinds(), strict=False))

    def is_empty(self) -> bool:
        return not any(ps for kind in self.kinds() for ps in kind.values())


@dataclass(frozen=True, slots=True)
class AssignorMember:
    """What the assignor knows of a member: its process, its previous target and the
    offsets of the task states it reported."""

    process_id: str
    previous: Tasks
    task_offsets: Mapping[str, Mapping[int, int]] = field(default_factory=dict)


def task_list(task_counts: Mapping[str, int]) -> list[tuple[str, int]]:
    return [(sub, p) for sub in sorted(task_counts) for p in range(task_counts[sub])]


def assign(
    members: Mapping[str, AssignorMember],
    task_counts: Mapping[str, int],
    num_standby: int,
    stateful: Collection[str] | None = None,
) -> dict[str, Tasks]:
    """The new target assignment: member id -> its tasks. Standbys are planned only for
    the tasks of ``stateful`` subtopologies (those with a state changelog; None: all)."""
    out = {m: Tasks() for m in members}
    if not members:
        return out
    tasks = task_list(task_counts)
    active_owner = _assign_active(members, tasks)
    for (sub, p), owner in active_owner.items():
        out[owner].active.setdefault(sub, set()).add(p)
    if num_standby > 0:
        load = {m: _count(out[m].active) for m in members}
        # A stateless task has no state to keep warm: Kafka plans no standby for it.
        for task in sorted(tasks, key=_by_partition):
            if stateful is not None and task[0] not in stateful:
                continue
            owner = active_owner[task]
            used = {members[owner].process_id}
            previous = [m for m in sorted(members) if _has(members[m].previous.standby, task)]
            for _ in range(num_standby):
                candidates = [m for m in members if members[m].process_id not in used]
                if not candidates:
                    break
                sticky = [m for m in previous if m in candidates]
                reporting = [m for m in candidates if _has(members[m].task_offsets, task)]
                if sticky:
                    pick = sticky[0]
                elif reporting:
                    pick = min(reporting, key=lambda m: (load[m], -_offset(members[m], task), m))
                else:
                    pick = min(candidates, key=lambda m: (load[m], m))
                out[pick].standby.setdefault(task[0], set()).add(task[1])
                used.add(members[pick].process_id)
                load[pick] += 1
    return out


def _assign_active(
    members: Mapping[str, AssignorMember], tasks: list[tuple[str, int]]
) -> dict[tuple[str, int], str]:
    n = len(members)
    floor, extra = divmod(len(tasks), n)
    load = dict.fromkeys(members, 0)
    at_ceiling = 0
    owner: dict[tuple[str, int], str] = {}

    def room(m: str) -> bool:
        return load[m] < floor or (load[m] == floor and at_ceiling < extra)

    def take(m: str, task: tuple[str, int]) -> None:
        nonlocal at_ceiling
        owner[task] = m
        load[m] += 1
        if load[m] == floor + 1:
            at_ceiling += 1

    previous: dict[tuple[str, int], str] = {}
    for m in sorted(members):
        for sub, ps in members[m].previous.active.items():
            for p in ps:
                previous.setdefault((sub, p), m)
    # As Kafka 4.4's assignor: the previous owners keep their tasks first, taken partition
    # by partition across subtopologies (so a member keeping half keeps a slice of each
    # subtopology), then a previous standby holder (the least loaded) takes a task while
    # it has room, then the rest go, subtopology by subtopology, to the least loaded.
    for task in sorted(tasks, key=_by_partition):
        holder = previous.get(task)
        if holder is not None and room(holder):
            take(holder, task)
    for task in sorted(tasks, key=_by_partition):
        if task in owner:
            continue
        warm = [m for m in sorted(members) if _has(members[m].previous.standby, task)]
        if warm:
            holder = min(warm, key=lambda m: load[m])
            if room(holder):
                take(holder, task)
    for task in tasks:
        if task not in owner:
            take(min((m for m in members if room(m)), key=lambda m: (load[m], m)), task)
    return owner


def _by_partition(task: tuple[str, int]) -> tuple[int, str]:
    return task[1], task[0]


def _has(tasks: Mapping[str, Collection[int]], task: tuple[str, int]) -> bool:
    return task[1] in tasks.get(task[0], ())


def _offset(member: AssignorMember, task: tuple[str, int]) -> int:
    return member.task_offsets[task[0]][task[1]]


def _count(tasks: TaskSet) -> int:
    return sum(len(ps) for ps in tasks.values())


def _copy(tasks: TaskSet) -> TaskSet:
    return {s: set(ps) for s, ps in tasks.items() if ps}
