"""Forgetting and correcting on SQLite: the erasure commit (episodes out, the NEXT chain
relinked, opinions replaced by the replay, snapshot versions that may quote the erased
material reverted), fact corrections (merging into a fact that says the same), persona
deletion (with its API key grants), the ``erasures`` audit table and its key.

After an erasure the store checkpoints the WAL (``TRUNCATE``): with ``secure_delete`` on
(``executor.connect``), the freed pages are zeroed in the main file and the WAL no longer
holds the old page images.

Every statement is scoped by ``persona_id``; the few assembled ones combine constant table
and column names with ``?`` placeholders, never values.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Sequence
from datetime import datetime

from sonality.models import (
    ApiKey,
    Belief,
    Episode,
    Erasure,
    ErasureCommit,
    ErasureState,
    ReflectionPoint,
    Snapshot,
    SnapshotRevert,
    SnapshotVersion,
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
    fact_row,
)
from sonality.storage.sqlite.episodes import episode_columns, episode_from
from sonality.storage.sqlite.executor import (
    SqliteAggregate,
    chunks,
    insert_statement,
    persona_counters,
    placeholders,
)
from sonality.storage.sqlite.keys import KEY_FIELDS
from sonality.storage.sqlite.migrations import DATA_TABLES
from sonality.storage.sqlite.personas import current_version, get_persona, insert_snapshot

__all__ = ["SqliteErasure"]

_ERASURE_FIELDS = tuple(Erasure.model_fields)
"""An erasure record is stored one column per field (and ``subject_keyed``, 0 only for
records written before subjects were keyed, until ``migrate`` re-keys them)."""
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
erasure records (API keys belong to no one persona: the deletion takes the persona's
grants from them, ``_ungrant``)."""

_BY_EPISODE = (
    "insights",
    "staged_updates",
    "provenance",
    "episode_topics",
    "turn_usage",
    "thinker_turns",
)
"""Tables whose rows hang off one episode (``episode_id``), deleted with it (facts may
hang off several: ``checks.facts_after_erasure``)."""
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
        "SELECT id, interaction_count, started_at, snapshot_version, advice FROM reflections "
        "WHERE persona_id = ? AND outcome = 'committed' ORDER BY interaction_count, started_at",
        (persona_id,),
    )
    snapshots = conn.execute(
        "SELECT version, reason FROM snapshots WHERE persona_id = ? ORDER BY version",
        (persona_id,),
    )
    if user_id is not None:
        facts = conn.execute(
            "SELECT count(*) FROM user_facts WHERE persona_id = ? AND user_id = ?",
            (persona_id, user_id),
        ).fetchone()[0]
    else:
        facts = len(checks.facts_after_erasure(_facts_of(conn, removed), set(ids))[1])
    return ErasureState(
        persona=persona,
        removed=tuple(removed),
        evidence=tuple(
            StoredEvidence.model_validate(shapes.evidence(codec.decode(r))) for r in evidence
        ),
        beliefs=tuple(Belief.model_validate(codec.decode(r)) for r in beliefs),
        reflections=tuple(ReflectionPoint.model_validate(codec.decode(r)) for r in reflections),
        snapshots=tuple(SnapshotVersion.model_validate(dict(r)) for r in snapshots),
        facts=int(facts),
        insights=_count_insights(conn, persona_id, ids),
    )


def _facts_of(conn: sqlite3.Connection, removed: Sequence[Episode]) -> list[UserFact]:
    """The facts that name one of the ``removed`` episodes as a source."""
    ids = {e.id for e in removed}
    found = []
    for persona_id, user_id in sorted({(e.persona_id, e.user_id) for e in removed}):
        rows = conn.execute(
            f"SELECT {', '.join(FACT_FIELDS)} FROM user_facts WHERE persona_id = ? AND user_id = ?",
            (persona_id, user_id),
        )
        facts = (UserFact.model_validate(codec.decode(r)) for r in rows)
        found += [f for f in facts if ids & {f.episode_id, *f.also_from}]
    return found


