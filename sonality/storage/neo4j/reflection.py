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

from sonality.models import Episode, ProvenanceEdge, Reflection, ReflectionCommit
from sonality.storage import checks
from sonality.storage.neo4j import codec
from sonality.storage.neo4j.cypher import Query
from sonality.storage.neo4j.enrichment import belief_props, provenance_from
from sonality.storage.neo4j.episodes import episode_from
from sonality.storage.neo4j.executor import Neo4jAggregate, count, fetch, fetch_one, lock_persona
from sonality.storage.neo4j.personas import append_snapshot

__all__ = ["Neo4jReflection"]


def _reflection_from(props: Any) -> Reflection:
    return Reflection.model_validate(codec.decode(props, Reflection))


async def _acquire(
    tx: AsyncManagedTransaction, persona_id: str, owner: str, now: datetime, ttl_seconds: float
) -> bool:
    await lock_persona(tx, persona_id)
    row = await fetch_one(tx, Query.REFLECTION_LEASE_GET, persona_id=persona_id)
    holder, expires = (row["owner"], row["expires_at"]) if row is not None else (None, None)
    expires_at = None if expires is None else codec.time_out(expires)
    if not checks.lease_is_free(holder, expires_at, owner, now):
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


async def _release(tx: AsyncManagedTransaction, persona_id: str, owner: str) -> None:
    await lock_persona(tx, persona_id)
    await fetch(tx, Query.REFLECTION_LEASE_RELEASE, persona_id=persona_id, owner=owner)


async def _create(
    tx: AsyncManagedTransaction, reflection: Reflection, produced: int | None
) -> None:
    await fetch(
        tx,
        Query.REFLECTION_CREATE,
        persona_id=reflection.persona_id,
        reflection=codec.encode(reflection, drop_none=True),
        produced=produced,
    )


async def _commit(tx: AsyncManagedTransaction, commit: ReflectionCommit) -> None:
    """Checks first (lease, CURRENT version), then every write of the commit."""
    reflection = commit.reflection
    pid = reflection.persona_id
    await lock_persona(tx, pid)
    state = await fetch_one(tx, Query.REFLECTION_STATE, persona_id=pid)
    current = int(state["version"] or 0) if state is not None else 0
    checks.reflection_may_commit(commit, None if state is None else state["lease_owner"], current)
    newest = current
    if commit.snapshot is not None:
        await append_snapshot(tx, commit.snapshot)
        newest = commit.snapshot.version
    await _create(tx, reflection, None if commit.snapshot is None else commit.snapshot.version)
    ids = list(dict.fromkeys(commit.consumed_insight_ids))
    if ids:
        consumed = await count(
            tx,
            Query.REFLECTION_CONSUME_INSIGHTS,
            persona_id=pid,
            reflection_id=reflection.id,
            ids=ids,
        )
        checks.insights_consumed(pid, len(ids), consumed)
    if commit.beliefs:
        beliefs = [belief_props(b) for b in commit.beliefs]
        await fetch(tx, Query.REFLECTION_DECAY_BELIEFS, persona_id=pid, beliefs=beliefs)
    await fetch(
        tx,
        Query.REFLECTION_UPDATE_PERSONA,
        persona_id=pid,
        last_reflection_at=commit.last_reflection_at,
        shift_consumed=commit.shift_consumed,
    )
    if commit.keep_snapshots > 0:
        await fetch(
            tx,
            Query.REFLECTION_PRUNE_SNAPSHOTS,
            persona_id=pid,
            through=newest - commit.keep_snapshots,
        )


async def _record(tx: AsyncManagedTransaction, reflection: Reflection, attempt_at: int) -> None:
    pid = reflection.persona_id
    await lock_persona(tx, pid)
    await _create(tx, reflection, None)
    await fetch(tx, Query.REFLECTION_MARK_ATTEMPT, persona_id=pid, attempt_at=attempt_at)


class Neo4jReflection(Neo4jAggregate):
    """The ``ReflectionStore`` part of the Neo4j store."""

    async def acquire_lease(
        self, persona_id: str, owner: str, *, now: datetime, ttl_seconds: float
    ) -> bool:
        """Take the persona's reflection lease (atomic under the persona lock)."""
        return await self._db.write("acquire_lease", _acquire, persona_id, owner, now, ttl_seconds)

    async def release_lease(self, persona_id: str, owner: str) -> None:
        """Give the lease up if ``owner`` holds it."""
        await self._db.write("release_lease", _release, persona_id, owner)

    async def commit_reflection(self, commit: ReflectionCommit) -> None:
        """Apply a successful reflection in one transaction."""
        await self._db.write("commit_reflection", _commit, commit)

    async def record_reflection(self, reflection: Reflection, *, attempt_at: int) -> None:
        """Store a rejected or failed attempt (and the attempt marker)."""
        checks.unsuccessful_attempt(reflection)
        await self._db.write("record_reflection", _record, reflection, attempt_at)

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
