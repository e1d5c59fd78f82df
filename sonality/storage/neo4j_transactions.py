"""The Neo4j store's units of work and its error boundary.

Each function here is a transaction function: ``session.execute_write(fn, *args)`` (or
``execute_read``) runs it inside one managed transaction, retrying it on transient
errors, so it must have no side effect outside the transaction. Writers that move
persona state take the persona's write lock first (``persona/lock``), then read what they
check, so concurrent writers serialise per persona. Raising a Sonality error inside a
function rolls the whole transaction back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from neo4j import AsyncManagedTransaction
from neo4j.exceptions import (
    AuthError,
    ConstraintError,
    DriverError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from sonality.errors import (
    ConflictError,
    PersonaNotFound,
    SonalityError,
    StoreError,
    StoreUnavailable,
    ValidationError,
)
from sonality.models import Belief, EnrichmentCommit, Episode, EpisodeDraft, Persona, Snapshot
from sonality.storage import neo4j_records as rec
from sonality.storage.cypher import Query, load

__all__ = [
    "append_episode",
    "append_snapshot",
    "commit_enrichment",
    "create_persona",
    "fetch",
    "fetch_one",
    "similar_episodes",
    "translate_errors",
    "upsert_beliefs",
    "write_matched",
]


@asynccontextmanager
async def translate_errors(
    operation: str, *, on_constraint: Callable[[], SonalityError] | None = None
) -> AsyncIterator[None]:
    """Turn driver exceptions raised inside the block into Sonality errors.

    ``on_constraint`` builds the error for a uniqueness violation (``ConflictError`` by
    default). Errors carry the operation and the Neo4j status code, never parameters nor
    the server's message (which may quote stored values)."""
    try:
        yield
    except SonalityError:
        raise
    except (ServiceUnavailable, SessionExpired) as exc:
        raise StoreUnavailable("Neo4j is unreachable", operation=operation) from exc
    except AuthError as exc:
        raise StoreUnavailable("Neo4j rejected the credentials", operation=operation) from exc
    except ConstraintError as exc:
        if on_constraint is not None:
            raise on_constraint() from exc
        raise ConflictError(
            "a uniqueness constraint rejected the write", operation=operation
        ) from exc
    except TransientError as exc:
        raise ConflictError(
            "Neo4j gave up on a contended transaction; retry", operation=operation, code=exc.code
        ) from exc
    except Neo4jError as exc:
        raise StoreError("Neo4j rejected the query", operation=operation, code=exc.code) from exc
    except DriverError as exc:
        raise StoreError(
            "the Neo4j driver failed", operation=operation, error=type(exc).__name__
        ) from exc


# generic ------------------------------------------------------------------------------------


async def fetch(
    tx: AsyncManagedTransaction, query: Query, /, **params: Any
) -> list[dict[str, Any]]:
    """All rows of ``query`` as dicts."""
    result = await tx.run(load(query), params)
    return await result.data()


async def fetch_one(
    tx: AsyncManagedTransaction, query: Query, /, **params: Any
) -> dict[str, Any] | None:
    """The first row of ``query``, or ``None``."""
    rows = await fetch(tx, query, **params)
    return rows[0] if rows else None


async def write_matched(tx: AsyncManagedTransaction, query: Query, /, **params: Any) -> bool:
    """Run a single-target write; ``False`` when its MATCH found nothing."""
    return bool(await fetch(tx, query, **params))


async def _lock_persona(tx: AsyncManagedTransaction, persona_id: str) -> None:
    if await fetch_one(tx, Query.PERSONA_LOCK, persona_id=persona_id) is None:
        raise PersonaNotFound("no such persona", persona_id=persona_id)


# personas and snapshots ---------------------------------------------------------------------


async def create_persona(
    tx: AsyncManagedTransaction, persona: Persona, snapshot: Snapshot
) -> Persona:
    """The persona with snapshot v1 as CURRENT (a taken id violates a constraint)."""
    row = await fetch_one(
        tx,
        Query.PERSONA_CREATE,
        persona=rec.persona_props(persona),
        snapshot=rec.snapshot_props(snapshot),
    )
    if row is None:
        raise StoreError("creating the persona returned nothing", persona_id=persona.id)
    return rec.persona_from(row["persona"])


