"""Episodes on SQLite: tables ``users``, ``conversations`` (with the ``last_turn`` and
``last_episode_id`` that chain a conversation) and ``episodes`` (``prev_episode_id`` is
the NEXT edge read backwards; the embedding a float32 BLOB stamped with an
``embedding_rev`` for the similarity cache)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

from sonality.models import EnrichmentStatus, Episode, EpisodeDraft, ExchangeRef, OldestPending
from sonality.storage import checks, shapes
from sonality.storage.sqlite import codec
from sonality.storage.sqlite.executor import (
    SqliteAggregate,
    chunks,
    insert_statement,
    persona_counters,
    placeholders,
)
from sonality.storage.sqlite.vectors import EmbeddingCache, encode_embedding

__all__ = [
    "EPISODE_FIELDS",
    "SqliteEpisodes",
    "append_tx",
    "episode_columns",
    "episode_from",
]

EPISODE_FIELDS = (
    *("id", "persona_id", "user_id", "conversation_id", "turn", "seq"),
    *("user_message", "agent_response", "created_at", "enrichment_attempts", "enrichment_error"),
    "insight_attempts",
    *shapes.ENRICHED_FIELDS,
)
"""The columns an :class:`Episode` is read from."""


def episode_columns(alias: str = "", prefix: str = "") -> str:
    """The columns of :data:`EPISODE_FIELDS` (constant text), qualified with ``alias``
    and named with ``prefix`` when given, for joins."""
    qualify = f"{alias}." if alias else ""
    return ", ".join(
        f"{qualify}{c} AS {prefix}{c}" if prefix else f"{qualify}{c}" for c in EPISODE_FIELDS
    )


_EPISODES = f"SELECT {episode_columns()} FROM episodes"
_INSERT_EPISODE = insert_statement(
    "episodes",
    (
        "persona_id",
        "id",
        "user_id",
        "conversation_id",
        "seq",
        "turn",
        "prev_episode_id",
        "user_message",
        "agent_response",
        "created_at",
        "enrichment_status",
        "enrichment_attempts",
        "embedding",
        "embedding_rev",
    ),
)


def episode_from(row: sqlite3.Row, *, prefix: str = "") -> Episode:
    return Episode.model_validate(shapes.episode(codec.decode(row, prefix=prefix)))


def _row(conn: sqlite3.Connection, persona_id: str, episode_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        f"{_EPISODES} WHERE persona_id = ? AND id = ?", (persona_id, episode_id)
    ).fetchone()
    return row


def _get(conn: sqlite3.Connection, persona_id: str, episode_id: str) -> Episode:
    row = _row(conn, persona_id, episode_id)
    if row is None:
        raise checks.episode_not_found(persona_id, episode_id)
    return episode_from(row)


def _answer(conn: sqlite3.Connection, persona_id: str, episode_id: str, response: str) -> Episode:
    """``checks.answered`` on the stored exchange, then the response where it had none."""
    stored = checks.answered(_get(conn, persona_id, episode_id), response)
    conn.execute(
        "UPDATE episodes SET agent_response = ? WHERE persona_id = ? AND id = ?",
        (response, persona_id, episode_id),
    )
    return stored.model_copy(update={"agent_response": response})


def _next_embedding_rev(conn: sqlite3.Connection) -> int:
    conn.execute("UPDATE store_meta SET value = value + 1 WHERE name = 'embedding_rev'")
    row = conn.execute("SELECT value FROM store_meta WHERE name = 'embedding_rev'").fetchone()
    return int(row[0])


def append_tx(
    conn: sqlite3.Connection, draft: EpisodeDraft, embedding: bytes | None
) -> tuple[Episode, bool]:
    """Insert the next episode of its conversation (turn, seq, chain link), or return the
    stored one when the same exchange was appended before."""
    existing = _row(conn, draft.persona_id, draft.id)
    if existing is not None:
        return checks.same_exchange(episode_from(existing), draft), False
    persona = persona_counters(conn, draft.persona_id)
    values = codec.encode(draft, exclude={"embedding"})
    ids = (draft.persona_id, draft.conversation_id)
    conn.execute(
        "INSERT INTO users (persona_id, id, created_at) VALUES (?, ?, ?) "
        "ON CONFLICT (persona_id, id) DO NOTHING",
        (draft.persona_id, draft.user_id, values["created_at"]),
    )
    conn.execute(
        "INSERT INTO conversations (persona_id, id, last_turn, last_episode_id, created_at) "
        "VALUES (?, ?, 0, NULL, ?) ON CONFLICT (persona_id, id) DO NOTHING",
        (*ids, values["created_at"]),
    )
    conversation = conn.execute(
        "SELECT last_turn, last_episode_id FROM conversations WHERE persona_id = ? AND id = ?",
        ids,
    ).fetchone()
    seq = int(persona["episode_seq"]) + 1
    turn = int(conversation["last_turn"]) + 1
    conn.execute(
        _INSERT_EPISODE,
        {
            **values,
            "seq": seq,
            "turn": turn,
            "prev_episode_id": conversation["last_episode_id"],
            "enrichment_status": EnrichmentStatus.PENDING.value,
            "enrichment_attempts": 0,
            "embedding": embedding,
            "embedding_rev": None if embedding is None else _next_embedding_rev(conn),
        },
    )
    conn.execute(
        "UPDATE conversations SET last_turn = ?, last_episode_id = ? "
        "WHERE persona_id = ? AND id = ?",
        (turn, draft.id, *ids),
    )
    conn.execute("UPDATE personas SET episode_seq = ? WHERE id = ?", (seq, draft.persona_id))
    return _get(conn, draft.persona_id, draft.id), True


def _set_embedding(conn: sqlite3.Connection, persona_id: str, episode_id: str, blob: bytes) -> None:
    """Replace the embedding and stamp a new ``embedding_rev`` for the cache."""
    if _row(conn, persona_id, episode_id) is None:
        raise checks.episode_not_found(persona_id, episode_id)
    conn.execute(
        "UPDATE episodes SET embedding = ?, embedding_rev = ? WHERE persona_id = ? AND id = ?",
        (blob, _next_embedding_rev(conn), persona_id, episode_id),
    )


def _chain(conn: sqlite3.Connection, persona_id: str, conversation_id: str) -> list[str]:
    """Follow ``prev_episode_id`` links from the conversation's first episode."""
    rows = conn.execute(
        "WITH RECURSIVE chain(id, depth) AS ("
        " SELECT id, 0 FROM episodes WHERE persona_id = ? AND conversation_id = ?"
        " AND prev_episode_id IS NULL"
        " UNION ALL"
        " SELECT e.id, chain.depth + 1 FROM episodes AS e JOIN chain"
        " ON e.prev_episode_id = chain.id AND e.persona_id = ? AND e.conversation_id = ?"
        ") SELECT id FROM chain ORDER BY depth",
        (persona_id, conversation_id, persona_id, conversation_id),
    )
    return [row[0] for row in rows]


