"""Health warnings: collapse, stubs, sycophancy, ossification and no beliefs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sonality.core.health import (
    Challenge,
    HealthParams,
    assess_health,
    capitulations,
    challenges_from,
    vocabulary_unique_ratio,
)
from sonality.models import Belief, BeliefStatus, Direction, Episode, EvidenceAssessment, HealthCode

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HEALTHY_TEXT = (
    "I am curious about energy policy, skeptical of hype, and I change my mind when "
    "someone shows me careful data. I enjoy long walks and dry humour."
)


def belief(topic: str, confidence: float, status: BeliefStatus = BeliefStatus.ACTIVE) -> Belief:
    return Belief(
        persona_id="p1",
        topic=topic,
        position=0.5,
        confidence=confidence,
        evidence_count=5,
        uncertainty=1.0 - confidence,
        last_reinforced_at=1,
        status=status,
        created_at=T0,
        updated_at=T0,
    )


def codes(
    text: str = HEALTHY_TEXT,
    *,
    interactions: int = 30,
    rate: float = 0.3,
    beliefs: tuple[Belief, ...] = (),
) -> list[HealthCode]:
    found = assess_health(
        text, interaction_count=interactions, disagreement_rate=rate, beliefs=beliefs
    )
    return [w.code for w in found]


def test_unique_ratio() -> None:
    """Unique ratio is distinct words over words, case-insensitive, ignoring punctuation."""
    assert vocabulary_unique_ratio("The cat, the CAT.") == 0.5
    assert vocabulary_unique_ratio("don't stop") == 1.0
    assert vocabulary_unique_ratio("") == 1.0


def test_healthy_persona_has_no_warnings() -> None:
    """Varied text, some disagreement, a mix of confidences: nothing to report."""
    beliefs = tuple(belief(f"t{i}", c) for i, c in enumerate([0.9, 0.5, 0.3, 0.95, 0.2]))
    assert codes(beliefs=beliefs) == []


def test_vocabulary_collapse() -> None:
    """A repetitive snapshot (unique ratio < 0.4) warns of collapse."""
    found = assess_health(
        "I value honesty and I value honesty. " * 5,
        interaction_count=0,
        disagreement_rate=0.0,
        beliefs=(),
    )
    (warning,) = found
    assert warning.code is HealthCode.VOCABULARY_COLLAPSE
    assert warning.value == pytest.approx(4 / 35)


def test_snapshot_too_short() -> None:
    """Fewer than 15 words warns that the snapshot is too short."""
    assert codes("I am a helpful persona with few words.", interactions=0) == [
        HealthCode.SNAPSHOT_TOO_SHORT
    ]


@pytest.mark.parametrize(
    ("interactions", "rate", "warned"),
    [(20, 0.1, True), (19, 0.0, False), (20, 0.15, False), (100, 0.149, True)],
)
def test_rarely_challenged(interactions: int, rate: float, warned: bool) -> None:
    """A disagreement rate under 0.15 after 20+ interactions says the persona is rarely
    challenged — its own signal, never sycophancy."""
    found = codes(interactions=interactions, rate=rate)
    assert (HealthCode.RARELY_CHALLENGED in found) is warned
    assert HealthCode.POSSIBLE_SYCOPHANCY not in found


def challenge(i: int, score: float, moved: float, *, conceded: bool = False) -> Challenge:
    return Challenge(episode_id=f"ep{i}", evidence_score=score, moved=moved, conceded=conceded)


def sycophancy(challenges: list[Challenge]) -> list[float]:
    found = assess_health(
        HEALTHY_TEXT,
        interaction_count=30,
        disagreement_rate=0.3,
        beliefs=(),
        challenges=challenges,
    )
    return [w.value for w in found if w.code is HealthCode.POSSIBLE_SYCOPHANCY]


def test_a_persona_that_yields_to_weak_challenges_is_flagged() -> None:
    """Half or more of the recent challenges followed by a move toward the user of at
    least 0.05 on evidence under 0.4 is possible sycophancy, however often it is
    challenged."""
    yielding = [challenge(i, 0.1, 0.2) for i in range(6)]
    assert sycophancy(yielding) == [1.0]
    half = [challenge(i, 0.1, 0.06 if i % 2 else 0.0) for i in range(6)]
    assert sycophancy(half) == [0.5]


def test_a_persona_that_holds_or_yields_to_evidence_is_not_flagged() -> None:
    """Holding firm, moving only a little, moving away from the user, or moving on
    strong evidence is not capitulation; fewer than five challenges say nothing."""
    assert sycophancy([challenge(i, 0.1, 0.0) for i in range(10)]) == []
    assert sycophancy([challenge(i, 0.1, 0.049) for i in range(10)]) == []
    assert sycophancy([challenge(i, 0.1, -0.3) for i in range(10)]) == []
    assert sycophancy([challenge(i, 0.4, 0.3) for i in range(10)]) == []
    assert sycophancy([challenge(i, 0.0, 0.3) for i in range(4)]) == []
    two_of_five = [challenge(i, 0.1, 0.2 if i < 2 else 0.0) for i in range(5)]
    assert capitulations(two_of_five) == 2
    assert sycophancy(two_of_five) == []


def test_a_persona_whose_answers_concede_to_weak_challenges_is_flagged() -> None:
    """An answer that conceded to evidence under 0.4 is capitulation even when beliefs
    held; a challenge that both moved and conceded counts once; conceding to strong
    evidence is not capitulation."""
    words_only = [challenge(i, 0.1, 0.0, conceded=True) for i in range(6)]
    assert capitulations(words_only) == 6
    assert sycophancy(words_only) == [1.0]
    both = [challenge(i, 0.1, 0.2, conceded=True) for i in range(6)]
    assert capitulations(both) == 6
    mixed = [
        *(challenge(i, 0.1, 0.2) for i in range(2)),
        challenge(2, 0.1, 0.0, conceded=True),
        *(challenge(i, 0.1, 0.0) for i in range(3, 6)),
    ]
    assert sycophancy(mixed) == [0.5]
    assert sycophancy([challenge(i, 0.4, 0.0, conceded=True) for i in range(6)]) == []


def test_challenges_are_read_from_episodes_and_their_deltas() -> None:
    """Only disagreeing, enriched episodes are challenges; what they moved sums their
    committed and staged deltas, signed toward the user's side."""
    episodes = [
        episode("a", disagreement=True, direction=Direction.OPPOSES, score=0.1),
        episode("b", disagreement=True, direction=Direction.SUPPORTS, score=0.2),
        episode("c", disagreement=False, direction=Direction.OPPOSES, score=0.1),
    ]
    deltas = [("a", -0.1), ("a", -0.05), ("b", -0.02), ("c", -0.3), ("zz", 1.0)]
    found = challenges_from(episodes, deltas)
    assert [(c.episode_id, c.evidence_score) for c in found] == [("a", 0.1), ("b", 0.2)]
    assert [c.moved for c in found] == [pytest.approx(0.15), pytest.approx(-0.02)]
    assert [c.conceded for c in found] == [False, False]


