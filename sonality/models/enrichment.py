"""What enrichment reads and commits: the backlog, its state, and the commits."""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sonality import errors
from sonality.models.belief import Belief, ProvenanceEdge, StagedInfluence, StagedUpdate
from sonality.models.common import Frozen, Identifier
from sonality.models.episode import Episode, EvidenceAssessment
from sonality.models.fact import UserFact
from sonality.models.insight import Insight
from sonality.models.persona import Persona

__all__ = [
    "Backlog",
    "EnrichMode",
    "EnrichReport",
    "EnrichmentBacklog",
    "EnrichmentCommit",
    "EnrichmentState",
    "InsightCommit",
    "Recorded",
]


class EnrichmentState(Frozen):
    """Everything planning the enrichment of a persona's next episodes reads, taken in one
    read (``Store.enrichment_state``) and then carried from one episode to the next in
    memory (``core.backlog``), as the one-by-one path would read it again each time."""

    persona: Persona
    beliefs: tuple[Belief, ...]
    """The beliefs read, retired ones included: every one (``enrichment_state``), or none
    (``enrichment_backlog``) and then those of the topics planning needs."""
    staged: tuple[StagedUpdate, ...]
    """The uncommitted staged deltas."""
    facts: tuple[UserFact, ...]
    """The active facts of the users asked for."""
    influence: tuple[StagedInfluence, ...]
    """The staged deltas of those users' episodes staged after the interaction asked for."""


class EnrichmentBacklog(Frozen):
    """What an enrichment pass reads before it asks the model, in one read
    (``Store.enrichment_backlog``): the persona's oldest pending episodes and the state
    their commits are planned from."""

    episodes: tuple[Episode, ...]
    """Up to the limit asked for, oldest first (by ``seq``): the order enrichment follows."""
    state: EnrichmentState
    """The persona and what planning reads, for the episodes' users and the influence
    window of the persona's next interaction (``enrichment_state``)."""
    pending: int | None = None
    """How many of the persona's episodes are pending in all (when asked for)."""

    @property
    def persona(self) -> Persona:
        return self.state.persona


class EnrichmentCommit(Frozen):
    """Everything one enriched interaction changes, applied by the store in one transaction.

    The store checks ``expected_interaction_count`` against the persona, that the
    episode is still pending and (when given) ``expected_reflection_at``; if any moved, it
    raises ``ConflictError`` and writes nothing.
    """

    persona_id: Identifier
    episode_id: Identifier
    expected_interaction_count: int
    expected_reflection_at: int | None = None
    """The persona's ``last_reflection_at`` the plan read: a reflection committed since
    (it decays beliefs the plan may have read) refuses the commit. None: not checked."""
    interaction_count: int
    disagreement_window: tuple[bool, ...]
    evidence: EvidenceAssessment | None
    defaulted: tuple[str, ...]
    topics: tuple[str, ...]
    importance: int
    disagreement: bool
    insight: Insight | None
    insight_pending: bool = False
    """The insight could not be extracted now: the episode's ``insight_status`` becomes
    pending and ``enrich`` retries that part alone later (``InsightCommit``)."""
    facts: tuple[UserFact, ...]
    merged_facts: tuple[UserFact, ...] = ()
    """Facts the user already had that this interaction disclosed again (in the same or
    other words): their new severity and ``also_from`` (this episode added), nothing else."""
    staged: tuple[StagedUpdate, ...]
    """New staged deltas born in this interaction."""
    committed_staged_ids: tuple[str, ...]
    """Earlier staged deltas that came due now and were netted into beliefs."""
    beliefs: tuple[Belief, ...]
    """New state of every belief touched (created or updated)."""
    provenance: tuple[ProvenanceEdge, ...]
    shift_total: float = 0.0
    """Sum of |position change| this interaction (feeds the event trigger)."""

    @model_validator(mode="after")
    def _one_persona(self) -> Self:
        owners = {b.persona_id for b in self.beliefs}
        owners |= {s.persona_id for s in self.staged} | {f.persona_id for f in self.facts}
        owners |= {f.persona_id for f in self.merged_facts}
        owners |= {self.insight.persona_id} if self.insight is not None else set()
        if owners - {self.persona_id}:
            raise errors.ValidationError(
                "an enrichment commit may only touch its own persona", persona_id=self.persona_id
            )
        return self


