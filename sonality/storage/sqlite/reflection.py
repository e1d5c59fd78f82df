"""Reflection on SQLite: the lease, the one-transaction reflection commit, the record of
rejected and failed attempts, and the reads the reflection needs. Tables ``reflections``
(one row per attempt), ``reflection_insights`` (which insights a reflection consumed: the
CONSUMED edge) and ``reflection_leases`` (one row per persona while a worker reflects); the
``BEGIN IMMEDIATE`` transaction makes the lease check-and-set atomic across processes."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sonality.models import (
    Belief,
    Episode,
    ProvenanceEdge,
    Reflection,
    ReflectionCommit,
    ReflectionLease,
)
from sonality.storage import checks
from sonality.storage.sqlite import codec
from sonality.storage.sqlite.episodes import episode_columns, episode_from
from sonality.storage.sqlite.executor import (
    SqliteAggregate,
    chunks,
    insert_statement,
    persona_counters,
    placeholders,
)
from sonality.storage.sqlite.personas import current_version, insert_snapshot

__all__ = ["SqliteReflection"]

_REFLECTION_FIELDS = tuple(Reflection.model_fields)
"""One column per field: a reflection is stored as it is."""
_INSERT_REFLECTION = insert_statement("reflections", _REFLECTION_FIELDS)


def _acquire(
    conn: sqlite3.Connection, persona_id: str, owner: str, now: datetime, ttl_seconds: float
) -> bool:
    """Take the lease when free, expired or already ``owner``'s; else leave it."""
    persona_counters(conn, persona_id)
    row = conn.execute(
        "SELECT owner, expires_at FROM reflection_leases WHERE persona_id = ?", (persona_id,)
    ).fetchone()
    lease = codec.decode(row) if row is not None else {}
    if not checks.lease_is_free(lease.get("owner"), lease.get("expires_at"), owner, now):
        return False
    conn.execute(
        "INSERT INTO reflection_leases (persona_id, owner, expires_at) VALUES (?, ?, ?) "
        "ON CONFLICT (persona_id) DO UPDATE SET owner = excluded.owner, "
        "expires_at = excluded.expires_at",
        (persona_id, owner, codec.encode_time(now + timedelta(seconds=ttl_seconds))),
    )
    return True


def _lease(conn: sqlite3.Connection, persona_id: str) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT owner, expires_at FROM reflection_leases WHERE persona_id = ?", (persona_id,)
    ).fetchone()
    return None if row is None else codec.decode(row)


def _release(conn: sqlite3.Connection, persona_id: str, owner: str) -> None:
    conn.execute(
        "DELETE FROM reflection_leases WHERE persona_id = ? AND owner = ?", (persona_id, owner)
    )


def _consume(conn: sqlite3.Connection, pid: str, reflection_id: str, ids: Sequence[str]) -> None:
    consumed = 0
    for chunk in chunks(ids):
        cursor = conn.execute(
            "UPDATE insights SET status = 'consumed' WHERE persona_id = ? "
            f"AND status = 'pending' AND id IN ({placeholders(chunk)})",
            (pid, *chunk),
        )
        consumed += cursor.rowcount
    checks.insights_consumed(pid, len(ids), consumed)
    conn.executemany(
        "INSERT INTO reflection_insights (persona_id, reflection_id, insight_id) VALUES (?, ?, ?)",
        [(pid, reflection_id, insight_id) for insight_id in ids],
    )


def _decay(conn: sqlite3.Connection, beliefs: Sequence[Belief]) -> None:
    """Apply decayed states to beliefs nobody reinforced since the reflection read them."""
    conn.executemany(
        "UPDATE beliefs SET confidence = :confidence, uncertainty = :uncertainty, "
        "status = :status, updated_at = :updated_at "
        "WHERE persona_id = :persona_id AND topic = :topic AND status = 'active' "
        "AND last_reinforced_at = :last_reinforced_at AND evidence_count = :evidence_count",
        [codec.encode(b) for b in beliefs],
    )


