"""Mapping between Sonality's models and Neo4j property maps.

Writers turn a model into the property map a Cypher file stores (``*_props``); readers
turn the map a query returned (``p {.*}``) back into the model (``*_from``). Times cross
as Neo4j ``DateTime`` values, never strings: aware datetimes go in (normalised to UTC),
``neo4j.time.DateTime`` values come out and are converted back to aware UTC datetimes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from neo4j.time import DateTime

from sonality.errors import StoreError, ValidationError
from sonality.models import (
    AppliedMigration,
    Belief,
    EnrichmentCommit,
    Episode,
    EpisodeDraft,
    EvidenceAssessment,
    Insight,
    Persona,
    ProvenanceEdge,
    Snapshot,
    StagedUpdate,
    UserFact,
)

__all__ = [
    "applied_migration_from",
    "belief_from",
    "belief_props",
    "enriched_episode_fields",
    "episode_from",
    "episode_props",
    "fact_from",
    "fact_props",
    "insight_from",
    "insight_props",
    "persona_from",
    "persona_props",
    "provenance_props",
    "snapshot_from",
    "snapshot_props",
    "staged_from",
    "staged_props",
    "time_in",
    "time_out",
    "truncate_error",
]

ERROR_MAX_CHARS = 500
"""Enrichment errors are stored truncated to this many characters."""


def time_in(value: datetime, *, field: str = "time") -> datetime:
    """An aware datetime as the UTC value the driver stores as a Neo4j ``DateTime``."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError("times must be timezone-aware", field=field)
    return value.astimezone(UTC)


def time_out(value: Any) -> datetime:
    """A Neo4j ``DateTime`` (or native datetime) read back as an aware UTC datetime."""
    if isinstance(value, DateTime):
        value = value.to_native()
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise StoreError("stored time is not a zoned datetime", found=type(value).__name__)
    return value.astimezone(UTC)


# personas and snapshots ------------------------------------------------------------------


def persona_props(persona: Persona) -> dict[str, Any]:
    """Properties of a new ``Persona`` node (with its episode counter at 0)."""
    return {
        "id": persona.id,
        "persona_id": persona.id,
        "name": persona.name,
        "core_identity": persona.core_identity,
        "interaction_count": persona.interaction_count,
        "last_reflection_at": persona.last_reflection_at,
        "disagreement_window": list(persona.disagreement_window),
        "shift_since_reflection": persona.shift_since_reflection,
        "last_reflection_attempt_at": persona.last_reflection_attempt_at,
        "created_at": time_in(persona.created_at, field="created_at"),
        "episode_seq": 0,
    }


def persona_from(props: Mapping[str, Any]) -> Persona:
    return Persona(
        id=props["id"],
        name=props["name"],
        core_identity=props["core_identity"],
        interaction_count=props["interaction_count"],
        last_reflection_at=props["last_reflection_at"],
        disagreement_window=tuple(bool(x) for x in props.get("disagreement_window") or ()),
        shift_since_reflection=props["shift_since_reflection"],
        last_reflection_attempt_at=props.get("last_reflection_attempt_at", 0),
        runtime_mode=props.get("runtime_mode", "full"),
        affect=props.get("affect", "off"),
        created_at=time_out(props["created_at"]),
    )


def snapshot_props(snapshot: Snapshot) -> dict[str, Any]:
    return {
        "persona_id": snapshot.persona_id,
        "version": snapshot.version,
        "text": snapshot.text,
        "reason": snapshot.reason,
        "created_at": time_in(snapshot.created_at, field="created_at"),
    }


def snapshot_from(props: Mapping[str, Any]) -> Snapshot:
    return Snapshot(
        persona_id=props["persona_id"],
        version=props["version"],
        text=props["text"],
        reason=props["reason"],
        created_at=time_out(props["created_at"]),
    )


# episodes --------------------------------------------------------------------------------


def episode_props(draft: EpisodeDraft) -> dict[str, Any]:
    """Properties of a new pending ``Episode`` (``seq``, ``turn`` and the embedding are set
    by the query and ``db.create.setNodeVectorProperty``)."""
    return {
        "id": draft.id,
        "persona_id": draft.persona_id,
        "user_id": draft.user_id,
        "conversation_id": draft.conversation_id,
        "user_message": draft.user_message,
        "agent_response": draft.agent_response,
        "created_at": time_in(draft.created_at, field="created_at"),
        "enrichment_status": "pending",
        "enrichment_attempts": 0,
        "defaulted": [],
        "topics": [],
    }


def episode_from(props: Mapping[str, Any]) -> Episode:
    evidence = None
    if props.get("ess_score") is not None:
        evidence = EvidenceAssessment(
            score=props["ess_score"],
            reasoning_type=props["ess_reasoning_type"],
            source_reliability=props["ess_source_reliability"],
            internal_consistency=props["ess_internal_consistency"],
            novelty=props["ess_novelty"],
            topics=tuple(props.get("ess_topics") or ()),
            direction=props["ess_direction"],
        )
    return Episode(
        id=props["id"],
        persona_id=props["persona_id"],
        user_id=props["user_id"],
        conversation_id=props["conversation_id"],
        turn=props["turn"],
        seq=props["seq"],
        user_message=props["user_message"],
        agent_response=props["agent_response"],
        created_at=time_out(props["created_at"]),
        enrichment_status=props["enrichment_status"],
        enrichment_attempts=props["enrichment_attempts"],
        enrichment_error=props.get("enrichment_error"),
        interaction_index=props.get("interaction_index"),
        evidence=evidence,
        defaulted=tuple(props.get("defaulted") or ()),
        topics=tuple(props.get("topics") or ()),
        importance=props.get("importance"),
        insight=props.get("insight"),
        disagreement=props.get("disagreement"),
    )


