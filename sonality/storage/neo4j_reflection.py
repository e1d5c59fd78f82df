"""Reflection storage on Neo4j: the lease, the one-transaction reflection commit, the
record of rejected and failed attempts, and the reads the reflection needs.

Graph: ``(:Persona)-[:LEASE]->(:ReflectionLease {owner, expires_at})`` while a worker
reflects; ``(:Persona)-[:REFLECTED]->(:Reflection)`` for every attempt, with
``(:Reflection)-[:PRODUCED]->(:Snapshot)`` and ``(:Reflection)-[:CONSUMED]->(:Insight)``
for a committed one. Every writer here takes the persona's write lock first
(``persona/lock``), like the enrichment commit, so lease check-and-set, release and the
commit's checks are atomic against each other and against other processes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from neo4j import AsyncManagedTransaction

from sonality.errors import (
    ConflictError,
    LeaseHeld,
    PersonaNotFound,
    StoreError,
    ValidationError,
)
from sonality.models import (
    Episode,
    ProvenanceEdge,
    Reflection,
    ReflectionCommit,
    ReflectionOutcome,
)
from sonality.storage import neo4j_records as rec
from sonality.storage.cypher import Query
from sonality.storage.neo4j_transactions import fetch, fetch_one

__all__ = ["Neo4jReflectionMixin"]

P = ParamSpec("P")
T = TypeVar("T")


def _reflection_props(r: Reflection) -> dict[str, Any]:
    props = r.model_dump(mode="python")
    props["outcome"] = r.outcome.value
    props["health"] = list(r.health)
    props["started_at"] = rec.time_in(r.started_at, field="started_at")
    props["finished_at"] = rec.time_in(r.finished_at, field="finished_at")
    return {k: v for k, v in props.items() if v is not None}


def _reflection_from(props: Mapping[str, Any]) -> Reflection:
    values = dict(props)
    values["started_at"] = rec.time_out(values["started_at"])
    values["finished_at"] = rec.time_out(values["finished_at"])
    values["health"] = tuple(values.get("health") or ())
    return Reflection.model_validate(values)


async def _lock(tx: AsyncManagedTransaction, persona_id: str) -> None:
    if await fetch_one(tx, Query.PERSONA_LOCK, persona_id=persona_id) is None:
        raise PersonaNotFound("no such persona", persona_id=persona_id)


# units of work ------------------------------------------------------------------------------


async def acquire_lease(
    tx: AsyncManagedTransaction, persona_id: str, owner: str, now: datetime, ttl_seconds: float
) -> bool:
    await _lock(tx, persona_id)
    row = await fetch_one(tx, Query.REFLECTION_LEASE_GET, persona_id=persona_id)
    held_by, expires = (row["owner"], row["expires_at"]) if row is not None else (None, None)
    if held_by is not None and held_by != owner and rec.time_out(expires) > now:
        return False
    await fetch(
        tx,
        Query.REFLECTION_LEASE_SET,
        persona_id=persona_id,
        owner=owner,
        now=rec.time_in(now, field="now"),
        expires_at=rec.time_in(now + timedelta(seconds=ttl_seconds), field="expires_at"),
    )
    return True


async def release_lease(tx: AsyncManagedTransaction, persona_id: str, owner: str) -> None:
    await _lock(tx, persona_id)
    await fetch(tx, Query.REFLECTION_LEASE_RELEASE, persona_id=persona_id, owner=owner)


async def commit_reflection(tx: AsyncManagedTransaction, commit: ReflectionCommit) -> None:
    """Checks first (lease, CURRENT version), then every write of the commit."""
    reflection = commit.reflection
    pid = reflection.persona_id
    if reflection.outcome is not ReflectionOutcome.COMMITTED:
        raise ValidationError("only a committed reflection is committed", persona_id=pid)
    if any(b.persona_id != pid for b in commit.beliefs) or (
        commit.snapshot is not None and commit.snapshot.persona_id != pid
    ):
        raise ValidationError("a reflection commit may only touch its own persona", persona_id=pid)
    await _lock(tx, pid)
    state = await fetch_one(tx, Query.REFLECTION_STATE, persona_id=pid)
    if state is None or state["lease_owner"] != commit.lease_owner:
        raise LeaseHeld(
            "the reflection lease is no longer held by this worker",
            persona_id=pid,
            owner=commit.lease_owner,
        )
    current = int(state["version"] or 0)
    if current != commit.expected_snapshot_version:
        raise ConflictError(
            "the snapshot moved on since this reflection started",
            persona_id=pid,
            expected=commit.expected_snapshot_version,
            current=current,
        )
    newest = current
    if commit.snapshot is not None:
        if commit.snapshot.version != current + 1:
            raise ValidationError(
                "the new snapshot must be version current + 1",
                persona_id=pid,
                version=commit.snapshot.version,
            )
        row = await fetch_one(
            tx,
            Query.SNAPSHOT_APPEND,
            persona_id=pid,
            snapshot=rec.snapshot_props(commit.snapshot),
        )
        if row is None:
            raise StoreError("persona has no CURRENT snapshot", persona_id=pid)
        newest = commit.snapshot.version
    await fetch(
        tx,
        Query.REFLECTION_CREATE,
        persona_id=pid,
        reflection=_reflection_props(reflection),
        produced=None if commit.snapshot is None else commit.snapshot.version,
    )
    ids = list(dict.fromkeys(commit.consumed_insight_ids))
    if ids:
        row = await fetch_one(
            tx,
            Query.REFLECTION_CONSUME_INSIGHTS,
            persona_id=pid,
            reflection_id=reflection.id,
            ids=ids,
        )
        consumed = int(row["consumed"]) if row else 0
        if consumed != len(ids):
            raise ConflictError(
                "an insight to consume is unknown or consumed already",
                persona_id=pid,
                expected=len(ids),
                found=consumed,
            )
    if commit.beliefs:
        beliefs = [rec.belief_props(b) for b in commit.beliefs]
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


async def record_reflection(
    tx: AsyncManagedTransaction, reflection: Reflection, attempt_at: int
) -> None:
    pid = reflection.persona_id
    await _lock(tx, pid)
    await fetch(
        tx,
        Query.REFLECTION_CREATE,
        persona_id=pid,
        reflection=_reflection_props(reflection),
        produced=None,
    )
    await fetch(tx, Query.REFLECTION_MARK_ATTEMPT, persona_id=pid, attempt_at=attempt_at)


TxFunction = Callable[Concatenate[AsyncManagedTransaction, P], Awaitable[T]]


class Neo4jReflectionMixin:
    """The reflection part of :class:`~sonality.storage.neo4j_store.Neo4jStore`."""

    if TYPE_CHECKING:

        async def _write(
            self, operation: str, work: TxFunction[P, T], *args: P.args, **kwargs: P.kwargs
        ) -> T: ...

        async def _fetch(
            self, operation: str, query: Query, **params: Any
        ) -> list[dict[str, Any]]: ...

    async def acquire_lease(
        self, persona_id: str, owner: str, *, now: datetime, ttl_seconds: float
    ) -> bool:
        """Take the persona's reflection lease (atomic under the persona lock)."""
        return await self._write(
            "acquire_lease", acquire_lease, persona_id, owner, now, ttl_seconds
        )

    async def release_lease(self, persona_id: str, owner: str) -> None:
        """Give the lease up if ``owner`` holds it."""
        await self._write("release_lease", release_lease, persona_id, owner)

    async def commit_reflection(self, commit: ReflectionCommit) -> None:
        """Apply a successful reflection in one transaction."""
        await self._write("commit_reflection", commit_reflection, commit)

    async def record_reflection(self, reflection: Reflection, *, attempt_at: int) -> None:
        """Store a rejected or failed attempt (and the attempt marker)."""
        if reflection.outcome is ReflectionOutcome.COMMITTED:
            raise ValidationError(
                "a committed reflection goes through commit_reflection",
                persona_id=reflection.persona_id,
            )
        await self._write("record_reflection", record_reflection, reflection, attempt_at)

    async def list_reflections(self, persona_id: str, *, limit: int = 20) -> list[Reflection]:
        """Newest first."""
        rows = await self._fetch(
            "list_reflections", Query.REFLECTION_LIST, persona_id=persona_id, limit=max(limit, 0)
        )
        return [_reflection_from(r["reflection"]) for r in rows]

    async def list_shifts(
        self, persona_id: str, *, since_interaction: int, limit: int = 20
    ) -> list[ProvenanceEdge]:
        """Provenance edges committed after ``since_interaction``, newest first."""
        rows = await self._fetch(
            "list_shifts",
            Query.REFLECTION_SHIFTS,
            persona_id=persona_id,
            since=since_interaction,
            limit=max(limit, 0),
        )
        return [
            ProvenanceEdge(
                episode_id=r["episode_id"],
                topic=r["topic"],
                delta=r["delta"],
                committed_at=r["committed_at"],
            )
            for r in rows
        ]

    async def episodes_since(
        self, persona_id: str, *, since_interaction: int, limit: int = 10
    ) -> list[Episode]:
        """Enriched episodes after ``since_interaction``, newest first."""
        rows = await self._fetch(
            "episodes_since",
            Query.REFLECTION_EPISODES_SINCE,
            persona_id=persona_id,
            since=since_interaction,
            limit=max(limit, 0),
        )
        return [rec.episode_from(r["episode"]) for r in rows]
