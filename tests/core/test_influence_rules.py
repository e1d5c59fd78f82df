"""Defences against pressure and repetition (``core.influence`` and the per-window cap of
``core.opinion``), as properties that hold whatever the model scores."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from sonality.core.influence import claim_key, claim_similarity, is_pressure, limit_influence
from sonality.core.opinion import OpinionParams, commit_due, stage
from sonality.models import (
    Belief,
    Direction,
    EvidenceAssessment,
    ReasoningType,
    StagedUpdate,
    UserInfluence,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PARAMS = OpinionParams(cooling_period=0)
unit = st.floats(min_value=0.0, max_value=1.0)
words = st.lists(st.sampled_from(["tea", "is", "good", "bad", "everyone", "knows"]), min_size=1)


def staged(delta: float, index: int, n: int = 0, topic: str = "tea") -> StagedUpdate:
    return StagedUpdate(
        id=f"s{index}_{n}",
        persona_id="p",
        topic=topic,
        signed_delta=delta,
        staged_at=index,
        due_at=index,
        episode_id=f"e{index}",
    )


@given(score=unit, novelty=unit, count=st.integers(0, 100))
def test_pressure_stages_nothing_whatever_its_score(
    score: float, novelty: float, count: int
) -> None:
    """Social pressure and appeals to popularity have zero magnitude at any score."""
    for reasoning in (ReasoningType.SOCIAL_PRESSURE, ReasoningType.APPEAL_TO_POPULARITY):
        assert is_pressure(reasoning)
        evidence = EvidenceAssessment(
            score=score,
            novelty=novelty,
            reasoning_type=reasoning,
            topics=("tea",),
            direction=Direction.OPPOSES,
        )
        made = stage(
            "p",
            "e1",
            ("tea",),
            evidence,
            {},
            interaction_count_before=count,
            id_factory=lambda: "s",
            params=PARAMS,
        )
        assert made == ()


@given(words=words, noise=st.sampled_from(["", "!", "  ", "?!", "..."]))
def test_case_punctuation_and_spacing_do_not_make_a_claim_new(words: list[str], noise: str) -> None:
    """A message shouted, re-spaced or re-punctuated is the same claim (similarity 1)."""
    message = " ".join(words)
    variant = f"  {noise}".join(w.upper() for w in words) + noise
    assert claim_key(message) == claim_key(variant)
    assert claim_similarity(message, variant) == 1.0


@settings(max_examples=200)
@given(deltas=st.lists(st.floats(min_value=-0.1, max_value=0.1), min_size=1, max_size=40))
def test_one_user_never_stages_more_than_the_budget_per_window(deltas: list[float]) -> None:
    """Whatever one user sends, the |deltas| kept on a topic within one window sum to at
    most the budget."""
    history: list[UserInfluence] = []
    for index, delta in enumerate(deltas, start=1):
        kept = limit_influence(
            (staged(delta, index),),
            message=f"distinct claim number {index} with its own words {index * 7}",
            influence=history,
            index=index,
            window=PARAMS.influence_window,
            budget=PARAMS.user_influence_budget,
            repeat_similarity=PARAMS.repeat_similarity,
        )
        for item in kept:
            assert math.copysign(1, item.signed_delta) == math.copysign(1, delta)
            assert abs(item.signed_delta) <= abs(delta)
            history.append(
                UserInfluence(
                    episode_id=item.episode_id,
                    topic=item.topic,
                    signed_delta=item.signed_delta,
                    staged_at=index,
                    message="m",
                )
            )
    for end in range(1, len(deltas) + 1):
        window = [r for r in history if end - PARAMS.influence_window < r.staged_at <= end]
        assert math.fsum(abs(r.signed_delta) for r in window) <= PARAMS.user_influence_budget + 1e-9


@given(delta=st.floats(min_value=0.001, max_value=0.1))
def test_a_repeated_claim_on_the_same_topic_stages_nothing(delta: float) -> None:
    """The same message from the same user on a topic it already moved carries nothing."""
    earlier = [
        UserInfluence(episode_id="e1", topic="tea", signed_delta=0.01, staged_at=1, message="Tea!")
    ]
    kept = limit_influence(
        (staged(delta, 2),),
        message="TEA",
        influence=earlier,
        index=2,
        window=20,
        budget=1.0,
        repeat_similarity=0.9,
    )
    assert kept == ()


@settings(max_examples=100)
@given(deltas=st.lists(st.floats(min_value=-0.25, max_value=0.25), min_size=1, max_size=60))
def test_a_topic_never_moves_more_than_the_window_cap_over_any_window(
    deltas: list[float],
) -> None:
    """Many small commits cannot walk a belief further than ±max_window_delta from any
    position it held in the last influence_window interactions."""
    belief: Belief | None = None
    positions: list[tuple[int, float]] = [(0, 0.0)]
    for index, delta in enumerate(deltas, start=1):
        result = commit_due(
            "p",
            [staged(delta, index)],
            {} if belief is None else {"tea": belief},
            now_index=index,
            now=T0,
            params=PARAMS,
        )
        (belief,) = result.beliefs
        positions.append((index, belief.position))
    for index, position in positions:
        recent = [p for at, p in positions if index - PARAMS.influence_window <= at <= index]
        assert all(abs(position - p) <= PARAMS.max_window_delta + 1e-9 for p in recent)