class InsightCommit(Frozen):
    """A retried insight extraction, applied by the store in one transaction: the
    episode's insight text and ``insight_status`` (extracted) and, when there is one, the
    ``Insight`` it yielded. The store checks that the episode's insight is still pending
    (``ConflictError`` otherwise) and writes nothing if not."""

    persona_id: Identifier
    episode_id: Identifier
    insight: Insight | None

    @model_validator(mode="after")
    def _own_episode(self) -> Self:
        if self.insight is not None and (
            self.insight.persona_id,
            self.insight.episode_id,
        ) != (self.persona_id, self.episode_id):
            raise errors.ValidationError(
                "an insight commit may only touch its own episode", persona_id=self.persona_id
            )
        return self


class EnrichReport(BaseModel):
    """What one ``enrich_pending`` pass did."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    persona_id: str
    enriched: int = 0
    failed: int = 0
    remaining: int = 0
    stopped_by: str | None = None
    """Why the pass stopped early (e.g. ``llm_unavailable``), or None."""
    requeued: int = 0
    """Failed episodes and insights put back to pending first (``retry_failed``)."""
    insights_extracted: int = 0
    """Pending insight parts extracted in this pass."""
    insights_failed: int = 0
    """Insight parts given up in this pass (``failed``; ``--retry-failed`` retries them)."""
    insights_remaining: int = 0
    """Insight parts still pending after the pass."""
    embedded: int = 0
    """Episodes whose missing embedding this pass backfilled (``Sonality.enrich_pending``)."""


class Backlog(BaseModel):
    """What a persona's stored work still waits for from a model, whichever process will
    do it (the worker, ``sonality enrich``, the Thinker's retry job)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    persona_id: str
    enrichment_pending: int = Field(ge=0)
    """Episodes not enriched yet."""
    enrichment_failed: int = Field(ge=0)
    """Episodes whose enrichment was given up (``sonality enrich --retry-failed``)."""
    insights_pending: int = Field(ge=0)
    """Enriched episodes whose insight extraction is to be retried."""
    insights_failed: int = Field(ge=0)
    """Insight extractions given up (``--retry-failed`` as well)."""
    thinking_pending: int = Field(ge=0)
    """Responded turns the Thinker has not committed yet."""
    thinking_failed: int = Field(ge=0)
    """Turns whose Thinker step failed; the retry job runs them again."""

    @property
    def empty(self) -> bool:
        """Nothing waits (nothing pending, nothing failed)."""
        return not any(self.model_dump(exclude={"persona_id"}).values())


class Recorded(BaseModel):
    """What ``record`` returns: the stored episode (re-read after enrichment) and whether
    this call created it."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    episode: Episode
    created: bool
    enrichment: EnrichReport | None = None

    @property
    def status(self) -> str:
        return self.episode.enrichment_status.value


class EnrichMode(StrEnum):
    """When ``record`` enriches the episode it stored."""

    INLINE = "inline"
    """Before returning, bounded by ``Limits.record_deadline_seconds``: past the deadline,
    or when older episodes of the persona are still pending, ``record`` returns the episode
    ``pending`` and the persona's enrichment lane finishes it."""
    BACKGROUND = "background"
    """Right after the durable write; the persona's enrichment lane enriches in order
    (``Sonality.drain`` waits for it; the worker takes what a dead process left)."""
    OFF = "off"
    """Not at all (the worker, ``sonality enrich`` or ``enrich_pending`` do it later)."""