async def append_snapshot(tx: AsyncManagedTransaction, snapshot: Snapshot) -> Snapshot:
    """Compare-and-swap: ``snapshot.version`` must be the CURRENT version + 1."""
    pid = snapshot.persona_id
    await _lock_persona(tx, pid)
    current = await fetch_one(tx, Query.SNAPSHOT_CURRENT, persona_id=pid)
    version = current["snapshot"]["version"] if current and current["snapshot"] else 0
    if snapshot.version != version + 1:
        raise ConflictError(
            "snapshot version is not current + 1",
            persona_id=pid,
            version=snapshot.version,
            current=version,
        )
    row = await fetch_one(
        tx, Query.SNAPSHOT_APPEND, persona_id=pid, snapshot=rec.snapshot_props(snapshot)
    )
    if row is None:
        raise StoreError("persona has no CURRENT snapshot", persona_id=pid)
    return rec.snapshot_from(row["snapshot"])


# episodes -----------------------------------------------------------------------------------


async def append_episode(
    tx: AsyncManagedTransaction, draft: EpisodeDraft, embedding: list[float] | None
) -> tuple[Episode, bool]:
    """Store ``draft`` as the next turn of its conversation, or return the stored copy
    (``False``) when the id was used for the same exchange (``ConflictError`` otherwise)."""
    ids = {"persona_id": draft.persona_id, "episode_id": draft.id}
    await _lock_persona(tx, draft.persona_id)  # serialises appends, so the check holds
    existing = await fetch_one(tx, Query.EPISODE_GET, **ids)
    if existing is not None:
        return _same_episode(rec.episode_from(existing["episode"]), draft), False
    row = await fetch_one(
        tx,
        Query.EPISODE_APPEND,
        persona_id=draft.persona_id,
        user_id=draft.user_id,
        conversation_id=draft.conversation_id,
        created_at=rec.time_in(draft.created_at, field="created_at"),
        episode=rec.episode_props(draft),
    )
    if row is None:
        raise PersonaNotFound("no such persona", persona_id=draft.persona_id)
    if embedding is not None:
        await fetch(tx, Query.EPISODE_SET_EMBEDDING, **ids, embedding=embedding)
    return rec.episode_from(row["episode"]), True


def _same_episode(stored: Episode, draft: EpisodeDraft) -> Episode:
    same = (
        stored.user_id == draft.user_id
        and stored.conversation_id == draft.conversation_id
        and stored.user_message == draft.user_message
        and stored.agent_response == draft.agent_response
    )
    if not same:
        raise ConflictError(
            "episode id already used for another exchange",
            persona_id=draft.persona_id,
            episode_id=draft.id,
        )
    return stored


async def similar_episodes(
    tx: AsyncManagedTransaction,
    persona_id: str,
    user_id: str,
    embedding: list[float],
    k: int,
) -> list[tuple[Episode, float]]:
    """Vector-index candidates kept to one persona's user; when fewer than ``k`` survive,
    an exact scan of that user's embedded episodes. Neo4j 5.26 has no filtered vector
    search, so other users' episodes can crowd the user's out of the index's top hits;
    oversampling makes that rare and the scoped scan makes it harmless."""
    params = {"persona_id": persona_id, "user_id": user_id, "embedding": embedding, "k": k}
    candidates = min(max(k * 10, 100), 10_000)
    rows = await fetch(tx, Query.EPISODE_SIMILAR_INDEXED, candidates=candidates, **params)
    if len(rows) < k:
        rows = await fetch(tx, Query.EPISODE_SIMILAR_EXACT, **params)
    return [(rec.episode_from(r["episode"]), float(r["similarity"])) for r in rows]


# the enrichment commit ----------------------------------------------------------------------


