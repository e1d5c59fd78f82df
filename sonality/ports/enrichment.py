"""The store's enrichment port: the backlog, its state and its commits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from sonality.models import (
    Belief,
    EnrichmentBacklog,
    EnrichmentCommit,
    EnrichmentState,
    Episode,
    EpisodeDraft,
    Insight,
    InsightCommit,
    InsightState,
    InsightStatus,
    ProvenanceEdge,
    StagedUpdate,
    UserFact,
    UserInfluence,
)

__all__ = ["EnrichmentStore"]


@runtime_checkable
class EnrichmentStore(Protocol):
    """What enrichment commits, and the reads of it: beliefs and their provenance,
    staged updates, insights, user facts."""

    async def commit_enrichment(self, commit: EnrichmentCommit) -> None:
        """Apply everything one interaction changed, in one transaction."""
        ...

    async def commit_enrichments(self, commits: Sequence[EnrichmentCommit]) -> list[Episode]:
        """Apply consecutive enrichment commits of one persona (a backlog chunk, planned
        in order from one ``enrichment_state``) in one transaction, each checked as
        ``commit_enrichment`` checks it; a refusal of any (``ConflictError`` …) rolls them
        all back. Returns the enriched episodes as stored, in the commits' order."""
        ...

    async def enrichment_backlog(
        self, persona_id: str, *, limit: int, influence_window: int, count: bool = False
    ) -> EnrichmentBacklog:
        """In one read: the persona's oldest ``limit`` pending episodes (by ``seq``), the
        state their commits are planned from (``enrichment_state`` for their users, since
        the persona's next interaction minus ``influence_window``, but no belief: planning
        reads those by topic, ``enrichment_beliefs``) and with ``count`` how many are
        pending in all. ``PersonaNotFound`` when unknown."""
        ...

    async def append_episode_with_backlog(
        self, draft: EpisodeDraft, *, influence_window: int
    ) -> tuple[Episode, bool, EnrichmentBacklog]:
        """``append_episode`` and then, in the same transaction, ``enrichment_backlog``
        of the persona for one episode with the pending count: what an inline ``record``
        needs before it asks the model, in one unit of work instead of two."""
        ...

    async def enrichment_beliefs(self, persona_id: str, topics: Sequence[str]) -> list[Belief]:
        """The persona's beliefs (retired ones too) of ``topics``, by topic: what planning
        a piece of a backlog reads besides its ``enrichment_backlog`` (a topic without a
        belief is simply absent)."""
        ...

    async def enrichment_state(
        self, persona_id: str, user_ids: Sequence[str], *, since_interaction: int
    ) -> EnrichmentState:
        """In one read: the persona, every belief (retired too), the uncommitted staged
        deltas, the active facts of ``user_ids`` and the staged deltas of their episodes
        staged after ``since_interaction`` (what a backlog chunk plans from)."""
        ...

    async def commit_insight(self, commit: InsightCommit) -> None:
        """Apply a retried insight extraction in one transaction: the episode's insight
        text and status, and the ``Insight`` it yielded. ``ConflictError`` (nothing
        written) when the episode's insight part is not pending."""
        ...

    async def list_insight_retries(
        self, persona_id: str, *, status: InsightState = InsightState.PENDING, limit: int = 50
    ) -> list[Episode]:
        """Enriched episodes whose insight part is ``status``, oldest first (by ``seq``)."""
        ...

    async def count_insight_retries(self, persona_id: str) -> dict[str, int]:
        """How many insight parts are ``pending`` and ``failed``."""
        ...

    async def mark_insight_attempt(
        self, persona_id: str, episode_id: str, *, error: str, failed: bool
    ) -> None:
        """Count a failed insight retry; ``failed`` gives the insight part up."""
        ...

    async def requeue_failed_insights(
        self, persona_id: str, *, below_attempts: int | None = None
    ) -> int:
        """Put ``failed`` insight parts back to ``pending`` (as ``requeue_failed``)."""
        ...

    async def recent_influence(
        self, persona_id: str, user_id: str, *, since_interaction: int
    ) -> list[UserInfluence]:
        """The staged deltas of the user's episodes with ``staged_at`` after
        ``since_interaction``, with each episode's message, by staged order."""
        ...

    async def upsert_beliefs(self, beliefs: Sequence[Belief]) -> None: ...
    async def list_beliefs(self, persona_id: str, *, include_retired: bool = False) -> list[Belief]:
        """Ordered by topic."""
        ...

    async def belief_evidence(
        self, persona_id: str, topic: str
    ) -> list[tuple[ProvenanceEdge, Episode]]:
        """The provenance edges into a belief with their episodes, oldest first."""
        ...

    async def list_staged(
        self, persona_id: str, *, due_by: int | None = None
    ) -> list[StagedUpdate]:
        """Uncommitted staged updates (all, or those with ``due_at <= due_by``), by
        (due_at, staged order)."""
        ...

    async def list_insights(
        self, persona_id: str, *, status: InsightStatus | None = None
    ) -> list[Insight]:
        """Oldest first."""
        ...

    async def list_facts(self, persona_id: str, user_id: str) -> list[UserFact]:
        """Active (not retracted) facts of one user, oldest first."""
        ...

    async def retract_fact(self, persona_id: str, user_id: str, fact_id: str) -> None: ...
