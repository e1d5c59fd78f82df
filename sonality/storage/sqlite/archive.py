"""One persona as data on SQLite: every table's rows of the persona read into a
:class:`~sonality.models.PersonaArchive` in one transaction, and an archive written back
in one transaction with every id, counter and chain link preserved.

Models stored one column per field (snapshots, beliefs, staged updates, insights, facts,
reflections, Thinker turns, narratives, monologue entries, affect states, usage, erasures,
biography) go through the codec as they are; episodes flatten their assessment (``shapes``);
conversations join their Thinker counters; the SUPPORTS / CONTRADICTS kind of a provenance
row follows from the sign of its delta.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from sonality.errors import AlreadyExists
from sonality.models import (
    AffectState,
    ArchivedConversation,
    ArchivedEpisode,
    ArchivedReflection,
    ArchivedUser,
    Belief,
    BiographyEntry,
    Episode,
    Erasure,
    Insight,
    MonologueEntry,
    Narrative,
    PersonaArchive,
    ProvenanceEdge,
    Reflection,
    Snapshot,
    StagedUpdate,
    ThinkerTurn,
    TurnUsage,
    UserFact,
)
from sonality.storage import archive as fmt
from sonality.storage import shapes
from sonality.storage.sqlite import codec
from sonality.storage.sqlite.biography import put_entries
from sonality.storage.sqlite.enrichment import INSERT_FACT, fact_row
from sonality.storage.sqlite.episodes import episode_columns
from sonality.storage.sqlite.executor import SqliteAggregate, insert_statement
from sonality.storage.sqlite.personas import get_persona

__all__ = ["SqliteArchive"]

_PLAIN: tuple[tuple[str, str, type[BaseModel]], ...] = (
    ("snapshots", "snapshots", Snapshot),
    ("beliefs", "beliefs", Belief),
    ("staged", "staged_updates", StagedUpdate),
    ("insights", "insights", Insight),
    ("facts", "user_facts", UserFact),
    ("thinker_turns", "thinker_turns", ThinkerTurn),
    ("narratives", "narratives", Narrative),
    ("monologue", "monologue_entries", MonologueEntry),
    ("affect", "affect_states", AffectState),
    ("usage", "turn_usage", TurnUsage),
    ("erasures", "erasures", Erasure),
    ("biography", "biography", BiographyEntry),
)
"""Archive field, table and model of the rows stored one column per model field."""

_SELECT = {
    table: f"SELECT {', '.join(model.model_fields)} FROM {table} WHERE persona_id = ?"
    for _, table, model in _PLAIN
}
_INSERT = {
    table: insert_statement(
        table,
        tuple(model.model_fields),
        # audit records outlive a deleted persona: a restored one may meet its own
        verb="INSERT OR REPLACE" if table == "erasures" else "INSERT",
    )
    for _, table, model in _PLAIN
}
_INSERT_ORDER = (
    "snapshots",
    "beliefs",
    "staged_updates",
    "insights",
    "user_facts",
    "thinker_turns",
    "narratives",
    "monologue_entries",
    "affect_states",
    "turn_usage",
    "erasures",
    "biography",
)
"""Parents first (beliefs before provenance is handled apart; minds before narratives)."""
_REFLECTIONS = f"SELECT {', '.join(Reflection.model_fields)} FROM reflections WHERE persona_id = ?"
_INSERT_REFLECTION = insert_statement("reflections", tuple(Reflection.model_fields))
_EPISODE_COLUMNS = (
    "persona_id",
    "id",
    "user_id",
    "conversation_id",
    "seq",
    "turn",
    "user_message",
    "agent_response",
    "created_at",
    "enrichment_attempts",
    "enrichment_error",
    *shapes.ENRICHED_FIELDS,
    "prev_episode_id",
    "embedding",
    "embedding_rev",
)
_INSERT_EPISODE = insert_statement("episodes", _EPISODE_COLUMNS)


def _export(conn: sqlite3.Connection, persona_id: str) -> PersonaArchive:
    persona = get_persona(conn, persona_id)
    seq = conn.execute("SELECT episode_seq FROM personas WHERE id = ?", (persona_id,)).fetchone()
    key = (persona_id,)
    plain: dict[str, Any] = {
        name: tuple(
            model.model_validate(codec.decode(r)) for r in conn.execute(_SELECT[table], key)
        )
        for name, table, model in _PLAIN
    }
    users = conn.execute("SELECT id, created_at FROM users WHERE persona_id = ?", key)
    conversations = conn.execute(
        "SELECT c.id, c.created_at, c.last_turn, c.last_episode_id, m.thought_turn, "
        "coalesce(m.narrative_version, 0) AS narrative_version, "
        "(SELECT e.user_id FROM episodes AS e WHERE e.persona_id = c.persona_id "
        " AND e.conversation_id = c.id ORDER BY e.turn LIMIT 1) AS user_id "
        "FROM conversations AS c LEFT JOIN conversation_minds AS m "
        "ON m.persona_id = c.persona_id AND m.conversation_id = c.id WHERE c.persona_id = ?",
        key,
    )
    episodes = conn.execute(
        f"SELECT {episode_columns()}, prev_episode_id, embedding FROM episodes "
        "WHERE persona_id = ?",
        key,
    )
    consumed: dict[str, list[str]] = {}
    for row in conn.execute(
        "SELECT reflection_id, insight_id FROM reflection_insights WHERE persona_id = ?", key
    ):
        consumed.setdefault(str(row[0]), []).append(str(row[1]))
    reflections = [
        Reflection.model_validate(codec.decode(r)) for r in conn.execute(_REFLECTIONS, key)
    ]
    provenance = conn.execute(
        "SELECT episode_id, topic, delta, committed_at FROM provenance WHERE persona_id = ?", key
    )
    topics = conn.execute("SELECT name FROM topics WHERE persona_id = ?", key)
    return fmt.canonical(
        PersonaArchive(
            persona=persona,
            episode_seq=int(seq[0]),
            users=tuple(ArchivedUser.model_validate(codec.decode(r)) for r in users),
            conversations=tuple(
                ArchivedConversation.model_validate(codec.decode(r)) for r in conversations
            ),
            episodes=tuple(_archived_episode(r) for r in episodes),
            topics=tuple(str(r[0]) for r in topics),
            provenance=tuple(ProvenanceEdge.model_validate(dict(r)) for r in provenance),
            reflections=tuple(
                ArchivedReflection(reflection=r, consumed=tuple(sorted(consumed.get(r.id, ()))))
                for r in reflections
            ),
            **plain,
        )
    )


def _archived_episode(row: sqlite3.Row) -> ArchivedEpisode:
    fields = {k: v for k, v in codec.decode(row).items() if k not in _EPISODE_EXTRAS}
    blob = row["embedding"]
    return ArchivedEpisode(
        episode=Episode.model_validate(shapes.episode(fields)),
        prev_episode_id=row["prev_episode_id"],
        embedding=fmt.encode_embedding(None if blob is None else bytes(blob)),
    )


_EPISODE_EXTRAS = frozenset({"prev_episode_id", "embedding"})


def _next_rev(conn: sqlite3.Connection) -> int:
    conn.execute("UPDATE store_meta SET value = value + 1 WHERE name = 'embedding_rev'")
    return int(
        conn.execute("SELECT value FROM store_meta WHERE name = 'embedding_rev'").fetchone()[0]
    )


def _episode_row(item: ArchivedEpisode, dimensions: int) -> dict[str, Any]:
    from sonality.storage.sqlite.vectors import encode_embedding

    fields = codec.encode_fields(shapes.stored_episode(item.episode))
    blob = None
    if item.embedding is not None:
        blob = encode_embedding(fmt.decode_embedding(item.embedding), dimensions)
    return {**fields, "prev_episode_id": item.prev_episode_id, "embedding": blob}


def _import(conn: sqlite3.Connection, archive: PersonaArchive, dimensions: int) -> None:
    persona = archive.persona
    pid = persona.id
    if conn.execute("SELECT 1 FROM personas WHERE id = ?", (pid,)).fetchone():
        raise AlreadyExists("persona exists already", persona_id=pid)
    conn.execute("PRAGMA defer_foreign_keys = ON")  # chains and counters point both ways
    values = codec.encode(persona, exclude={"self_model"})
    values |= codec.encode_fields(shapes.self_model_fields(persona))
    columns = (*values, "episode_seq")
    conn.execute(
        insert_statement("personas", columns), {**values, "episode_seq": archive.episode_seq}
    )
    conn.executemany(
        "INSERT INTO users (persona_id, id, created_at) VALUES (?, ?, ?)",
        [(pid, u.id, codec.encode_time(u.created_at)) for u in archive.users],
    )
    conn.executemany(
        "INSERT INTO conversations (persona_id, id, last_turn, last_episode_id, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        [
            (pid, c.id, c.last_turn, c.last_episode_id, codec.encode_time(c.created_at))
            for c in archive.conversations
        ],
    )
    conn.executemany(
        "INSERT INTO conversation_minds (persona_id, conversation_id, user_id, "
        "narrative_version, thought_turn, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
        [
            (
                pid,
                c.id,
                c.user_id,
                c.narrative_version,
                c.thought_turn,
                codec.encode_time(c.created_at),
            )
            for c in archive.conversations
            if c.thought_turn is not None
        ],
    )
    for item in archive.episodes:
        row = _episode_row(item, dimensions)
        row["embedding_rev"] = None if row["embedding"] is None else _next_rev(conn)
        conn.execute(_INSERT_EPISODE, row)
    conn.executemany(
        "INSERT INTO topics (persona_id, name) VALUES (?, ?)", [(pid, t) for t in archive.topics]
    )
    conn.executemany(
        "INSERT INTO episode_topics (persona_id, episode_id, topic) VALUES (?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        [
            (pid, item.episode.id, topic)
            for item in archive.episodes
            for topic in dict.fromkeys(item.episode.topics)
        ],
    )
    by_table = {table: getattr(archive, name) for name, table, _ in _PLAIN}
    for table in _INSERT_ORDER:
        if table == "user_facts":  # with the key its unique index keeps
            conn.executemany(INSERT_FACT, [fact_row(f) for f in archive.facts])
            continue
        if table == "biography":  # with the key its unique index keeps
            put_entries(conn, pid, archive.biography, len(archive.biography))
            continue
        conn.executemany(_INSERT[table], [codec.encode(m) for m in by_table[table]])
    _insert_provenance(conn, pid, archive.provenance)
    conn.executemany(_INSERT_REFLECTION, [codec.encode(r.reflection) for r in archive.reflections])
    conn.executemany(
        "INSERT INTO reflection_insights (persona_id, reflection_id, insight_id) VALUES (?, ?, ?)",
        [(pid, r.reflection.id, i) for r in archive.reflections for i in r.consumed],
    )


def _insert_provenance(
    conn: sqlite3.Connection, persona_id: str, edges: Sequence[ProvenanceEdge]
) -> None:
    conn.executemany(
        "INSERT INTO provenance (persona_id, episode_id, topic, kind, delta, committed_at) "
        "VALUES (:persona_id, :episode_id, :topic, :kind, :delta, :committed_at)",
        [{**codec.encode(e), "persona_id": persona_id, "kind": e.kind} for e in edges],
    )


class SqliteArchive(SqliteAggregate):
    """The ``ArchiveStore`` part of the SQLite store."""

    async def export_persona(self, persona_id: str) -> PersonaArchive:
        """Everything of the persona, read in one transaction."""
        return await self._db.read(_export, persona_id)

    async def import_persona(self, archive: PersonaArchive) -> None:
        """Write the archive in one transaction (``AlreadyExists`` if the persona does)."""
        await self._db.write(_import, archive, self._db.embedding_dimensions)