def _count_insights(conn: sqlite3.Connection, persona_id: str, ids: Sequence[str]) -> int:
    total = 0
    for chunk in chunks(ids):
        sql = (
            "SELECT count(*) FROM insights WHERE persona_id = ? "
            f"AND episode_id IN ({placeholders(chunk)})"
        )
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
    if commit.user_id is not None:
        user = (pid, commit.user_id)
        conn.execute("DELETE FROM user_facts WHERE persona_id = ? AND user_id = ?", user)
    else:  # a fact another exchange backs stays, backed by that one
        removed = [episode_from(r) for r in _rows_in(conn, pid, ids)]
        kept, gone = checks.facts_after_erasure(_facts_of(conn, removed), set(ids))
        _in("DELETE FROM user_facts WHERE persona_id = ? AND id IN ", pid, gone, conn)
        conn.executemany(
            "UPDATE user_facts SET episode_id = ?, also_from = ? WHERE persona_id = ? AND id = ?",
            [(f.episode_id, codec.encode_value(f.also_from), pid, f.id) for f in kept],
        )
        # an affect state last changed by an erased exchange loses what it read from it
        _in(
            "UPDATE affect_states SET interpretation = NULL, appraisal = NULL, plan = NULL, "
            "episode_id = NULL, version = version + 1 WHERE persona_id = ? AND episode_id IN ",
            pid,
            ids,
            conn,
        )
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
        conn.execute("DELETE FROM affect_states WHERE persona_id = ? AND user_id = ?", user)
        conn.execute("DELETE FROM users WHERE persona_id = ? AND id = ?", user)


def _rows_in(conn: sqlite3.Connection, pid: str, ids: Sequence[str]) -> list[sqlite3.Row]:
    rows: list[sqlite3.Row] = []
    for chunk in chunks(ids):
        rows += conn.execute(
            f"SELECT {episode_columns()} FROM episodes WHERE persona_id = ? "
            f"AND id IN ({placeholders(chunk)})",
            (pid, *chunk),
        ).fetchall()
    return rows


def revert_snapshots(conn: sqlite3.Connection, persona_id: str, revert: SnapshotRevert) -> None:
    """Write the new CURRENT (the clean source version's text, or the core identity),
    then delete the reverted versions (the chain is the version order here)."""
    if revert.version is not None:
        text = get_persona(conn, persona_id).core_identity
        if revert.source is not None:
            row = conn.execute(
                "SELECT text FROM snapshots WHERE persona_id = ? AND version = ?",
                (persona_id, revert.source),
            ).fetchone()
            text = str(row[0])
        snapshot = Snapshot(
            persona_id=persona_id,
            version=revert.version,
            text=text,
            reason=revert.reason,
            created_at=revert.created_at,
        )
        insert_snapshot(conn, snapshot)
    conn.executemany(
        "DELETE FROM snapshots WHERE persona_id = ? AND version = ?",
        [(persona_id, v) for v in revert.removed],
    )


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
        "UPDATE reflections SET interaction_count = ?, advice = ? WHERE persona_id = ? AND id = ?",
        [
            (r.interaction_count, codec.encode_value(r.advice), pid, r.id)
            for r in commit.reflections
        ],
    )


def _commit(conn: sqlite3.Connection, commit: ErasureCommit) -> None:
    pid = commit.persona_id
    count = int(persona_counters(conn, pid)["interaction_count"])
    checks.erasure_may_commit(commit, count, current_version(conn, pid) or None)
    _remove_episodes(conn, commit)
    if commit.replay_from is not None:
        _replace_opinions(conn, commit)
    if commit.snapshots is not None:
        revert_snapshots(conn, pid, commit.snapshots)
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
    pid = fact.persona_id
    persona_counters(conn, pid)
    stored = _get_fact(conn, pid, fact.id)
    write, merged = checks.corrected_fact(stored, fact, active_facts(conn, pid, fact.user_id))
    if merged is not None:
        conn.execute("DELETE FROM user_facts WHERE persona_id = ? AND id = ?", (pid, merged.id))
    conn.execute(
        "UPDATE user_facts SET kind = ?, text = ?, severity = ?, retracted = ?, also_from = ?, "
        "active_key = ? WHERE persona_id = ? AND id = ?",
        (
            write.kind.value,
            write.text,
            write.severity,
            write.retracted,
            codec.encode_value(write.also_from),
            checks.active_key(write),
            pid,
            write.id,
        ),
    )
    return _get_fact(conn, pid, write.id)


