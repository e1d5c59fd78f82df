"""The persona's biography on SQLite: table ``biography`` (one row per entry, its vector as
a JSON list, ``key`` the normalised words a unique index holds once per persona)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from sonality.errors import NotFoundError
from sonality.models import BiographyEntry
from sonality.storage import checks
from sonality.storage.sqlite import codec
from sonality.storage.sqlite.executor import SqliteAggregate, insert_statement, persona_counters

__all__ = ["BIOGRAPHY_FIELDS", "SqliteBiography", "biography_row", "entries", "put_entries"]

BIOGRAPHY_FIELDS = tuple(BiographyEntry.model_fields)
_SELECT = f"SELECT {', '.join(BIOGRAPHY_FIELDS)} FROM biography WHERE persona_id = ?"
_INSERT = insert_statement("biography", (*BIOGRAPHY_FIELDS, "key"))


def biography_row(entry: BiographyEntry) -> dict[str, Any]:
    """The entry as statement parameters, with the key its unique index keeps."""
    return {**codec.encode(entry), "key": checks.biography_key(entry.text)}


def entries(conn: sqlite3.Connection, persona_id: str, limit: int) -> list[BiographyEntry]:
    """The persona's entries, oldest first, at most ``limit``."""
    rows = conn.execute(f"{_SELECT} ORDER BY created_at, id LIMIT ?", (persona_id, limit))
    return [BiographyEntry.model_validate(codec.decode(row)) for row in rows]


def put_entries(
    conn: sqlite3.Connection, persona_id: str, new: Sequence[BiographyEntry], cap: int
) -> list[tuple[BiographyEntry, bool]]:
    """Write the entries the persona does not hold yet (``checks.held_biography``),
    within ``cap``; the caller holds the write transaction."""
    held = entries(conn, persona_id, cap + len(new))
    out, fresh = checks.biography_to_write(persona_id, held, new, cap)
    conn.executemany(_INSERT, [biography_row(e) for e in fresh])
    return out


def _add(
    conn: sqlite3.Connection, persona_id: str, new: list[BiographyEntry], cap: int
) -> list[tuple[BiographyEntry, bool]]:
    persona_counters(conn, persona_id)
    return put_entries(conn, persona_id, new, cap)


def _remove(conn: sqlite3.Connection, persona_id: str, entry_id: str) -> BiographyEntry:
    persona_counters(conn, persona_id)
    row = conn.execute(f"{_SELECT} AND id = ?", (persona_id, entry_id)).fetchone()
    if row is None:
        raise NotFoundError("no such biography entry", persona_id=persona_id, entry_id=entry_id)
    conn.execute("DELETE FROM biography WHERE persona_id = ? AND id = ?", (persona_id, entry_id))
    return BiographyEntry.model_validate(codec.decode(row))


def _list(conn: sqlite3.Connection, persona_id: str, limit: int) -> list[BiographyEntry]:
    persona_counters(conn, persona_id)
    return entries(conn, persona_id, limit)


class SqliteBiography(SqliteAggregate):
    """The ``BiographyStore`` part of the SQLite store."""

    async def add_biography(
        self, persona_id: str, entries: list[BiographyEntry], *, cap: int
    ) -> list[tuple[BiographyEntry, bool]]:
        """Store the entries the persona does not hold yet, in one transaction."""
        return await self._db.write(_add, persona_id, entries, cap)

    async def biography(self, persona_id: str, *, limit: int) -> list[BiographyEntry]:
        """The persona's entries, oldest first (``PersonaNotFound`` when unknown)."""
        return await self._db.read(_list, persona_id, checks.limit(limit))

    async def remove_biography(self, persona_id: str, entry_id: str) -> BiographyEntry:
        """Delete one entry (``NotFoundError`` when the persona has no such entry)."""
        return await self._db.write(_remove, persona_id, entry_id)
