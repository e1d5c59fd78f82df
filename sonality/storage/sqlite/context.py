"""What ``context`` reads on SQLite, in one read transaction.

The same reads the separate methods make (persona, CURRENT snapshot, the user's active
facts, the user's most similar and latest episodes), run one after the other on the
store's worker thread inside one ``BEGIN``: one hop to the thread, one consistent view.
The beliefs are bounded by what ``context`` shows, never every belief of the persona: the
strongest few (backwards through the ``beliefs_by_strength`` expression index), those not
embedded yet (the ``beliefs_unembedded`` partial index) and those whose topic is most
similar to the message (the process's topic cache, caught up through
``beliefs_by_topic_rev``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

from sonality.models import Belief, BeliefStatus, ConstraintLoad, ContextReads, Episode, TalkerReads
from sonality.storage import checks
from sonality.storage.sqlite import codec
from sonality.storage.sqlite.enrichment import BELIEF_FIELDS, active_facts
from sonality.storage.sqlite.episodes import (
    _EPISODES,
    _list,
    _next_embedding_rev,
    _similar,
    episode_from,
)
from sonality.storage.sqlite.executor import SqliteAggregate
from sonality.storage.sqlite.personas import _current, get_persona
from sonality.storage.sqlite.runtime import _affect, _mind
from sonality.storage.sqlite.vectors import EmbeddingCache, TopicCache, encode_embedding

__all__ = ["SqliteContext"]

_BELIEFS = f"SELECT {', '.join(BELIEF_FIELDS)} FROM beliefs"

# INDEXED BY: without statistics the planner may take the primary key's (persona_id)
# prefix and read every belief of the persona
_STRONGEST = (
    f"{_BELIEFS} INDEXED BY beliefs_by_strength WHERE persona_id = ? AND status = 'active' "
    "ORDER BY abs(position) * confidence DESC LIMIT ?"
)
_UNEMBEDDED = (
    f"{_BELIEFS} INDEXED BY beliefs_unembedded "
    "WHERE persona_id = ? AND topic_embedding IS NULL AND status = 'active' "
    "ORDER BY topic LIMIT ?"
)


def _beliefs(conn: sqlite3.Connection, sql: str, *params: object) -> list[Belief]:
    return [Belief.model_validate(codec.decode(row)) for row in conn.execute(sql, params)]


def _relevant(
    conn: sqlite3.Connection,
    topics: TopicCache,
    persona_id: str,
    embedding: Sequence[float],
    k: int,
) -> list[tuple[Belief, float]]:
    """The persona's ``k`` active beliefs whose topic is most similar to ``embedding``."""
    found: dict[str, Belief] = {}
    hits: list[tuple[str, float]] = []
    for _ in range(2):
        hits = topics.search(conn, persona_id, embedding, 2 * k + 5)
        names = [t for t, _ in hits]
        marks = ", ".join("?" * len(names))
        found = {
            b.topic: b
            for b in _beliefs(
                conn, f"{_BELIEFS} WHERE persona_id = ? AND topic IN ({marks})", persona_id, *names
            )
        }
        if len(found) == len(hits):
            break
        topics.forget(persona_id, "")  # a topic was deleted meanwhile: reload
    active = [(found[t], s) for t, s in hits if t in found]
    return [(b, s) for b, s in active if b.status is BeliefStatus.ACTIVE][:k]


def _reads(
    conn: sqlite3.Connection,
    cache: EmbeddingCache,
    topics: TopicCache,
    persona_id: str,
    user_id: str,
    embedding: Sequence[float] | None,
    similar_k: int,
    recent: int,
    beliefs: int,
) -> ContextReads:
    persona = get_persona(conn, persona_id)
    latest = _list(conn, persona_id, user_id, None, recent, None) if recent else []
    # the latest are often among the most similar too: those are not built twice
    similar = (
        _similar(conn, cache, persona_id, user_id, embedding, similar_k, {e.id: e for e in latest})
        if embedding is not None and similar_k > 0
        else []
    )
    relevant = (
        _relevant(conn, topics, persona_id, embedding, beliefs)
        if embedding is not None and beliefs > 0
        else []
    )
    unembedded = _beliefs(conn, _UNEMBEDDED, persona_id, beliefs)
    shown: dict[str, Belief] = {b.topic: b for b, _ in relevant}
    for belief in (*_beliefs(conn, _STRONGEST, persona_id, beliefs), *unembedded):
        shown.setdefault(belief.topic, belief)
    return ContextReads(
        persona=persona,
        snapshot=_current(conn, persona_id),
        facts=tuple(active_facts(conn, persona_id, user_id)),
        beliefs=tuple(shown.values()),
        belief_similarity={b.topic: score for b, score in relevant},
        unembedded=tuple(b.topic for b in unembedded),
        similar=tuple(similar),
        recent=tuple(latest),
    )


