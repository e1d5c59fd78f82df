"""Row <-> model mapping for the SQLite store.

Times are stored as ISO-8601 UTC text with a fixed shape (``2026-01-01T12:00:00.000000Z``)
so that text order is time order; lists (``defaulted``, ``topics``,
``disagreement_window``) as JSON text; embeddings as little-endian float32 BLOBs.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from sonality.errors import ValidationError
from sonality.models import (
    Belief,
    BeliefStatus,
    Direction,
    EnrichmentStatus,
    Episode,
    EvidenceAssessment,
    FactKind,
    Insight,
    InsightStatus,
    Persona,
    ProvenanceEdge,
    ReasoningType,
    Snapshot,
    StagedUpdate,
    UserFact,
)

__all__ = [
    "BELIEF_COLUMNS",
    "EPISODE_COLUMNS",
    "FACT_COLUMNS",
    "INSIGHT_COLUMNS",
    "PERSONA_COLUMNS",
    "PREFIXED_EPISODE_COLUMNS",
    "SNAPSHOT_COLUMNS",
    "STAGED_COLUMNS",
    "belief_from_row",
    "decode_embedding",
    "decode_list",
    "decode_time",
    "encode_embedding",
    "encode_list",
    "encode_time",
    "episode_from_row",
    "fact_from_row",
    "insight_from_row",
    "persona_from_row",
    "provenance_from_row",
    "snapshot_from_row",
    "staged_from_row",
]

_EPISODE_FIELDS = (
    "id",
    "persona_id",
    "user_id",
    "conversation_id",
    "turn",
    "seq",
    "user_message",
    "agent_response",
    "created_at",
    "enrichment_status",
    "enrichment_attempts",
    "enrichment_error",
    "interaction_index",
    "ess_score",
    "ess_reasoning_type",
    "ess_source_reliability",
    "ess_internal_consistency",
    "ess_novelty",
    "ess_direction",
    "ess_topics",
    "defaulted",
    "topics",
    "importance",
    "insight",
    "disagreement",
)
EPISODE_COLUMNS = ", ".join(_EPISODE_FIELDS)
"""The episode columns :func:`episode_from_row` reads (a constant, never user input)."""
PREFIXED_EPISODE_COLUMNS = ", ".join(f"e.{name}" for name in _EPISODE_FIELDS)
"""The same columns qualified with the alias ``e`` for joins."""
PERSONA_COLUMNS = (
    "id, name, core_identity, interaction_count, last_reflection_at, disagreement_window, "
    "shift_since_reflection, created_at, last_reflection_attempt_at, runtime_mode, affect"
)
SNAPSHOT_COLUMNS = "persona_id, version, text, reason, created_at"
BELIEF_COLUMNS = (
    "persona_id, topic, position, confidence, evidence_count, uncertainty, "
    "last_reinforced_at, status, created_at, updated_at"
)
STAGED_COLUMNS = "persona_id, id, topic, signed_delta, staged_at, due_at, episode_id, committed_at"
INSIGHT_COLUMNS = "persona_id, id, episode_id, text, status, created_at"
FACT_COLUMNS = "persona_id, id, user_id, kind, text, severity, episode_id, created_at, retracted"


def encode_time(value: datetime) -> str:
    """Aware datetime → fixed-width UTC text; naive datetimes are refused."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError("datetimes must be timezone-aware", value=value.isoformat())
    utc = value.astimezone(UTC).replace(tzinfo=None)
    return utc.isoformat(timespec="microseconds") + "Z"


def decode_time(text: str) -> datetime:
    """Stored UTC text → aware UTC datetime."""
    return datetime.fromisoformat(text).astimezone(UTC)


def encode_list(values: Sequence[Any]) -> str:
    """A list as compact JSON text (unicode kept verbatim)."""
    return json.dumps(list(values), ensure_ascii=False, separators=(",", ":"))


def decode_list(text: str | None) -> tuple[Any, ...]:
    """JSON list text → tuple (``None`` → empty)."""
    return tuple(json.loads(text)) if text else ()


def encode_embedding(values: Sequence[float], dimensions: int) -> bytes:
    """Check the length and pack as little-endian float32."""
    if len(values) != dimensions:
        raise ValidationError(
            "embedding has the wrong number of dimensions",
            expected=dimensions,
            got=len(values),
        )
    array = np.asarray(values, dtype="<f4")
    if not np.all(np.isfinite(array)):
        raise ValidationError("embedding contains NaN or infinite values")
    return array.tobytes()


def decode_embedding(blob: bytes) -> npt.NDArray[np.float32]:
    """BLOB → float32 vector (a read-only view)."""
    return np.frombuffer(blob, dtype="<f4")


