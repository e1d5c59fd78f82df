"""The persona's biography on Neo4j: ``(:Persona)-[:REMEMBERS]->(:BiographyEntry {persona_id,
id, key, text, importance, source, created_at, vector})``; ``key`` is the normalised text,
unique within the persona (a constraint), so a persona holds an entry once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neo4j import AsyncManagedTransaction

from sonality.errors import NotFoundError, PersonaNotFound
from sonality.models import BiographyEntry
from sonality.storage import checks
from sonality.storage.neo4j import codec
from sonality.storage.neo4j.cypher import Query
from sonality.storage.neo4j.executor import Neo4jAggregate, count, fetch, fetch_one, lock_persona

__all__ = ["Neo4jBiography", "entries", "entry_from", "put_entries"]


def entry_from(props: Any) -> BiographyEntry:
    return BiographyEntry.model_validate(codec.decode(props, BiographyEntry))


async def entries(tx: AsyncManagedTransaction, persona_id: str, limit: int) -> list[BiographyEntry]:
    """The persona's entries, oldest first, at most ``limit``."""
    rows = await fetch(tx, Query.BIOGRAPHY_LIST, persona_id=persona_id, limit=limit)
    return [entry_from(r["entry"]) for r in rows]


async def put_entries(
    tx: AsyncManagedTransaction, persona_id: str, new: Sequence[BiographyEntry], cap: int
) -> list[tuple[BiographyEntry, bool]]:
    """Write the entries the persona does not hold yet (``checks.held_biography``),
    within ``cap``; the caller holds the persona's lock."""
    held = await entries(tx, persona_id, cap + len(new))
    out, fresh = checks.biography_to_write(persona_id, held, new, cap)
    if fresh:
        rows = [{**codec.encode(e), "key": checks.biography_key(e.text)} for e in fresh]
        written = await count(tx, Query.BIOGRAPHY_PUT, persona_id=persona_id, entries=rows)
        checks.wrote_all("biography", persona_id, len(fresh), written)
    return out


async def _add(
    tx: AsyncManagedTransaction, persona_id: str, new: list[BiographyEntry], cap: int
) -> list[tuple[BiographyEntry, bool]]:
    await lock_persona(tx, persona_id)
    return await put_entries(tx, persona_id, new, cap)


async def _list(tx: AsyncManagedTransaction, persona_id: str, limit: int) -> list[BiographyEntry]:
    if await fetch_one(tx, Query.PERSONA_GET, persona_id=persona_id) is None:
        raise PersonaNotFound("no such persona", persona_id=persona_id)
    return await entries(tx, persona_id, limit)


async def _remove(tx: AsyncManagedTransaction, persona_id: str, entry_id: str) -> BiographyEntry:
    await lock_persona(tx, persona_id)
    row = await fetch_one(tx, Query.BIOGRAPHY_REMOVE, persona_id=persona_id, entry_id=entry_id)
    if row is None:
        raise NotFoundError("no such biography entry", persona_id=persona_id, entry_id=entry_id)
    return entry_from(row["entry"])


class Neo4jBiography(Neo4jAggregate):
    """The ``BiographyStore`` part of the Neo4j store."""

    async def add_biography(
        self, persona_id: str, entries: list[BiographyEntry], *, cap: int
    ) -> list[tuple[BiographyEntry, bool]]:
        """Store the entries the persona does not hold yet, in one transaction."""
        return await self._db.write("add_biography", _add, persona_id, entries, cap)

    async def biography(self, persona_id: str, *, limit: int) -> list[BiographyEntry]:
        """The persona's entries, oldest first (``PersonaNotFound`` when unknown)."""
        return await self._db.read("biography", _list, persona_id, checks.limit(limit))

    async def remove_biography(self, persona_id: str, entry_id: str) -> BiographyEntry:
        """Delete one entry (``NotFoundError`` when the persona has no such entry)."""
        return await self._db.write("remove_biography", _remove, persona_id, entry_id)