_FIRST = f"{_EPISODES} WHERE persona_id = ? AND conversation_id = ? ORDER BY seq LIMIT 1"


def _window(
    conn: sqlite3.Connection, persona_id: str, conversation_id: str, newest: int
) -> tuple[Episode, ...]:
    """The conversation's ``newest`` episodes, oldest first, led by its first one."""
    recent = _list(conn, persona_id, None, conversation_id, newest, None)[::-1] if newest else []
    row = conn.execute(_FIRST, (persona_id, conversation_id)).fetchone()
    if row is None or (recent and recent[0].id == row["id"]):
        return tuple(recent)
    first = episode_from(row)
    return (first, *[e for e in recent if e.id != first.id])


def _talker_reads(
    conn: sqlite3.Connection,
    cache: EmbeddingCache,
    topics: TopicCache,
    persona_id: str,
    user_id: str,
    conversation_id: str,
    embedding: Sequence[float] | None,
    similar_k: int,
    recent: int,
    beliefs: int,
    window: int,
) -> TalkerReads:
    context = _reads(
        conn, cache, topics, persona_id, user_id, embedding, similar_k, recent, beliefs
    )
    return TalkerReads(
        context=context,
        mind=_mind(conn, persona_id, conversation_id, latest=True),
        window=_window(conn, persona_id, conversation_id, window),
        affect=_affect(conn, persona_id, user_id),
    )


def _set_topics(
    conn: sqlite3.Connection, persona_id: str, rows: Sequence[tuple[str, bytes]]
) -> int:
    written = 0
    for topic, blob in rows:
        cursor = conn.execute(
            "UPDATE beliefs SET topic_embedding = ?, topic_rev = ? "
            "WHERE persona_id = ? AND topic = ?",
            (blob, _next_embedding_rev(conn), persona_id, topic),
        )
        written += cursor.rowcount
    return written


def _heavy(
    conn: sqlite3.Connection, persona_id: str, min_chars: int, line_chars: int, limit: int
) -> list[ConstraintLoad]:
    rows = conn.execute(
        "SELECT user_id, count(*) AS facts, sum(length(text)) AS chars FROM user_facts "
        "WHERE persona_id = ? AND kind = 'constraint' AND retracted = 0 GROUP BY user_id "
        "HAVING chars + facts * ? >= ? ORDER BY chars DESC, user_id LIMIT ?",
        (persona_id, line_chars, min_chars, limit),
    )
    return [ConstraintLoad.model_validate(dict(row)) for row in rows]


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
        beliefs: int = 8,
    ) -> ContextReads:
        """See :meth:`sonality.ports.ContextStore.context_reads`."""
        if embedding is not None:
            checks.embedding(embedding, self._db.embedding_dimensions)
        return await self._db.read(
            _reads,
            self._db.vectors,
            self._db.topics,
            persona_id,
            user_id,
            embedding,
            checks.limit(similar_k),
            checks.limit(recent),
            checks.limit(beliefs),
        )

    async def talker_reads(
        self,
        persona_id: str,
        user_id: str,
        conversation_id: str,
        embedding: Sequence[float] | None,
        *,
        similar_k: int,
        recent: int,
        beliefs: int = 8,
        window: int = 5,
    ) -> TalkerReads:
        """See :meth:`sonality.ports.RuntimeStore.talker_reads`."""
        if embedding is not None:
            checks.embedding(embedding, self._db.embedding_dimensions)
        return await self._db.read(
            _talker_reads,
            self._db.vectors,
            self._db.topics,
            persona_id,
            user_id,
            conversation_id,
            embedding,
            checks.limit(similar_k),
            checks.limit(recent),
            checks.limit(beliefs),
            checks.limit(window),
        )

    async def set_topic_embeddings(
        self, persona_id: str, embeddings: Mapping[str, Sequence[float]]
    ) -> int:
        """See :meth:`sonality.ports.ContextStore.set_topic_embeddings`."""
        dims = self._db.embedding_dimensions
        rows = [(topic, encode_embedding(v, dims)) for topic, v in embeddings.items()]
        if not rows:
            return 0
        return await self._db.write(_set_topics, persona_id, rows)

    async def heavy_constraints(
        self, persona_id: str, *, min_chars: int, line_chars: int = 0, limit: int
    ) -> list[ConstraintLoad]:
        """See :meth:`sonality.ports.ContextStore.heavy_constraints`."""
        return await self._db.read(_heavy, persona_id, min_chars, line_chars, checks.limit(limit))
