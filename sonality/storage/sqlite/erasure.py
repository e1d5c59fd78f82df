"""Forgetting and correcting on SQLite: the erasure commit (episodes out, the NEXT chain
relinked, opinions replaced by the replay), snapshot purges after a review, fact
corrections, persona deletion and the ``erasures`` audit table.

Every statement is scoped by ``persona_id``; the few assembled ones combine constant table
and column names with ``?`` placeholders, never values.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from sonality.errors import ConflictError
from sonality.models import (
    Belief,
    Episode,
    Erasure,
    ErasureCommit,
    ErasureState,
    ReflectionPoint,
    StoredEvidence,
    UserFact,
)
from sonality.storage import checks, shapes
from sonality.storage.sqlite import codec
from sonality.storage.sqlite.enrichment import (
    BELIEF_FIELDS,
    FACT_FIELDS,
    INSERT_FACT,
    STAGED_FIELDS,
    active_facts,
)
from sonality.storage.sqlite.episodes import episode_columns, episode_from
from sonality.storage.sqlite.executor import (
    SqliteAggregate,
    chunks,
    insert_statement,
    persona_counters,
    placeholders,
)
from sonality.storage.sqlite.migrations import DATA_TABLES
from sonality.storage.sqlite.personas import get_persona

__all__ = ["SqliteErasure"]

_ERASURE_FIELDS = tuple(Erasure.model_fields)
"""An erasure record is stored one column per field."""
_INSERT_ERASURE = insert_statement("erasures", _ERASURE_FIELDS)
_INSERT_STAGED = insert_statement("staged_updates", STAGED_FIELDS)
_UPSERT_BELIEF = (
    insert_statement("beliefs", BELIEF_FIELDS)
    + " ON CONFLICT (persona_id, topic) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in BELIEF_FIELDS[2:])
)
_DELETE_PERSONA = {
    table: f"DELETE FROM {table} WHERE {'id' if table == 'personas' else 'persona_id'} = ?"
    for table in DATA_TABLES
    if table not in ("erasures", "api_keys")
}
"""Constant statements over the constant table list: everything of one persona but its
erasure records (API keys belong to no one persona; the server revokes a deleted
persona's keys)."""

_BY_EPISODE = (
    "insights",
    "user_facts",
    "staged_updates",
    "provenance",
    "episode_topics",
    "turn_usage",
    "thinker_turns",
)
"""Tables whose rows hang off one episode (``episode_id``), deleted with it."""
_DELETE_BY_EPISODE = {
    table: f"DELETE FROM {table} WHERE persona_id = ? AND episode_id IN " for table in _BY_EPISODE
}


def _in(sql: str, persona_id: str, ids: Sequence[str], conn: sqlite3.Connection) -> int:
    """Run ``sql`` + ``(?, ?, …)`` over ``ids`` in chunks; the rows it changed."""
    changed = 0
    for chunk in chunks(ids):
        changed += conn.execute(f"{sql}({placeholders(chunk)})", (persona_id, *chunk)).rowcount
    return changed


# reads ------------------------------------------------------------------------------------


def _removed(
    conn: sqlite3.Connection, persona_id: str, user_id: str | None, episode_id: str | None
) -> list[Episode]:
    if user_id is not None:
        found = conn.execute(
            "SELECT 1 FROM users WHERE persona_id = ? AND id = ?", (persona_id, user_id)
        ).fetchone()
        if found is None:
            raise checks.user_not_found(persona_id, user_id)
        rows = conn.execute(
            f"SELECT {episode_columns()} FROM episodes WHERE persona_id = ? AND user_id = ? "
            "ORDER BY seq",
            (persona_id, user_id),
        )
        return [episode_from(row) for row in rows]
    assert episode_id is not None
    row = conn.execute(
        f"SELECT {episode_columns()} FROM episodes WHERE persona_id = ? AND id = ?",
        (persona_id, episode_id),
    ).fetchone()
    if row is None:
        raise checks.episode_not_found(persona_id, episode_id)
    return [episode_from(row)]


def _state(
    conn: sqlite3.Connection, persona_id: str, user_id: str | None, episode_id: str | None
) -> ErasureState:
    persona = get_persona(conn, persona_id)
    removed = _removed(conn, persona_id, user_id, episode_id)
    ids = [e.id for e in removed]
    evidence = conn.execute(
        f"SELECT {', '.join(shapes.EVIDENCE_COLUMNS)} FROM episodes WHERE persona_id = ? "
        "AND enrichment_status = 'enriched' ORDER BY interaction_index",
        (persona_id,),
    )
    beliefs = conn.execute(
        f"SELECT {', '.join(BELIEF_FIELDS)} FROM beliefs WHERE persona_id = ? ORDER BY topic",
        (persona_id,),
    )
    reflections = conn.execute(
        "SELECT id, interaction_count, started_at, snapshot_version FROM reflections "
        "WHERE persona_id = ? AND outcome = 'committed' ORDER BY interaction_count, started_at",
        (persona_id,),
    )
    if user_id is not None:
        facts = conn.execute(
            "SELECT count(*) FROM user_facts WHERE persona_id = ? AND user_id = ?",
            (persona_id, user_id),
        ).fetchone()[0]
    else:
        facts = _count_in(conn, "user_facts", persona_id, ids)
    return ErasureState(
        persona=persona,
        removed=tuple(removed),
        evidence=tuple(
            StoredEvidence.model_validate(shapes.evidence(codec.decode(r))) for r in evidence
        ),
        beliefs=tuple(Belief.model_validate(codec.decode(r)) for r in beliefs),
        reflections=tuple(ReflectionPoint.model_validate(codec.decode(r)) for r in reflections),
        facts=int(facts),
        insights=_count_in(conn, "insights", persona_id, ids),
    )


_COUNT_BY_EPISODE = {
    table: f"SELECT count(*) FROM {table} WHERE persona_id = ? AND episode_id IN "
    for table in ("user_facts", "insights")
}


def _count_in(conn: sqlite3.Connection, table: str, persona_id: str, ids: Sequence[str]) -> int:
    total = 0
    for chunk in chunks(ids):
        sql = f"{_COUNT_BY_EPISODE[table]}({placeholders(chunk)})"
        total += int(conn.execute(sql, (persona_id, *chunk)).fetchone()[0])
    return total


# the commit -------------------------------------------------------------------------------


def _relink(conn: sqlite3.Connection, persona_id: str, removed: set[str]) -> list[str]:
    """Relink every conversation that loses episodes around them (its chain is its turn
    order) and clear the links of the removed ones; return the conversations left empty.
    The Thinker's monologue entries and narratives from the first removed turn on were
    written after seeing it: they go, and the narrative pointer moves back."""
    conversations: set[str] = set()
    for chunk in chunks(sorted(removed)):
        conversations.update(
            str(row[0])
            for row in conn.execute(
                "SELECT DISTINCT conversation_id FROM episodes WHERE persona_id = ? "
                f"AND id IN ({placeholders(chunk)})",
                (persona_id, *chunk),
            )
        )
    empty: list[str] = []
    for conversation_id in sorted(conversations):
        chain = conn.execute(
            "SELECT id, turn, prev_episode_id FROM episodes "
            "WHERE persona_id = ? AND conversation_id = ? ORDER BY turn",
            (persona_id, conversation_id),
        ).fetchall()
        first_gone = min(int(r["turn"]) for r in chain if r["id"] in removed)
        previous: str | None = None
        for row in chain:
            if row["id"] in removed:
                continue
            if row["prev_episode_id"] != previous:
                conn.execute(
                    "UPDATE episodes SET prev_episode_id = ? WHERE persona_id = ? AND id = ?",
                    (previous, persona_id, row["id"]),
                )
            previous = str(row["id"])
        conn.execute(
            "UPDATE conversations SET last_episode_id = ? WHERE persona_id = ? AND id = ?",
            (previous, persona_id, conversation_id),
        )
        key = (persona_id, conversation_id)
        conn.execute(
            "DELETE FROM monologue_entries WHERE persona_id = ? AND conversation_id = ? "
            "AND turn >= ?",
            (*key, first_gone),
        )
        conn.execute(
            "DELETE FROM narratives WHERE persona_id = ? AND conversation_id = ? AND turn >= ?",
            (*key, first_gone),
        )
        conn.execute(
            "UPDATE conversation_minds SET narrative_version = coalesce((SELECT max(version) "
            "FROM narratives WHERE persona_id = ? AND conversation_id = ?), 0) "
            "WHERE persona_id = ? AND conversation_id = ?",
            (*key, *key),
        )
        if previous is None:
            empty.append(conversation_id)
    _in(
        "UPDATE episodes SET prev_episode_id = NULL WHERE persona_id = ? AND id IN ",
        persona_id,
        sorted(removed),
        conn,
    )
    return empty


def _drop_conversations(conn: sqlite3.Connection, persona_id: str, ids: Sequence[str]) -> None:
    for table in ("monologue_entries", "narratives", "conversation_minds"):
        sql = f"DELETE FROM {table} WHERE persona_id = ? AND conversation_id IN "
        _in(sql, persona_id, ids, conn)
    _in("DELETE FROM conversations WHERE persona_id = ? AND id IN ", persona_id, ids, conn)


def _remove_episodes(conn: sqlite3.Connection, commit: ErasureCommit) -> None:
    pid = commit.persona_id
    ids = list(commit.episode_ids)
    for chunk in chunks(ids):
        conn.execute(
            "DELETE FROM reflection_insights WHERE persona_id = ? AND insight_id IN "
            "(SELECT id FROM insights WHERE persona_id = ? AND episode_id IN "
            f"({placeholders(chunk)}))",
            (pid, pid, *chunk),
        )
    for table in _BY_EPISODE:
        _in(_DELETE_BY_EPISODE[table], pid, ids, conn)
    empty = _relink(conn, pid, set(ids)) if ids else []
    _in("DELETE FROM episodes WHERE persona_id = ? AND id IN ", pid, ids, conn)
    _drop_conversations(conn, pid, empty)
    if commit.user_id is not None:
        user = (pid, commit.user_id)
        conn.execute("DELETE FROM user_facts WHERE persona_id = ? AND user_id = ?", user)
        conn.execute("DELETE FROM affect_states WHERE persona_id = ? AND user_id = ?", user)
        conn.execute("DELETE FROM users WHERE persona_id = ? AND id = ?", user)


def _replace_opinions(conn: sqlite3.Connection, commit: ErasureCommit) -> None:
    """From interaction ``replay_from`` on, the replay's staged updates, provenance,
    episode indexes and beliefs replace the stored ones."""
    pid = commit.persona_id
    first = commit.replay_from
    assert first is not None
    conn.execute("DELETE FROM provenance WHERE persona_id = ? AND committed_at >= ?", (pid, first))
    gone = commit.removed_beliefs
    _in("DELETE FROM provenance WHERE persona_id = ? AND topic IN ", pid, gone, conn)
    conn.execute(
        "DELETE FROM staged_updates WHERE persona_id = ? AND (staged_at >= ? "
        "OR committed_at IS NULL OR committed_at >= ?)",
        (pid, first, first),
    )
    conn.executemany(_INSERT_STAGED, [codec.encode(s) for s in commit.staged])
    conn.executemany(
        "UPDATE episodes SET interaction_index = ?, disagreement = ? "
        "WHERE persona_id = ? AND id = ?",
        [(e.interaction_index, e.disagreement, pid, e.episode_id) for e in commit.episodes],
    )
    conn.executemany(
        "INSERT INTO topics (persona_id, name) VALUES (?, ?) ON CONFLICT DO NOTHING",
        [(pid, b.topic) for b in commit.beliefs],
    )
    conn.executemany(_UPSERT_BELIEF, [codec.encode(b) for b in commit.beliefs])
    _in("DELETE FROM beliefs WHERE persona_id = ? AND topic IN ", pid, commit.removed_beliefs, conn)
    conn.executemany(
        "INSERT INTO provenance (persona_id, episode_id, topic, kind, delta, committed_at) "
        "VALUES (:persona_id, :episode_id, :topic, :kind, :delta, :committed_at)",
        [{**codec.encode(e), "persona_id": pid, "kind": e.kind} for e in commit.provenance],
    )
    conn.executemany(
        "UPDATE reflections SET interaction_count = ? WHERE persona_id = ? AND id = ?",
        [(r.interaction_count, pid, r.id) for r in commit.reflections],
    )


def _commit(conn: sqlite3.Connection, commit: ErasureCommit) -> None:
    pid = commit.persona_id
    checks.erasure_may_commit(commit, int(persona_counters(conn, pid)["interaction_count"]))
    _remove_episodes(conn, commit)
    if commit.replay_from is not None:
        _replace_opinions(conn, commit)
    conn.execute(
        "UPDATE personas SET interaction_count = ?, disagreement_window = ?, "
        "shift_since_reflection = ?, last_reflection_at = ?, last_reflection_attempt_at = ?, "
        "review_from_version = ? WHERE id = ?",
        (
            commit.interaction_count,
            codec.encode_value(commit.disagreement_window),
            commit.shift_since_reflection,
            commit.last_reflection_at,
            commit.last_reflection_attempt_at,
            commit.review_from_version,
            pid,
        ),
    )
    conn.execute(
        "DELETE FROM topics WHERE persona_id = ? "
        "AND name NOT IN (SELECT topic FROM beliefs WHERE persona_id = ?) "
        "AND name NOT IN (SELECT topic FROM episode_topics WHERE persona_id = ?)",
        (pid, pid, pid),
    )
    conn.execute(_INSERT_ERASURE, codec.encode(commit.record))


# snapshots, facts, personas ----------------------------------------------------------------


def _purge(conn: sqlite3.Connection, persona_id: str, from_version: int, below: int) -> int:
    """Snapshot versions ``from_version`` ≤ v < ``below`` go (the chain is the version
    order here, so it stays whole); the review marker clears if it is still ours."""
    persona_counters(conn, persona_id)
    purged = conn.execute(
        "DELETE FROM snapshots WHERE persona_id = ? AND version >= ? AND version < ?",
        (persona_id, from_version, below),
    ).rowcount
    conn.execute(
        "UPDATE personas SET review_from_version = NULL WHERE id = ? AND review_from_version = ?",
        (persona_id, from_version),
    )
    return int(purged)


_FACTS = f"SELECT {', '.join(FACT_FIELDS)} FROM user_facts WHERE persona_id = ? AND id = ?"


def _get_fact(conn: sqlite3.Connection, persona_id: str, fact_id: str) -> UserFact:
    row = conn.execute(_FACTS, (persona_id, fact_id)).fetchone()
    if row is None:
        raise checks.fact_not_found(persona_id, fact_id)
    return UserFact.model_validate(codec.decode(row))


def _correct(conn: sqlite3.Connection, fact: UserFact) -> UserFact:
    stored = _get_fact(conn, fact.persona_id, fact.id)
    if (stored.user_id, stored.episode_id) != (fact.user_id, fact.episode_id):
        raise ConflictError("a correction keeps the fact's user and episode", fact_id=fact.id)
    conn.execute(
        "UPDATE user_facts SET kind = ?, text = ?, severity = ?, retracted = ? "
        "WHERE persona_id = ? AND id = ?",
        (fact.kind.value, fact.text, fact.severity, fact.retracted, fact.persona_id, fact.id),
    )
    return _get_fact(conn, fact.persona_id, fact.id)


def _add_fact(conn: sqlite3.Connection, fact: UserFact) -> UserFact:
    source = conn.execute(
        "SELECT user_id FROM episodes WHERE persona_id = ? AND id = ?",
        (fact.persona_id, fact.episode_id),
    ).fetchone()
    checks.fact_source(fact, None if source is None else source[0])
    held = checks.held_fact(active_facts(conn, fact.persona_id, fact.user_id), fact.text)
    if held is not None:
        return held
    conn.execute(INSERT_FACT, codec.encode(fact))
    return _get_fact(conn, fact.persona_id, fact.id)


def _delete_persona(conn: sqlite3.Connection, persona_id: str, record: Erasure) -> None:
    persona_counters(conn, persona_id)
    for statement in _DELETE_PERSONA.values():
        conn.execute(statement, (persona_id,))
    conn.execute(_INSERT_ERASURE, codec.encode(record))


def _erasures(conn: sqlite3.Connection, persona_id: str) -> list[Erasure]:
    rows = conn.execute(
        f"SELECT {', '.join(_ERASURE_FIELDS)} FROM erasures WHERE persona_id = ? "
        "ORDER BY created_at, id",
        (persona_id,),
    )
    return [Erasure.model_validate(codec.decode(row)) for row in rows]


class SqliteErasure(SqliteAggregate):
    """The ``ErasureStore`` part of the SQLite store."""

    async def erasure_state(
        self, persona_id: str, *, user_id: str | None = None, episode_id: str | None = None
    ) -> ErasureState:
        """What erasing the user's episodes (or one episode) reads, in one transaction."""
        if (user_id is None) == (episode_id is None):
            raise ValueError("name a user or an episode")
        return await self._db.read(_state, persona_id, user_id, episode_id)

    async def commit_erasure(self, commit: ErasureCommit) -> None:
        """Apply an erasure in one transaction (``ConflictError`` if the persona moved)."""

        def work(conn: sqlite3.Connection) -> None:
            users = {
                str(r[0])
                for chunk in chunks(list(commit.episode_ids))
                for r in conn.execute(
                    "SELECT DISTINCT user_id FROM episodes WHERE persona_id = ? "
                    f"AND id IN ({placeholders(chunk)})",
                    (commit.persona_id, *chunk),
                )
            }
            _commit(conn, commit)
            for user_id in users:  # the similarity cache forgets the erased vectors
                self._db.vectors.forget(commit.persona_id, user_id)

        await self._db.run(work, write=True)

    async def purge_snapshots(
        self, persona_id: str, *, from_version: int, below_version: int
    ) -> int:
        """Delete the reviewed versions and clear the review marker."""
        return await self._db.write(_purge, persona_id, from_version, below_version)

    async def get_fact(self, persona_id: str, fact_id: str) -> UserFact:
        """Any fact of the persona (``NotFoundError`` when unknown)."""
        return await self._db.read(_get_fact, persona_id, fact_id)

    async def correct_fact(self, fact: UserFact) -> UserFact:
        """Replace a stored fact's kind, text, severity and retraction."""
        return await self._db.write(_correct, fact)

    async def add_fact(self, fact: UserFact) -> UserFact:
        """Store a fact of a user's exchange unless the user holds the same one."""
        return await self._db.write(_add_fact, fact)

    async def delete_persona(self, persona_id: str, record: Erasure) -> None:
        """Remove the persona and everything it owns but its erasure records."""

        def work(conn: sqlite3.Connection) -> None:
            _delete_persona(conn, persona_id, record)
            self._db.vectors.clear()

        await self._db.run(work, write=True)

    async def list_erasures(self, persona_id: str) -> list[Erasure]:
        """The persona's erasure records, oldest first."""
        return await self._db.read(_erasures, persona_id)
