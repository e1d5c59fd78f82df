"""Reflection triggers with attempts: a rejected or failed attempt starts a cooldown like a
committed reflection; periodic still counts from the last committed one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sonality.core.triggers import TriggerKind, TriggerParams, TriggerState, decide

PARAMS = TriggerParams(reflection_every=20)


@given(
    st.integers(min_value=0, max_value=9),
    st.integers(min_value=20, max_value=200),
    st.floats(min_value=0, max_value=5),
    st.integers(min_value=0, max_value=20),
)
def test_an_attempt_starts_a_cooldown(
    since_attempt: int, since_committed: int, shift: float, pending: int
) -> None:
    """Within REFLECTION_EVERY // 2 of the last attempt nothing is due, even when periodic
    (counted from the last commit) and event would fire."""
    count = 1000
    state = TriggerState(
        interaction_count=count,
        last_reflection_at=count - since_committed,
        last_attempt_at=count - since_attempt,
        shift_since_reflection=shift,
        pending_insights=pending,
    )
    decision = decide(state, PARAMS)
    assert (decision.due, decision.kind) == (False, TriggerKind.COOLDOWN)
    assert "attempt" in decision.reason


@given(st.integers(min_value=10, max_value=19))
def test_periodic_counts_from_the_last_commit_not_the_attempt(since_attempt: int) -> None:
    """Once the attempt's cooldown is over, periodic fires on interactions since the last
    committed reflection."""
    state = TriggerState(
        interaction_count=100, last_reflection_at=60, last_attempt_at=100 - since_attempt
    )
    assert decide(state, PARAMS).kind is TriggerKind.PERIODIC


def test_an_older_attempt_does_not_matter() -> None:
    """An attempt before the last committed reflection changes nothing."""
    base = TriggerState(interaction_count=30, last_reflection_at=20)
    older = base.model_copy(update={"last_attempt_at": 5})
    assert decide(older, PARAMS) == decide(base, PARAMS)
    assert decide(older, PARAMS).kind is TriggerKind.NONE


def test_force_passes_an_attempt_cooldown() -> None:
    """A manual reflection forces past the attempt cooldown too."""
    state = TriggerState(interaction_count=30, last_reflection_at=0, last_attempt_at=30)
    assert decide(state, PARAMS, force=True).kind is TriggerKind.MANUAL
