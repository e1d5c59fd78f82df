"""Reflection on Neo4j: the lease, the one-transaction reflection commit, the record of
rejected and failed attempts, and the reads the reflection needs.

``(:Persona)-[:LEASE]->(:ReflectionLease {owner, expires_at})`` while a worker reflects;
``(:Persona)-[:REFLECTED]->(:Reflection)`` for every attempt, with
``(:Reflection)-[:PRODUCED]->(:Snapshot)`` and ``(:Reflection)-[:CONSUMED]->(:Insight)``
for a committed one. Every writer here takes the persona's write lock first, like the
enrichment commit, so the lease check-and-set, its release and the commit's checks are
atomic against each other and against other processes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from neo4j import AsyncManagedTransaction

from sonality.errors import PersonaNotFound
from sonality.models import (
    Episode,
    ProvenanceEdge,
    Reflection,
    ReflectionCommit,
    ReflectionLease,
)
from sonality.storage import checks
from sonality.storage.neo4j import codec
from sonality.storage.neo4j.cypher import Query
from sonality.storage.neo4j.enrichment import belief_props, provenance_from
from sonality.storage.neo4j.episodes import episode_from
from sonality.storage.neo4j.executor import Neo4jAggregate, fetch, fetch_one

__all__ = ["Neo4jReflection"]


def _reflection_from(props: Any) -> Reflection:
    return Reflection.model_validate(codec.decode(props, Reflection))


async def _acquire(
    tx: AsyncManagedTransaction, persona_id: str, owner: str, now: datetime, ttl_seconds: float
) -> bool:
    """Two statements: the lease read under the persona lock, then (when the rule lets
    ``owner`` take it) the write."""
    row = await fetch_one(tx, Query.REFLECTION_LEASE_GET, persona_id=persona_id)
    if row is None:
        raise PersonaNotFound("no such persona", persona_id=persona_id)
    expires = row["expires_at"]
    expires_at = None if expires is None else codec.time_out(expires)
    if not checks.lease_is_free(row["owner"], expires_at, owner, now):
        return False
    await fetch(
        tx,
        Query.REFLECTION_LEASE_SET,
        persona_id=persona_id,
        owner=owner,
        now=codec.time_in(now, field="now"),
        expires_at=codec.time_in(now + timedelta(seconds=ttl_seconds), field="expires_at"),
    )
    return True


async def _commit(tx: AsyncManagedTransaction, commit: ReflectionCommit) -> None:
    """One statement (``reflection/commit``): the checks run in it under the persona lock;
    what it reports back decides here whether the transaction stands."""
    reflection = commit.reflection
    pid = reflection.persona_id
    newest = commit.expected_snapshot_version
    if commit.snapshot is not None:
        newest = commit.snapshot.version
    ids = list(dict.fromkeys(commit.consumed_insight_ids))
    row = await fetch_one(
        tx,
        Query.REFLECTION_COMMIT,
        persona_id=pid,
        lease_owner=commit.lease_owner,
        expected_version=commit.expected_snapshot_version,
        reflection=codec.encode(reflection, drop_none=True),
        beliefs=[belief_props(b) for b in commit.beliefs],
        last_reflection_at=commit.last_reflection_at,
        shift_consumed=commit.shift_consumed,
        # what may be null or empty travels in $opt (see sonality/storage/neo4j/cypher.py)
        opt={
            "snapshot": None if commit.snapshot is None else codec.encode(commit.snapshot),
            "produced": None if commit.snapshot is None else commit.snapshot.version,
            "insight_ids": ids,
            "prune_through": newest - commit.keep_snapshots if commit.keep_snapshots > 0 else None,
        },
    )
    if row is None:
        raise PersonaNotFound("no such persona", persona_id=pid)
    checks.reflection_may_commit(commit, row["found_owner"], row["found_version"])
    checks.insights_consumed(pid, len(ids), row["consumed"])


class Neo4jReflection(Neo4jAggregate):
    """The ``ReflectionStore`` part of the Neo4j store."""

    async def acquire_lease(
        self, persona_id: str, owner: str, *, now: datetime, ttl_seconds: float
    ) -> bool:
        """Take the persona's reflection lease (atomic under the persona lock)."""
        return await self._db.write("acquire_lease", _acquire, persona_id, owner, now, ttl_seconds)

    async def release_lease(self, persona_id: str, owner: str) -> None:
        """Give the lease up if ``owner`` holds it."""
        await self._db.write(
            "release_lease",
            fetch,
            Query.REFLECTION_LEASE_RELEASE,
            persona_id=persona_id,
            owner=owner,
        )

    async def get_lease(self, persona_id: str) -> ReflectionLease | None:
        """The persona's lease as stored, or None."""
        rows = await self._db.fetch("get_lease", Query.REFLECTION_LEASE_READ, persona_id=persona_id)
        if not rows:
            return None
        expires_at = codec.time_out(rows[0]["expires_at"])
        return ReflectionLease(persona_id=persona_id, owner=rows[0]["owner"], expires_at=expires_at)

    async def commit_reflection(self, commit: ReflectionCommit) -> None:
        """Apply a successful reflection in one transaction."""
        await self._db.write("commit_reflection", _commit, commit)

    async def record_reflection(self, reflection: Reflection, *, attempt_at: int) -> None:
        """Store a rejected or failed attempt (and the attempt marker)."""
        checks.unsuccessful_attempt(reflection)
        rows = await self._db.write(
            "record_reflection",
            fetch,
            Query.REFLECTION_RECORD,
            persona_id=reflection.persona_id,
            reflection=codec.encode(reflection, drop_none=True),
            attempt_at=attempt_at,
        )
        if not rows:
            raise PersonaNotFound("no such persona", persona_id=reflection.persona_id)

    async def list_reflections(self, persona_id: str, *, limit: int = 20) -> list[Reflection]:
        """Newest first."""
        rows = await self._db.fetch(
            "list_reflections",
            Query.REFLECTION_LIST,
            persona_id=persona_id,
            limit=checks.limit(limit),
        )
        return [_reflection_from(r["reflection"]) for r in rows]

    async def list_shifts(
        self, persona_id: str, *, since_interaction: int, limit: int = 20
    ) -> list[ProvenanceEdge]:
        """Provenance edges committed after ``since_interaction``, newest first."""
        rows = await self._db.fetch(
            "list_shifts",
            Query.REFLECTION_SHIFTS,
            persona_id=persona_id,
            since=since_interaction,
            limit=checks.limit(limit),
        )
        return [provenance_from(r) for r in rows]

    async def episodes_since(
        self, persona_id: str, *, since_interaction: int, limit: int = 10
    ) -> list[Episode]:
        """Enriched episodes after ``since_interaction``, newest first."""
        rows = await self._db.fetch(
            "episodes_since",
            Query.REFLECTION_EPISODES_SINCE,
            persona_id=persona_id,
            since=since_interaction,
            limit=checks.limit(limit),
        )
        return [episode_from(r["episode"]) for r in rows]
