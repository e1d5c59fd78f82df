"""What enrichment writes on Neo4j, and the reads of it: the one-transaction enrichment
commit, beliefs with their provenance edges, staged updates, insights, user facts.

``(:Episode)-[:SUPPORTS|CONTRADICTS {delta}]->(:Belief)-[:ABOUT]->(:Topic)``,
``(:Episode)-[:STAGED]->(:StagedUpdate)``, ``(:Episode)-[:YIELDED]->(:Insight)``,
``(:User)-[:HAS_FACT]->(:UserFact)-[:FROM]->(:Episode)``,
``(:Episode)-[:MENTIONS]->(:Topic)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neo4j import AsyncManagedTransaction

from sonality.errors import NotFoundError, PersonaNotFound
from sonality.models import (
    Belief,
    EnrichmentBacklog,
    EnrichmentCommit,
    EnrichmentState,
    Episode,
    EpisodeDraft,
    Insight,
    InsightCommit,
    InsightState,
    InsightStatus,
    ProvenanceEdge,
    StagedInfluence,
    StagedUpdate,
    UserFact,
    UserInfluence,
)
from sonality.storage import checks, shapes
from sonality.storage.neo4j import codec
from sonality.storage.neo4j.cypher import Query
from sonality.storage.neo4j.episodes import (
    appended,
    episode_from,
    write_append,
)
from sonality.storage.neo4j.executor import (
    Neo4jAggregate,
    count,
    fetch,
    fetch_one,
    fetch_plain,
    lock_persona,
    write_matched,
)
from sonality.storage.neo4j.personas import persona_from

__all__ = ["Neo4jEnrichment", "belief_props", "fact_props", "provenance_from"]


def belief_props(belief: Belief) -> dict[str, Any]:
    """A belief's properties, with ``strength`` (|position| x confidence: what `context`
    reads the persona's strongest beliefs by, through an index)."""
    return {**codec.encode(belief), "strength": abs(belief.position) * belief.confidence}


def fact_props(fact: UserFact) -> dict[str, Any]:
    """A fact's properties with its ``active_key`` (the uniqueness constraint keeps one
    active fact per user and key; a retracted fact has none)."""
    props = codec.encode(fact)
    key = checks.active_key(fact)
    return props if key is None else {**props, "active_key": key}


def provenance_from(row: Any) -> ProvenanceEdge:
    return ProvenanceEdge.model_validate(codec.decode(row, ProvenanceEdge))


async def _upsert_beliefs(tx: AsyncManagedTransaction, beliefs: Sequence[Belief]) -> None:
    """Upsert by (persona_id, topic); ``PersonaNotFound`` if a belief's persona is unknown."""
    if not beliefs:
        return
    row = await fetch_one(tx, Query.BELIEF_UPSERT, beliefs=[belief_props(b) for b in beliefs])
    found = set(row["persona_ids"]) if row else set()
    missing = sorted({b.persona_id for b in beliefs} - found)
    if missing:
        raise PersonaNotFound("no such persona", persona_id=missing[0])


def _commit_params(commit: EnrichmentCommit) -> dict[str, Any]:
    return {
        "episode_id": commit.episode_id,
        "expected_interaction_count": commit.expected_interaction_count,
        "expected_reflection_at": commit.expected_reflection_at,
        "fields": shapes.enriched_episode(commit),
        "interaction_count": commit.interaction_count,
        "disagreement_window": list(commit.disagreement_window),
        "shift_total": commit.shift_total,
        "insight": None if commit.insight is None else codec.encode(commit.insight),
        "facts": [fact_props(f) for f in commit.facts],
        "merged_facts": [
            {
                "id": f.id,
                "user_id": f.user_id,
                "severity": f.severity,
                "also_from": list(f.also_from),
            }
            for f in commit.merged_facts
        ],
        "staged": [codec.encode(s) for s in commit.staged],
        "committed_staged_ids": sorted(set(commit.committed_staged_ids)),
        "beliefs": [belief_props(b) for b in commit.beliefs],
        "topics": list(commit.topics),
        "edges": [codec.encode(e) for e in commit.provenance],
    }


