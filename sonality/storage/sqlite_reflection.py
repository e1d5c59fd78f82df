"""Reflection storage on SQLite: the lease, the one-transaction reflection commit, the
record of rejected and failed attempts, and the reads the reflection needs.

Tables (schema step 3): ``reflections`` (one row per attempt), ``reflection_insights``
(which insights a reflection consumed: the ``CONSUMED`` edge), ``reflection_leases`` (one
row per persona while a worker reflects). The transaction bodies follow
:mod:`sonality.storage.sqlite_ops`: the connection comes last, the store holds the
``BEGIN IMMEDIATE`` transaction, so the lease check-and-set is atomic across processes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from sonality.errors import ConflictError, LeaseHeld, ValidationError
from sonality.models import (
    Belief,
    Episode,
    ProvenanceEdge,
    Reflection,
    ReflectionCommit,
    ReflectionOutcome,
)
from sonality.storage.sqlite_ops import require_persona
from sonality.storage.sqlite_rows import (
    EPISODE_COLUMNS,
    decode_list,
    decode_time,
    encode_list,
    encode_time,
    episode_from_row,
)

__all__ = ["SqliteReflectionMixin"]

T = TypeVar("T")

_CHUNK = 500
_REFLECTION_FIELDS = (
    "persona_id",
    "id",
    "trigger",
    "outcome",
    "reason",
    "detail",
    "started_at",
    "finished_at",
    "interaction_count",
    "snapshot_version",
    "previous_version",
    "retention_ratio",
    "unique_ratio",
    "health",
    "insights_consumed",
    "episodes_read",
    "beliefs_decayed",
    "beliefs_retired",
    "llm_calls",
    "duration_ms",
    "owner",
)
_REFLECTION_COLUMNS = ", ".join(_REFLECTION_FIELDS)
_INSERT_REFLECTION = (
    f"INSERT INTO reflections ({_REFLECTION_COLUMNS}) "
    f"VALUES ({', '.join('?' for _ in _REFLECTION_FIELDS)})"
)


def _reflection_values(r: Reflection) -> tuple[object, ...]:
    return (
        r.persona_id,
        r.id,
        r.trigger,
        r.outcome.value,
        r.reason,
        r.detail,
        encode_time(r.started_at),
        encode_time(r.finished_at),
        r.interaction_count,
        r.snapshot_version,
        r.previous_version,
        r.retention_ratio,
        r.unique_ratio,
        encode_list(r.health),
        r.insights_consumed,
        r.episodes_read,
        r.beliefs_decayed,
        r.beliefs_retired,
        r.llm_calls,
        r.duration_ms,
        r.owner,
    )


def _reflection_from_row(row: sqlite3.Row) -> Reflection:
    values = {name: row[name] for name in _REFLECTION_FIELDS}
    values["outcome"] = ReflectionOutcome(values["outcome"])
    values["health"] = decode_list(values["health"])
    values["started_at"] = decode_time(values["started_at"])
    values["finished_at"] = decode_time(values["finished_at"])
    return Reflection.model_validate(values)


# the lease ------------------------------------------------------------------------------


def acquire_lease(
    persona_id: str, owner: str, now: datetime, ttl_seconds: float, conn: sqlite3.Connection
) -> bool:
    """Take the lease when free, expired or already ``owner``'s; else leave it."""
    require_persona(conn, persona_id)
    row = conn.execute(
        "SELECT owner, expires_at FROM reflection_leases WHERE persona_id = ?", (persona_id,)
    ).fetchone()
    if row is not None and row["owner"] != owner and decode_time(row["expires_at"]) > now:
        return False
    expires = encode_time(now + timedelta(seconds=ttl_seconds))
    conn.execute(
        "INSERT INTO reflection_leases (persona_id, owner, expires_at) VALUES (?, ?, ?) "
        "ON CONFLICT (persona_id) DO UPDATE SET owner = excluded.owner, "
        "expires_at = excluded.expires_at",
        (persona_id, owner, expires),
    )
    return True


def release_lease(persona_id: str, owner: str, conn: sqlite3.Connection) -> None:
    conn.execute(
        "DELETE FROM reflection_leases WHERE persona_id = ? AND owner = ?", (persona_id, owner)
    )


