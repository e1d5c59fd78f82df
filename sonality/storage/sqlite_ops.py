"""The SQLite store's transaction bodies: personas, episodes, snapshots, maintenance
(enrichment and what it writes: :mod:`sonality.storage.sqlite_enrichment`).

Each function takes the connection as its last argument and runs inside the transaction
that :class:`~sonality.storage.sqlite_store.SqliteStore` opened on its worker thread
(``BEGIN IMMEDIATE`` for writes); raising anything rolls the whole unit back. Every
statement is scoped by ``persona_id`` and uses ``?`` parameters only: the few SQL strings
assembled here combine constants, never values.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from sonality.errors import (
    AlreadyExists,
    ConflictError,
    NotFoundError,
    PersonaNotFound,
    SchemaError,
    ValidationError,
)
from sonality.models import (
    EnrichmentStatus,
    Episode,
    EpisodeDraft,
    Persona,
    Snapshot,
)
from sonality.storage.sqlite_rows import (
    EPISODE_COLUMNS,
    PERSONA_COLUMNS,
    SNAPSHOT_COLUMNS,
    encode_embedding,
    encode_list,
    encode_time,
    episode_from_row,
    persona_from_row,
    snapshot_from_row,
)
from sonality.storage.sqlite_schema import DATA_TABLES
from sonality.storage.sqlite_vectors import EmbeddingCache

__all__ = [
    "MAX_ERROR_CHARS",
    "append_episode",
    "append_snapshot",
    "conversation_chain",
    "count_episodes",
    "create_persona",
    "current_snapshot",
    "delete_all",
    "get_episode",
    "get_persona",
    "list_episodes",
    "list_pending_episodes",
    "list_personas",
    "ping",
    "record_dimensions",
    "recorded_dimensions",
    "require_persona",
    "set_episode_embedding",
    "similar_episodes",
    "snapshot_history",
]

MAX_ERROR_CHARS = 500
"""``enrichment_error`` is cut to this many characters."""

_CHUNK = 500
"""Ids per ``IN (...)`` list (old SQLite builds allow 999 parameters per statement)."""


def ping(conn: sqlite3.Connection) -> None:
    """Touch the database (raises through the store as ``StoreUnavailable``)."""
    conn.execute("SELECT 1").fetchone()


def recorded_dimensions(conn: sqlite3.Connection) -> int:
    """The embedding dimensions the store was migrated for."""
    row = conn.execute(
        "SELECT value FROM store_meta WHERE name = 'embedding_dimensions'"
    ).fetchone()
    if row is None:
        raise SchemaError("schema is not current; run `sonality migrate`")
    return int(row[0])


def record_dimensions(conn: sqlite3.Connection, dimensions: int) -> None:
    """Remember the embedding dimensions at the first migration (kept afterwards)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "INSERT INTO store_meta (name, value) VALUES ('embedding_dimensions', ?) "
            "ON CONFLICT (name) DO NOTHING",
            (dimensions,),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


# personas -----------------------------------------------------------------------------


def require_persona(conn: sqlite3.Connection, persona_id: str) -> sqlite3.Row:
    """The persona's counters row; ``PersonaNotFound`` when unknown."""
    row: sqlite3.Row | None = conn.execute(
        "SELECT interaction_count, episode_seq FROM personas WHERE id = ?", (persona_id,)
    ).fetchone()
    if row is None:
        raise PersonaNotFound("no such persona", persona_id=persona_id)
    return row


def create_persona(persona: Persona, snapshot: Snapshot, conn: sqlite3.Connection) -> Persona:
    """Insert the persona and its snapshot v1; ``AlreadyExists`` if the id is taken."""
    if snapshot.persona_id != persona.id or snapshot.version != 1:
        raise ValidationError(
            "the first snapshot must be version 1 of the same persona",
            persona_id=persona.id,
            snapshot_persona_id=snapshot.persona_id,
            version=snapshot.version,
        )
    if conn.execute("SELECT 1 FROM personas WHERE id = ?", (persona.id,)).fetchone():
        raise AlreadyExists("persona exists already", persona_id=persona.id)
    conn.execute(
        "INSERT INTO personas (id, name, core_identity, interaction_count, last_reflection_at, "
        "disagreement_window, shift_since_reflection, episode_seq, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)",
        (
            persona.id,
            persona.name,
            persona.core_identity,
            persona.interaction_count,
            persona.last_reflection_at,
            encode_list(persona.disagreement_window),
            persona.shift_since_reflection,
            encode_time(persona.created_at),
        ),
    )
    _insert_snapshot(conn, snapshot)
    return get_persona(persona.id, conn)