def _list_sql(by_user: bool, by_conversation: bool) -> str:
    where = "persona_id = ?"
    where += " AND user_id = ?" if by_user else ""
    where += " AND conversation_id = ?" if by_conversation else ""
    # seq < ? (never NULL: the largest seq when there is no cursor) is a range the index
    # seeks to, so a page far back costs what the first one does
    return (
        f"{_EPISODES} WHERE {where} AND seq < ? "
        "AND (? IS NULL OR (enrichment_status = 'enriched' AND interaction_index > ?)) "
        "ORDER BY seq DESC LIMIT ?"
    )


_LIST_EPISODES = {(u, c): _list_sql(u, c) for u in (False, True) for c in (False, True)}
"""One constant statement per filter combination, so each can use its own index."""


def _list(
    conn: sqlite3.Connection,
    persona_id: str,
    user_id: str | None,
    conversation_id: str | None,
    limit: int,
    since_interaction: int | None,
    before: int | None = None,
) -> list[Episode]:
    params: list[object] = [persona_id]
    params += [user_id] if user_id is not None else []
    params += [conversation_id] if conversation_id is not None else []
    params += [checks.cursor(before)]
    params += [since_interaction, since_interaction, checks.limit(limit)]
    sql = _LIST_EPISODES[(user_id is not None, conversation_id is not None)]
    return [episode_from(row) for row in conn.execute(sql, params)]


