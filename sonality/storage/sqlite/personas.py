"""Personas and their snapshots on SQLite: tables ``personas`` (with the ``episode_seq``
counter that numbers the persona's episodes) and ``snapshots`` (the newest version is
CURRENT)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from sonality.errors import AlreadyExists, NotFoundError, PersonaNotFound
from sonality.models import BiographyEntry, Persona, Snapshot
from sonality.storage import checks, shapes
from sonality.storage.sqlite import codec
from sonality.storage.sqlite.biography import put_entries
from sonality.storage.sqlite.executor import (
    SqliteAggregate,
    insert_statement,
    persona_counters,
)

__all__ = ["SqlitePersonas", "current_version", "get_persona", "insert_snapshot"]

_PERSONA_FIELDS = (
    "id",
    "name",
    "core_identity",
    "interaction_count",
    "last_reflection_at",
    "disagreement_window",
    "shift_since_reflection",
    "created_at",
    "last_reflection_attempt_at",
    *shapes.SELF_MODEL_FIELDS,
    "incarnation",
    "runtime_mode",
    "affect",
    "review_from_version",
)
_PERSONAS = f"SELECT {', '.join(_PERSONA_FIELDS)} FROM personas"
_NEW_PERSONA = _PERSONA_FIELDS[:-3]
"""Written at creation; the runtime defaults and the review marker keep their column
defaults until set."""


def persona_from(row: sqlite3.Row) -> Persona:
    return Persona.model_validate(shapes.persona(codec.decode(row)))


_INSERT_PERSONA = insert_statement("personas", _NEW_PERSONA)
_SNAPSHOT_FIELDS = ("persona_id", "version", "text", "reason", "created_at")
_SNAPSHOTS = f"SELECT {', '.join(_SNAPSHOT_FIELDS)} FROM snapshots"
_INSERT_SNAPSHOT = insert_statement("snapshots", _SNAPSHOT_FIELDS)


def get_persona(conn: sqlite3.Connection, persona_id: str) -> Persona:
    """``PersonaNotFound`` when unknown."""
    row = conn.execute(f"{_PERSONAS} WHERE id = ?", (persona_id,)).fetchone()
    if row is None:
        raise PersonaNotFound("no such persona", persona_id=persona_id)
    return persona_from(row)


def insert_snapshot(conn: sqlite3.Connection, snapshot: Snapshot) -> None:
    conn.execute(_INSERT_SNAPSHOT, codec.encode(snapshot))


def current_version(conn: sqlite3.Connection, persona_id: str) -> int:
    """The newest snapshot version (0 when none)."""
    row = conn.execute(
        "SELECT max(version) FROM snapshots WHERE persona_id = ?", (persona_id,)
    ).fetchone()
    return int(row[0] or 0)


def _create(
    conn: sqlite3.Connection,
    persona: Persona,
    snapshot: Snapshot,
    biography: Sequence[BiographyEntry],
) -> Persona:
    if conn.execute("SELECT 1 FROM personas WHERE id = ?", (persona.id,)).fetchone():
        raise AlreadyExists("persona exists already", persona_id=persona.id)
    later = {"runtime_mode", "affect", "review_from_version", "self_model"}
    fields = codec.encode(persona, exclude=later)
    fields |= codec.encode_fields(shapes.self_model_fields(persona))
    conn.execute(_INSERT_PERSONA, fields)
    insert_snapshot(conn, snapshot)
    put_entries(conn, persona.id, biography, len(biography))
    return get_persona(conn, persona.id)


def _list(conn: sqlite3.Connection) -> list[Persona]:
    rows = conn.execute(f"{_PERSONAS} ORDER BY id")
    return [persona_from(row) for row in rows]


def _current(conn: sqlite3.Connection, persona_id: str) -> Snapshot:
    persona_counters(conn, persona_id)
    row = conn.execute(
        f"{_SNAPSHOTS} WHERE persona_id = ? ORDER BY version DESC LIMIT 1", (persona_id,)
    ).fetchone()
    if row is None:
        raise NotFoundError("persona has no snapshot", persona_id=persona_id)
    return Snapshot.model_validate(codec.decode(row))


def _append(conn: sqlite3.Connection, snapshot: Snapshot) -> Snapshot:
    """Compare-and-swap: the version must be current + 1."""
    persona_counters(conn, snapshot.persona_id)
    current = current_version(conn, snapshot.persona_id)
    checks.next_version("snapshot", snapshot.persona_id, snapshot.version, current)
    insert_snapshot(conn, snapshot)
    return _current(conn, snapshot.persona_id)


def _history(conn: sqlite3.Connection, persona_id: str) -> list[Snapshot]:
    rows = conn.execute(f"{_SNAPSHOTS} WHERE persona_id = ? ORDER BY version DESC", (persona_id,))
    return [Snapshot.model_validate(codec.decode(row)) for row in rows]


class SqlitePersonas(SqliteAggregate):
    """The ``PersonaStore`` part of the SQLite store."""

    async def create_persona(
        self, persona: Persona, snapshot: Snapshot, biography: Sequence[BiographyEntry] = ()
    ) -> Persona:
        """Create the persona with snapshot v1 and its biography (``AlreadyExists`` if the
        id is taken)."""
        checks.first_snapshot(persona, snapshot)
        return await self._db.write(_create, persona, snapshot, biography)

    async def get_persona(self, persona_id: str) -> Persona:
        """``PersonaNotFound`` when unknown."""
        return await self._db.read(get_persona, persona_id)

    async def list_personas(self) -> list[Persona]:
        """Every persona, by id."""
        return await self._db.read(_list)

    async def append_snapshot(self, snapshot: Snapshot) -> Snapshot:
        """Add version current + 1 (``ConflictError`` otherwise); it becomes current."""
        return await self._db.write(_append, snapshot)

    async def current_snapshot(self, persona_id: str) -> Snapshot:
        """The newest version (``PersonaNotFound`` when the persona is unknown)."""
        return await self._db.read(_current, persona_id)

    async def snapshot_history(self, persona_id: str) -> list[Snapshot]:
        """Every version, newest first."""
        return await self._db.read(_history, persona_id)