def _check(commit: EnrichmentCommit, row: dict[str, Any]) -> None:
    """What the statement reported for one commit: a raise rolls the transaction back."""
    pid = commit.persona_id
    checks.enrichment_may_commit(
        commit, row["found_count"], row["found_status"], row["found_reflection_at"]
    )
    checks.wrote_all(
        "a fact names a user or episode the persona lacks",
        pid,
        len(commit.facts),
        row["facts_written"],
    )
    checks.wrote_all(
        "a merged fact is not an active fact of its user",
        pid,
        len(commit.merged_facts),
        row["facts_merged"],
        conflict=True,
    )
    checks.wrote_all(
        "a staged update names an unknown episode", pid, len(commit.staged), row["staged_written"]
    )
    checks.staged_committed(pid, len(set(commit.committed_staged_ids)), row["staged_committed"])
    checks.wrote_all(
        "a provenance edge names an unknown episode or belief",
        pid,
        len(commit.provenance),
        row["edges_written"],
    )


async def _commit_all(
    tx: AsyncManagedTransaction, commits: Sequence[EnrichmentCommit]
) -> list[Episode]:
    """Consecutive commits of one persona in one statement (``enrichment/commit``): the
    checks of each run in it, under the persona lock, against what the commits before it
    left; what it reports back decides here whether the transaction stands (a raise rolls
    it back). Returns the enriched episodes as the statement left them."""
    pid = checks.enrichment_chunk(commits)
    rows = await fetch_plain(
        tx,
        Query.ENRICHMENT_COMMIT,
        persona_id=pid,
        # $opt: the users' list may be empty (see sonality/storage/neo4j/cypher.py)
        opt={
            "fact_users": sorted({f.user_id for c in commits for f in (*c.facts, *c.merged_facts)})
        },
        commits=[_commit_params(c) for c in commits],
    )
    if not rows:
        raise PersonaNotFound("no such persona", persona_id=pid)
    for commit, row in zip(commits, rows, strict=True):
        _check(commit, row)
    return [episode_from(codec.times_from_micros(row["episode"], "created_at")) for row in rows]


def _state_from(row: dict[str, Any]) -> EnrichmentState:
    """The planning state of an ``enrichment/state`` or ``enrichment/backlog`` row (the
    latter projects times as ``<name>_us`` microseconds and reads no belief)."""
    micros = codec.times_from_micros
    return EnrichmentState(
        persona=persona_from(micros(row["persona"], "created_at")),
        beliefs=tuple(
            Belief.model_validate(codec.decode(b, Belief)) for b in row.get("beliefs", ())
        ),
        staged=tuple(
            StagedUpdate.model_validate(codec.decode(s, StagedUpdate)) for s in row["staged"]
        ),
        facts=tuple(
            UserFact.model_validate(codec.decode(micros(f, "created_at"), UserFact))
            for f in row["facts"]
        ),
        influence=tuple(StagedInfluence.model_validate(r) for r in row["influence"]),
    )


def _backlog_params(persona_id: str, limit: int, count: bool, window: int) -> dict[str, Any]:
    """The parameters of ``enrichment/backlog``."""
    return {"persona_id": persona_id, "limit": limit, "count": count, "influence_window": window}


def _backlog_from(persona_id: str, rows: list[dict[str, Any]]) -> EnrichmentBacklog:
    if not rows:
        raise PersonaNotFound("no such persona", persona_id=persona_id)
    row = rows[0]
    return EnrichmentBacklog(
        episodes=tuple(
            episode_from(codec.times_from_micros(e, "created_at")) for e in row["episodes"]
        ),
        state=_state_from(row),
        pending=row["pending"],
    )


async def _backlog(
    tx: AsyncManagedTransaction, persona_id: str, limit: int, count: bool, window: int
) -> EnrichmentBacklog:
    params = _backlog_params(persona_id, limit, count, window)
    return _backlog_from(persona_id, await fetch_plain(tx, Query.ENRICHMENT_BACKLOG, **params))


async def _state(
    tx: AsyncManagedTransaction, persona_id: str, user_ids: list[str], since: int
) -> EnrichmentState:
    row = await fetch_one(
        tx, Query.ENRICHMENT_STATE, persona_id=persona_id, user_ids=user_ids, since=since
    )
    if row is None:
        raise PersonaNotFound("no such persona", persona_id=persona_id)
    return _state_from(row)


