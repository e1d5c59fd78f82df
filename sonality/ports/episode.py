"""The store's episode port: appends, listings, similarity."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from sonality.models import (
    Episode,
    EpisodeDraft,
    ExchangeRef,
    OldestPending,
)

__all__ = ["EpisodeStore"]


@runtime_checkable
class EpisodeStore(Protocol):
    """The raw exchanges: appended first, listed, searched by similarity."""

    async def append_episode(self, draft: EpisodeDraft) -> tuple[Episode, bool]:
        """Store the raw exchange (enrichment pending), chained by NEXT after the
        conversation's previous episode. Idempotent on ``draft.id``: a second call returns
        the stored episode and ``False``; an id already used by another persona, user or
        conversation raises ``ConflictError``."""
        ...

    async def append_episodes(self, drafts: Sequence[EpisodeDraft]) -> list[bool]:
        """Bulk load: store up to 10,000 drafts of one persona in one transaction, each
        as the next turn of its conversation in batch order (idempotent per id like
        :meth:`append_episode`). Returns, per draft, whether it was created."""
        ...

    async def set_episode_embedding(
        self, persona_id: str, episode_id: str, embedding: Sequence[float]
    ) -> None: ...

    async def answer_episode(self, persona_id: str, episode_id: str, response: str) -> Episode:
        """Give an exchange stored with an empty response its response, and return it
        (``checks.answered``: the same response again changes nothing, another one is a
        ``ConflictError``; ``NotFoundError`` when unknown)."""
        ...

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
        before: int | None = None,
    ) -> list[Episode]:
        """Most recent first (by ``seq``). ``since_interaction`` keeps enriched episodes
        with ``interaction_index`` greater than it; ``before`` (a cursor: the ``seq`` of
        the last episode of the previous page) keeps those with a smaller ``seq``. Read
        through an index from the cursor on: a page costs its length, wherever it is."""
        ...

    async def recent_exchanges(
        self, persona_id: str, user_id: str, *, limit: int = 20
    ) -> list[ExchangeRef]:
        """The user's newest exchanges, most recent first (by ``seq``), as ids and texts
        only (the episodes ``list_episodes(user_id=...)`` gives, without decoding their
        enrichment): read through the user's index, stopping at ``limit``."""
        ...

    async def list_pending_episodes(self, persona_id: str, *, limit: int = 100) -> list[Episode]:
        """Episodes still ``pending``, oldest first (by ``seq``)."""
        ...

    async def count_episodes(self, persona_id: str) -> dict[str, int]:
        """Counts by enrichment status (``pending``, ``enriched``, ``failed``)."""
        ...

    async def unembedded_episodes(self, persona_id: str, *, limit: int = 100) -> list[Episode]:
        """Episodes stored without an embedding (a remote embedder failed when they were
        recorded), oldest first (by ``seq``): what the backfill embeds."""
        ...

    async def count_unembedded(self, persona_id: str) -> int:
        """How many of the persona's episodes have no embedding."""
        ...

    async def oldest_pending(self, persona_ids: Sequence[str]) -> list[OldestPending]:
        """For each persona of ``persona_ids`` (in that order; an unknown one has empty
        queues), when its next pending episode and its oldest pending Thinker turn were
        recorded: one read, an index seek per persona and queue, whatever the backlog."""
        ...

    async def similar_episodes(
        self, persona_id: str, user_id: str, embedding: Sequence[float], *, k: int
    ) -> list[tuple[Episode, float]]:
        """Up to ``k`` of the user's episodes with cosine similarity, best first."""
        ...

    async def mark_enrichment_attempt(
        self, persona_id: str, episode_id: str, *, error: str, failed: bool, counted: bool = True
    ) -> None:
        """Record a failed enrichment attempt's error; count it unless ``counted`` is
        False (an outage costs no attempt). Status stays pending unless ``failed``."""
        ...

    async def list_failed_episodes(self, persona_id: str, *, limit: int = 20) -> list[Episode]:
        """Episodes marked ``failed``, oldest first (by ``seq``)."""
        ...

    async def requeue_failed(self, persona_id: str, *, below_attempts: int | None = None) -> int:
        """Put ``failed`` episodes back to ``pending`` — those with fewer counted attempts
        than ``below_attempts``, or all when None — keeping their attempt counts; return
        how many."""
        ...