def persona_from_row(row: sqlite3.Row) -> Persona:
    """Rebuild a persona from its columns."""
    return Persona(
        id=row["id"],
        name=row["name"],
        core_identity=row["core_identity"],
        interaction_count=row["interaction_count"],
        last_reflection_at=row["last_reflection_at"],
        disagreement_window=tuple(bool(v) for v in decode_list(row["disagreement_window"])),
        shift_since_reflection=row["shift_since_reflection"],
        last_reflection_attempt_at=row["last_reflection_attempt_at"],
        runtime_mode=row["runtime_mode"],
        affect=row["affect"],
        created_at=decode_time(row["created_at"]),
    )


def snapshot_from_row(row: sqlite3.Row) -> Snapshot:
    """Rebuild a snapshot from its columns."""
    return Snapshot(
        persona_id=row["persona_id"],
        version=row["version"],
        text=row["text"],
        reason=row["reason"],
        created_at=decode_time(row["created_at"]),
    )


def _evidence_from_row(row: sqlite3.Row) -> EvidenceAssessment | None:
    if row["ess_score"] is None:
        return None
    return EvidenceAssessment(
        score=row["ess_score"],
        reasoning_type=ReasoningType(row["ess_reasoning_type"]),
        source_reliability=row["ess_source_reliability"],
        internal_consistency=row["ess_internal_consistency"],
        novelty=row["ess_novelty"],
        topics=decode_list(row["ess_topics"]),
        direction=Direction(row["ess_direction"]),
    )


def episode_from_row(row: sqlite3.Row) -> Episode:
    """Rebuild an episode, evidence included, from :data:`EPISODE_COLUMNS`."""
    disagreement = row["disagreement"]
    return Episode(
        id=row["id"],
        persona_id=row["persona_id"],
        user_id=row["user_id"],
        conversation_id=row["conversation_id"],
        turn=row["turn"],
        seq=row["seq"],
        user_message=row["user_message"],
        agent_response=row["agent_response"],
        created_at=decode_time(row["created_at"]),
        enrichment_status=EnrichmentStatus(row["enrichment_status"]),
        enrichment_attempts=row["enrichment_attempts"],
        enrichment_error=row["enrichment_error"],
        interaction_index=row["interaction_index"],
        evidence=_evidence_from_row(row),
        defaulted=decode_list(row["defaulted"]),
        topics=decode_list(row["topics"]),
        importance=row["importance"],
        insight=row["insight"],
        disagreement=None if disagreement is None else bool(disagreement),
    )


def belief_from_row(row: sqlite3.Row) -> Belief:
    """Rebuild a belief from its columns."""
    return Belief(
        persona_id=row["persona_id"],
        topic=row["topic"],
        position=row["position"],
        confidence=row["confidence"],
        evidence_count=row["evidence_count"],
        uncertainty=row["uncertainty"],
        last_reinforced_at=row["last_reinforced_at"],
        status=BeliefStatus(row["status"]),
        created_at=decode_time(row["created_at"]),
        updated_at=decode_time(row["updated_at"]),
    )


def staged_from_row(row: sqlite3.Row) -> StagedUpdate:
    """Rebuild a staged update from its columns."""
    return StagedUpdate(
        id=row["id"],
        persona_id=row["persona_id"],
        topic=row["topic"],
        signed_delta=row["signed_delta"],
        staged_at=row["staged_at"],
        due_at=row["due_at"],
        episode_id=row["episode_id"],
        committed_at=row["committed_at"],
    )


def insight_from_row(row: sqlite3.Row) -> Insight:
    """Rebuild an insight from its columns."""
    return Insight(
        id=row["id"],
        persona_id=row["persona_id"],
        episode_id=row["episode_id"],
        text=row["text"],
        status=InsightStatus(row["status"]),
        created_at=decode_time(row["created_at"]),
    )


def fact_from_row(row: sqlite3.Row) -> UserFact:
    """Rebuild a user fact from its columns."""
    return UserFact(
        id=row["id"],
        persona_id=row["persona_id"],
        user_id=row["user_id"],
        kind=FactKind(row["kind"]),
        text=row["text"],
        severity=row["severity"],
        episode_id=row["episode_id"],
        created_at=decode_time(row["created_at"]),
        retracted=bool(row["retracted"]),
    )


def provenance_from_row(row: sqlite3.Row) -> ProvenanceEdge:
    """Reads the aliased columns ``p_episode_id``, ``p_topic``, ``p_delta``,
    ``p_committed_at``."""
    return ProvenanceEdge(
        episode_id=row["p_episode_id"],
        topic=row["p_topic"],
        delta=row["p_delta"],
        committed_at=row["p_committed_at"],
    )
