"""The commit objects check their own consistency when built: every part scoped to the
commit's persona (and turn), new versions that follow the expected one. A violation raises
sonality's ValidationError at once, before any store sees it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from sonality.errors import ValidationError
from sonality.models import (
    AffectState,
    Belief,
    EnrichmentCommit,
    Insight,
    MonologueEntry,
    Narrative,
    Reflection,
    ReflectionCommit,
    ReflectionOutcome,
    Snapshot,
    StagedUpdate,
    ThoughtCommit,
    UserFact,
)

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)


def _belief(pid: str = "p1") -> Belief:
    return Belief(
        persona_id=pid,
        topic="tea",
        position=0.1,
        confidence=0.5,
        evidence_count=1,
        uncertainty=0.5,
        last_reinforced_at=1,
        created_at=T0,
        updated_at=T0,
    )


def _enrichment(**overrides: Any) -> EnrichmentCommit:
    fields: dict[str, Any] = {
        "persona_id": "p1",
        "episode_id": "e1",
        "expected_interaction_count": 0,
        "interaction_count": 1,
        "disagreement_window": (False,),
        "evidence": None,
        "defaulted": (),
        "topics": (),
        "importance": 1,
        "disagreement": False,
        "insight": None,
        "facts": (),
        "staged": (),
        "committed_staged_ids": (),
        "beliefs": (_belief(),),
        "provenance": (),
    }
    return EnrichmentCommit(**(fields | overrides))


def _reflection(**overrides: Any) -> Reflection:
    fields: dict[str, Any] = {
        "id": "r1",
        "persona_id": "p1",
        "trigger": "manual",
        "outcome": ReflectionOutcome.COMMITTED,
        "started_at": T0,
        "finished_at": T0,
        "interaction_count": 1,
        "snapshot_version": 2,
        "previous_version": 1,
    }
    return Reflection(**(fields | overrides))


def _reflection_commit(**overrides: Any) -> ReflectionCommit:
    fields: dict[str, Any] = {
        "reflection": _reflection(),
        "snapshot": Snapshot(persona_id="p1", version=2, text="I am.", created_at=T0),
        "expected_snapshot_version": 1,
        "beliefs": (_belief(),),
        "last_reflection_at": 1,
        "lease_owner": "w1",
    }
    return ReflectionCommit(**(fields | overrides))


def _thought(**overrides: Any) -> ThoughtCommit:
    turn = {"persona_id": "p1", "conversation_id": "c1", "episode_id": "e1", "turn": 1}
    fields: dict[str, Any] = {
        **turn,
        "user_id": "u1",
        "expected_thought_turn": 0,
        "expected_narrative_version": 0,
        "monologue": MonologueEntry(
            **turn, user_id="u1", reasoning="r", memory="m", goal="g", tokens=3, created_at=T0
        ),
        "narrative": Narrative(**turn, user_id="u1", version=1, text="n", tokens=1, created_at=T0),
        "affect": AffectState(
            persona_id="p1",
            user_id="u1",
            version=1,
            emotional_state="calm",
            relationship="new",
            updated_at=T0,
        ),
        "committed_at": T0,
    }
    return ThoughtCommit(**(fields | overrides))


def test_consistent_commits_build() -> None:
    """Commits whose parts agree build without complaint."""
    assert _enrichment().persona_id == "p1"
    assert _reflection_commit().snapshot is not None
    assert _reflection_commit(snapshot=None).snapshot is None
    assert _thought().narrative is not None


@pytest.mark.parametrize(
    "part",
    [
        {"beliefs": (_belief("p2"),)},
        {
            "staged": (
                StagedUpdate(
                    id="s",
                    persona_id="p2",
                    topic="tea",
                    signed_delta=0.1,
                    staged_at=1,
                    due_at=4,
                    episode_id="e1",
                ),
            )
        },
        {
            "facts": (
                UserFact(
                    id="f",
                    persona_id="p2",
                    user_id="u1",
                    kind="fact",
                    text="x",
                    severity=1,
                    episode_id="e1",
                    created_at=T0,
                ),
            )
        },
        {"insight": Insight(id="i", persona_id="p2", episode_id="e1", text="x", created_at=T0)},
    ],
    ids=["belief", "staged", "fact", "insight"],
)
def test_an_enrichment_commit_stays_in_its_persona(part: dict[str, Any]) -> None:
    """A belief, staged update, fact or insight of another persona is refused."""
    with pytest.raises(ValidationError, match="its own persona"):
        _enrichment(**part)


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"reflection": _reflection(outcome=ReflectionOutcome.REJECTED)}, "only a committed"),
        ({"beliefs": (_belief("p2"),)}, "its own persona"),
        (
            {"snapshot": Snapshot(persona_id="p2", version=2, text="x", created_at=T0)},
            "its own persona",
        ),
        ({"expected_snapshot_version": 2}, "current \\+ 1"),
    ],
    ids=["outcome", "belief", "snapshot", "version"],
)
def test_a_reflection_commit_is_consistent(overrides: dict[str, Any], problem: str) -> None:
    """Only a committed reflection, of one persona, whose snapshot follows the expected one."""
    with pytest.raises(ValidationError, match=problem):
        _reflection_commit(**overrides)


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"turn": 2}, "mixes turns"),
        ({"episode_id": "e2"}, "mixes turns"),
        ({"conversation_id": "c2"}, "mixes turns"),
        (
            {
                "affect": AffectState(
                    persona_id="p2",
                    user_id="u1",
                    version=1,
                    emotional_state="calm",
                    relationship="new",
                    updated_at=T0,
                )
            },
            "mixes turns",
        ),
        ({"expected_narrative_version": 1, "expected_thought_turn": 0}, "current \\+ 1"),
    ],
    ids=["turn", "episode", "conversation", "affect", "version"],
)
def test_a_thought_commit_is_one_turn(overrides: dict[str, Any], problem: str) -> None:
    """Monologue, narrative and affect belong to the commit's turn; the narrative follows."""
    with pytest.raises(ValidationError, match=problem):
        _thought(**overrides)