def _commit(conn: sqlite3.Connection, commit: ReflectionCommit) -> None:
    """Check lease and CURRENT version, then write every part of the commit."""
    pid = commit.reflection.persona_id
    persona_counters(conn, pid)
    lease = conn.execute(
        "SELECT owner FROM reflection_leases WHERE persona_id = ?", (pid,)
    ).fetchone()
    current = current_version(conn, pid)
    checks.reflection_may_commit(commit, None if lease is None else lease["owner"], current)
    newest = current
    if commit.snapshot is not None:
        insert_snapshot(conn, commit.snapshot)
        newest = commit.snapshot.version
    conn.execute(_INSERT_REFLECTION, codec.encode(commit.reflection))
    if commit.consumed_insight_ids:
        ids = list(dict.fromkeys(commit.consumed_insight_ids))
        _consume(conn, pid, commit.reflection.id, ids)
    _decay(conn, commit.beliefs)
    conn.execute(
        "UPDATE personas SET last_reflection_at = ?, last_reflection_attempt_at = ?, "
        "shift_since_reflection = max(0.0, shift_since_reflection - ?) WHERE id = ?",
        (commit.last_reflection_at, commit.last_reflection_at, commit.shift_consumed, pid),
    )
    if commit.keep_snapshots > 0:
        # the oldest go first, so the versions left form one unbroken chain to CURRENT
        conn.execute(
            "DELETE FROM snapshots WHERE persona_id = ? AND version <= ?",
            (pid, newest - commit.keep_snapshots),
        )


def _record(conn: sqlite3.Connection, reflection: Reflection, attempt_at: int) -> None:
    """Store a rejected or failed attempt and move the attempt marker forward."""
    persona_counters(conn, reflection.persona_id)
    conn.execute(_INSERT_REFLECTION, codec.encode(reflection))
    conn.execute(
        "UPDATE personas SET last_reflection_attempt_at = max(last_reflection_attempt_at, ?) "
        "WHERE id = ?",
        (attempt_at, reflection.persona_id),
    )


def _list(conn: sqlite3.Connection, persona_id: str, limit: int) -> list[Reflection]:
    rows = conn.execute(
        f"SELECT {', '.join(_REFLECTION_FIELDS)} FROM reflections WHERE persona_id = ? "
        "ORDER BY started_at DESC, id DESC LIMIT ?",
        (persona_id, checks.limit(limit)),
    )
    return [Reflection.model_validate(codec.decode(row)) for row in rows]


def _shifts(
    conn: sqlite3.Connection, persona_id: str, since: int, limit: int
) -> list[ProvenanceEdge]:
    rows = conn.execute(
        "SELECT episode_id, topic, delta, committed_at FROM provenance "
        "WHERE persona_id = ? AND committed_at > ? ORDER BY committed_at DESC, id DESC LIMIT ?",
        (persona_id, since, checks.limit(limit)),
    )
    return [ProvenanceEdge.model_validate(codec.decode(row)) for row in rows]


def _episodes_since(
    conn: sqlite3.Connection, persona_id: str, since: int, limit: int
) -> list[Episode]:
    rows = conn.execute(
        f"SELECT {episode_columns()} FROM episodes WHERE persona_id = ? "
        "AND interaction_index > ? ORDER BY interaction_index DESC LIMIT ?",
        (persona_id, since, checks.limit(limit)),
    )
    return [episode_from(row) for row in rows]


class SqliteReflection(SqliteAggregate):
    """The ``ReflectionStore`` part of the SQLite store."""

    async def acquire_lease(
        self, persona_id: str, owner: str, *, now: datetime, ttl_seconds: float
    ) -> bool:
        """Take the persona's reflection lease (atomic across processes)."""
        return await self._db.write(_acquire, persona_id, owner, now, ttl_seconds)

    async def release_lease(self, persona_id: str, owner: str) -> None:
        """Give the lease up if ``owner`` holds it."""
        await self._db.write(_release, persona_id, owner)

    async def get_lease(self, persona_id: str) -> ReflectionLease | None:
        """The persona's lease as stored, or None."""
        row = await self._db.read(_lease, persona_id)
        return None if row is None else ReflectionLease(persona_id=persona_id, **row)

    async def commit_reflection(self, commit: ReflectionCommit) -> None:
        """Apply a successful reflection in one transaction."""
        await self._db.write(_commit, commit)

    async def record_reflection(self, reflection: Reflection, *, attempt_at: int) -> None:
        """Store a rejected or failed attempt (and the attempt marker)."""
        checks.unsuccessful_attempt(reflection)
        await self._db.write(_record, reflection, attempt_at)

    async def list_reflections(self, persona_id: str, *, limit: int = 20) -> list[Reflection]:
        """Newest first."""
        return await self._db.read(_list, persona_id, limit)

    async def list_shifts(
        self, persona_id: str, *, since_interaction: int, limit: int = 20
    ) -> list[ProvenanceEdge]:
        """Provenance edges committed after ``since_interaction``, newest first."""
        return await self._db.read(_shifts, persona_id, since_interaction, limit)

    async def episodes_since(
        self, persona_id: str, *, since_interaction: int, limit: int = 10
    ) -> list[Episode]:
        """Enriched episodes after ``since_interaction``, newest first."""
        return await self._db.read(_episodes_since, persona_id, since_interaction, limit)
