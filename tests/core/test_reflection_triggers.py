"""Reflection triggers: cooldown first, then periodic, then event; force overrides."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sonality.core.triggers import TriggerKind, TriggerParams, TriggerState, decide

EVERY = 20
PARAMS = TriggerParams(reflection_every=EVERY)

counts = st.integers(min_value=0, max_value=50)
shifts = st.floats(min_value=0.0, max_value=5.0)


def state(
    since: int,
    shift: float = 0.0,
    insights: int = 0,
    staged: int = 0,
    last: int = 100,
) -> TriggerState:
    return TriggerState(
        interaction_count=last + since,
        last_reflection_at=last,
        shift_since_reflection=shift,
        pending_insights=insights,
        pending_staged=staged,
    )


def test_defaults() -> None:
    """Defaults: every 20 interactions, event threshold 0.1, cooldown 10."""
    params = TriggerParams()
    assert (params.reflection_every, params.event_shift_threshold, params.cooldown) == (20, 0.1, 10)


@given(st.integers(min_value=0, max_value=EVERY // 2 - 1), shifts, counts, counts)
def test_cooldown_beats_everything(since: int, shift: float, insights: int, staged: int) -> None:
    """Within REFLECTION_EVERY // 2 of the last reflection nothing is due, events included."""
    decision = decide(state(since, shift, insights, staged), PARAMS)
    assert not decision.due
    assert decision.kind is TriggerKind.COOLDOWN


@given(st.integers(min_value=2, max_value=200))
def test_cooldown_also_beats_periodic(every: int) -> None:
    """Cooldown is checked before periodic for every REFLECTION_EVERY."""
    params = TriggerParams(reflection_every=every)
    decision = decide(state(every // 2 - 1, shift=9.0, insights=3), params)
    assert decision.kind is TriggerKind.COOLDOWN


@given(st.integers(min_value=2, max_value=200))
def test_periodic_fires_at_exactly_every(every: int) -> None:
    """Periodic is due at exactly REFLECTION_EVERY interactions, not one before."""
    params = TriggerParams(reflection_every=every)
    before = decide(state(every - 1), params)
    at = decide(state(every), params)
    assert not before.due
    assert at.due
    assert at.kind is TriggerKind.PERIODIC


def test_periodic_wins_over_event() -> None:
    """When both hold, the decision names the periodic trigger."""
    decision = decide(state(EVERY, shift=1.0, insights=2), PARAMS)
    assert decision.kind is TriggerKind.PERIODIC


@given(
    st.integers(min_value=EVERY // 2, max_value=EVERY - 1),
    shifts,
    st.integers(min_value=0, max_value=5),
    st.integers(min_value=0, max_value=5),
)
def test_event_needs_shift_and_pending_work(
    since: int, shift: float, insights: int, staged: int
) -> None:
    """Between cooldown and period, due iff shift > 0.1 and insights or staged updates wait."""
    decision = decide(state(since, shift, insights, staged), PARAMS)
    expected = shift > 0.1 and (insights > 0 or staged > 0)
    assert decision.due is expected
    assert decision.kind is (TriggerKind.EVENT if expected else TriggerKind.NONE)


def test_event_threshold_is_strict() -> None:
    """A shift equal to the threshold is not enough."""
    assert not decide(state(12, shift=0.1, insights=1), PARAMS).due
    assert decide(state(12, shift=0.1001, staged=1), PARAMS).kind is TriggerKind.EVENT


def test_force_is_manual_even_in_cooldown() -> None:
    """A forced reflection is due, kind manual, whatever the state."""
    decision = decide(state(0), PARAMS, force=True)
    assert decision.due
    assert decision.kind is TriggerKind.MANUAL


def test_reason_carries_the_numbers() -> None:
    """The reason says how many interactions decided it."""
    assert "3 interactions" in decide(state(3), PARAMS).reason
