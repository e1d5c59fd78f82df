"""Pydantic models shared by every layer.

Models crossing a boundary are frozen: a function that changes something returns a new
object (``belief.model_copy(update=...)``). Times are timezone-aware UTC datetimes.
Interaction indexes (``interaction_count``, ``due_at``, ``last_reinforced_at``) count
*enriched* interactions of a persona, so a run that was degraded and later caught up ends
in the same state as one that never failed.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

__all__ = [
    "ID_PATTERN",
    "AppliedMigration",
    "Belief",
    "BeliefStatus",
    "Direction",
    "EnrichmentCommit",
    "EnrichmentStatus",
    "Episode",
    "EpisodeDraft",
    "EvidenceAssessment",
    "FactKind",
    "Frozen",
    "Identifier",
    "Insight",
    "InsightStatus",
    "Persona",
    "ProvenanceEdge",
    "ReasoningType",
    "SchemaStatus",
    "ScoredEpisode",
    "Snapshot",
    "StagedUpdate",
    "UserFact",
    "UserFactDraft",
    "normalise_topic",
    "validate_identifier",
]

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$"
"""Ids of personas, users, conversations and episodes: 1-128 characters, letters, digits
and ``_ . : @ -``, starting with a letter or digit."""

_ID_RE = re.compile(ID_PATTERN)
_TOPIC_RE = re.compile(r"[^a-z0-9]+")


def validate_identifier(value: str, *, kind: str = "id") -> str:
    """Return ``value`` if it is a valid id, else raise ``ValueError`` naming the rule."""
    if not isinstance(value, str) or not _ID_RE.match(value):
        raise ValueError(
            f"invalid {kind} {value!r}: use 1-128 letters, digits or _ . : @ -, "
            "starting with a letter or digit"
        )
    return value


def normalise_topic(raw: str) -> str:
    """Canonical topic key: lowercase ASCII words joined by ``_`` (``"Nuclear Power!"`` →
    ``"nuclear_power"``). Empty results raise ``ValueError``."""
    key = _TOPIC_RE.sub("_", raw.strip().lower()).strip("_")[:64].strip("_")
    if not key:
        raise ValueError(f"topic {raw!r} has no letters or digits")
    return key


Identifier = Annotated[str, AfterValidator(validate_identifier)]


class Frozen(BaseModel):
    """Base of the shared models: immutable, strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class EnrichmentStatus(StrEnum):
    PENDING = "pending"
    ENRICHED = "enriched"
    FAILED = "failed"


class Direction(StrEnum):
    SUPPORTS = "supports"
    OPPOSES = "opposes"
    NEUTRAL = "neutral"

    @property
    def sign(self) -> int:
        return {"supports": 1, "opposes": -1, "neutral": 0}[self.value]


class ReasoningType(StrEnum):
    EMPIRICAL = "empirical"
    LOGICAL = "logical"
    EXPERT = "expert"
    ANECDOTAL = "anecdotal"
    EMOTIONAL = "emotional"
    SOCIAL_PRESSURE = "social_pressure"
    NONE = "none"


class BeliefStatus(StrEnum):
    ACTIVE = "active"
    RETIRED = "retired"


class InsightStatus(StrEnum):
    PENDING = "pending"
    CONSUMED = "consumed"


class FactKind(StrEnum):
    CONSTRAINT = "constraint"
    PREFERENCE = "preference"
    FACT = "fact"


class Persona(Frozen):
    id: Identifier
    name: str
    core_identity: str
    interaction_count: int = 0
    last_reflection_at: int = 0
    """Interaction index of the last committed reflection."""
    disagreement_window: tuple[bool, ...] = ()
    """The last (at most 50) enriched interactions: did the user disagree with a held stance?"""
    shift_since_reflection: float = 0.0
    """Sum of |committed position changes| since the last reflection (event trigger)."""
    created_at: datetime

    @property
    def disagreement_rate(self) -> float:
        w = self.disagreement_window
        return sum(w) / len(w) if w else 0.0


class Snapshot(Frozen):
    persona_id: Identifier
    version: int
    text: str
    reason: str = "initial"
    """Why this version exists: ``initial``, ``reflection`` or ``rollback:<N>``."""
    created_at: datetime


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
    disagreement: bool | None = None


class ScoredEpisode(Frozen):
    episode: Episode
    similarity: float
    recency: float
    importance: float
    score: float


class Belief(Frozen):
    persona_id: Identifier
    topic: str
    position: float = Field(ge=-1.0, le=1.0)
    confidence: float = Field(ge=0.0, le=1.0)
    evidence_count: int = Field(ge=0)
    uncertainty: float = Field(ge=0.0, le=1.0)
    last_reinforced_at: int
    """Interaction index of the last committed update."""
    status: BeliefStatus = BeliefStatus.ACTIVE
    created_at: datetime
    updated_at: datetime


class StagedUpdate(Frozen):
    """A signed opinion delta waiting out its cooling period."""

    id: str
    persona_id: Identifier
    topic: str
    signed_delta: float
    staged_at: int
    due_at: int
    episode_id: Identifier
    committed_at: int | None = None


class ProvenanceEdge(Frozen):
    """``(:Episode)-[:SUPPORTS|CONTRADICTS {delta}]->(:Belief)`` written when a staged delta
    commits into the belief."""

    episode_id: Identifier
    topic: str
    delta: float
    committed_at: int

    @property
    def kind(self) -> str:
        return "SUPPORTS" if self.delta >= 0 else "CONTRADICTS"


class Insight(Frozen):
    id: str
    persona_id: Identifier
    episode_id: Identifier
    text: str
    status: InsightStatus = InsightStatus.PENDING
    created_at: datetime


class UserFactDraft(Frozen):
    kind: FactKind
    text: str
    severity: int = Field(default=1, ge=1, le=5)
    """1 = trivia, 5 = safety-critical (allergy, trauma trigger, phobia, physical limit)."""


class UserFact(Frozen):
    id: str
    persona_id: Identifier
    user_id: Identifier
    kind: FactKind
    text: str
    severity: int = Field(ge=1, le=5)
    episode_id: Identifier
    created_at: datetime
    retracted: bool = False


class EnrichmentCommit(Frozen):
    """Everything one enriched interaction changes, applied by the store in one transaction.

    The store checks ``expected_interaction_count`` against the persona and that the
    episode is still pending; if either moved, it raises ``ConflictError`` and writes
    nothing.
    """

    persona_id: Identifier
    episode_id: Identifier
    expected_interaction_count: int
    interaction_count: int
    disagreement_window: tuple[bool, ...]
    evidence: EvidenceAssessment | None
    defaulted: tuple[str, ...]
    topics: tuple[str, ...]
    importance: int
    disagreement: bool
    insight: Insight | None
    facts: tuple[UserFact, ...]
    staged: tuple[StagedUpdate, ...]
    """New staged deltas born in this interaction."""
    committed_staged_ids: tuple[str, ...]
    """Earlier staged deltas that came due now and were netted into beliefs."""
    beliefs: tuple[Belief, ...]
    """New state of every belief touched (created or updated)."""
    provenance: tuple[ProvenanceEdge, ...]
    shift_total: float = 0.0
    """Sum of |position change| this interaction (feeds the event trigger)."""


class AppliedMigration(Frozen):
    version: int
    description: str
    checksum: str
    applied_at: datetime


class SchemaStatus(Frozen):
    backend: str
    applied: tuple[AppliedMigration, ...]
    pending: tuple[str, ...]
    """Names of migration steps not yet applied, in order."""

    @property
    def current(self) -> bool:
        return not self.pending
