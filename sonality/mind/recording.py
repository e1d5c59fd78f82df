"""The first, durable step of every interaction: store the raw exchange.

:class:`EpisodeRecorder` writes an exchange as a ``pending`` episode in one short
transaction, before any model call, so nothing is lost whatever fails next. Both
``Sonality.record`` (memory-backend mode) and the dual-process runtime's ``respond`` use
it. It checks nothing: its callers validate their input first (``record`` checks ids and
text against the limits; ``respond`` checks the user's side before the Talker speaks).

Embedding: a local embedder (no network) runs before the write, so the vector is stored
with the episode; a remote one runs after it, so an embedding outage never costs the
exchange (the vector is then left out, and logged as deferred). :meth:`EpisodeRecorder.backfill`
embeds such episodes later, oldest first (``Sonality.enrich_pending`` runs it, so the
worker and ``sonality enrich`` do).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sonality.errors import LLMError
from sonality.models import (
    EnrichmentBacklog,
    Episode,
    EpisodeDraft,
    Exchange,
    ThinkerTurn,
    TurnStart,
)
from sonality.observability import get_logger
from sonality.ports import Clock, Embedder, Store

__all__ = [
    "EpisodeRecorder",
]

log = get_logger("sonality")


def _draft_of(
    persona_id: str, x: Exchange, embedding: Sequence[float] | None, now: datetime
) -> EpisodeDraft:
    return EpisodeDraft(
        id=x.episode_id or f"ep_{uuid.uuid4().hex}",
        persona_id=persona_id,
        user_id=x.user_id,
        conversation_id=x.conversation_id,
        user_message=x.message,
        agent_response=x.response,
        created_at=now,
        embedding=None if embedding is None else tuple(embedding),
    )


class EpisodeRecorder:
    """Appends exchanges to a store (see the module docstring)."""

    def __init__(self, *, store: Store, embedder: Embedder, clock: Clock) -> None:
        self._store = store
        self._embedder = embedder
        self._clock = clock

    async def append(
        self,
        persona_id: str,
        *,
        user_id: str,
        conversation_id: str,
        message: str,
        response: str,
        episode_id: str | None = None,
    ) -> tuple[Episode, bool]:
        """Store the exchange; returns the stored episode and whether this call created
        it. Idempotent on ``episode_id`` (the store's rule: a retry returns the stored
        episode, an id used for another exchange raises ``ConflictError``)."""
        exchange = Exchange(user_id, conversation_id, message, response, episode_id)
        return await self.append_exchange(persona_id, exchange)

    async def append_exchange(self, persona_id: str, exchange: Exchange) -> tuple[Episode, bool]:
        """:meth:`append` of an :class:`Exchange`."""
        draft = await self._draft(persona_id, exchange)
        episode, created = await self._store.append_episode(draft)
        await self._recorded(episode, created, draft.embedding is not None)
        return episode, created

    async def append_turn(
        self, persona_id: str, exchange: Exchange, start: TurnStart
    ) -> tuple[Episode, bool, ThinkerTurn]:
        """:meth:`append` of the exchange ``respond`` answered, and in the same
        transaction its turn for the Thinker (``Store.append_turn``)."""
        draft = await self._draft(persona_id, exchange)
        episode, created, turn = await self._store.append_turn(draft, start)
        await self._recorded(episode, created, draft.embedding is not None)
        return episode, created, turn

    async def append_with_backlog(
        self, persona_id: str, exchange: Exchange, *, influence_window: int
    ) -> tuple[Episode, bool, EnrichmentBacklog]:
        """:meth:`append` of ``exchange``, and in the same unit of work the persona's
        enrichment backlog for one episode (``Store.append_episode_with_backlog``): an
        inline ``record``'s first step."""
        draft = await self._draft(persona_id, exchange)
        episode, created, backlog = await self._store.append_episode_with_backlog(
            draft, influence_window=influence_window
        )
        await self._recorded(episode, created, draft.embedding is not None)
        return episode, created, backlog

    async def _draft(self, persona_id: str, exchange: Exchange) -> EpisodeDraft:
        """The exchange as a draft, with the caller's embedding or embedded first by a
        local embedder."""
        embedding = exchange.embedding
        if embedding is None and self._embedder.local:
            [embedding] = await self._embedder.embed([exchange.message])
        return _draft_of(persona_id, exchange, embedding, self._clock.now())

    async def _recorded(self, episode: Episode, created: bool, embedded: bool = False) -> None:
        log.info(
            "episode_recorded",
            persona_id=episode.persona_id,
            episode_id=episode.id,
            conversation_id=episode.conversation_id,
            turn=episode.turn,
            created=created,
        )
        if created and not embedded and not self._embedder.local:
            await self._embed_later(episode)

    async def append_many(self, persona_id: str, exchanges: Sequence[Exchange]) -> list[bool]:
        """Store a batch in one transaction (the store's bulk path); per exchange, whether
        it was created. The embeddings are computed first, in one call; when a remote
        embedder fails the batch is stored without them (logged), never lost."""
        vectors: list[tuple[float, ...] | None] = [None] * len(exchanges)
        try:
            vectors = list(await self._embedder.embed([x.message for x in exchanges]))
        except LLMError as exc:
            log.warning("embedding_deferred", persona_id=persona_id, error=exc.message)
        now = self._clock.now()
        drafts = [
            _draft_of(persona_id, x, vector, now)
            for x, vector in zip(exchanges, vectors, strict=True)
        ]
        created = await self._store.append_episodes(drafts)
        log.info("episodes_recorded", persona_id=persona_id, created=sum(created), size=len(drafts))
        return created

    async def backfill(self, persona_id: str, *, limit: int = 100) -> int:
        """Embed up to ``limit`` of the persona's episodes stored without an embedding,
        oldest first, in one embedder call; returns how many were embedded. An embedder
        outage embeds none (logged); they stay for the next pass."""
        missing = await self._store.unembedded_episodes(persona_id, limit=limit)
        if not missing:
            return 0
        try:
            vectors = await self._embedder.embed([e.user_message for e in missing])
        except LLMError as exc:
            log.warning(
                "embedding_backfill_deferred",
                persona_id=persona_id,
                episodes=len(missing),
                error=exc.message,
            )
            return 0
        for episode, vector in zip(missing, vectors, strict=True):
            await self._store.set_episode_embedding(persona_id, episode.id, vector)
        log.info("embedding_backfilled", persona_id=persona_id, episodes=len(missing))
        return len(missing)

    async def _embed_later(self, episode: Episode) -> None:
        try:
            [vector] = await self._embedder.embed([episode.user_message])
        except LLMError as exc:
            log.warning("embedding_deferred", episode_id=episode.id, error=exc.message)
            return
        await self._store.set_episode_embedding(episode.persona_id, episode.id, vector)