def get_persona(persona_id: str, conn: sqlite3.Connection) -> Persona:
    """``PersonaNotFound`` when unknown."""
    row = conn.execute(
        f"SELECT {PERSONA_COLUMNS} FROM personas WHERE id = ?", (persona_id,)
    ).fetchone()
    if row is None:
        raise PersonaNotFound("no such persona", persona_id=persona_id)
    return persona_from_row(row)


def list_personas(conn: sqlite3.Connection) -> list[Persona]:
    """Every persona, ordered by id."""
    rows = conn.execute(f"SELECT {PERSONA_COLUMNS} FROM personas ORDER BY id").fetchall()
    return [persona_from_row(row) for row in rows]


# episodes -----------------------------------------------------------------------------


def _episode_row(conn: sqlite3.Connection, persona_id: str, episode_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE persona_id = ? AND id = ?",
        (persona_id, episode_id),
    ).fetchone()
    return row


def _next_embedding_rev(conn: sqlite3.Connection) -> int:
    conn.execute("UPDATE store_meta SET value = value + 1 WHERE name = 'embedding_rev'")
    row = conn.execute("SELECT value FROM store_meta WHERE name = 'embedding_rev'").fetchone()
    return int(row[0])


def append_episode(
    draft: EpisodeDraft, dimensions: int, conn: sqlite3.Connection
) -> tuple[Episode, bool]:
    """Insert the next episode of its conversation (turn, seq, chain link), or
    return the stored one when the same exchange was appended before."""
    existing = _episode_row(conn, draft.persona_id, draft.id)
    if existing is not None:
        stored = episode_from_row(existing)
        same = (
            stored.user_id == draft.user_id
            and stored.conversation_id == draft.conversation_id
            and stored.user_message == draft.user_message
            and stored.agent_response == draft.agent_response
        )
        if not same:
            raise ConflictError(
                "episode id already used for another exchange",
                persona_id=draft.persona_id,
                episode_id=draft.id,
            )
        return stored, False
    persona = require_persona(conn, draft.persona_id)
    embedding = None if draft.embedding is None else encode_embedding(draft.embedding, dimensions)
    created_at = encode_time(draft.created_at)
    conn.execute(
        "INSERT INTO users (persona_id, id, created_at) VALUES (?, ?, ?) "
        "ON CONFLICT (persona_id, id) DO NOTHING",
        (draft.persona_id, draft.user_id, created_at),
    )
    conn.execute(
        "INSERT INTO conversations (persona_id, id, last_turn, last_episode_id, created_at) "
        "VALUES (?, ?, 0, NULL, ?) ON CONFLICT (persona_id, id) DO NOTHING",
        (draft.persona_id, draft.conversation_id, created_at),
    )
    conversation = conn.execute(
        "SELECT last_turn, last_episode_id FROM conversations WHERE persona_id = ? AND id = ?",
        (draft.persona_id, draft.conversation_id),
    ).fetchone()
    seq = int(persona["episode_seq"]) + 1
    turn = int(conversation["last_turn"]) + 1
    rev = None if embedding is None else _next_embedding_rev(conn)
    conn.execute(
        "INSERT INTO episodes (persona_id, id, user_id, conversation_id, seq, turn, "
        "prev_episode_id, user_message, agent_response, created_at, enrichment_status, "
        "enrichment_attempts, embedding, embedding_rev) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?)",
        (
            draft.persona_id,
            draft.id,
            draft.user_id,
            draft.conversation_id,
            seq,
            turn,
            conversation["last_episode_id"],
            draft.user_message,
            draft.agent_response,
            created_at,
            embedding,
            rev,
        ),
    )
    conn.execute(
        "UPDATE conversations SET last_turn = ?, last_episode_id = ? "
        "WHERE persona_id = ? AND id = ?",
        (turn, draft.id, draft.persona_id, draft.conversation_id),
    )
    conn.execute("UPDATE personas SET episode_seq = ? WHERE id = ?", (seq, draft.persona_id))
    return get_episode(draft.persona_id, draft.id, conn), True


