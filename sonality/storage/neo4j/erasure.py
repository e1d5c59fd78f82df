"""Forgetting and correcting on Neo4j: the erasure commit (episodes out with what hangs off
them, NEXT chains relinked, opinions replaced by the replay), snapshot purges after a
review, fact corrections, persona deletion and the ``(:Erasure)`` audit nodes.

An erasure locks the persona first, like the enrichment commit, then checks its interaction
count, so an enrichment committing meanwhile makes one of the two retry.
"""

from __future__ import annotations

from typing import Any

from neo4j import AsyncManagedTransaction

from sonality.errors import ConflictError, PersonaNotFound
from sonality.models import (
    Belief,
    Erasure,
    ErasureCommit,
    ErasureState,
    ReflectionPoint,
    StoredEvidence,
    UserFact,
)
from sonality.storage import checks, shapes
from sonality.storage.neo4j import codec
from sonality.storage.neo4j.cypher import Query
from sonality.storage.neo4j.enrichment import belief_props
from sonality.storage.neo4j.episodes import episode_from
from sonality.storage.neo4j.executor import Neo4jAggregate, count, fetch, fetch_one, lock_persona
from sonality.storage.neo4j.personas import persona_from

__all__ = ["Neo4jErasure", "erasure_from", "fact_from"]


def erasure_from(props: Any) -> Erasure:
    return Erasure.model_validate(codec.decode(props, Erasure))


def fact_from(props: Any) -> UserFact:
    return UserFact.model_validate(codec.decode(props, UserFact))


async def _state(
    tx: AsyncManagedTransaction, persona_id: str, user_id: str | None, episode_id: str | None
) -> ErasureState:
    row = await fetch_one(tx, Query.PERSONA_GET, persona_id=persona_id)
    if row is None:
        raise PersonaNotFound("no such persona", persona_id=persona_id)
    persona = persona_from(row["persona"])
    if user_id is not None:
        if await fetch_one(tx, Query.ERASURE_USER, persona_id=persona_id, user_id=user_id) is None:
            raise checks.user_not_found(persona_id, user_id)
        rows = await fetch(tx, Query.ERASURE_USER_EPISODES, persona_id=persona_id, user_id=user_id)
    else:
        rows = await fetch(tx, Query.EPISODE_GET, persona_id=persona_id, episode_id=episode_id)
        if not rows:
            raise checks.episode_not_found(persona_id, str(episode_id))
    removed = [episode_from(r["episode"]) for r in rows]
    evidence = await fetch(tx, Query.ERASURE_EVIDENCE, persona_id=persona_id)
    beliefs = await fetch(tx, Query.BELIEF_LIST, persona_id=persona_id, include_retired=True)
    reflections = await fetch(tx, Query.ERASURE_REFLECTIONS, persona_id=persona_id)
    counts = await fetch_one(
        tx,
        Query.ERASURE_COUNTS,
        persona_id=persona_id,
        user_id=user_id,
        ids=[e.id for e in removed],
    )
    assert counts is not None
    return ErasureState(
        persona=persona,
        removed=tuple(removed),
        evidence=tuple(
            StoredEvidence.model_validate(
                shapes.evidence({k: v for k, v in r["evidence"].items() if v is not None})
            )
            for r in evidence
        ),
        beliefs=tuple(Belief.model_validate(codec.decode(r["belief"], Belief)) for r in beliefs),
        reflections=tuple(
            ReflectionPoint.model_validate(codec.decode(r["reflection"], ReflectionPoint))
            for r in reflections
        ),
        facts=int(counts["facts"]),
        insights=int(counts["insights"]),
    )


async def _remove_episodes(tx: AsyncManagedTransaction, commit: ErasureCommit) -> None:
    pid = commit.persona_id
    ids = list(commit.episode_ids)
    conversations = [
        {"id": r["id"], "first_turn": r["first_turn"]}
        for r in await fetch(tx, Query.ERASURE_CONVERSATIONS, persona_id=pid, ids=ids)
    ]
    kept = await fetch(
        tx, Query.ERASURE_RELINK, persona_id=pid, ids=ids, conversations=conversations
    )
    await fetch(tx, Query.ERASURE_REWIND_THINKER, persona_id=pid, conversations=conversations)
    deleted = await count(tx, Query.ERASURE_DELETE_EPISODES, persona_id=pid, ids=ids)
    checks.wrote_all("an episode to erase is gone", pid, len(ids), deleted, conflict=True)
    empty = [r["id"] for r in kept if r["kept"] == 0]
    await fetch(tx, Query.ERASURE_DROP_CONVERSATIONS, persona_id=pid, ids=empty)
    if commit.user_id is not None:
        await fetch(tx, Query.ERASURE_DELETE_USER, persona_id=pid, user_id=commit.user_id)