# the commit -----------------------------------------------------------------------------


def _check_scoped(commit: ReflectionCommit) -> str:
    pid = commit.reflection.persona_id
    owners = [b.persona_id for b in commit.beliefs]
    owners += [commit.snapshot.persona_id] if commit.snapshot is not None else []
    if any(owner != pid for owner in owners):
        raise ValidationError("a reflection commit may only touch its own persona", persona_id=pid)
    if commit.reflection.outcome is not ReflectionOutcome.COMMITTED:
        raise ValidationError("only a committed reflection is committed", persona_id=pid)
    return pid


def _chunks(ids: Sequence[str]) -> list[Sequence[str]]:
    return [ids[i : i + _CHUNK] for i in range(0, len(ids), _CHUNK)]


def _consume(conn: sqlite3.Connection, pid: str, reflection_id: str, ids: Sequence[str]) -> None:
    consumed = 0
    for chunk in _chunks(ids):
        marks = ", ".join("?" for _ in chunk)
        cursor = conn.execute(
            f"UPDATE insights SET status = 'consumed' WHERE persona_id = ? "
            f"AND status = 'pending' AND id IN ({marks})",
            (pid, *chunk),
        )
        consumed += cursor.rowcount
    if consumed != len(ids):
        raise ConflictError(
            "an insight to consume is unknown or consumed already",
            persona_id=pid,
            expected=len(ids),
            found=consumed,
        )
    conn.executemany(
        "INSERT INTO reflection_insights (persona_id, reflection_id, insight_id) VALUES (?, ?, ?)",
        [(pid, reflection_id, insight_id) for insight_id in ids],
    )


def _decay(conn: sqlite3.Connection, pid: str, beliefs: Sequence[Belief]) -> None:
    """Apply decayed states to beliefs nobody reinforced since the reflection read them."""
    conn.executemany(
        "UPDATE beliefs SET confidence = ?, uncertainty = ?, status = ?, updated_at = ? "
        "WHERE persona_id = ? AND topic = ? AND status = 'active' "
        "AND last_reinforced_at = ? AND evidence_count = ?",
        [
            (
                b.confidence,
                b.uncertainty,
                b.status.value,
                encode_time(b.updated_at),
                pid,
                b.topic,
                b.last_reinforced_at,
                b.evidence_count,
            )
            for b in beliefs
        ],
    )


def commit_reflection(commit: ReflectionCommit, conn: sqlite3.Connection) -> None:
    """Check lease and CURRENT version, then write every part of the commit."""
    pid = _check_scoped(commit)
    require_persona(conn, pid)
    lease = conn.execute(
        "SELECT owner FROM reflection_leases WHERE persona_id = ?", (pid,)
    ).fetchone()
    if lease is None or lease["owner"] != commit.lease_owner:
        raise LeaseHeld(
            "the reflection lease is no longer held by this worker",
            persona_id=pid,
            owner=commit.lease_owner,
        )
    row = conn.execute("SELECT max(version) FROM snapshots WHERE persona_id = ?", (pid,)).fetchone()
    current = int(row[0] or 0)
    if current != commit.expected_snapshot_version:
        raise ConflictError(
            "the snapshot moved on since this reflection started",
            persona_id=pid,
            expected=commit.expected_snapshot_version,
            current=current,
        )
    newest = current
    if commit.snapshot is not None:
        snapshot = commit.snapshot
        if snapshot.version != current + 1:
            raise ValidationError(
                "the new snapshot must be version current + 1",
                persona_id=pid,
                version=snapshot.version,
            )
        conn.execute(
            "INSERT INTO snapshots (persona_id, version, text, reason, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (
                pid,
                snapshot.version,
                snapshot.text,
                snapshot.reason,
                encode_time(snapshot.created_at),
            ),
        )
        newest = snapshot.version
    conn.execute(_INSERT_REFLECTION, _reflection_values(commit.reflection))
    if commit.consumed_insight_ids:
        _consume(conn, pid, commit.reflection.id, list(dict.fromkeys(commit.consumed_insight_ids)))
    _decay(conn, pid, commit.beliefs)
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