def set_episode_embedding(
    persona_id: str,
    episode_id: str,
    embedding: Sequence[float],
    dimensions: int,
    conn: sqlite3.Connection,
) -> None:
    """Replace the embedding and stamp a new ``embedding_rev`` for the cache."""
    blob = encode_embedding(embedding, dimensions)
    if _episode_row(conn, persona_id, episode_id) is None:
        raise NotFoundError("no such episode", persona_id=persona_id, episode_id=episode_id)
    conn.execute(
        "UPDATE episodes SET embedding = ?, embedding_rev = ? WHERE persona_id = ? AND id = ?",
        (blob, _next_embedding_rev(conn), persona_id, episode_id),
    )


def get_episode(persona_id: str, episode_id: str, conn: sqlite3.Connection) -> Episode:
    """``NotFoundError`` when the persona has no such episode."""
    row = _episode_row(conn, persona_id, episode_id)
    if row is None:
        raise NotFoundError("no such episode", persona_id=persona_id, episode_id=episode_id)
    return episode_from_row(row)


def conversation_chain(
    persona_id: str, conversation_id: str, conn: sqlite3.Connection
) -> list[str]:
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
    return (
        f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE {where} "
        "AND (? IS NULL OR (enrichment_status = 'enriched' AND interaction_index > ?)) "
        "ORDER BY seq DESC LIMIT ?"
    )


_LIST_EPISODES = {(u, c): _list_sql(u, c) for u in (False, True) for c in (False, True)}
"""One constant statement per filter combination, so each can use its own index."""


def list_episodes(
    persona_id: str,
    conn: sqlite3.Connection,
    *,
    user_id: str | None,
    conversation_id: str | None,
    limit: int,
    since_interaction: int | None,
) -> list[Episode]:
    """Newest first by seq, with the optional filters (see the Store port)."""
    params: list[object] = [persona_id]
    params += [user_id] if user_id is not None else []
    params += [conversation_id] if conversation_id is not None else []
    params += [since_interaction, since_interaction, max(limit, 0)]
    sql = _LIST_EPISODES[(user_id is not None, conversation_id is not None)]
    return [episode_from_row(row) for row in conn.execute(sql, params)]


def list_pending_episodes(
    persona_id: str, conn: sqlite3.Connection, *, limit: int
) -> list[Episode]:
    """Pending episodes, oldest first by seq."""
    rows = conn.execute(
        f"SELECT {EPISODE_COLUMNS} FROM episodes "
        "WHERE persona_id = ? AND enrichment_status = 'pending' ORDER BY seq LIMIT ?",
        (persona_id, max(limit, 0)),
    )
    return [episode_from_row(row) for row in rows]


def count_episodes(persona_id: str, conn: sqlite3.Connection) -> dict[str, int]:
    """Episodes per enrichment status, every status present."""
    counts = {status.value: 0 for status in EnrichmentStatus}
    rows = conn.execute(
        "SELECT enrichment_status, count(*) FROM episodes WHERE persona_id = ? "
        "GROUP BY enrichment_status",
        (persona_id,),
    )
    for status, n in rows:
        counts[str(status)] = int(n)
    return counts


def _chunks(ids: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start : start + _CHUNK]


def _episodes_by_id(
    conn: sqlite3.Connection, persona_id: str, user_id: str, ids: Sequence[str]
) -> dict[str, Episode]:
    found: dict[str, Episode] = {}
    for chunk in _chunks(ids):
        marks = ", ".join("?" for _ in chunk)
        # Filter the user in Python: with user_id in the WHERE clause SQLite prefers the
        # (persona_id, user_id, seq) index and scans all of the user's episodes.
        rows = conn.execute(
            f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE persona_id = ? AND id IN ({marks})",
            (persona_id, *chunk),
        )
        for row in rows:
            if row["user_id"] == user_id:
                episode = episode_from_row(row)
                found[episode.id] = episode
    return found


