"""Forgetting and correcting on Neo4j: the erasure commit (episodes out with what hangs off
them, NEXT chains relinked, opinions replaced by the replay, snapshot versions that may
quote the erased material reverted), fact corrections (merging into a fact that says the
same), persona deletion (with its API key grants), the ``(:Erasure)`` audit nodes and the
store's audit key.

An erasure locks the persona first, like the enrichment commit, then checks its interaction
count and CURRENT snapshot, so an enrichment or a snapshot committing meanwhile makes one of
the two retry.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from neo4j import AsyncManagedTransaction

from sonality.errors import PersonaNotFound
from sonality.models import (
    Belief,
    Erasure,
    ErasureCommit,
    ErasureState,
    ReflectionPoint,
    SnapshotRevert,
    SnapshotVersion,
    StoredEvidence,
    UserFact,
)
from sonality.storage import checks, shapes
from sonality.storage.neo4j import codec
from sonality.storage.neo4j.cypher import Query
from sonality.storage.neo4j.enrichment import belief_props, fact_props
from sonality.storage.neo4j.episodes import episode_from
from sonality.storage.neo4j.executor import Neo4jAggregate, count, fetch, fetch_one, lock_persona
from sonality.storage.neo4j.keys import key_from
from sonality.storage.neo4j.personas import persona_from

__all__ = [
    "Neo4jErasure",
    "audit_key",
    "erasure_from",
    "fact_from",
    "revert_snapshots",
    "snapshot_versions",
]


def erasure_from(props: Any) -> Erasure:
    return Erasure.model_validate(codec.decode(props, Erasure))


def fact_from(props: Any) -> UserFact:
    return UserFact.model_validate(codec.decode(props, UserFact))


async def snapshot_versions(tx: AsyncManagedTransaction, persona_id: str) -> list[SnapshotVersion]:
    rows = await fetch(tx, Query.ERASURE_SNAPSHOTS, persona_id=persona_id)
    return [SnapshotVersion.model_validate(r) for r in rows]


async def _facts_of(
    tx: AsyncManagedTransaction, persona_id: str, ids: Sequence[str]
) -> list[UserFact]:
    """The facts that name one of the episodes ``ids`` as a source."""
    rows = await fetch(tx, Query.ERASURE_FACTS, persona_id=persona_id, ids=list(ids))
    return [fact_from(r["fact"]) for r in rows]


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
    facts = int(counts["facts"])
    if user_id is None:
        ids = [e.id for e in removed]
        facts = len(checks.facts_after_erasure(await _facts_of(tx, persona_id, ids), set(ids))[1])
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
        snapshots=tuple(await snapshot_versions(tx, persona_id)),
        facts=facts,
        insights=int(counts["insights"]),
    )


async def _remove_episodes(tx: AsyncManagedTransaction, commit: ErasureCommit) -> None:
    pid = commit.persona_id
    ids = list(commit.episode_ids)
    if commit.user_id is None:  # a fact another exchange backs stays, backed by that one
        backed, gone = checks.facts_after_erasure(await _facts_of(tx, pid, ids), set(ids))
        rows = [
            {"id": f.id, "episode_id": f.episode_id, "also_from": list(f.also_from)} for f in backed
        ]
        await fetch(tx, Query.ERASURE_REFACT, persona_id=pid, kept=rows, gone=gone)
        await fetch(tx, Query.ERASURE_FORGET_AFFECT, persona_id=pid, ids=ids)
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
    moved = [
        {"id": r.id, "interaction_count": r.interaction_count, "advice": list(r.advice)}
        for r in commit.reflections
    ]
    await fetch(tx, Query.ERASURE_REINDEX_REFLECTIONS, persona_id=pid, rows=moved)


async def revert_snapshots(
    tx: AsyncManagedTransaction, persona_id: str, revert: SnapshotRevert
) -> None:
    """Write the new CURRENT (the clean source version's text, or the core identity),
    then delete the reverted versions and relink the PREVIOUS chain."""
    if revert.version is not None:
        await fetch(
            tx,
            Query.ERASURE_REVERT_SNAPSHOT,
            persona_id=persona_id,
            version=revert.version,
            source=revert.source,
            reason=revert.reason,
            created_at=codec.time_in(revert.created_at),
        )
    await fetch(
        tx, Query.ERASURE_REMOVE_SNAPSHOTS, persona_id=persona_id, versions=list(revert.removed)
    )


async def _commit(tx: AsyncManagedTransaction, commit: ErasureCommit) -> None:
    pid = commit.persona_id
    row = await fetch_one(tx, Query.PERSONA_LOCK, persona_id=pid)
    if row is None:
        raise PersonaNotFound("no such persona", persona_id=pid)
    current = await fetch_one(tx, Query.SNAPSHOT_CURRENT, persona_id=pid)
    version = None if current is None or current["snapshot"] is None else current["snapshot"]
    checks.erasure_may_commit(
        commit, int(row["interaction_count"]), None if version is None else int(version["version"])
    )
    await _remove_episodes(tx, commit)
    if commit.replay_from is not None:
        await _replace_opinions(tx, commit)
    if commit.snapshots is not None:
        await revert_snapshots(tx, pid, commit.snapshots)
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
    """Under the persona's lock (which adds and enrichment commits also take), so the
    active facts read are those the correction is written among."""
    await lock_persona(tx, fact.persona_id)
    stored = await _get_fact(tx, fact.persona_id, fact.id)
    known = await fetch(tx, Query.FACT_LIST, persona_id=fact.persona_id, user_id=fact.user_id)
    write, merged = checks.corrected_fact(stored, fact, [fact_from(r["fact"]) for r in known])
    row = await fetch_one(
        tx,
        Query.FACT_CORRECT,
        persona_id=fact.persona_id,
        fact_id=write.id,
        merged=None if merged is None else merged.id,
        kind=write.kind.value,
        text=write.text,
        severity=write.severity,
        retracted=write.retracted,
        also_from=list(write.also_from),
        active_key=checks.active_key(write),
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
    wrote = await count(tx, Query.ENRICHMENT_CREATE_FACTS, **ids, facts=[fact_props(fact)])
    checks.wrote_all("a fact names an unknown user or episode", fact.persona_id, 1, wrote)
    return await _get_fact(tx, fact.persona_id, fact.id)


async def _ungrant(tx: AsyncManagedTransaction, persona_id: str, at: datetime) -> None:
    """Take the deleted persona from every API key that grants it: a key left with no
    persona is revoked (its list stays, so it is not read as a global key)."""
    keys = [key_from(r["key"]) for r in await fetch(tx, Query.KEY_LIST)]
    rows = []
    for key in keys:
        if persona_id not in key.persona_ids:
            continue
        left = checks.without_persona(key, persona_id, at)
        revoked = None if left.revoked_at is None else codec.time_in(left.revoked_at)
        rows.append(
            {
                "id": key.id,
                "persona_ids": list(left.persona_ids),
                "incarnations": list(left.incarnations),
                "revoked_at": revoked,
            }
        )
    await fetch(tx, Query.KEY_UNGRANT, rows=rows)


async def _delete_persona(tx: AsyncManagedTransaction, persona_id: str, record: Erasure) -> None:
    await lock_persona(tx, persona_id)
    await fetch(tx, Query.ERASURE_DELETE_PERSONA, persona_id=persona_id)
    await _ungrant(tx, persona_id, record.created_at)
    await fetch(tx, Query.ERASURE_CREATE, erasure=codec.encode(record, drop_none=True))


async def audit_key(tx: AsyncManagedTransaction) -> bytes:
    """The store's secret for audit subjects, made on first use."""
    row = await fetch_one(tx, Query.ERASURE_AUDIT_KEY, value=secrets.token_hex(32))
    assert row is not None  # MERGE always returns its node
    return bytes.fromhex(str(row["value"]))


class Neo4jErasure(Neo4jAggregate):
    """The ``ErasureStore`` part of the Neo4j store."""

    async def erasure_state(
        self, persona_id: str, *, user_id: str | None = None, episode_id: str | None = None
    ) -> ErasureState:
        """What erasing the user's episodes (or one episode) reads, in one transaction."""
        checks.erasure_target(user_id, episode_id)
        return await self._db.read("erasure_state", _state, persona_id, user_id, episode_id)

    async def commit_erasure(self, commit: ErasureCommit) -> None:
        """Apply an erasure in one transaction (``ConflictError`` if the persona moved)."""
        await self._db.write("commit_erasure", _commit, commit)

    async def audit_key(self) -> bytes:
        """The store's secret for audit subjects (made on first use)."""
        return await self._db.write("audit_key", audit_key)

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
        """Remove the persona and everything it owns but its erasure records, and take it
        from every API key's grants (a key left with none is revoked), in one
        transaction."""
        await self._db.write("delete_persona", _delete_persona, persona_id, record)

    async def list_erasures(self, persona_id: str) -> list[Erasure]:
        """The persona's erasure records, oldest first."""
        rows = await self._db.fetch("list_erasures", Query.ERASURE_LIST, persona_id=persona_id)
        return [erasure_from(r["erasure"]) for r in rows]
