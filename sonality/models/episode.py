"""Episodes: one exchange with a user, as drafted, assessed and stored."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import Field

from sonality.models.belief import Direction, ReasoningType
from sonality.models.common import Frozen, Identifier
from sonality.models.insight import InsightState

__all__ = [
    "BadLine",
    "EnrichmentStatus",
    "Episode",
    "EpisodeDraft",
    "EvidenceAssessment",
    "Exchange",
    "ExchangeRef",
    "ScoredEpisode",
]


class EnrichmentStatus(StrEnum):
    PENDING = "pending"
    ENRICHED = "enriched"
    FAILED = "failed"


class EpisodeDraft(Frozen):
    """A raw exchange as the application handed it over, before enrichment."""

    id: Identifier
    persona_id: Identifier
    user_id: Identifier
    conversation_id: Identifier
    user_message: str
    agent_response: str
    created_at: datetime
    embedding: tuple[float, ...] | None = None


class EvidenceAssessment(Frozen):
    """How strong the user's message is as evidence, judged in the third person."""

    score: float = Field(ge=0.0, le=1.0)
    reasoning_type: ReasoningType = ReasoningType.NONE
    source_reliability: float = Field(default=0.0, ge=0.0, le=1.0)
    internal_consistency: float = Field(default=0.0, ge=0.0, le=1.0)
    novelty: float = Field(default=0.0, ge=0.0, le=1.0)
    topics: tuple[str, ...] = ()
    direction: Direction = Direction.NEUTRAL


class Episode(Frozen):
    id: Identifier
    persona_id: Identifier
    user_id: Identifier
    conversation_id: Identifier
    turn: int
    """Position in the conversation, 1-based."""
    seq: int
    """Position among all the persona's episodes, 1-based: the order of enrichment."""
    user_message: str
    agent_response: str
    created_at: datetime
    enrichment_status: EnrichmentStatus = EnrichmentStatus.PENDING
    enrichment_attempts: int = 0
    enrichment_error: str | None = None
    interaction_index: int | None = None
    """Set when enriched: the persona's interaction count after this exchange."""
    evidence: EvidenceAssessment | None = None
    defaulted: tuple[str, ...] = ()
    """Enrichment fields the model missed or got out of range, replaced by defaults."""
    topics: tuple[str, ...] = ()
    importance: int | None = None
    insight: str | None = None
    insight_status: InsightState | None = None
    """Set when enriched: whether the insight part is extracted or still to retry."""
    insight_attempts: int = 0
    """Failed insight retries since the episode was enriched."""
    disagreement: bool | None = None


class ScoredEpisode(Frozen):
    episode: Episode
    similarity: float
    recency: float
    importance: float
    score: float


@dataclass(frozen=True, slots=True)
class Exchange:
    """One exchange of a bulk load (``Sonality.record_batch``)."""

    user_id: str
    conversation_id: str
    message: str
    response: str = ""
    episode_id: str | None = None
    embedding: Sequence[float] | None = None
    """The message's embedding when the caller has it already (``respond`` read its
    context with it); else the recorder embeds the message."""


@dataclass(frozen=True, slots=True)
class ExchangeRef:
    """A stored exchange by its ids and texts, without its enrichment: what a chat
    client's history is matched against (``EpisodeStore.recent_exchanges``)."""

    id: str
    conversation_id: str
    turn: int
    user_message: str
    agent_response: str


@dataclass(frozen=True)
class BadLine:
    """One line that was not recorded, and why (one line of text)."""

    line: int
    error: str