def similar_episodes(
    cache: EmbeddingCache,
    persona_id: str,
    user_id: str,
    embedding: Sequence[float],
    k: int,
    conn: sqlite3.Connection,
) -> list[tuple[Episode, float]]:
    """The user's top ``k`` episodes by cosine similarity, best first."""
    encode_embedding(embedding, cache.dimensions)  # validates length and finiteness
    for _ in range(2):
        hits = cache.search(conn, persona_id, user_id, embedding, k)
        episodes = _episodes_by_id(conn, persona_id, user_id, [i for i, _ in hits])
        if len(episodes) == len(hits):
            break
        # A cached episode vanished (delete_all from another connection): reload.
        cache.forget(persona_id, user_id)
    return [(episodes[i], score) for i, score in hits if i in episodes]


def mark_enrichment_attempt(
    persona_id: str, episode_id: str, error: str, failed: bool, conn: sqlite3.Connection
) -> None:
    """Count an attempt; ``failed`` turns a pending episode to failed."""
    cursor = conn.execute(
        "UPDATE episodes SET enrichment_attempts = enrichment_attempts + 1, "
        "enrichment_error = ?, enrichment_status = CASE "
        "WHEN ? AND enrichment_status = 'pending' THEN 'failed' ELSE enrichment_status END "
        "WHERE persona_id = ? AND id = ?",
        (error[:MAX_ERROR_CHARS], failed, persona_id, episode_id),
    )
    if cursor.rowcount == 0:
        raise NotFoundError("no such episode", persona_id=persona_id, episode_id=episode_id)


# snapshots ----------------------------------------------------------------------------


def _insert_snapshot(conn: sqlite3.Connection, snapshot: Snapshot) -> None:
    conn.execute(
        f"INSERT INTO snapshots ({SNAPSHOT_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
        (
            snapshot.persona_id,
            snapshot.version,
            snapshot.text,
            snapshot.reason,
            encode_time(snapshot.created_at),
        ),
    )


def _current_version(conn: sqlite3.Connection, persona_id: str) -> int:
    row = conn.execute(
        "SELECT max(version) FROM snapshots WHERE persona_id = ?", (persona_id,)
    ).fetchone()
    return int(row[0] or 0)


def append_snapshot(snapshot: Snapshot, conn: sqlite3.Connection) -> Snapshot:
    """Compare-and-swap: the version must be current + 1."""
    require_persona(conn, snapshot.persona_id)
    current = _current_version(conn, snapshot.persona_id)
    if snapshot.version != current + 1:
        raise ConflictError(
            "snapshot version is not current + 1",
            persona_id=snapshot.persona_id,
            current=current,
            version=snapshot.version,
        )
    _insert_snapshot(conn, snapshot)
    return current_snapshot(snapshot.persona_id, conn)


def current_snapshot(persona_id: str, conn: sqlite3.Connection) -> Snapshot:
    """The newest snapshot; ``PersonaNotFound`` when the persona is unknown."""
    require_persona(conn, persona_id)
    row = conn.execute(
        f"SELECT {SNAPSHOT_COLUMNS} FROM snapshots WHERE persona_id = ? "
        "ORDER BY version DESC LIMIT 1",
        (persona_id,),
    ).fetchone()
    if row is None:
        raise NotFoundError("persona has no snapshot", persona_id=persona_id)
    return snapshot_from_row(row)


def snapshot_history(persona_id: str, conn: sqlite3.Connection) -> list[Snapshot]:
    """Every snapshot of the persona, newest first."""
    rows = conn.execute(
        f"SELECT {SNAPSHOT_COLUMNS} FROM snapshots WHERE persona_id = ? ORDER BY version DESC",
        (persona_id,),
    )
    return [snapshot_from_row(row) for row in rows]


# maintenance --------------------------------------------------------------------------

_DELETE = {table: f"DELETE FROM {table}" for table in DATA_TABLES}
"""Constant statements over the constant table list."""


def delete_all(conn: sqlite3.Connection) -> None:
    """Empty every data table, children first (schema and bookkeeping stay)."""
    for table in DATA_TABLES:
        conn.execute(_DELETE[table])