def record_reflection(reflection: Reflection, attempt_at: int, conn: sqlite3.Connection) -> None:
    """Store a rejected or failed attempt and move the attempt marker forward."""
    if reflection.outcome is ReflectionOutcome.COMMITTED:
        raise ValidationError(
            "a committed reflection goes through commit_reflection",
            persona_id=reflection.persona_id,
        )
    require_persona(conn, reflection.persona_id)
    conn.execute(_INSERT_REFLECTION, _reflection_values(reflection))
    conn.execute(
        "UPDATE personas SET last_reflection_attempt_at = max(last_reflection_attempt_at, ?) "
        "WHERE id = ?",
        (attempt_at, reflection.persona_id),
    )


# reads ----------------------------------------------------------------------------------


def list_reflections(persona_id: str, limit: int, conn: sqlite3.Connection) -> list[Reflection]:
    rows = conn.execute(
        f"SELECT {_REFLECTION_COLUMNS} FROM reflections WHERE persona_id = ? "
        "ORDER BY started_at DESC, id DESC LIMIT ?",
        (persona_id, max(limit, 0)),
    )
    return [_reflection_from_row(row) for row in rows]


def list_shifts(
    persona_id: str, since: int, limit: int, conn: sqlite3.Connection
) -> list[ProvenanceEdge]:
    rows = conn.execute(
        "SELECT episode_id, topic, delta, committed_at FROM provenance "
        "WHERE persona_id = ? AND committed_at > ? ORDER BY committed_at DESC, id DESC LIMIT ?",
        (persona_id, since, max(limit, 0)),
    )
    return [
        ProvenanceEdge(
            episode_id=row["episode_id"],
            topic=row["topic"],
            delta=row["delta"],
            committed_at=row["committed_at"],
        )
        for row in rows
    ]


def episodes_since(
    persona_id: str, since: int, limit: int, conn: sqlite3.Connection
) -> list[Episode]:
    rows = conn.execute(
        f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE persona_id = ? "
        "AND interaction_index > ? ORDER BY interaction_index DESC LIMIT ?",
        (persona_id, since, max(limit, 0)),
    )
    return [episode_from_row(row) for row in rows]


class SqliteReflectionMixin:
    """The reflection part of :class:`~sonality.storage.sqlite_store.SqliteStore`."""

    if TYPE_CHECKING:

        async def _run(
            self,
            work: Callable[[sqlite3.Connection], T],
            *,
            write: bool,
            schema: bool = True,
            transaction: bool = True,
        ) -> T: ...

    async def acquire_lease(
        self, persona_id: str, owner: str, *, now: datetime, ttl_seconds: float
    ) -> bool:
        """Take the persona's reflection lease (atomic across processes)."""
        return await self._run(
            partial(acquire_lease, persona_id, owner, now, ttl_seconds), write=True
        )

    async def release_lease(self, persona_id: str, owner: str) -> None:
        """Give the lease up if ``owner`` holds it."""
        await self._run(partial(release_lease, persona_id, owner), write=True)

    async def commit_reflection(self, commit: ReflectionCommit) -> None:
        """Apply a successful reflection in one transaction."""
        await self._run(partial(commit_reflection, commit), write=True)

    async def record_reflection(self, reflection: Reflection, *, attempt_at: int) -> None:
        """Store a rejected or failed attempt (and the attempt marker)."""
        await self._run(partial(record_reflection, reflection, attempt_at), write=True)

    async def list_reflections(self, persona_id: str, *, limit: int = 20) -> list[Reflection]:
        """Newest first."""
        return await self._run(partial(list_reflections, persona_id, limit), write=False)

    async def list_shifts(
        self, persona_id: str, *, since_interaction: int, limit: int = 20
    ) -> list[ProvenanceEdge]:
        """Provenance edges committed after ``since_interaction``, newest first."""
        return await self._run(
            partial(list_shifts, persona_id, since_interaction, limit), write=False
        )

    async def episodes_since(
        self, persona_id: str, *, since_interaction: int, limit: int = 10
    ) -> list[Episode]:
        """Enriched episodes after ``since_interaction``, newest first."""
        return await self._run(
            partial(episodes_since, persona_id, since_interaction, limit), write=False
        )
