"""Row shapes both backends share: where a model is stored flattened the same way in a
Neo4j node and a SQLite row.

An episode's :class:`~sonality.models.EvidenceAssessment` is stored as the ``ess_*``
properties (columns) of the episode, next to the other fields an enrichment sets. These
functions turn the model into those fields and back; each backend's codec handles the
values (times, lists).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sonality.models import EnrichmentCommit, EnrichmentStatus, Episode, InsightState, Persona

__all__ = [
    "ENRICHED_FIELDS",
    "EVIDENCE_COLUMNS",
    "EVIDENCE_FIELDS",
    "SELF_MODEL_FIELDS",
    "enriched_episode",
    "episode",
    "evidence",
    "persona",
    "self_model_fields",
    "stored_episode",
]

EVIDENCE_FIELDS = {
    "ess_score": "score",
    "ess_reasoning_type": "reasoning_type",
    "ess_source_reliability": "source_reliability",
    "ess_internal_consistency": "internal_consistency",
    "ess_novelty": "novelty",
    "ess_direction": "direction",
    "ess_topics": "topics",
}
"""Stored name of each evidence field (``ess``: evidence strength score)."""

ENRICHED_FIELDS = (
    "enrichment_status",
    "interaction_index",
    *EVIDENCE_FIELDS,
    "defaulted",
    "topics",
    "importance",
    "insight",
    "insight_status",
    "disagreement",
)
"""The fields :func:`enriched_episode` sets."""


def enriched_episode(commit: EnrichmentCommit) -> dict[str, Any]:
    """The fields an enrichment commit sets on its episode (None clears one)."""
    evidence = (
        {}
        if commit.evidence is None
        else commit.evidence.model_dump(mode="json", include=set(EVIDENCE_FIELDS.values()))
    )
    return {
        "enrichment_status": EnrichmentStatus.ENRICHED.value,
        "interaction_index": commit.interaction_count,
        **{stored: evidence.get(name) for stored, name in EVIDENCE_FIELDS.items()},
        "defaulted": list(commit.defaulted),
        "topics": list(commit.topics),
        "importance": commit.importance,
        "insight": None if commit.insight is None else commit.insight.text,
        "insight_status": (
            InsightState.PENDING if commit.insight_pending else InsightState.EXTRACTED
        ).value,
        "disagreement": commit.disagreement,
    }


def episode(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A stored episode's fields with the ``ess_*`` ones nested as ``evidence`` (None
    when the episode has no assessment; a missing field takes the model's default)."""
    fields = {k: v for k, v in stored.items() if k not in EVIDENCE_FIELDS}
    evidence = {n: stored[k] for k, n in EVIDENCE_FIELDS.items() if stored.get(k) is not None}
    fields["evidence"] = evidence if "score" in evidence else None
    return fields


SELF_MODEL_FIELDS = {"self_traits": "traits", "self_values": "values", "self_goals": "goals"}
"""Stored name of each list of a persona's :class:`~sonality.models.SelfModel`."""


def self_model_fields(persona: Persona) -> dict[str, list[str]]:
    """The persona's self-model as its stored ``self_*`` lists."""
    model = persona.self_model
    return {stored: list(getattr(model, name)) for stored, name in SELF_MODEL_FIELDS.items()}


def persona(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A stored persona's fields with the ``self_*`` lists nested as ``self_model``."""
    fields = {k: v for k, v in stored.items() if k not in SELF_MODEL_FIELDS}
    fields["self_model"] = {
        name: stored[key] for key, name in SELF_MODEL_FIELDS.items() if stored.get(key)
    }
    return fields


EVIDENCE_COLUMNS = (
    *("id", "user_id", "conversation_id", "seq", "interaction_index", "user_message"),
    *EVIDENCE_FIELDS,
    *("defaulted", "topics", "importance", "disagreement"),
)
"""The stored fields a :class:`~sonality.models.StoredEvidence` is read from."""


def evidence(stored: Mapping[str, Any]) -> dict[str, Any]:
    """An enriched episode's :data:`EVIDENCE_COLUMNS` as ``StoredEvidence`` fields."""
    fields = episode(stored)
    fields["episode_id"] = fields.pop("id")
    return fields


def stored_episode(model: Episode) -> dict[str, Any]:
    """An episode's fields as stored: JSON values, the creation time as a datetime, and
    the assessment flattened into the ``ess_*`` fields (each backend's codec turns the time
    and the lists into its own values)."""
    fields = model.model_dump(mode="json", exclude={"evidence"})
    fields["created_at"] = model.created_at
    evidence = {} if model.evidence is None else model.evidence.model_dump(mode="json")
    fields.update({stored: evidence.get(name) for stored, name in EVIDENCE_FIELDS.items()})
    return fields