async def _commit_insight(tx: AsyncManagedTransaction, commit: InsightCommit) -> None:
    """The retried insight part: checked pending under the persona lock, then written."""
    ids = {"persona_id": commit.persona_id, "episode_id": commit.episode_id}
    await lock_persona(tx, commit.persona_id)
    state = await fetch_one(tx, Query.INSIGHT_STATE, **ids)
    checks.insight_may_commit(commit, None if state is None else state["status"])
    insight = None if commit.insight is None else codec.encode(commit.insight)
    await fetch(
        tx,
        Query.INSIGHT_COMMIT,
        **ids,
        opt={  # may be null: in a map, one parameter type (storage/neo4j/cypher.py)
            "text": None if commit.insight is None else commit.insight.text,
            "insight": insight,
        },
    )


class Neo4jEnrichment(Neo4jAggregate):
    """The ``EnrichmentStore`` part of the Neo4j store."""

    async def commit_enrichment(self, commit: EnrichmentCommit) -> None:
        """Apply everything one interaction changed, in one transaction."""
        await self._db.write("commit_enrichment", _commit_all, (commit,))

    async def commit_enrichments(self, commits: Sequence[EnrichmentCommit]) -> list[Episode]:
        """Apply consecutive enrichment commits of one persona in one transaction, each
        checked as ``commit_enrichment`` checks it; any refusal rolls them all back.
        Returns the enriched episodes, in order."""
        if not commits:
            return []
        return await self._db.write("commit_enrichments", _commit_all, tuple(commits))

    async def enrichment_backlog(
        self, persona_id: str, *, limit: int, influence_window: int, count: bool = False
    ) -> EnrichmentBacklog:
        """The persona's oldest pending episodes with their planning state (and how many
        are pending when ``count``), in one statement."""
        return await self._db.read(
            "enrichment_backlog",
            _backlog,
            persona_id,
            checks.limit(limit),
            count,
            influence_window,
        )

    async def append_episode_with_backlog(
        self, draft: EpisodeDraft, *, influence_window: int
    ) -> tuple[Episode, bool, EnrichmentBacklog]:
        """``append_episode``, then the persona's backlog for one episode with the pending
        count, in one statement (``episode/append_backlog``, one auto-commit unit of work as
        the append's; its write lock is the conversation's)."""
        pid = draft.persona_id

        def read(rows: list[dict[str, Any]]) -> tuple[Episode, bool, EnrichmentBacklog]:
            episode, created = appended(rows, draft)
            return episode, created, _backlog_from(pid, rows)

        extra = _backlog_params(pid, 1, True, influence_window)
        return await write_append(self._db, Query.EPISODE_APPEND_BACKLOG, draft, read, **extra)

    async def enrichment_beliefs(self, persona_id: str, topics: Sequence[str]) -> list[Belief]:
        """The persona's beliefs of ``topics`` (retired too), by topic, in one statement (none
        for no topic: an empty list is another type to the server than a list of strings,
        so the statement would be compiled a second time for an answer known here)."""
        if not topics:
            return []
        rows = await self._db.fetch(
            "enrichment_beliefs",
            Query.ENRICHMENT_BELIEFS,
            persona_id=persona_id,
            topics=sorted(set(topics)),
        )
        return [Belief.model_validate(codec.decode(r["belief"], Belief)) for r in rows]

    async def enrichment_state(
        self, persona_id: str, user_ids: Sequence[str], *, since_interaction: int
    ) -> EnrichmentState:
        """What planning the persona's next enrichments reads, in one statement."""
        return await self._db.read(
            "enrichment_state", _state, persona_id, sorted(set(user_ids)), since_interaction
        )

    async def commit_insight(self, commit: InsightCommit) -> None:
        """Apply a retried insight extraction in one transaction (``ConflictError`` when
        the episode's insight is no longer pending)."""
        await self._db.write("commit_insight", _commit_insight, commit)

    async def list_insight_retries(
        self, persona_id: str, *, status: InsightState = InsightState.PENDING, limit: int = 50
    ) -> list[Episode]:
        """Enriched episodes whose insight part is ``status`` (pending or failed), oldest
        first (by ``seq``)."""
        rows = await self._db.fetch(
            "list_insight_retries",
            Query.INSIGHT_RETRIES,
            persona_id=persona_id,
            status=InsightState(status).value,
            limit=checks.limit(limit),
        )
        return [episode_from(r["episode"]) for r in rows]

    async def count_insight_retries(self, persona_id: str) -> dict[str, int]:
        """``{"pending": n, "failed": n}`` insight parts."""
        rows = await self._db.fetch(
            "count_insight_retries", Query.INSIGHT_COUNT_RETRIES, persona_id=persona_id
        )
        return checks.insight_counts((r["status"], r["n"]) for r in rows)

    async def mark_insight_attempt(
        self, persona_id: str, episode_id: str, *, error: str, failed: bool
    ) -> None:
        """Count a failed insight retry; ``failed`` gives the insight part up."""
        found = await self._db.write(
            "mark_insight_attempt",
            write_matched,
            Query.INSIGHT_MARK_ATTEMPT,
            persona_id=persona_id,
            episode_id=episode_id,
            error=checks.stored_error(error),
            failed=failed,
        )
        if not found:
            raise checks.episode_not_found(persona_id, episode_id)

    async def requeue_failed_insights(
        self, persona_id: str, *, below_attempts: int | None = None
    ) -> int:
        """Failed insight parts back to pending; returns how many."""
        return await self._db.write(
            "requeue_failed_insights",
            count,
            Query.INSIGHT_REQUEUE_FAILED,
            persona_id=persona_id,
            opt={"below_attempts": below_attempts},
        )

    async def recent_influence(
        self, persona_id: str, user_id: str, *, since_interaction: int
    ) -> list[UserInfluence]:
        """The staged deltas of the user's episodes staged after ``since_interaction``,
        with their messages, by staged order."""
        rows = await self._db.fetch(
            "recent_influence",
            Query.STAGED_INFLUENCE,
            persona_id=persona_id,
            user_id=user_id,
            since=since_interaction,
        )
        return [UserInfluence.model_validate(row) for row in rows]

    async def upsert_beliefs(self, beliefs: Sequence[Belief]) -> None:
        """Insert or replace beliefs by (persona, topic)."""
        if beliefs:
            await self._db.write("upsert_beliefs", _upsert_beliefs, beliefs)

    async def list_beliefs(self, persona_id: str, *, include_retired: bool = False) -> list[Belief]:
        """Ordered by topic; active only unless ``include_retired``."""
        rows = await self._db.fetch(
            "list_beliefs",
            Query.BELIEF_LIST,
            persona_id=persona_id,
            include_retired=include_retired,
        )
        return [Belief.model_validate(codec.decode(r["belief"], Belief)) for r in rows]

    async def belief_evidence(
        self, persona_id: str, topic: str
    ) -> list[tuple[ProvenanceEdge, Episode]]:
        """Provenance edges into the belief with their episodes, oldest first."""
        rows = await self._db.fetch(
            "belief_evidence", Query.BELIEF_EVIDENCE, persona_id=persona_id, topic=topic
        )
        return [(provenance_from(r), episode_from(r["episode"])) for r in rows]

    async def list_staged(
        self, persona_id: str, *, due_by: int | None = None
    ) -> list[StagedUpdate]:
        """Uncommitted staged updates by (due_at, staged_at, id)."""
        rows = await self._db.fetch(
            "list_staged", Query.STAGED_LIST, persona_id=persona_id, opt={"due_by": due_by}
        )
        return [StagedUpdate.model_validate(codec.decode(r["staged"], StagedUpdate)) for r in rows]

    async def list_insights(
        self, persona_id: str, *, status: InsightStatus | None = None
    ) -> list[Insight]:
        """Oldest first (created_at, id)."""
        rows = await self._db.fetch(
            "list_insights",
            Query.INSIGHT_LIST,
            persona_id=persona_id,
            opt={"status": None if status is None else InsightStatus(status).value},
        )
        return [Insight.model_validate(codec.decode(r["insight"], Insight)) for r in rows]

    async def list_facts(self, persona_id: str, user_id: str) -> list[UserFact]:
        """The user's facts that are not retracted, oldest first."""
        rows = await self._db.fetch(
            "list_facts", Query.FACT_LIST, persona_id=persona_id, user_id=user_id
        )
        return [UserFact.model_validate(codec.decode(r["fact"], UserFact)) for r in rows]

    async def retract_fact(self, persona_id: str, user_id: str, fact_id: str) -> None:
        """Mark a fact retracted (``NotFoundError`` if that user has no such fact)."""
        found = await self._db.write(
            "retract_fact",
            write_matched,
            Query.FACT_RETRACT,
            persona_id=persona_id,
            user_id=user_id,
            fact_id=fact_id,
        )
        if not found:
            raise NotFoundError(
                "no such fact", persona_id=persona_id, user_id=user_id, fact_id=fact_id
            )
