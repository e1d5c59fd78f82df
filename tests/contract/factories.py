"""Builders of contract-test data: valid by default, override only what a test is about.

Imported by the contract tests as ``factories`` (pytest puts this folder on ``sys.path``).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from sonality.models import (
    Belief,
    Direction,
    EnrichmentCommit,
    Episode,
    EpisodeDraft,
    EvidenceAssessment,
    FactKind,
    Insight,
    Persona,
    ProvenanceEdge,
    ReasoningType,
    Reflection,
    ReflectionOutcome,
    Snapshot,
    StagedUpdate,
    UserFact,
)

DIMS = 64
"""Embedding dimensions of the test stores (``EMBEDDING_DIMENSIONS`` in tests/conftest.py)."""

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
TOPIC = "nuclear_power"


def at(minutes: float) -> datetime:
    """``T0`` plus some minutes."""
    return T0 + timedelta(minutes=minutes)


def vector(*head: float) -> tuple[float, ...]:
    """A unit vector of ``DIMS`` floats starting with ``head`` (zeros after)."""
    norm = math.sqrt(sum(v * v for v in head))
    padded = [v / norm for v in head] + [0.0] * (DIMS - len(head))
    return tuple(padded)


def cosine(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def make_persona(persona_id: str = "p1", **overrides: Any) -> Persona:
    fields: dict[str, Any] = {
        "id": persona_id,
        "name": f"Persona {persona_id}",
        "core_identity": "A curious, careful thinker.",
        "created_at": T0,
    }
    return Persona(**(fields | overrides))


def make_snapshot(persona_id: str = "p1", version: int = 1, **overrides: Any) -> Snapshot:
    fields: dict[str, Any] = {
        "persona_id": persona_id,
        "version": version,
        "text": f"I am {persona_id}, version {version}.",
        "reason": "initial" if version == 1 else "reflection",
        "created_at": at(version),
    }
    return Snapshot(**(fields | overrides))


async def add_persona(store: Any, persona_id: str = "p1", **overrides: Any) -> Persona:
    """Create a persona with its first snapshot and return what the store gave back."""
    persona: Persona = await store.create_persona(
        make_persona(persona_id, **overrides), make_snapshot(persona_id)
    )
    return persona


def make_draft(
    episode_id: str,
    *,
    persona_id: str = "p1",
    user_id: str = "u1",
    conversation_id: str = "c1",
    minute: float = 0,
    embedding: tuple[float, ...] | None = None,
    **overrides: Any,
) -> EpisodeDraft:
    fields: dict[str, Any] = {
        "id": episode_id,
        "persona_id": persona_id,
        "user_id": user_id,
        "conversation_id": conversation_id,
        "user_message": f"message of {episode_id} to {persona_id}",
        "agent_response": f"response of {persona_id} to {episode_id}",
        "created_at": at(minute),
        "embedding": embedding,
    }
    return EpisodeDraft(**(fields | overrides))


async def add_episode(store: Any, episode_id: str, **kwargs: Any) -> Episode:
    """Append a new episode (see :func:`make_draft`) and return it."""
    result: tuple[Episode, bool] = await store.append_episode(make_draft(episode_id, **kwargs))
    assert result[1], f"episode {episode_id} existed already"
    return result[0]


def make_belief(persona_id: str = "p1", topic: str = TOPIC, **overrides: Any) -> Belief:
    fields: dict[str, Any] = {
        "persona_id": persona_id,
        "topic": topic,
        "position": 0.125,
        "confidence": 0.5,
        "evidence_count": 3,
        "uncertainty": 0.25,
        "last_reinforced_at": 2,
        "created_at": T0,
        "updated_at": at(10),
    }
    return Belief(**(fields | overrides))


def make_commit(
    episode: Episode,
    *,
    expected: int,
    topic: str = TOPIC,
    evidence: bool = True,
    insight_id: str | None = None,
    staged: tuple[StagedUpdate, ...] | None = None,
    committed_staged_ids: tuple[str, ...] = (),
    provenance: tuple[ProvenanceEdge, ...] | None = None,
    **overrides: Any,
) -> EnrichmentCommit:
    """A full enrichment of ``episode`` moving the persona from ``expected`` to
    ``expected + 1``: evidence, an insight, two facts (naming the episode: a user holds
    no two active facts that say the same), a staged update, a belief and a provenance
    edge from the episode itself (each overridable)."""
    count = expected + 1
    pid = episode.persona_id
    created = episode.created_at
    assessment = EvidenceAssessment(
        score=0.75,
        reasoning_type=ReasoningType.EMPIRICAL,
        source_reliability=0.625,
        internal_consistency=0.875,
        novelty=0.5,
        topics=(topic,),
        direction=Direction.SUPPORTS,
    )
    fields: dict[str, Any] = {
        "persona_id": pid,
        "episode_id": episode.id,
        "expected_interaction_count": expected,
        "interaction_count": count,
        "disagreement_window": (False,) * (count - 1) + (True,),
        "evidence": assessment if evidence else None,
        "defaulted": ("novelty",),
        "topics": (topic, "energy"),
        "importance": 7,
        "disagreement": True,
        "insight": Insight(
            id=insight_id or f"ins-{pid}-{episode.id}",
            persona_id=pid,
            episode_id=episode.id,
            text=f"Insight from {episode.id}.",
            created_at=created,
        ),
        "facts": (
            UserFact(
                id=f"fact-{pid}-{episode.id}-a",
                persona_id=pid,
                user_id=episode.user_id,
                kind=FactKind.CONSTRAINT,
                text=f"Allergic to peanuts ({episode.id}).",
                severity=5,
                episode_id=episode.id,
                created_at=created,
            ),
            UserFact(
                id=f"fact-{pid}-{episode.id}-b",
                persona_id=pid,
                user_id=episode.user_id,
                kind=FactKind.PREFERENCE,
                text=f"Prefers short answers ({episode.id}).",
                severity=2,
                episode_id=episode.id,
                created_at=created + timedelta(seconds=1),
            ),
        ),
        "staged": staged
        if staged is not None
        else (
            StagedUpdate(
                id=f"st-{pid}-{episode.id}",
                persona_id=pid,
                topic=topic,
                signed_delta=0.03125,
                staged_at=count,
                due_at=count + 3,
                episode_id=episode.id,
            ),
        ),
        "committed_staged_ids": committed_staged_ids,
        "beliefs": (make_belief(pid, topic, position=0.0625 * count, last_reinforced_at=count),),
        "provenance": provenance
        if provenance is not None
        else (
            ProvenanceEdge(episode_id=episode.id, topic=topic, delta=0.0625, committed_at=count),
        ),
        "shift_total": 0.0625,
    }
    return EnrichmentCommit(**(fields | overrides))


async def dump(
    store: Any, persona_id: str, users: tuple[str, ...] = ("u1", "u2")
) -> dict[str, Any]:
    """Everything every read method says about one persona (to prove nothing changed)."""
    beliefs = await store.list_beliefs(persona_id, include_retired=True)
    state: dict[str, Any] = {
        "persona": await store.get_persona(persona_id),
        "episodes": await store.list_episodes(persona_id, limit=1000),
        "pending": await store.list_pending_episodes(persona_id, limit=1000),
        "counts": await store.count_episodes(persona_id),
        "beliefs": beliefs,
        "evidence": [await store.belief_evidence(persona_id, b.topic) for b in beliefs],
        "staged": await store.list_staged(persona_id),
        "insights": await store.list_insights(persona_id),
        "snapshot": await store.current_snapshot(persona_id),
        "history": await store.snapshot_history(persona_id),
    }
    for user in users:
        state[f"facts:{user}"] = await store.list_facts(persona_id, user)
        state[f"episodes:{user}"] = await store.list_episodes(persona_id, user_id=user, limit=1000)
    return state


OWNER = "worker-a"
"""The reflection lease's owner in the reflection tests."""


def make_reflection(persona_id: str = "p1", **overrides: Any) -> Reflection:
    fields: dict[str, Any] = {
        "id": f"refl-{persona_id}-1",
        "persona_id": persona_id,
        "trigger": "periodic",
        "outcome": ReflectionOutcome.COMMITTED,
        "started_at": at(30),
        "finished_at": at(31),
        "interaction_count": 2,
        "snapshot_version": 2,
        "previous_version": 1,
        "retention_ratio": 1.25,
        "unique_ratio": 0.75,
        "health": ("possible_sycophancy",),
        "insights_consumed": 2,
        "episodes_read": 2,
        "beliefs_decayed": 1,
        "llm_calls": 1,
        "duration_ms": 12.5,
        "owner": OWNER,
    }
    return Reflection(**(fields | overrides))