async def commit_enrichment(tx: AsyncManagedTransaction, commit: EnrichmentCommit) -> None:
    """Everything one enriched interaction changes. Checks first (persona count as
    expected, episode pending) and raises ``ConflictError`` before writing otherwise."""
    pid = commit.persona_id
    ids = {"persona_id": pid, "episode_id": commit.episode_id}
    await _lock_persona(tx, pid)
    state = await fetch_one(tx, Query.ENRICHMENT_STATE, **ids)
    if state is None:
        raise PersonaNotFound("no such persona", persona_id=pid)
    if state["interaction_count"] != commit.expected_interaction_count:
        raise ConflictError(
            "the persona moved on since this enrichment started",
            persona_id=pid,
            expected=commit.expected_interaction_count,
            found=state["interaction_count"],
        )
    if state["status"] != "pending":
        raise ConflictError(
            "the episode is not pending enrichment",
            persona_id=pid,
            episode_id=commit.episode_id,
            status=state["status"],
        )
    fields = rec.enriched_episode_fields(commit)
    await fetch(tx, Query.ENRICHMENT_UPDATE_EPISODE, **ids, fields=fields)
    await fetch(
        tx,
        Query.ENRICHMENT_UPDATE_PERSONA,
        persona_id=pid,
        interaction_count=commit.interaction_count,
        disagreement_window=list(commit.disagreement_window),
        shift_total=commit.shift_total,
    )
    if commit.insight is not None:
        insight = rec.insight_props(commit.insight)
        await fetch(tx, Query.ENRICHMENT_CREATE_INSIGHT, **ids, insight=insight)
    if commit.facts:
        facts = [rec.fact_props(f) for f in commit.facts]
        created = await _count(tx, Query.ENRICHMENT_CREATE_FACTS, persona_id=pid, facts=facts)
        _require(created == len(facts), "a fact names a user or episode the persona lacks", pid)
    if commit.staged:
        staged = [rec.staged_props(s) for s in commit.staged]
        created = await _count(tx, Query.ENRICHMENT_CREATE_STAGED, persona_id=pid, staged=staged)
        _require(created == len(staged), "a staged update names an unknown episode", pid)
    if commit.committed_staged_ids:
        due = sorted(set(commit.committed_staged_ids))
        committed = await _count(
            tx, Query.STAGED_COMMIT, persona_id=pid, ids=due, committed_at=commit.interaction_count
        )
        if committed != len(due):
            raise ConflictError(
                "a staged update to commit is unknown or committed already", persona_id=pid
            )
    await upsert_beliefs(tx, commit.beliefs)
    if commit.topics:
        await fetch(tx, Query.ENRICHMENT_LINK_TOPICS, **ids, topics=list(commit.topics))
    if commit.provenance:
        edges = rec.provenance_props(commit.provenance)
        created = await _count(tx, Query.BELIEF_SUPPORTS, persona_id=pid, edges=edges)
        created += await _count(tx, Query.BELIEF_CONTRADICTS, persona_id=pid, edges=edges)
        _require(created == len(edges), "a provenance edge names an unknown episode or belief", pid)


async def _count(tx: AsyncManagedTransaction, query: Query, /, **params: Any) -> int:
    """The single count column of a batch write (how many rows it wrote)."""
    row = await fetch_one(tx, query, **params)
    return int(next(iter(row.values()))) if row else 0


def _require(condition: bool, message: str, persona_id: str) -> None:
    """``ValidationError`` (rolling the transaction back) unless ``condition`` holds."""
    if not condition:
        raise ValidationError(message, persona_id=persona_id)


async def upsert_beliefs(tx: AsyncManagedTransaction, beliefs: Sequence[Belief]) -> None:
    """Upsert by (persona_id, topic); ``PersonaNotFound`` if a belief's persona is unknown."""
    if not beliefs:
        return
    row = await fetch_one(tx, Query.BELIEF_UPSERT, beliefs=[rec.belief_props(b) for b in beliefs])
    found = set(row["persona_ids"]) if row else set()
    missing = sorted({b.persona_id for b in beliefs} - found)
    if missing:
        raise PersonaNotFound("no such persona", persona_id=missing[0])
