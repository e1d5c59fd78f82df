"""What ``context`` reads on SQLite, in one read transaction.

The same reads the separate methods make (persona, CURRENT snapshot, the user's active
facts, the active beliefs, the user's most similar and latest episodes), run one after
the other on the store's worker thread inside one ``BEGIN``: one hop to the thread, one
consistent view.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from sonality.models import ContextReads
from sonality.storage import checks
from sonality.storage.sqlite.enrichment import _beliefs, active_facts
from sonality.storage.sqlite.episodes import _list, _similar
from sonality.storage.sqlite.executor import SqliteAggregate
from sonality.storage.sqlite.personas import _current, get_persona
from sonality.storage.sqlite.vectors import EmbeddingCache

__all__ = ["SqliteContext"]


def _reads(
    conn: sqlite3.Connection,
    cache: EmbeddingCache,
    persona_id: str,
    user_id: str,
    embedding: Sequence[float] | None,
    similar_k: int,
    recent: int,
) -> ContextReads:
    persona = get_persona(conn, persona_id)
    similar = (
        _similar(conn, cache, persona_id, user_id, embedding, similar_k)
        if embedding is not None and similar_k > 0
        else []
    )
    return ContextReads(
        persona=persona,
        snapshot=_current(conn, persona_id),
        facts=tuple(active_facts(conn, persona_id, user_id)),
        beliefs=tuple(_beliefs(conn, persona_id, False)),
        similar=tuple(similar),
        recent=tuple(_list(conn, persona_id, user_id, None, recent, None)) if recent else (),
    )


class SqliteContext(SqliteAggregate):
    """The ``ContextStore`` part of the SQLite store."""

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
        if embedding is not None:
            checks.embedding(embedding, self._db.embedding_dimensions)
        return await self._db.read(
            _reads, self._db.vectors, persona_id, user_id, embedding, similar_k, recent
        )
