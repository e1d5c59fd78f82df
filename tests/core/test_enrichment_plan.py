"""``plan_commit``: one interaction's effect as data, deterministic given its ids."""

from __future__ import annotations

from datetime import UTC, datetime

from sonality.core.enrichment import Normalised, plan_commit
from sonality.core.opinion import OpinionParams
from sonality.models import (
    Direction,
    EnrichmentCommit,
    Episode,
    EvidenceAssessment,
    FactKind,
    Persona,
    UserFact,
    UserFactDraft,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
PERSONA = Persona(id="ada", name="Ada", core_identity="I am Ada.", created_at=T0)
EPISODE = Episode(
    id="ep_1",
    persona_id="ada",
    user_id="u1",
    conversation_id="c1",
    turn=1,
    seq=1,
    user_message="Reactors are safer than coal, per death statistics.",
    agent_response="Noted.",
    created_at=T0,
)
STRONG = EvidenceAssessment(
    score=0.8, novelty=0.6, topics=("nuclear_power",), direction=Direction.SUPPORTS
)


def _enrichment(defaulted: tuple[str, ...] = ()) -> Normalised:
    return Normalised(
        evidence=STRONG,
        facts=(
            UserFactDraft(kind=FactKind.CONSTRAINT, text="Allergic to peanuts", severity=5),
            UserFactDraft(kind=FactKind.FACT, text="Lives in Oslo"),
        ),
        importance=6,
        insight="I weigh statistics above anecdotes.",
        defaulted=defaulted,
    )


def _plan(enrichment: Normalised, known: tuple[UserFact, ...] = ()) -> EnrichmentCommit:
    return plan_commit(
        persona=PERSONA,
        episode=EPISODE,
        enrichment=enrichment,
        beliefs={},
        due_staged=(),
        known_facts=known,
        now=T0,
        params=OpinionParams(),
        window_size=50,
        new_id=lambda prefix: f"{prefix}_1",
    )


def test_the_same_inputs_plan_the_same_commit() -> None:
    """No clock, no randomness: equal inputs and ids give equal commits."""
    assert _plan(_enrichment()) == _plan(_enrichment())


def test_the_plan_names_what_it_creates_with_the_given_ids() -> None:
    """Staged delta, facts and insight take their ids from ``new_id``; the counters move
    by one interaction."""
    commit = _plan(_enrichment())
    assert [s.id for s in commit.staged] == ["stg_1"]
    assert [f.id for f in commit.facts] == ["fact_1", "fact_1"]
    assert commit.insight is not None and commit.insight.id == "ins_1"
    assert (commit.expected_interaction_count, commit.interaction_count) == (0, 1)


def test_a_defaulted_critical_field_stages_nothing_but_keeps_the_facts() -> None:
    """Fail closed: with the score defaulted no delta is staged and no disagreement
    counted, while the user's facts (minus the known ones) are still kept."""
    known = UserFact(
        id="f0",
        persona_id="ada",
        user_id="u1",
        kind=FactKind.FACT,
        text="lives in oslo",
        severity=1,
        episode_id="ep_0",
        created_at=T0,
    )
    enrichment = _enrichment(defaulted=("evidence.score",))
    assert enrichment.blocked
    commit = _plan(enrichment, (known,))
    assert commit.staged == () and commit.disagreement is False
    assert [f.text for f in commit.facts] == ["Allergic to peanuts"]