_RECENT_EXCHANGES = (
    "SELECT id, conversation_id, turn, user_message, agent_response FROM episodes"
    " WHERE persona_id = ? AND user_id = ? ORDER BY seq DESC LIMIT ?"
)
"""A user's newest exchanges, ids and texts only (through ``episodes_by_user``)."""


def _recent_exchanges(
    conn: sqlite3.Connection, persona_id: str, user_id: str, limit: int
) -> list[ExchangeRef]:
    rows = conn.execute(_RECENT_EXCHANGES, (persona_id, user_id, checks.limit(limit)))
    return [ExchangeRef(*row) for row in rows]


def _pending(conn: sqlite3.Connection, persona_id: str, limit: int) -> list[Episode]:
    rows = conn.execute(
        f"{_EPISODES} WHERE persona_id = ? AND enrichment_status = 'pending' ORDER BY seq LIMIT ?",
        (persona_id, checks.limit(limit)),
    )
    return [episode_from(row) for row in rows]


def _unembedded(conn: sqlite3.Connection, persona_id: str, limit: int) -> list[Episode]:
    rows = conn.execute(
        f"{_EPISODES} WHERE persona_id = ? AND embedding IS NULL ORDER BY seq LIMIT ?",
        (persona_id, checks.limit(limit)),
    )
    return [episode_from(row) for row in rows]


def _count_unembedded(conn: sqlite3.Connection, persona_id: str) -> int:
    row = conn.execute(
        "SELECT count(*) FROM episodes WHERE persona_id = ? AND embedding IS NULL",
        (persona_id,),
    ).fetchone()
    return int(row[0])


_OLDEST_EPISODE = (
    "SELECT created_at FROM episodes WHERE persona_id = ? AND enrichment_status = 'pending' "
    "ORDER BY seq LIMIT 1"
)
"""The head of the enrichment queue, first in ``episodes_by_status``'s order."""
_OLDEST_TURN = (
    "SELECT created_at FROM thinker_turns WHERE persona_id = ? AND status = 'pending' "
    "ORDER BY created_at LIMIT 1"
)
"""The oldest unthought turn, first in ``thinker_turns_by_status_time``'s order."""


def _oldest_pending(conn: sqlite3.Connection, persona_ids: list[str]) -> list[OldestPending]:
    found = []
    for persona_id in persona_ids:
        episode = conn.execute(_OLDEST_EPISODE, (persona_id,)).fetchone()
        turn = conn.execute(_OLDEST_TURN, (persona_id,)).fetchone()
        found.append(
            OldestPending(
                persona_id=persona_id,
                episode_at=None if episode is None else codec.decode_time(episode[0]),
                turn_at=None if turn is None else codec.decode_time(turn[0]),
            )
        )
    return found


def _count(conn: sqlite3.Connection, persona_id: str) -> dict[str, int]:
    rows = conn.execute(
        "SELECT enrichment_status, count(*) FROM episodes WHERE persona_id = ? "
        "GROUP BY enrichment_status",
        (persona_id,),
    )
    return checks.episode_counts((str(status), int(n)) for status, n in rows)