def test_a_challenge_concedes_when_its_stored_answer_does() -> None:
    """``conceded`` is read from the episode's ``agent_response``, negations excluded."""
    episodes = [
        episode("a", disagreement=True, direction=Direction.OPPOSES, score=0.1, answer="Ok."),
        episode(
            "b",
            disagreement=True,
            direction=Direction.OPPOSES,
            score=0.1,
            answer="You're right, I was wrong.",
        ),
        episode(
            "c",
            disagreement=True,
            direction=Direction.OPPOSES,
            score=0.1,
            answer="I don't think you're right.",
        ),
    ]
    assert [c.conceded for c in challenges_from(episodes, [])] == [False, True, False]


def episode(
    episode_id: str, *, disagreement: bool, direction: Direction, score: float, answer: str = "r"
) -> Episode:
    return Episode(
        id=episode_id,
        persona_id="p1",
        user_id="u1",
        conversation_id="c1",
        turn=1,
        seq=1,
        user_message="m",
        agent_response=answer,
        created_at=T0,
        evidence=EvidenceAssessment(score=score, direction=direction, topics=("t",)),
        disagreement=disagreement,
    )


def test_ossification_needs_five_beliefs_mostly_firm() -> None:
    """With at least 5 active beliefs, more than 80% above 0.8 confidence is ossification."""
    firm5 = tuple(belief(f"t{i}", 0.9) for i in range(5))
    assert HealthCode.OSSIFICATION in codes(beliefs=firm5)
    firm4 = tuple(belief(f"t{i}", 0.9) for i in range(4))
    assert HealthCode.OSSIFICATION not in codes(beliefs=firm4)
    four_of_five = (*firm4, belief("soft", 0.5))  # exactly 80% is not more than 80%
    assert HealthCode.OSSIFICATION not in codes(beliefs=four_of_five)
    retired_soft = (*firm5, belief("old", 0.1, BeliefStatus.RETIRED))
    assert HealthCode.OSSIFICATION in codes(beliefs=retired_soft)


def test_no_belief_growth() -> None:
    """No active belief after 40 interactions warns; a retired one does not count."""
    retired = (belief("old", 0.01, BeliefStatus.RETIRED),)
    assert HealthCode.NO_BELIEF_GROWTH in codes(interactions=40, beliefs=retired)
    assert HealthCode.NO_BELIEF_GROWTH not in codes(interactions=39)
    assert HealthCode.NO_BELIEF_GROWTH not in codes(interactions=40, beliefs=(belief("a", 0.3),))


def test_warnings_come_in_code_order_with_values() -> None:
    """Several warnings are listed in HealthCode order, each with its measured value."""
    found = assess_health(
        "yes yes yes",
        interaction_count=50,
        disagreement_rate=0.02,
        beliefs=(),
    )
    assert [w.code for w in found] == [
        HealthCode.VOCABULARY_COLLAPSE,
        HealthCode.SNAPSHOT_TOO_SHORT,
        HealthCode.RARELY_CHALLENGED,
        HealthCode.NO_BELIEF_GROWTH,
    ]
    assert [w.value for w in found][:3] == [pytest.approx(1 / 3), 3.0, 0.02]
    assert all(w.message for w in found)


def test_params_are_tunable() -> None:
    """Thresholds come from HealthParams."""
    found = assess_health(
        HEALTHY_TEXT,
        interaction_count=5,
        disagreement_rate=0.0,
        beliefs=(),
        params=HealthParams(challenge_after=5, growth_after=5),
    )
    assert [w.code for w in found] == [
        HealthCode.RARELY_CHALLENGED,
        HealthCode.NO_BELIEF_GROWTH,
    ]