async def _replace_opinions(tx: AsyncManagedTransaction, commit: ErasureCommit) -> None:
    pid = commit.persona_id
    first = commit.replay_from
    topics = list(commit.removed_beliefs)
    await fetch(
        tx, Query.ERASURE_DELETE_PROVENANCE, persona_id=pid, topics=topics, **{"from": first}
    )
    await fetch(tx, Query.ERASURE_DELETE_STAGED, persona_id=pid, **{"from": first})
    if commit.staged:
        staged = [codec.encode(s) for s in commit.staged]
        created = await count(tx, Query.ENRICHMENT_CREATE_STAGED, persona_id=pid, staged=staged)
        checks.wrote_all(
            "a replayed staged update names an unknown episode", pid, len(staged), created
        )
    rows = [e.model_dump() for e in commit.episodes]
    await fetch(tx, Query.ERASURE_REINDEX_EPISODES, persona_id=pid, rows=rows)
    if commit.beliefs:
        await fetch(tx, Query.BELIEF_UPSERT, beliefs=[belief_props(b) for b in commit.beliefs])
    await fetch(tx, Query.ERASURE_DELETE_BELIEFS, persona_id=pid, topics=topics)
    if commit.provenance:
        edges = [codec.encode(e) for e in commit.provenance]
        created = await count(tx, Query.BELIEF_SUPPORTS, persona_id=pid, edges=edges)
        created += await count(tx, Query.BELIEF_CONTRADICTS, persona_id=pid, edges=edges)
        checks.wrote_all("a replayed edge names an unknown episode", pid, len(edges), created)
    moved = [{"id": r.id, "interaction_count": r.interaction_count} for r in commit.reflections]
    await fetch(tx, Query.ERASURE_REINDEX_REFLECTIONS, persona_id=pid, rows=moved)


async def _commit(tx: AsyncManagedTransaction, commit: ErasureCommit) -> None:
    pid = commit.persona_id
    row = await fetch_one(tx, Query.PERSONA_LOCK, persona_id=pid)
    if row is None:
        raise PersonaNotFound("no such persona", persona_id=pid)
    checks.erasure_may_commit(commit, int(row["interaction_count"]))
    await _remove_episodes(tx, commit)
    if commit.replay_from is not None:
        await _replace_opinions(tx, commit)
    await fetch(
        tx,
        Query.ERASURE_UPDATE_PERSONA,
        persona_id=pid,
        interaction_count=commit.interaction_count,
        disagreement_window=list(commit.disagreement_window),
        shift_since_reflection=commit.shift_since_reflection,
        last_reflection_at=commit.last_reflection_at,
        last_reflection_attempt_at=commit.last_reflection_attempt_at,
        review_from_version=commit.review_from_version,
    )
    await fetch(tx, Query.ERASURE_DROP_TOPICS, persona_id=pid)
    await fetch(tx, Query.ERASURE_CREATE, erasure=codec.encode(commit.record, drop_none=True))


async def _purge(
    tx: AsyncManagedTransaction, persona_id: str, from_version: int, below: int
) -> int:
    await lock_persona(tx, persona_id)
    versions = {"from": from_version, "below": below}
    purged = await count(tx, Query.ERASURE_PURGE_SNAPSHOTS, persona_id=persona_id, **versions)
    await fetch(tx, Query.ERASURE_RELINK_SNAPSHOTS, persona_id=persona_id, **versions)
    await fetch(tx, Query.ERASURE_CLEAR_REVIEW, persona_id=persona_id, **{"from": from_version})
    return purged


async def _get_fact(tx: AsyncManagedTransaction, persona_id: str, fact_id: str) -> UserFact:
    row = await fetch_one(tx, Query.FACT_GET, persona_id=persona_id, fact_id=fact_id)
    if row is None:
        raise checks.fact_not_found(persona_id, fact_id)
    return fact_from(row["fact"])


