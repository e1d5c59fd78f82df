"""The ports: what the mind needs from the outside world, as structural Protocols.

Adapters (``storage.neo4j_store.Neo4jStore``, ``storage.sqlite_store.SqliteStore``,
``llm.litellm_llm.LiteLLM``, ``testing.ScriptedLLM`` …) satisfy them without inheriting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from sonality.models import (
    Belief,
    EnrichmentCommit,
    Episode,
    EpisodeDraft,
    Insight,
    InsightStatus,
    Persona,
    ProvenanceEdge,
    SchemaStatus,
    Snapshot,
    StagedUpdate,
    UserFact,
)

__all__ = ["LLM", "Clock", "Embedder", "Store"]

T = TypeVar("T", bound=BaseModel)


@runtime_checkable
class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...


@runtime_checkable
class Embedder(Protocol):
    dimensions: int
    local: bool
    """True when embedding needs no network (it may run before the episode is durable)."""

    async def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """One unit-length vector of ``dimensions`` floats per text."""
        ...


@runtime_checkable
class LLM(Protocol):
    model: str | None

    async def structured(
        self,
        prompt: str,
        variables: Mapping[str, Any],
        schema: type[T],
        *,
        component: str,
    ) -> T:
        """Render prompt file ``prompt`` with ``variables``, ask for JSON matching ``schema``,
        validate (re-asking once with the validation error) and return the parsed object.
        Raises ``LLMUnavailable`` or ``LLMResponseInvalid``."""
        ...

    async def text(self, prompt: str, variables: Mapping[str, Any], *, component: str) -> str:
        """Render prompt file ``prompt`` and return the model's plain-text reply."""
        ...


@runtime_checkable
class Store(Protocol):
    """Persistence of one Sonality deployment. Every method is scoped by persona (and by
    user where the data is a user's); every write is one transaction."""

    backend: str

    async def close(self) -> None: ...
    async def ping(self) -> None:
        """Raise ``StoreUnavailable`` when the store cannot be reached."""
        ...

    # schema ---------------------------------------------------------------------------
    async def schema_status(self) -> SchemaStatus: ...
    async def migrate(self) -> list[str]:
        """Apply pending schema steps in order; return the names applied (empty if none).
        Raises ``MigrationChecksumMismatch`` when an applied step was edited."""
        ...

    # personas -------------------------------------------------------------------------
    async def create_persona(self, persona: Persona, snapshot: Snapshot) -> Persona:
        """Create the persona with its first snapshot. ``AlreadyExists`` if the id is taken."""
        ...

    async def get_persona(self, persona_id: str) -> Persona:
        """``PersonaNotFound`` when unknown."""
        ...

    async def list_personas(self) -> list[Persona]: ...

    # episodes -------------------------------------------------------------------------
    async def append_episode(self, draft: EpisodeDraft) -> tuple[Episode, bool]:
        """Store the raw exchange (enrichment pending), chained by NEXT after the
        conversation's previous episode. Idempotent on ``draft.id``: a second call returns
        the stored episode and ``False``; an id already used by another persona, user or
        conversation raises ``ConflictError``."""
        ...

    async def set_episode_embedding(
        self, persona_id: str, episode_id: str, embedding: Sequence[float]
    ) -> None: ...

    async def get_episode(self, persona_id: str, episode_id: str) -> Episode: ...

    async def conversation_chain(self, persona_id: str, conversation_id: str) -> list[str]:
        """Episode ids of a conversation in the order of its NEXT chain, from the first."""
        ...

    async def list_episodes(
        self,
        persona_id: str,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        limit: int = 20,
        since_interaction: int | None = None,
    ) -> list[Episode]:
        """Most recent first (by ``seq``). ``since_interaction`` keeps enriched episodes
        with ``interaction_index`` greater than it."""
        ...

    async def list_pending_episodes(self, persona_id: str, *, limit: int = 100) -> list[Episode]:
        """Episodes still ``pending``, oldest first (by ``seq``)."""
        ...

    async def count_episodes(self, persona_id: str) -> dict[str, int]:
        """Counts by enrichment status (``pending``, ``enriched``, ``failed``)."""
        ...

    async def similar_episodes(
        self, persona_id: str, user_id: str, embedding: Sequence[float], *, k: int
    ) -> list[tuple[Episode, float]]:
        """Up to ``k`` of the user's episodes with cosine similarity, best first."""
        ...

    async def mark_enrichment_attempt(
        self, persona_id: str, episode_id: str, *, error: str, failed: bool
    ) -> None:
        """Count a failed enrichment attempt (status stays pending unless ``failed``)."""
        ...

    async def commit_enrichment(self, commit: EnrichmentCommit) -> None:
        """Apply everything one interaction changed, in one transaction."""
        ...

    # beliefs, staged updates, insights, facts -----------------------------------------
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

    # snapshots ------------------------------------------------------------------------
    async def append_snapshot(self, snapshot: Snapshot) -> Snapshot:
        """Add version ``snapshot.version``, which must be current + 1 (``ConflictError``
        otherwise); it becomes CURRENT and links PREVIOUS to the old one."""
        ...

    async def current_snapshot(self, persona_id: str) -> Snapshot: ...
    async def snapshot_history(self, persona_id: str) -> list[Snapshot]:
        """Newest first."""
        ...

    # maintenance ----------------------------------------------------------------------
    async def delete_all(self) -> None:
        """Remove all data (schema stays). For tests and ``sonality reset``."""
        ...
