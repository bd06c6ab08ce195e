"""The classic group model: Kafka's state rules for classic groups, as a table."""

from __future__ import annotations

import itertools

import pytest
from kafkagen.runtime.broker.group.group_model import (
    ENTERED_FROM,
    Group,
    GroupState,
    IllegalGroupTransitionError,
)

E, PR, CR, S, D = (
    GroupState.EMPTY,
    GroupState.PREPARING_REBALANCE,
    GroupState.COMPLETING_REBALANCE,
    GroupState.STABLE,
    GroupState.DEAD,
)

#: Every (from, to) move Kafka's GroupState allows (its validPreviousStates, inverted).
KAFKA_MOVES = {
    (PR, E),
    (S, PR),
    (CR, PR),
    (E, PR),
    (PR, CR),
    (CR, S),
    *((state, D) for state in GroupState),
}


def group_in(state: GroupState) -> Group:
    """A group brought to ``state`` through legal moves only."""
    g = Group("g", 0)
    path = {E: [], PR: [PR], CR: [PR, CR], S: [PR, CR, S], D: [D]}[state]
    for step in path:
        g.transition(step, 1)
    assert g.state is state
    return g


def test_the_table_is_kafkas() -> None:
    table = {(src, dst) for dst, sources in ENTERED_FROM.items() for src in sources}
    assert table == KAFKA_MOVES


@pytest.mark.parametrize(("src", "dst"), sorted(KAFKA_MOVES, key=str), ids=str)
def test_legal_moves_change_state_and_timestamp(src: GroupState, dst: GroupState) -> None:
    g = group_in(src)
    g.transition(dst, 42)
    assert (g.state, g.state_timestamp) == (dst, 42)


ILLEGAL = sorted(set(itertools.product(GroupState, GroupState)) - KAFKA_MOVES, key=str)


@pytest.mark.parametrize(("src", "dst"), ILLEGAL, ids=str)
def test_illegal_moves_are_refused_naming_both_states(src: GroupState, dst: GroupState) -> None:
    g = group_in(src)
    with pytest.raises(IllegalGroupTransitionError) as e:
        g.transition(dst, 42)
    assert f"from {src.value} to {dst.value}" in str(e.value)
    assert "'g'" in str(e.value)
    assert g.state is src and g.state_timestamp != 42