def _by_id(
    conn: sqlite3.Connection,
    persona_id: str,
    user_id: str,
    ids: Sequence[str],
    known: Mapping[str, Episode] | None = None,
) -> dict[str, Episode]:
    """The user's episodes among ``ids``; ``known``: episodes of the user read earlier in
    the same transaction, reused rather than built again from their rows."""
    found: dict[str, Episode] = {}
    known = known or {}
    for chunk in chunks(ids):
        # Filter the user in Python: with user_id in the WHERE clause SQLite prefers the
        # (persona_id, user_id, seq) index and scans all of the user's episodes.
        rows = conn.execute(
            f"{_EPISODES} WHERE persona_id = ? AND id IN ({placeholders(chunk)})",
            (persona_id, *chunk),
        )
        for row in rows:
            if row["user_id"] == user_id:
                episode = known.get(row["id"]) or episode_from(row)
                found[episode.id] = episode
    return found


def _similar(
    conn: sqlite3.Connection,
    cache: EmbeddingCache,
    persona_id: str,
    user_id: str,
    embedding: Sequence[float],
    k: int,
    known: Mapping[str, Episode] | None = None,
) -> list[tuple[Episode, float]]:
    """The user's top ``k`` episodes by cosine similarity, best first."""
    for _ in range(2):
        hits = cache.search(conn, persona_id, user_id, embedding, k)
        episodes = _by_id(conn, persona_id, user_id, [i for i, _ in hits], known)
        if len(episodes) == len(hits):
            break
        # A cached episode vanished (delete_all from another connection): reload.
        cache.forget(persona_id, user_id)
    return [(episodes[i], score) for i, score in hits if i in episodes]


def _mark_attempt(
    conn: sqlite3.Connection,
    persona_id: str,
    episode_id: str,
    error: str,
    failed: bool,
    counted: bool,
) -> None:
    """Record an attempt's error (counting it when ``counted``); ``failed`` turns a
    pending episode to failed."""
    cursor = conn.execute(
        "UPDATE episodes SET enrichment_attempts = enrichment_attempts + ?, "
        "enrichment_error = ?, enrichment_status = CASE "
        "WHEN ? AND enrichment_status = 'pending' THEN 'failed' ELSE enrichment_status END "
        "WHERE persona_id = ? AND id = ?",
        (int(counted), checks.stored_error(error), failed, persona_id, episode_id),
    )
    if cursor.rowcount == 0:
        raise checks.episode_not_found(persona_id, episode_id)


def _failed(conn: sqlite3.Connection, persona_id: str, limit: int) -> list[Episode]:
    rows = conn.execute(
        f"{_EPISODES} WHERE persona_id = ? AND enrichment_status = 'failed' ORDER BY seq LIMIT ?",
        (persona_id, checks.limit(limit)),
    )
    return [episode_from(row) for row in rows]


def _requeue(conn: sqlite3.Connection, persona_id: str, below_attempts: int | None) -> int:
    """Failed episodes (with fewer counted attempts than ``below_attempts``) back to
    pending; their attempts keep counting."""
    cursor = conn.execute(
        "UPDATE episodes SET enrichment_status = 'pending' WHERE persona_id = ? "
        "AND enrichment_status = 'failed' AND (? IS NULL OR enrichment_attempts < ?)",
        (persona_id, below_attempts, below_attempts),
    )
    return cursor.rowcount