def _add_fact(conn: sqlite3.Connection, fact: UserFact) -> UserFact:
    source = conn.execute(
        "SELECT user_id FROM episodes WHERE persona_id = ? AND id = ?",
        (fact.persona_id, fact.episode_id),
    ).fetchone()
    checks.fact_source(fact, None if source is None else source[0])
    held = checks.held_fact(active_facts(conn, fact.persona_id, fact.user_id), fact.text)
    if held is not None:
        return held
    conn.execute(INSERT_FACT, fact_row(fact))
    return _get_fact(conn, fact.persona_id, fact.id)


def _ungrant(conn: sqlite3.Connection, persona_id: str, at: datetime) -> None:
    """Take the deleted persona from every API key that grants it: a key left with no
    persona is revoked (its list stays, so it is not read as a global key)."""
    rows = conn.execute(f"SELECT {', '.join(KEY_FIELDS)} FROM api_keys").fetchall()
    for key in (ApiKey.model_validate(codec.decode(r)) for r in rows):
        if persona_id not in key.persona_ids:
            continue
        left = checks.without_persona(key, persona_id, at)
        conn.execute(
            "UPDATE api_keys SET persona_ids = ?, incarnations = ?, revoked_at = ? WHERE id = ?",
            (
                codec.encode_value(left.persona_ids),
                codec.encode_value(left.incarnations),
                None if left.revoked_at is None else codec.encode_time(left.revoked_at),
                key.id,
            ),
        )


def _delete_persona(conn: sqlite3.Connection, persona_id: str, record: Erasure) -> None:
    persona_counters(conn, persona_id)
    for statement in _DELETE_PERSONA.values():
        conn.execute(statement, (persona_id,))
    _ungrant(conn, persona_id, record.created_at)
    conn.execute(_INSERT_ERASURE, codec.encode(record))


def audit_key(conn: sqlite3.Connection) -> bytes:
    """The store's secret for audit subjects (``store_meta``), made on first use."""
    conn.execute(
        "INSERT INTO store_meta (name, value) VALUES ('audit_key', ?) ON CONFLICT DO NOTHING",
        (secrets.token_hex(32),),
    )
    row = conn.execute("SELECT value FROM store_meta WHERE name = 'audit_key'").fetchone()
    return bytes.fromhex(str(row[0]))


def checkpoint(conn: sqlite3.Connection) -> None:
    """Copy the WAL into the file and truncate it, so the pages an erasure freed (zeroed
    by ``secure_delete``) leave no older image behind. Best effort: a reader of another
    connection may hold the WAL (it is truncated at the next checkpoint then)."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


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
        checks.erasure_target(user_id, episode_id)
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
        await self._db.run(checkpoint, transaction=False)

    async def audit_key(self) -> bytes:
        """The store's secret for audit subjects (made on first use)."""
        return await self._db.write(audit_key)

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
        """Remove the persona and everything it owns but its erasure records, and take it
        from every API key's grants (a key left with none is revoked), in one
        transaction."""

        def work(conn: sqlite3.Connection) -> None:
            _delete_persona(conn, persona_id, record)
            self._db.vectors.clear()

        await self._db.run(work, write=True)
        await self._db.run(checkpoint, transaction=False)

    async def list_erasures(self, persona_id: str) -> list[Erasure]:
        """The persona's erasure records, oldest first."""
        return await self._db.read(_erasures, persona_id)
