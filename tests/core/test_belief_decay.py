"""Belief decay and model advice: confidence only ever falls, within a floor, then retires."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sonality.core.decay import DecayResult, apply_advice, decay_beliefs, decay_floor
from sonality.models import Belief, BeliefStatus

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = datetime(2026, 2, 1, tzinfo=UTC)


def make_belief(
    confidence: float,
    evidence_count: int = 1,
    last_reinforced_at: int = 0,
    *,
    topic: str = "tea",
    status: BeliefStatus = BeliefStatus.ACTIVE,
) -> Belief:
    return Belief(
        persona_id="p1",
        topic=topic,
        position=0.4,
        confidence=confidence,
        evidence_count=evidence_count,
        uncertainty=1.0 - confidence,
        last_reinforced_at=last_reinforced_at,
        status=status,
        created_at=T0,
        updated_at=T0,
    )


def test_worked_example() -> None:
    """Confidence 0.5, gap 9, one piece of evidence: 0.5 × 10^-0.15 = 0.353973."""
    result = decay_beliefs([make_belief(0.5)], 9)
    (new,) = result.decayed
    assert new.confidence == pytest.approx(0.353973, abs=1e-6)
    assert new.uncertainty == pytest.approx(1.0 - 0.353973, abs=1e-6)
    assert new.status is BeliefStatus.ACTIVE
    assert result.retired == ()


def test_recent_beliefs_are_untouched() -> None:
    """A gap under 5 interactions leaves a belief alone."""
    assert decay_beliefs([make_belief(0.5, last_reinforced_at=6)], 10) == DecayResult()


def test_retired_beliefs_are_untouched() -> None:
    """Only active beliefs decay."""
    belief = make_belief(0.3, status=BeliefStatus.RETIRED)
    assert decay_beliefs([belief], 100) == DecayResult()


def test_floor_holds_well_evidenced_beliefs() -> None:
    """Eleven pieces of evidence keep confidence at or above 0.4, however stale."""
    (new,) = decay_beliefs([make_belief(0.9, 11)], 1_000_000).decayed
    assert new.confidence == pytest.approx(0.4)


def test_floor_never_lifts_a_lower_confidence() -> None:
    """A floor above the current confidence holds it where it is, never higher."""
    belief = make_belief(0.3, 20)  # floor 0.6
    assert decay_beliefs([belief], 100) == DecayResult()


def test_floor_formula() -> None:
    """The floor is min(0.6, (n - 1) × 0.04), and never negative."""
    assert decay_floor(0) == 0.0
    assert decay_floor(1) == 0.0
    assert decay_floor(6) == pytest.approx(0.2)
    assert decay_floor(100) == 0.6


def test_retires_below_threshold_but_keeps_the_belief() -> None:
    """Confidence under 0.05 retires the belief; it is returned, not deleted."""
    result = decay_beliefs([make_belief(0.06)], 20, now=T1)
    (new,) = result.decayed
    assert new.confidence == pytest.approx(0.06 * 21**-0.15)
    assert new.status is BeliefStatus.RETIRED
    assert new.updated_at == T1
    assert result.retired == ("tea",)


def test_updated_at_kept_without_now() -> None:
    """Without ``now`` the decayed belief keeps its updated_at."""
    (new,) = decay_beliefs([make_belief(0.5)], 50).decayed
    assert new.updated_at == T0


@given(
    st.floats(min_value=0.0, max_value=1.0),
    st.integers(min_value=0, max_value=100),
    st.integers(min_value=0, max_value=100_000),
)
def test_decay_never_raises_and_respects_floor(confidence: float, count: int, gap: int) -> None:
    """Decay never raises confidence, never goes under min(floor, old), retires under 0.05."""
    belief = make_belief(confidence, count)
    result = decay_beliefs([belief], gap)
    new = result.decayed[0] if result.decayed else belief
    assert new.confidence <= confidence
    assert new.confidence >= min(decay_floor(count), confidence)
    assert new.uncertainty == pytest.approx(1.0 - new.confidence)
    assert (new.status is BeliefStatus.RETIRED) is (gap >= 5 and new.confidence < 0.05)
    assert (belief.topic in result.retired) is (new.status is BeliefStatus.RETIRED)
    if gap < 5:
        assert result == DecayResult()


def test_only_changed_beliefs_are_returned() -> None:
    """The result lists changed beliefs only, with the topics it retired."""
    beliefs = [
        make_belief(0.5, topic="stale"),
        make_belief(0.5, last_reinforced_at=98, topic="fresh"),
        make_belief(0.01, topic="faint"),
    ]
    result = decay_beliefs(beliefs, 100)
    assert [b.topic for b in result.decayed] == ["stale", "faint"]
    assert result.retired == ("faint",)


def test_advice_can_lower() -> None:
    """A suggestion below the current confidence is taken."""
    new = apply_advice(make_belief(0.7), 0.3, now=T1)
    assert new.confidence == 0.3
    assert new.uncertainty == pytest.approx(0.7)
    assert new.updated_at == T1
    assert new.status is BeliefStatus.ACTIVE


@pytest.mark.parametrize("suggestion", [0.7, 0.9, 5.0, math.nan])
def test_advice_cannot_raise(suggestion: float) -> None:
    """A suggestion at or above the current confidence (or NaN) changes nothing."""
    belief = make_belief(0.7)
    assert apply_advice(belief, suggestion) is belief


def test_advice_to_forget_retires() -> None:
    """Advice below 0.05 (negative values clamp to 0) retires the belief."""
    new = apply_advice(make_belief(0.7), -1.0)
    assert new.confidence == 0.0
    assert new.status is BeliefStatus.RETIRED


@given(st.floats(min_value=0.0, max_value=1.0), st.floats(allow_nan=True))
def test_advice_never_raises_confidence(confidence: float, suggestion: float) -> None:
    """Whatever the model suggests, confidence does not go up."""
    new = apply_advice(make_belief(confidence), suggestion)
    assert new.confidence <= confidence
    assert 0.0 <= new.confidence <= 1.0
