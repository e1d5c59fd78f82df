"""Belief decay and model advice: confidence only ever falls, within a floor, then retires;
decay counts the gap since the last reinforcement once, however often it runs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sonality.core.decay import (
    DecayResult,
    Verdict,
    apply_advice,
    decay_beliefs,
    decay_floor,
    decayed_confidence,
)
from sonality.core.opinion import commit_due, confidence_for
from sonality.models import Belief, BeliefStatus, StagedUpdate

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


@settings(deadline=None)
@given(
    st.floats(min_value=0.0, max_value=1.0),
    st.integers(min_value=0, max_value=40),
    st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=30),
)
def test_decay_over_many_reflections_is_one_application_for_the_total_gap(
    reinforced: float, count: int, steps: list[int]
) -> None:
    """Decay at every reflection (each fed the previous result, as committed reflections
    are) ends where one application of the formula for the total gap does; a belief that
    retires on the way stays as it retired, where one application at that point puts it."""
    belief = make_belief(reinforced, count)
    now = 0
    for step in steps:
        now += step
        result = decay_beliefs([belief], now)
        changed = {b.topic: b for b in result.decayed}
        belief = changed.get(belief.topic, belief)
        if belief.status is BeliefStatus.RETIRED:
            break
    once = decay_beliefs([make_belief(reinforced, count)], now)
    expected = once.decayed[0] if once.decayed else make_belief(reinforced, count)
    assert belief.confidence == expected.confidence
    assert belief.status is expected.status
    assert belief.reinforced_confidence == reinforced
    if expected.status is BeliefStatus.ACTIVE:
        assert belief.confidence == decayed_confidence(reinforced, count, now)


def test_decay_counts_the_gap_once() -> None:
    """Three reflections 20 interactions apart leave a 1-evidence belief at
    c × 61^-0.15, not c × (21 × 41 × 61)^-0.15 (the compounding the design forbids)."""
    belief = make_belief(0.23137821315975915)
    for now in (20, 40, 60):
        (belief,) = decay_beliefs([belief], now).decayed
    assert belief.confidence == pytest.approx(0.23137821315975915 * 61**-0.15)
    assert belief.status is BeliefStatus.ACTIVE


def test_a_reinforced_belief_restarts_from_its_reinforced_confidence() -> None:
    """New evidence resets the starting point: the next decay runs from the confidence
    the evidence earned, over the gap since that reinforcement."""
    stale = make_belief(0.5, 2)
    (faded,) = decay_beliefs([stale], 100).decayed
    result = commit_due(
        "p1",
        [
            StagedUpdate(
                id="s1",
                persona_id="p1",
                topic="tea",
                signed_delta=0.05,
                staged_at=97,
                due_at=100,
                episode_id="e1",
            )
        ],
        {"tea": faded},
        now_index=100,
        now=T1,
    )
    (reinforced,) = result.beliefs
    assert reinforced.confidence == reinforced.reinforced_confidence == confidence_for(3)
    (again,) = decay_beliefs([reinforced], 130).decayed
    assert again.confidence == pytest.approx(confidence_for(3) * 31**-0.15)


def test_missing_reinforced_confidence_is_the_confidence() -> None:
    """A belief built without ``reinforced_confidence`` (new evidence) starts from its
    confidence."""
    assert make_belief(0.42).reinforced_confidence == 0.42


def test_decay_never_raises_a_lowered_confidence() -> None:
    """A confidence already under the formula (lowered by advice) stays where it is."""
    belief = make_belief(0.2).model_copy(update={"reinforced_confidence": 0.9})
    assert decay_beliefs([belief], 10) == DecayResult()


def test_retain_changes_nothing() -> None:
    """RETAIN keeps the arithmetic result as it is."""
    belief = make_belief(0.7)
    assert apply_advice(belief, Verdict.RETAIN) is belief


def test_decay_verdict_halves_within_the_floor() -> None:
    """DECAY halves the confidence but never under the evidence floor."""
    new = apply_advice(make_belief(0.7), Verdict.DECAY, now=T1)
    assert new.confidence == pytest.approx(0.35)
    assert new.uncertainty == pytest.approx(0.65)
    assert new.updated_at == T1
    assert new.status is BeliefStatus.ACTIVE
    held = apply_advice(make_belief(0.7, 11), Verdict.DECAY)
    assert held.confidence == pytest.approx(0.4)


def test_decay_verdict_can_retire() -> None:
    """DECAY taking a weak belief under 0.05 retires it."""
    new = apply_advice(make_belief(0.08), Verdict.DECAY)
    assert new.confidence == pytest.approx(0.04)
    assert new.status is BeliefStatus.RETIRED


def test_forget_retires_without_deleting() -> None:
    """FORGET retires the belief and keeps its confidence and evidence."""
    new = apply_advice(make_belief(0.7, 4), Verdict.FORGET)
    assert new.status is BeliefStatus.RETIRED
    assert (new.confidence, new.evidence_count, new.topic) == (0.7, 4, "tea")


@given(
    st.floats(min_value=0.0, max_value=1.0),
    st.integers(min_value=0, max_value=40),
    st.sampled_from(list(Verdict)),
    st.sampled_from(list(BeliefStatus)),
)
def test_advice_never_raises_confidence(
    confidence: float, count: int, verdict: Verdict, status: BeliefStatus
) -> None:
    """Whatever the verdict, confidence does not go up and a retired belief stays as it is."""
    belief = make_belief(confidence, count, status=status)
    new = apply_advice(belief, verdict)
    assert new.confidence <= confidence
    if status is BeliefStatus.RETIRED:
        assert new is belief