def enriched_episode_fields(commit: EnrichmentCommit) -> dict[str, Any]:
    """The properties an enrichment commit sets on its episode (``None`` removes one)."""
    ev = commit.evidence
    return {
        "enrichment_status": "enriched",
        "interaction_index": commit.interaction_count,
        "ess_score": ev.score if ev else None,
        "ess_reasoning_type": ev.reasoning_type.value if ev else None,
        "ess_source_reliability": ev.source_reliability if ev else None,
        "ess_internal_consistency": ev.internal_consistency if ev else None,
        "ess_novelty": ev.novelty if ev else None,
        "ess_direction": ev.direction.value if ev else None,
        "ess_topics": list(ev.topics) if ev else None,
        "defaulted": list(commit.defaulted),
        "topics": list(commit.topics),
        "importance": commit.importance,
        "insight": commit.insight.text if commit.insight else None,
        "disagreement": commit.disagreement,
    }


def truncate_error(error: str) -> str:
    """An enrichment error as stored: at most :data:`ERROR_MAX_CHARS` characters."""
    return error[:ERROR_MAX_CHARS]


# beliefs, staged updates, provenance -----------------------------------------------------


def belief_props(belief: Belief) -> dict[str, Any]:
    return {
        "persona_id": belief.persona_id,
        "topic": belief.topic,
        "position": belief.position,
        "confidence": belief.confidence,
        "evidence_count": belief.evidence_count,
        "uncertainty": belief.uncertainty,
        "last_reinforced_at": belief.last_reinforced_at,
        "status": belief.status.value,
        "created_at": time_in(belief.created_at, field="created_at"),
        "updated_at": time_in(belief.updated_at, field="updated_at"),
    }


def belief_from(props: Mapping[str, Any]) -> Belief:
    return Belief(
        persona_id=props["persona_id"],
        topic=props["topic"],
        position=props["position"],
        confidence=props["confidence"],
        evidence_count=props["evidence_count"],
        uncertainty=props["uncertainty"],
        last_reinforced_at=props["last_reinforced_at"],
        status=props["status"],
        created_at=time_out(props["created_at"]),
        updated_at=time_out(props["updated_at"]),
    )


def staged_props(update: StagedUpdate) -> dict[str, Any]:
    return {
        "id": update.id,
        "persona_id": update.persona_id,
        "topic": update.topic,
        "signed_delta": update.signed_delta,
        "staged_at": update.staged_at,
        "due_at": update.due_at,
        "episode_id": update.episode_id,
        "committed_at": update.committed_at,
    }


def staged_from(props: Mapping[str, Any]) -> StagedUpdate:
    return StagedUpdate(
        id=props["id"],
        persona_id=props["persona_id"],
        topic=props["topic"],
        signed_delta=props["signed_delta"],
        staged_at=props["staged_at"],
        due_at=props["due_at"],
        episode_id=props["episode_id"],
        committed_at=props.get("committed_at"),
    )


def provenance_props(edges: Sequence[ProvenanceEdge]) -> list[dict[str, Any]]:
    return [
        {
            "episode_id": e.episode_id,
            "topic": e.topic,
            "delta": e.delta,
            "committed_at": e.committed_at,
        }
        for e in edges
    ]


# insights and facts ----------------------------------------------------------------------


def insight_props(insight: Insight) -> dict[str, Any]:
    return {
        "id": insight.id,
        "persona_id": insight.persona_id,
        "episode_id": insight.episode_id,
        "text": insight.text,
        "status": insight.status.value,
        "created_at": time_in(insight.created_at, field="created_at"),
    }


def insight_from(props: Mapping[str, Any]) -> Insight:
    return Insight(
        id=props["id"],
        persona_id=props["persona_id"],
        episode_id=props["episode_id"],
        text=props["text"],
        status=props["status"],
        created_at=time_out(props["created_at"]),
    )


def fact_props(fact: UserFact) -> dict[str, Any]:
    return {
        "id": fact.id,
        "persona_id": fact.persona_id,
        "user_id": fact.user_id,
        "kind": fact.kind.value,
        "text": fact.text,
        "severity": fact.severity,
        "episode_id": fact.episode_id,
        "created_at": time_in(fact.created_at, field="created_at"),
        "retracted": fact.retracted,
    }


def fact_from(props: Mapping[str, Any]) -> UserFact:
    return UserFact(
        id=props["id"],
        persona_id=props["persona_id"],
        user_id=props["user_id"],
        kind=props["kind"],
        text=props["text"],
        severity=props["severity"],
        episode_id=props["episode_id"],
        created_at=time_out(props["created_at"]),
        retracted=props.get("retracted", False),
    )


# migrations ------------------------------------------------------------------------------


def applied_migration_from(props: Mapping[str, Any]) -> AppliedMigration:
    return AppliedMigration(
        version=props["version"],
        description=props["description"],
        checksum=props["checksum"],
        applied_at=time_out(props["applied_at"]),
    )