class SqliteEpisodes(SqliteAggregate):
    """The ``EpisodeStore`` part of the SQLite store."""

    def _blob(self, embedding: Sequence[float]) -> bytes:
        return encode_embedding(embedding, self._db.embedding_dimensions)

    async def append_episode(self, draft: EpisodeDraft) -> tuple[Episode, bool]:
        """Store the raw exchange (idempotent on ``draft.id``)."""
        blob = None if draft.embedding is None else self._blob(draft.embedding)
        return await self._db.write(append_tx, draft, blob)

    async def append_episodes(self, drafts: Sequence[EpisodeDraft]) -> list[bool]:
        """Store a batch of one persona's raw exchanges in one transaction; per draft,
        whether it was created (False: stored before, same exchange)."""
        batch = checks.episode_batch(drafts)
        if not batch:
            return []
        blobs = [None if d.embedding is None else self._blob(d.embedding) for d in batch]

        def append_all(conn: sqlite3.Connection) -> list[bool]:
            return [append_tx(conn, d, blob)[1] for d, blob in zip(batch, blobs, strict=True)]

        return checks.batch_created(drafts, batch, await self._db.write(append_all))

    async def set_episode_embedding(
        self, persona_id: str, episode_id: str, embedding: Sequence[float]
    ) -> None:
        """Set or replace an episode's embedding (``NotFoundError`` when unknown)."""
        blob = self._blob(embedding)
        await self._db.write(_set_embedding, persona_id, episode_id, blob)

    async def answer_episode(self, persona_id: str, episode_id: str, response: str) -> Episode:
        """Give an unanswered exchange its response (``checks.answered``)."""
        return await self._db.write(_answer, persona_id, episode_id, response)

    async def get_episode(self, persona_id: str, episode_id: str) -> Episode:
        """``NotFoundError`` when the persona has no such episode."""
        return await self._db.read(_get, persona_id, episode_id)

    async def conversation_chain(self, persona_id: str, conversation_id: str) -> list[str]:
        """Episode ids in NEXT-chain order (here: ``prev_episode_id`` links)."""
        return await self._db.read(_chain, persona_id, conversation_id)

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
        """Most recent first (by ``seq``), optionally filtered, from the ``before`` cursor
        on (see ``EpisodeStore.list_episodes``)."""
        return await self._db.read(
            _list, persona_id, user_id, conversation_id, limit, since_interaction, before
        )

    async def recent_exchanges(
        self, persona_id: str, user_id: str, *, limit: int = 20
    ) -> list[ExchangeRef]:
        """See :meth:`sonality.ports.EpisodeStore.recent_exchanges`."""
        return await self._db.read(_recent_exchanges, persona_id, user_id, limit)

    async def list_pending_episodes(self, persona_id: str, *, limit: int = 100) -> list[Episode]:
        """Episodes still pending, oldest first (by ``seq``)."""
        return await self._db.read(_pending, persona_id, limit)

    async def unembedded_episodes(self, persona_id: str, *, limit: int = 100) -> list[Episode]:
        """Episodes without an embedding, oldest first (by ``seq``)."""
        return await self._db.read(_unembedded, persona_id, limit)

    async def count_unembedded(self, persona_id: str) -> int:
        """How many of the persona's episodes have no embedding."""
        return await self._db.read(_count_unembedded, persona_id)

    async def count_episodes(self, persona_id: str) -> dict[str, int]:
        """``{"pending": n, "enriched": n, "failed": n}``."""
        return await self._db.read(_count, persona_id)

    async def oldest_pending(self, persona_ids: Sequence[str]) -> list[OldestPending]:
        """Per persona, when its next pending episode and its oldest pending Thinker turn
        were recorded (one read transaction for all of them)."""
        if not persona_ids:
            return []
        return await self._db.read(_oldest_pending, list(persona_ids))

    async def similar_episodes(
        self, persona_id: str, user_id: str, embedding: Sequence[float], *, k: int
    ) -> list[tuple[Episode, float]]:
        """Up to ``k`` of the user's embedded episodes by cosine similarity, best first."""
        checks.embedding(embedding, self._db.embedding_dimensions)
        return await self._db.read(_similar, self._db.vectors, persona_id, user_id, embedding, k)

    async def mark_enrichment_attempt(
        self, persona_id: str, episode_id: str, *, error: str, failed: bool, counted: bool = True
    ) -> None:
        """Record a failed enrichment attempt (counted unless an outage); ``failed``
        gives the episode up."""
        await self._db.write(_mark_attempt, persona_id, episode_id, error, failed, counted)

    async def list_failed_episodes(self, persona_id: str, *, limit: int = 20) -> list[Episode]:
        """Episodes marked failed, oldest first (by ``seq``)."""
        return await self._db.read(_failed, persona_id, limit)

    async def requeue_failed(self, persona_id: str, *, below_attempts: int | None = None) -> int:
        """Failed episodes back to pending (those with fewer counted attempts than
        ``below_attempts``, or all); returns how many."""
        return await self._db.write(_requeue, persona_id, below_attempts)
