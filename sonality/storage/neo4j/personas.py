"""Personas and their snapshots on Neo4j.

``(:Persona)-[:CURRENT]->(:Snapshot)-[:PREVIOUS]->(:Snapshot)``; the persona node also
keeps the ``episode_seq`` counter that numbers its episodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neo4j import AsyncManagedTransaction
from neo4j.exceptions import ConstraintError

from sonality.errors import AlreadyExists, ConflictError, PersonaNotFound, StoreError
from sonality.models import BiographyEntry, Persona, Snapshot
from sonality.storage import checks, shapes
from sonality.storage.neo4j import codec
from sonality.storage.neo4j.biography import put_entries
from sonality.storage.neo4j.cypher import Query
from sonality.storage.neo4j.executor import Neo4jAggregate, fetch_one, lock_persona

__all__ = ["Neo4jPersonas", "append_snapshot", "persona_from", "snapshot_from"]


def persona_from(props: Any) -> Persona:
    lists = {k: props[k] for k in shapes.SELF_MODEL_FIELDS if props.get(k) is not None}
    return Persona.model_validate(shapes.persona(codec.decode(props, Persona) | lists))


def snapshot_from(props: Any) -> Snapshot:
    return Snapshot.model_validate(codec.decode(props, Snapshot))


async def _create(
    tx: AsyncManagedTransaction,
    persona: Persona,
    snapshot: Snapshot,
    biography: Sequence[BiographyEntry],
) -> Persona:
    """The persona with snapshot v1 as CURRENT (a taken id violates a constraint). The
    runtime defaults are not stored until set: absent, they read as the model's."""
    props = codec.encode(persona, exclude={"runtime_mode", "affect", "self_model"})
    props |= shapes.self_model_fields(persona)
    row = await fetch_one(
        tx,
        Query.PERSONA_CREATE,
        persona={**props, "persona_id": persona.id, "episode_seq": 0},
        snapshot=codec.encode(snapshot),
    )
    if row is None:
        raise StoreError("creating the persona returned nothing", persona_id=persona.id)
    await put_entries(tx, persona.id, biography, len(biography))
    return persona_from(row["persona"])


async def append_snapshot(tx: AsyncManagedTransaction, snapshot: Snapshot) -> Snapshot:
    """Add ``snapshot`` after CURRENT and make it CURRENT; the caller holds the persona
    lock and has checked the version."""
    row = await fetch_one(
        tx,
        Query.SNAPSHOT_APPEND,
        persona_id=snapshot.persona_id,
        snapshot=codec.encode(snapshot),
    )
    if row is None:
        raise StoreError("persona has no CURRENT snapshot", persona_id=snapshot.persona_id)
    return snapshot_from(row["snapshot"])


async def _append_next(tx: AsyncManagedTransaction, snapshot: Snapshot) -> Snapshot:
    """Compare-and-swap: ``snapshot.version`` must be the CURRENT version + 1."""
    pid = snapshot.persona_id
    await lock_persona(tx, pid)
    current = await fetch_one(tx, Query.SNAPSHOT_CURRENT, persona_id=pid)
    version = current["snapshot"]["version"] if current and current["snapshot"] else 0
    checks.next_version("snapshot", pid, snapshot.version, version)
    return await append_snapshot(tx, snapshot)


class Neo4jPersonas(Neo4jAggregate):
    """The ``PersonaStore`` part of the Neo4j store."""

    async def create_persona(
        self, persona: Persona, snapshot: Snapshot, biography: Sequence[BiographyEntry] = ()
    ) -> Persona:
        """Create the persona with snapshot v1 and its biography (``AlreadyExists`` if the
        id is taken)."""
        checks.first_snapshot(persona, snapshot)
        try:
            return await self._db.write("create_persona", _create, persona, snapshot, biography)
        except ConflictError as exc:
            if isinstance(exc.__cause__, ConstraintError):
                raise AlreadyExists("persona exists already", persona_id=persona.id) from exc
            raise

    async def get_persona(self, persona_id: str) -> Persona:
        """``PersonaNotFound`` when unknown."""
        rows = await self._db.fetch("get_persona", Query.PERSONA_GET, persona_id=persona_id)
        if not rows:
            raise PersonaNotFound("no such persona", persona_id=persona_id)
        return persona_from(rows[0]["persona"])

    async def list_personas(self) -> list[Persona]:
        """Every persona, by id."""
        rows = await self._db.fetch("list_personas", Query.PERSONA_LIST)
        return [persona_from(r["persona"]) for r in rows]

    async def append_snapshot(self, snapshot: Snapshot) -> Snapshot:
        """Add version current + 1 (``ConflictError`` otherwise); it becomes CURRENT."""
        return await self._db.write("append_snapshot", _append_next, snapshot)

    async def current_snapshot(self, persona_id: str) -> Snapshot:
        """The CURRENT version (``PersonaNotFound`` when the persona is unknown)."""
        rows = await self._db.fetch(
            "current_snapshot", Query.SNAPSHOT_CURRENT, persona_id=persona_id
        )
        if not rows:
            raise PersonaNotFound("no such persona", persona_id=persona_id)
        if rows[0]["snapshot"] is None:
            raise StoreError("persona has no CURRENT snapshot", persona_id=persona_id)
        return snapshot_from(rows[0]["snapshot"])

    async def snapshot_history(self, persona_id: str) -> list[Snapshot]:
        """Every version, newest first."""
        rows = await self._db.fetch(
            "snapshot_history", Query.SNAPSHOT_HISTORY, persona_id=persona_id
        )
        return [snapshot_from(r["snapshot"]) for r in rows]
