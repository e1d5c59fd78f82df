"""Retrieval scoring: 0.5·similarity + 0.3·recency + 0.2·importance, ranked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sonality.core.retrieval import rank_episodes, recency, retrieval_score
from sonality.models import Episode

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def episode(eid: str, hours_ago: float = 0.0, importance: int | None = None) -> Episode:
    return Episode(
        id=eid,
        persona_id="p1",
        user_id="u1",
        conversation_id="c1",
        turn=1,
        seq=1,
        user_message="hi",
        agent_response="hello",
        created_at=NOW - timedelta(hours=hours_ago),
        importance=importance,
    )


def test_recency_decays_per_hour() -> None:
    """Recency is 0.995 to the power of the hours elapsed."""
    assert recency(NOW, NOW) == 1.0
    assert recency(NOW - timedelta(hours=24), NOW) == pytest.approx(0.995**24)
    assert recency(NOW - timedelta(days=7), NOW) == pytest.approx(0.43, abs=0.01)


def test_recency_of_the_future_is_one() -> None:
    """A timestamp after ``now`` (clock skew) counts as brand new."""
    assert recency(NOW + timedelta(hours=3), NOW) == 1.0


def test_recency_rejects_bad_rates() -> None:
    """The hourly factor must be in (0, 1]."""
    with pytest.raises(ValueError, match="decay_per_hour"):
        recency(NOW, NOW, decay_per_hour=1.5)


def test_score_worked_example() -> None:
    """Cosine 0.6 → 0.8, recency 0.5, importance 7 → 0.7: 0.4 + 0.15 + 0.14 = 0.69."""
    assert retrieval_score(0.6, 0.5, 7) == pytest.approx(0.69)


def test_unknown_importance_counts_as_half() -> None:
    """Importance None counts 0.5."""
    assert retrieval_score(-1.0, 0.0, None) == pytest.approx(0.1)


@given(
    st.floats(min_value=-1.0, max_value=1.0),
    st.floats(min_value=0.0, max_value=1.0),
    st.one_of(st.none(), st.integers(min_value=1, max_value=10)),
)
def test_score_stays_in_unit_interval(similarity: float, fresh: float, imp: int | None) -> None:
    """With the default weights every score is in [0, 1]."""
    assert 0.0 <= retrieval_score(similarity, fresh, imp) <= 1.0 + 1e-12


def test_rank_orders_and_cuts_to_k() -> None:
    """Highest score first, at most k results, components exposed in [0, 1]."""
    candidates = [
        (episode("old", hours_ago=500, importance=2), 0.9),
        (episode("close", hours_ago=1, importance=9), 0.8),
        (episode("far", hours_ago=1, importance=5), -0.5),
    ]
    ranked = rank_episodes(candidates, NOW, 2)
    assert [s.episode.id for s in ranked] == ["close", "old"]
    top = ranked[0]
    assert top.similarity == pytest.approx(0.9)
    assert top.recency == pytest.approx(0.995)
    assert top.importance == pytest.approx(0.9)
    assert top.score == pytest.approx(0.5 * 0.9 + 0.3 * 0.995 + 0.2 * 0.9)


def test_rank_deduplicates_keeping_best_similarity() -> None:
    """An episode listed twice appears once, with its better similarity."""
    e = episode("e1")
    ranked = rank_episodes([(e, 0.1), (e, 0.7)], NOW, 5)
    assert len(ranked) == 1
    assert ranked[0].similarity == pytest.approx(0.85)


def test_rank_ties_prefer_newer_then_smaller_id() -> None:
    """Equal scores go to the newer episode, then to the smaller id."""
    candidates = [(episode("b", importance=5), 0.0), (episode("a", importance=5), 0.0)]
    assert [s.episode.id for s in rank_episodes(candidates, NOW, 2, decay_per_hour=1.0)] == [
        "a",
        "b",
    ]


def test_rank_with_nonpositive_k_is_empty() -> None:
    """k <= 0 returns nothing."""
    assert rank_episodes([(episode("e1"), 1.0)], NOW, 0) == []