async def _correct(tx: AsyncManagedTransaction, fact: UserFact) -> UserFact:
    stored = await _get_fact(tx, fact.persona_id, fact.id)
    if (stored.user_id, stored.episode_id) != (fact.user_id, fact.episode_id):
        raise ConflictError("a correction keeps the fact's user and episode", fact_id=fact.id)
    row = await fetch_one(
        tx,
        Query.FACT_CORRECT,
        persona_id=fact.persona_id,
        fact_id=fact.id,
        kind=fact.kind.value,
        text=fact.text,
        severity=fact.severity,
        retracted=fact.retracted,
    )
    assert row is not None
    return fact_from(row["fact"])


async def _add_fact(tx: AsyncManagedTransaction, fact: UserFact) -> UserFact:
    """Under the persona's lock (which enrichment commits also take), so that two
    concurrent adds of the same text store it once."""
    await lock_persona(tx, fact.persona_id)
    ids = {"persona_id": fact.persona_id}
    source = await fetch_one(tx, Query.EPISODE_GET, **ids, episode_id=fact.episode_id)
    checks.fact_source(fact, None if source is None else episode_from(source["episode"]).user_id)
    known = await fetch(tx, Query.FACT_LIST, **ids, user_id=fact.user_id)
    held = checks.held_fact([fact_from(r["fact"]) for r in known], fact.text)
    if held is not None:
        return held
    wrote = await count(tx, Query.ENRICHMENT_CREATE_FACTS, **ids, facts=[codec.encode(fact)])
    checks.wrote_all("a fact names an unknown user or episode", fact.persona_id, 1, wrote)
    return await _get_fact(tx, fact.persona_id, fact.id)


async def _delete_persona(tx: AsyncManagedTransaction, persona_id: str, record: Erasure) -> None:
    await lock_persona(tx, persona_id)
    await fetch(tx, Query.ERASURE_DELETE_PERSONA, persona_id=persona_id)
    await fetch(tx, Query.ERASURE_CREATE, erasure=codec.encode(record, drop_none=True))


class Neo4jErasure(Neo4jAggregate):
    """The ``ErasureStore`` part of the Neo4j store."""

    async def erasure_state(
        self, persona_id: str, *, user_id: str | None = None, episode_id: str | None = None
    ) -> ErasureState:
        """What erasing the user's episodes (or one episode) reads, in one transaction."""
        if (user_id is None) == (episode_id is None):
            raise ValueError("name a user or an episode")
        return await self._db.read("erasure_state", _state, persona_id, user_id, episode_id)

    async def commit_erasure(self, commit: ErasureCommit) -> None:
        """Apply an erasure in one transaction (``ConflictError`` if the persona moved)."""
        await self._db.write("commit_erasure", _commit, commit)

    async def purge_snapshots(
        self, persona_id: str, *, from_version: int, below_version: int
    ) -> int:
        """Delete the reviewed versions, relink the chain, clear the review marker."""
        return await self._db.write(
            "purge_snapshots", _purge, persona_id, from_version, below_version
        )

    async def get_fact(self, persona_id: str, fact_id: str) -> UserFact:
        """Any fact of the persona (``NotFoundError`` when unknown)."""
        return await self._db.read("get_fact", _get_fact, persona_id, fact_id)

    async def correct_fact(self, fact: UserFact) -> UserFact:
        """Replace a stored fact's kind, text, severity and retraction."""
        return await self._db.write("correct_fact", _correct, fact)

    async def add_fact(self, fact: UserFact) -> UserFact:
        """Store a fact of a user's exchange unless the user holds the same one."""
        return await self._db.write("add_fact", _add_fact, fact)

    async def delete_persona(self, persona_id: str, record: Erasure) -> None:
        """Remove the persona and everything it owns but its erasure records."""
        await self._db.write("delete_persona", _delete_persona, persona_id, record)

    async def list_erasures(self, persona_id: str) -> list[Erasure]:
        """The persona's erasure records, oldest first."""
        rows = await self._db.fetch("list_erasures", Query.ERASURE_LIST, persona_id=persona_id)
        return [erasure_from(r["erasure"]) for r in rows]
