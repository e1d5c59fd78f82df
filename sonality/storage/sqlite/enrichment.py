"""What enrichment writes on SQLite, and the reads of it: the one-transaction enrichment
commit, beliefs with their provenance rows, staged updates, insights, user facts. Tables
``topics``, ``episode_topics``, ``beliefs``, ``provenance`` (the SUPPORTS / CONTRADICTS
edges), ``staged_updates``, ``insights``, ``user_facts``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from sonality.errors import NotFoundError
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
from sonality.storage.sqlite import codec
from sonality.storage.sqlite.episodes import append_tx, episode_columns, episode_from
from sonality.storage.sqlite.executor import (
    SqliteAggregate,
    chunks,
    insert_statement,
    persona_counters,
    placeholders,
)
from sonality.storage.sqlite.personas import get_persona
from sonality.storage.sqlite.vectors import encode_embedding

__all__ = [
    "BELIEF_FIELDS",
    "FACT_FIELDS",
    "INSERT_FACT",
    "STAGED_FIELDS",
    "SqliteEnrichment",
    "active_facts",
    "fact_row",
    "insert_insight",
]

BELIEF_FIELDS = (
    "persona_id",
    "topic",
    "position",
    "confidence",
    "evidence_count",
    "uncertainty",
    "last_reinforced_at",
    "status",
    "created_at",
    "updated_at",
    "moves_at",
    "moves_from",
    "reinforced_confidence",
)
STAGED_FIELDS = (
    "persona_id",
    "id",
    "topic",
    "signed_delta",
    "staged_at",
    "due_at",
    "episode_id",
    "committed_at",
)
_INSIGHT_FIELDS = ("persona_id", "id", "episode_id", "text", "status", "created_at")
FACT_FIELDS = (
    "persona_id",
    "id",
    "user_id",
    "kind",
    "text",
    "severity",
    "episode_id",
    "created_at",
    "retracted",
    "also_from",
)
_UPDATE_EPISODE = (
    f"UPDATE episodes SET {', '.join(f'{c} = :{c}' for c in shapes.ENRICHED_FIELDS)} "
    "WHERE persona_id = :persona_id AND id = :episode_id"
)
_UPSERT_BELIEF = (
    insert_statement("beliefs", BELIEF_FIELDS)
    + " ON CONFLICT (persona_id, topic) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in BELIEF_FIELDS[2:])
)
_INSERT_STAGED = insert_statement("staged_updates", STAGED_FIELDS)
_INSERT_INSIGHT = insert_statement("insights", _INSIGHT_FIELDS)
INSERT_FACT = insert_statement("user_facts", (*FACT_FIELDS, "active_key"))
"""A fact with its ``active_key`` (``fact_row``): the unique index keeps one active fact
per user and key."""


def fact_row(fact: UserFact) -> dict[str, object]:
    """The named parameters of ``INSERT_FACT``."""
    return {**codec.encode(fact), "active_key": checks.active_key(fact)}


_PROVENANCE = ("episode_id", "topic", "delta", "committed_at")


def insert_insight(conn: sqlite3.Connection, insight: Insight) -> None:
    conn.execute(_INSERT_INSIGHT, codec.encode(insight))


def _ensure_topics(conn: sqlite3.Connection, persona_id: str, topics: Iterable[str]) -> None:
    conn.executemany(
        "INSERT INTO topics (persona_id, name) VALUES (?, ?) ON CONFLICT DO NOTHING",
        [(persona_id, topic) for topic in dict.fromkeys(topics)],
    )


def _upsert_beliefs(conn: sqlite3.Connection, beliefs: Sequence[Belief]) -> None:
    for persona_id in dict.fromkeys(b.persona_id for b in beliefs):
        _ensure_topics(conn, persona_id, (b.topic for b in beliefs if b.persona_id == persona_id))
    conn.executemany(_UPSERT_BELIEF, [codec.encode(b) for b in beliefs])


def _commit(conn: sqlite3.Connection, commit: EnrichmentCommit) -> None:
    """Check the persona count and the pending episode, then write every part of the
    commit; any failure raises and the executor rolls everything back."""
    pid = commit.persona_id
    persona = persona_counters(conn, pid)
    status = conn.execute(
        "SELECT enrichment_status FROM episodes WHERE persona_id = ? AND id = ?",
        (pid, commit.episode_id),
    ).fetchone()
    checks.enrichment_may_commit(
        commit,
        int(persona["interaction_count"]),
        None if status is None else str(status[0]),
        int(persona["last_reflection_at"]),
    )
    fields = codec.encode_fields(shapes.enriched_episode(commit))
    conn.execute(_UPDATE_EPISODE, {**fields, "persona_id": pid, "episode_id": commit.episode_id})
    conn.execute(
        "UPDATE personas SET interaction_count = ?, disagreement_window = ?, "
        "shift_since_reflection = shift_since_reflection + ? WHERE id = ?",
        (
            commit.interaction_count,
            codec.encode_value(commit.disagreement_window),
            commit.shift_total,
            pid,
        ),
    )
    _ensure_topics(conn, pid, commit.topics)
    conn.executemany(
        "INSERT INTO episode_topics (persona_id, episode_id, topic) VALUES (?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        [(pid, commit.episode_id, topic) for topic in dict.fromkeys(commit.topics)],
    )
    if commit.insight is not None:
        insert_insight(conn, commit.insight)
    conn.executemany(INSERT_FACT, [fact_row(f) for f in commit.facts])
    for fact in commit.merged_facts:  # disclosed again: one more exchange backs it
        cursor = conn.execute(
            "UPDATE user_facts SET severity = ?, also_from = ? "
            "WHERE persona_id = ? AND user_id = ? AND id = ? AND NOT retracted",
            (fact.severity, codec.encode_value(fact.also_from), pid, fact.user_id, fact.id),
        )
        checks.wrote_all(
            "a merged fact is not an active fact of its user",
            pid,
            1,
            cursor.rowcount,
            conflict=True,
        )
    conn.executemany(_INSERT_STAGED, [codec.encode(s) for s in commit.staged])
    committed = 0
    for staged_id in commit.committed_staged_ids:
        cursor = conn.execute(
            "UPDATE staged_updates SET committed_at = ? "
            "WHERE persona_id = ? AND id = ? AND committed_at IS NULL",
            (commit.interaction_count, pid, staged_id),
        )
        committed += cursor.rowcount
    checks.staged_committed(pid, len(commit.committed_staged_ids), committed)
    _upsert_beliefs(conn, commit.beliefs)
    conn.executemany(
        "INSERT INTO provenance (persona_id, episode_id, topic, kind, delta, committed_at) "
        "VALUES (:persona_id, :episode_id, :topic, :kind, :delta, :committed_at)",
        [{**codec.encode(e), "persona_id": pid, "kind": e.kind} for e in commit.provenance],
    )


def _commit_insight(conn: sqlite3.Connection, commit: InsightCommit) -> None:
    """The retried insight part: checked pending, then the episode and the insight row."""
    pid = commit.persona_id
    persona_counters(conn, pid)
    row = conn.execute(
        "SELECT coalesce(insight_status, 'none') FROM episodes WHERE persona_id = ? AND id = ?",
        (pid, commit.episode_id),
    ).fetchone()
    checks.insight_may_commit(commit, None if row is None else row[0])
    conn.execute(
        "UPDATE episodes SET insight = ?, insight_status = ? WHERE persona_id = ? AND id = ?",
        (
            None if commit.insight is None else commit.insight.text,
            InsightState.EXTRACTED.value,
            pid,
            commit.episode_id,
        ),
    )
    if commit.insight is not None:
        insert_insight(conn, commit.insight)


def _insight_retries(
    conn: sqlite3.Connection, persona_id: str, status: str, limit: int
) -> list[Episode]:
    rows = conn.execute(
        f"SELECT {episode_columns()} FROM episodes WHERE persona_id = ? "
        "AND insight_status = ? ORDER BY seq LIMIT ?",
        (persona_id, status, checks.limit(limit)),
    )
    return [episode_from(row) for row in rows]


def _count_insight_retries(conn: sqlite3.Connection, persona_id: str) -> dict[str, int]:
    rows = conn.execute(
        "SELECT insight_status, count(*) FROM episodes WHERE persona_id = ? "
        "AND insight_status IN ('pending', 'failed') GROUP BY insight_status",
        (persona_id,),
    )
    return checks.insight_counts((str(status), int(n)) for status, n in rows)


def _mark_insight_attempt(
    conn: sqlite3.Connection, persona_id: str, episode_id: str, error: str, failed: bool
) -> None:
    cursor = conn.execute(
        "UPDATE episodes SET insight_attempts = insight_attempts + 1, enrichment_error = ?, "
        "insight_status = CASE WHEN ? AND insight_status = 'pending' THEN 'failed' "
        "ELSE insight_status END WHERE persona_id = ? AND id = ?",
        (checks.stored_error(error), failed, persona_id, episode_id),
    )
    if cursor.rowcount == 0:
        raise checks.episode_not_found(persona_id, episode_id)


def _requeue_insights(conn: sqlite3.Connection, persona_id: str, below: int | None) -> int:
    cursor = conn.execute(
        "UPDATE episodes SET insight_status = 'pending' WHERE persona_id = ? "
        "AND insight_status = 'failed' AND (? IS NULL OR insight_attempts < ?)",
        (persona_id, below, below),
    )
    return cursor.rowcount


def _influence(
    conn: sqlite3.Connection, persona_id: str, user_id: str, since: int
) -> list[UserInfluence]:
    rows = conn.execute(
        "SELECT s.episode_id, s.topic, s.signed_delta, s.staged_at, e.user_message AS message "
        "FROM staged_updates AS s JOIN episodes AS e "
        "ON e.persona_id = s.persona_id AND e.id = s.episode_id "
        "WHERE s.persona_id = ? AND s.staged_at > ? AND e.user_id = ? "
        "ORDER BY s.staged_at, s.id",
        (persona_id, since, user_id),
    )
    return [UserInfluence.model_validate(codec.decode(row)) for row in rows]


def _upsert(conn: sqlite3.Connection, beliefs: Sequence[Belief]) -> None:
    for persona_id in dict.fromkeys(b.persona_id for b in beliefs):
        persona_counters(conn, persona_id)
    _upsert_beliefs(conn, beliefs)


def _beliefs(conn: sqlite3.Connection, persona_id: str, include_retired: bool) -> list[Belief]:
    rows = conn.execute(
        f"SELECT {', '.join(BELIEF_FIELDS)} FROM beliefs WHERE persona_id = ? "
        "AND (? OR status = 'active') ORDER BY topic",
        (persona_id, include_retired),
    )
    return [Belief.model_validate(codec.decode(row)) for row in rows]


_EVIDENCE = (
    f"SELECT {', '.join(f'p.{c} AS p_{c}' for c in _PROVENANCE)}, {episode_columns('e', 'e_')} "
    "FROM provenance AS p JOIN episodes AS e ON e.persona_id = p.persona_id "
    "AND e.id = p.episode_id WHERE p.persona_id = ? AND p.topic = ? "
    "ORDER BY p.committed_at, e.seq, p.id"
)


def _evidence(
    conn: sqlite3.Connection, persona_id: str, topic: str
) -> list[tuple[ProvenanceEdge, Episode]]:
    rows = conn.execute(_EVIDENCE, (persona_id, topic))
    return [
        (
            ProvenanceEdge.model_validate(codec.decode(row, prefix="p_")),
            episode_from(row, prefix="e_"),
        )
        for row in rows
    ]


def _staged(conn: sqlite3.Connection, persona_id: str, due_by: int | None) -> list[StagedUpdate]:
    rows = conn.execute(
        f"SELECT {', '.join(STAGED_FIELDS)} FROM staged_updates WHERE persona_id = ? "
        "AND committed_at IS NULL AND (? IS NULL OR due_at <= ?) "
        "ORDER BY due_at, staged_at, id",
        (persona_id, due_by, due_by),
    )
    return [StagedUpdate.model_validate(codec.decode(row)) for row in rows]


def _insights(
    conn: sqlite3.Connection, persona_id: str, status: InsightStatus | None
) -> list[Insight]:
    value = None if status is None else InsightStatus(status).value
    rows = conn.execute(
        f"SELECT {', '.join(_INSIGHT_FIELDS)} FROM insights WHERE persona_id = ? "
        "AND (? IS NULL OR status = ?) ORDER BY created_at, id",
        (persona_id, value, value),
    )
    return [Insight.model_validate(codec.decode(row)) for row in rows]


def active_facts(conn: sqlite3.Connection, persona_id: str, user_id: str) -> list[UserFact]:
    rows = conn.execute(
        f"SELECT {', '.join(FACT_FIELDS)} FROM user_facts WHERE persona_id = ? "
        "AND user_id = ? AND retracted = 0 ORDER BY created_at, id",
        (persona_id, user_id),
    )
    return [UserFact.model_validate(codec.decode(row)) for row in rows]


def _beliefs_of(conn: sqlite3.Connection, persona_id: str, topics: Sequence[str]) -> list[Belief]:
    wanted = sorted(set(topics))
    found: list[Belief] = []
    for part in chunks(wanted):
        rows = conn.execute(
            f"SELECT {', '.join(BELIEF_FIELDS)} FROM beliefs WHERE persona_id = ? "
            f"AND topic IN ({placeholders(part)}) ORDER BY topic",
            (persona_id, *part),
        )
        found += [Belief.model_validate(codec.decode(row)) for row in rows]
    return found


def _state(
    conn: sqlite3.Connection,
    persona_id: str,
    user_ids: Sequence[str],
    since: int,
    beliefs: bool = True,
) -> EnrichmentState:
    persona = get_persona(conn, persona_id)
    users = sorted(set(user_ids))
    marks = ", ".join("?" for _ in users)
    facts = conn.execute(
        f"SELECT {', '.join(FACT_FIELDS)} FROM user_facts WHERE persona_id = ? "
        f"AND user_id IN ({marks}) AND retracted = 0",
        (persona_id, *users),
    )
    influence = conn.execute(
        "SELECT e.user_id, s.id AS staged_id, s.episode_id, s.topic, s.signed_delta, "
        "s.staged_at, e.user_message AS message "
        "FROM staged_updates AS s JOIN episodes AS e "
        "ON e.persona_id = s.persona_id AND e.id = s.episode_id "
        f"WHERE s.persona_id = ? AND s.staged_at > ? AND e.user_id IN ({marks})",
        (persona_id, since, *users),
    )
    return EnrichmentState(
        persona=persona,
        beliefs=tuple(_beliefs(conn, persona_id, True)) if beliefs else (),
        staged=tuple(_staged(conn, persona_id, None)),
        facts=tuple(UserFact.model_validate(codec.decode(row)) for row in facts),
        influence=tuple(StagedInfluence.model_validate(codec.decode(row)) for row in influence),
    )


def _commit_all(conn: sqlite3.Connection, commits: Sequence[EnrichmentCommit]) -> list[Episode]:
    pid = checks.enrichment_chunk(commits)
    for commit in commits:
        _commit(conn, commit)
    return [
        episode_from(
            conn.execute(
                f"SELECT {episode_columns()} FROM episodes WHERE persona_id = ? AND id = ?",
                (pid, commit.episode_id),
            ).fetchone()
        )
        for commit in commits
    ]


def _backlog(
    conn: sqlite3.Connection, persona_id: str, limit: int, count: bool, window: int
) -> EnrichmentBacklog:
    persona = get_persona(conn, persona_id)
    rows = conn.execute(
        f"SELECT {episode_columns()} FROM episodes "
        "WHERE persona_id = ? AND enrichment_status = 'pending' ORDER BY seq LIMIT ?",
        (persona_id, checks.limit(limit)),
    )
    episodes = tuple(episode_from(row) for row in rows)
    pending = None
    if count:
        pending = int(
            conn.execute(
                "SELECT count(*) FROM episodes "
                "WHERE persona_id = ? AND enrichment_status = 'pending'",
                (persona_id,),
            ).fetchone()[0]
        )
    since = persona.interaction_count + 1 - window
    state = _state(conn, persona_id, [e.user_id for e in episodes], since, beliefs=False)
    return EnrichmentBacklog(episodes=episodes, state=state, pending=pending)


def _retract(conn: sqlite3.Connection, persona_id: str, user_id: str, fact_id: str) -> None:
    cursor = conn.execute(
        "UPDATE user_facts SET retracted = 1, active_key = NULL "
        "WHERE persona_id = ? AND user_id = ? AND id = ?",
        (persona_id, user_id, fact_id),
    )
    if cursor.rowcount == 0:
        raise NotFoundError("no such fact", persona_id=persona_id, user_id=user_id, fact_id=fact_id)


class SqliteEnrichment(SqliteAggregate):
    """The ``EnrichmentStore`` part of the SQLite store."""

    async def commit_enrichment(self, commit: EnrichmentCommit) -> None:
        """Apply everything one interaction changed, in one transaction."""
        await self._db.write(_commit, commit)

    async def commit_enrichments(self, commits: Sequence[EnrichmentCommit]) -> list[Episode]:
        """Apply consecutive enrichment commits of one persona in one transaction, each
        checked as ``commit_enrichment`` checks it; any refusal rolls them all back.
        Returns the enriched episodes, in order."""
        if not commits:
            return []
        return await self._db.write(_commit_all, tuple(commits))

    async def enrichment_backlog(
        self, persona_id: str, *, limit: int, influence_window: int, count: bool = False
    ) -> EnrichmentBacklog:
        """The persona's oldest pending episodes with their planning state (and how many
        are pending when ``count``), in one read transaction."""
        return await self._db.read(_backlog, persona_id, limit, count, influence_window)

    async def append_episode_with_backlog(
        self, draft: EpisodeDraft, *, influence_window: int
    ) -> tuple[Episode, bool, EnrichmentBacklog]:
        """``append_episode``, then the persona's backlog for one episode with the pending
        count, in one write transaction."""
        dims = self._db.embedding_dimensions
        blob = None if draft.embedding is None else encode_embedding(draft.embedding, dims)

        def work(conn: sqlite3.Connection) -> tuple[Episode, bool, EnrichmentBacklog]:
            episode, created = append_tx(conn, draft, blob)
            return episode, created, _backlog(conn, draft.persona_id, 1, True, influence_window)

        return await self._db.run(work, write=True)

    async def enrichment_beliefs(self, persona_id: str, topics: Sequence[str]) -> list[Belief]:
        """The persona's beliefs of ``topics`` (retired too), by topic, in one read."""
        return await self._db.read(_beliefs_of, persona_id, tuple(topics))

    async def enrichment_state(
        self, persona_id: str, user_ids: Sequence[str], *, since_interaction: int
    ) -> EnrichmentState:
        """What planning the persona's next enrichments reads, in one read transaction."""
        return await self._db.read(_state, persona_id, tuple(user_ids), since_interaction)

    async def commit_insight(self, commit: InsightCommit) -> None:
        """Apply a retried insight extraction in one transaction (``ConflictError`` when
        the episode's insight is no longer pending)."""
        await self._db.write(_commit_insight, commit)

    async def list_insight_retries(
        self, persona_id: str, *, status: InsightState = InsightState.PENDING, limit: int = 50
    ) -> list[Episode]:
        """Enriched episodes whose insight part is ``status`` (pending or failed), oldest
        first (by ``seq``)."""
        return await self._db.read(_insight_retries, persona_id, InsightState(status).value, limit)

    async def count_insight_retries(self, persona_id: str) -> dict[str, int]:
        """``{"pending": n, "failed": n}`` insight parts."""
        return await self._db.read(_count_insight_retries, persona_id)

    async def mark_insight_attempt(
        self, persona_id: str, episode_id: str, *, error: str, failed: bool
    ) -> None:
        """Count a failed insight retry; ``failed`` gives the insight part up."""
        await self._db.write(_mark_insight_attempt, persona_id, episode_id, error, failed)

    async def requeue_failed_insights(
        self, persona_id: str, *, below_attempts: int | None = None
    ) -> int:
        """Failed insight parts back to pending; returns how many."""
        return await self._db.write(_requeue_insights, persona_id, below_attempts)

    async def recent_influence(
        self, persona_id: str, user_id: str, *, since_interaction: int
    ) -> list[UserInfluence]:
        """The staged deltas of the user's episodes staged after ``since_interaction``,
        with their messages, by staged order."""
        return await self._db.read(_influence, persona_id, user_id, since_interaction)

    async def upsert_beliefs(self, beliefs: Sequence[Belief]) -> None:
        """Insert or replace beliefs by (persona, topic); ``PersonaNotFound`` first."""
        await self._db.write(_upsert, tuple(beliefs))

    async def list_beliefs(self, persona_id: str, *, include_retired: bool = False) -> list[Belief]:
        """Ordered by topic; active only unless ``include_retired``."""
        return await self._db.read(_beliefs, persona_id, include_retired)

    async def belief_evidence(
        self, persona_id: str, topic: str
    ) -> list[tuple[ProvenanceEdge, Episode]]:
        """Provenance edges into the belief with their episodes, oldest first."""
        return await self._db.read(_evidence, persona_id, topic)

    async def list_staged(
        self, persona_id: str, *, due_by: int | None = None
    ) -> list[StagedUpdate]:
        """Uncommitted staged updates by (due_at, staged_at, id)."""
        return await self._db.read(_staged, persona_id, due_by)

    async def list_insights(
        self, persona_id: str, *, status: InsightStatus | None = None
    ) -> list[Insight]:
        """Oldest first (created_at, id)."""
        return await self._db.read(_insights, persona_id, status)

    async def list_facts(self, persona_id: str, user_id: str) -> list[UserFact]:
        """The user's facts that are not retracted, oldest first."""
        return await self._db.read(active_facts, persona_id, user_id)

    async def retract_fact(self, persona_id: str, user_id: str, fact_id: str) -> None:
        """Mark a fact retracted (``NotFoundError`` if that user has no such fact)."""
        await self._db.write(_retract, persona_id, user_id, fact_id)
