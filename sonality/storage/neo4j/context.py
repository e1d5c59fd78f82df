"""What ``context`` reads on Neo4j, in one read transaction (one session).

``context/read`` brings persona, CURRENT snapshot, the user's active facts, the active
beliefs, the user's latest episodes and — when the similarity is searched in the
process's embedding cache (:mod:`sonality.storage.neo4j.vectors`) — the cache's catch-up,
in one statement; the similar episodes then come, in the same transaction, from the
cache (one statement: the hits by id), or from the in-index filtered search on 2026.x
(``episode/similar_search``). Two statements in one managed transaction (a third only
when the cache must be rebuilt), instead of six sessions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neo4j import AsyncManagedTransaction

from sonality.errors import PersonaNotFound, StoreError
from sonality.models import Belief, ContextReads, Episode, UserFact
from sonality.storage import checks
from sonality.storage.neo4j import codec
from sonality.storage.neo4j.cypher import Query
from sonality.storage.neo4j.episodes import Neo4jEpisodes, episode_from
from sonality.storage.neo4j.executor import fetch_plain
from sonality.storage.neo4j.personas import persona_from, snapshot_from

__all__ = ["Neo4jContext"]

_NO_CATCH_UP: dict[str, Any] = {"since": None, "known": {}}
"""context/read's catch-up parameters when the similarity cache is not searched."""


class Neo4jContext(Neo4jEpisodes):
    """The ``ContextStore`` part of the Neo4j store (it searches like ``Neo4jEpisodes``)."""

    async def _reads(
        self,
        tx: AsyncManagedTransaction,
        persona_id: str,
        user_id: str,
        vector: list[float] | None,
        similar_k: int,
        recent: int,
    ) -> ContextReads:
        searching = vector is not None and similar_k > 0
        cached = searching and self.similarity_form == "cache"
        catch_up = self.vectors.catch_up(persona_id, user_id) if cached else _NO_CATCH_UP
        rows = await fetch_plain(
            tx,
            Query.CONTEXT_READ,
            persona_id=persona_id,
            user_id=user_id,
            recent=recent,
            **catch_up,
        )
        if not rows:
            raise PersonaNotFound("no such persona", persona_id=persona_id)
        row = rows[0]
        if row["snapshot"] is None:
            raise StoreError("persona has no CURRENT snapshot", persona_id=persona_id)
        similar: list[tuple[Episode, float]] = []
        if vector is not None and similar_k > 0:
            similar = await self._similar_in(
                tx, persona_id, user_id, vector, similar_k, row if cached else None
            )
        return ContextReads(
            persona=persona_from(row["persona"]),
            snapshot=snapshot_from(row["snapshot"]),
            facts=tuple(UserFact.model_validate(codec.decode(f, UserFact)) for f in row["facts"]),
            beliefs=tuple(Belief.model_validate(codec.decode(b, Belief)) for b in row["beliefs"]),
            similar=tuple(similar),
            recent=tuple(
                episode_from(codec.times_from_micros(e, "created_at")) for e in row["recent"]
            ),
        )

    async def context_reads(
        self,
        persona_id: str,
        user_id: str,
        embedding: Sequence[float] | None,
        *,
        similar_k: int,
        recent: int,
    ) -> ContextReads:
        """See :meth:`sonality.ports.ContextStore.context_reads`."""
        vector = None if embedding is None else self._vector(embedding)
        return await self._db.read(
            "context_reads",
            self._reads,
            persona_id,
            user_id,
            vector,
            similar_k,
            checks.limit(recent),
        )
