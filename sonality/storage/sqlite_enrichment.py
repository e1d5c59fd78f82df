"""The SQLite store's transaction bodies for what enrichment writes and the lists that
read it back: the enrichment commit, beliefs and provenance, staged updates, insights and
user facts.

Same rules as :mod:`sonality.storage.sqlite_ops`: the connection comes last, the caller
holds the transaction, every statement is scoped by ``persona_id`` with ``?`` parameters.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from sonality.errors import ConflictError, NotFoundError, ValidationError
from sonality.models import (
    Belief,
    EnrichmentCommit,
    EnrichmentStatus,
    Episode,
    Insight,
    InsightStatus,
    ProvenanceEdge,
    StagedUpdate,
    UserFact,
)
from sonality.storage.sqlite_ops import require_persona
from sonality.storage.sqlite_rows import (
    BELIEF_COLUMNS,
    FACT_COLUMNS,
    INSIGHT_COLUMNS,
    PREFIXED_EPISODE_COLUMNS,
    STAGED_COLUMNS,
    belief_from_row,
    encode_list,
    encode_time,
    episode_from_row,
    fact_from_row,
    insight_from_row,
    provenance_from_row,
    staged_from_row,
)

__all__ = [
    "belief_evidence",
    "commit_enrichment",
    "list_beliefs",
    "list_facts",
    "list_insights",
    "list_staged",
    "retract_fact",
    "upsert_beliefs",
]


# enrichment ---------------------------------------------------------------------------


def _check_scoped(commit: EnrichmentCommit) -> None:
    """Every object in a commit must belong to the commit's persona."""
    owners = [b.persona_id for b in commit.beliefs]
    owners += [s.persona_id for s in commit.staged]
    owners += [f.persona_id for f in commit.facts]
    owners += [commit.insight.persona_id] if commit.insight else []
    if any(owner != commit.persona_id for owner in owners):
        raise ValidationError(
            "an enrichment commit may only touch its own persona", persona_id=commit.persona_id
        )


def commit_enrichment(commit: EnrichmentCommit, conn: sqlite3.Connection) -> None:
    """Check the persona count and the pending episode, then write every part
    of the commit; any failure raises and the caller rolls everything back."""
    _check_scoped(commit)
    pid = commit.persona_id
    persona = require_persona(conn, pid)
    if persona["interaction_count"] != commit.expected_interaction_count:
        raise ConflictError(
            "the persona's interaction count moved",
            persona_id=pid,
            expected=commit.expected_interaction_count,
            actual=int(persona["interaction_count"]),
        )
    status = conn.execute(
        "SELECT enrichment_status FROM episodes WHERE persona_id = ? AND id = ?",
        (pid, commit.episode_id),
    ).fetchone()
    if status is None or status[0] != EnrichmentStatus.PENDING.value:
        raise ConflictError(
            "the episode is not pending enrichment",
            persona_id=pid,
            episode_id=commit.episode_id,
            status=None if status is None else str(status[0]),
        )
    evidence = commit.evidence
    conn.execute(
        "UPDATE episodes SET enrichment_status = 'enriched', interaction_index = ?, "
        "ess_score = ?, ess_reasoning_type = ?, ess_source_reliability = ?, "
        "ess_internal_consistency = ?, ess_novelty = ?, ess_direction = ?, ess_topics = ?, "
        "defaulted = ?, topics = ?, importance = ?, insight = ?, disagreement = ? "
        "WHERE persona_id = ? AND id = ?",
        (
            commit.interaction_count,
            None if evidence is None else evidence.score,
            None if evidence is None else evidence.reasoning_type.value,
            None if evidence is None else evidence.source_reliability,
            None if evidence is None else evidence.internal_consistency,
            None if evidence is None else evidence.novelty,
            None if evidence is None else evidence.direction.value,
            None if evidence is None else encode_list(evidence.topics),
            encode_list(commit.defaulted),
            encode_list(commit.topics),
            commit.importance,
            None if commit.insight is None else commit.insight.text,
            commit.disagreement,
            pid,
            commit.episode_id,
        ),
    )
    conn.execute(
        "UPDATE personas SET interaction_count = ?, disagreement_window = ?, "
        "shift_since_reflection = shift_since_reflection + ? WHERE id = ?",
        (
            commit.interaction_count,
            encode_list(commit.disagreement_window),
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
        _insert_insight(conn, commit.insight)
    _insert_facts(conn, commit.facts)
    _insert_staged(conn, commit.staged)
    for staged_id in commit.committed_staged_ids:
        cursor = conn.execute(
            "UPDATE staged_updates SET committed_at = ? "
            "WHERE persona_id = ? AND id = ? AND committed_at IS NULL",
            (commit.interaction_count, pid, staged_id),
        )
        if cursor.rowcount != 1:
            raise ConflictError(
                "staged update is unknown or committed already",
                persona_id=pid,
                staged_id=staged_id,
            )
    _upsert_beliefs(conn, commit.beliefs)
    conn.executemany(
        "INSERT INTO provenance (persona_id, episode_id, topic, kind, delta, committed_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [(pid, e.episode_id, e.topic, e.kind, e.delta, e.committed_at) for e in commit.provenance],
    )


def _ensure_topics(conn: sqlite3.Connection, persona_id: str, topics: Iterable[str]) -> None:
    conn.executemany(
        "INSERT INTO topics (persona_id, name) VALUES (?, ?) ON CONFLICT DO NOTHING",
        [(persona_id, topic) for topic in dict.fromkeys(topics)],
    )


def _insert_insight(conn: sqlite3.Connection, insight: Insight) -> None:
    conn.execute(
        f"INSERT INTO insights ({INSIGHT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
        (
            insight.persona_id,
            insight.id,
            insight.episode_id,
            insight.text,
            insight.status.value,
            encode_time(insight.created_at),
        ),
    )


def _insert_facts(conn: sqlite3.Connection, facts: Sequence[UserFact]) -> None:
    conn.executemany(
        f"INSERT INTO user_facts ({FACT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                f.persona_id,
                f.id,
                f.user_id,
                f.kind.value,
                f.text,
                f.severity,
                f.episode_id,
                encode_time(f.created_at),
                f.retracted,
            )
            for f in facts
        ],
    )


def _insert_staged(conn: sqlite3.Connection, staged: Sequence[StagedUpdate]) -> None:
    conn.executemany(
        f"INSERT INTO staged_updates ({STAGED_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                s.persona_id,
                s.id,
                s.topic,
                s.signed_delta,
                s.staged_at,
                s.due_at,
                s.episode_id,
                s.committed_at,
            )
            for s in staged
        ],
    )


def _upsert_beliefs(conn: sqlite3.Connection, beliefs: Sequence[Belief]) -> None:
    for persona_id in dict.fromkeys(b.persona_id for b in beliefs):
        _ensure_topics(conn, persona_id, (b.topic for b in beliefs if b.persona_id == persona_id))
    conn.executemany(
        f"INSERT INTO beliefs ({BELIEF_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (persona_id, topic) DO UPDATE SET position = excluded.position, "
        "confidence = excluded.confidence, evidence_count = excluded.evidence_count, "
        "uncertainty = excluded.uncertainty, last_reinforced_at = excluded.last_reinforced_at, "
        "status = excluded.status, created_at = excluded.created_at, "
        "updated_at = excluded.updated_at",
        [
            (
                b.persona_id,
                b.topic,
                b.position,
                b.confidence,
                b.evidence_count,
                b.uncertainty,
                b.last_reinforced_at,
                b.status.value,
                encode_time(b.created_at),
                encode_time(b.updated_at),
            )
            for b in beliefs
        ],
    )


# beliefs, staged updates, insights, facts ---------------------------------------------


def upsert_beliefs(beliefs: Sequence[Belief], conn: sqlite3.Connection) -> None:
    """Insert or replace beliefs by (persona, topic); ``PersonaNotFound`` first."""
    for persona_id in dict.fromkeys(b.persona_id for b in beliefs):
        require_persona(conn, persona_id)
    _upsert_beliefs(conn, beliefs)


def list_beliefs(persona_id: str, include_retired: bool, conn: sqlite3.Connection) -> list[Belief]:
    """Ordered by topic; retired ones only when asked."""
    rows = conn.execute(
        f"SELECT {BELIEF_COLUMNS} FROM beliefs WHERE persona_id = ? "
        "AND (? OR status = 'active') ORDER BY topic",
        (persona_id, include_retired),
    )
    return [belief_from_row(row) for row in rows]


def belief_evidence(
    persona_id: str, topic: str, conn: sqlite3.Connection
) -> list[tuple[ProvenanceEdge, Episode]]:
    """Provenance rows with their episodes, by (committed_at, episode seq)."""
    rows = conn.execute(
        "SELECT p.episode_id AS p_episode_id, p.topic AS p_topic, p.delta AS p_delta, "
        f"p.committed_at AS p_committed_at, {PREFIXED_EPISODE_COLUMNS} "
        "FROM provenance AS p JOIN episodes AS e "
        "ON e.persona_id = p.persona_id AND e.id = p.episode_id "
        "WHERE p.persona_id = ? AND p.topic = ? ORDER BY p.committed_at, e.seq, p.id",
        (persona_id, topic),
    )
    return [(provenance_from_row(row), episode_from_row(row)) for row in rows]


def list_staged(
    persona_id: str, due_by: int | None, conn: sqlite3.Connection
) -> list[StagedUpdate]:
    """Uncommitted staged updates by (due_at, staged_at, id)."""
    rows = conn.execute(
        f"SELECT {STAGED_COLUMNS} FROM staged_updates WHERE persona_id = ? "
        "AND committed_at IS NULL AND (? IS NULL OR due_at <= ?) "
        "ORDER BY due_at, staged_at, id",
        (persona_id, due_by, due_by),
    )
    return [staged_from_row(row) for row in rows]


def list_insights(
    persona_id: str, status: InsightStatus | None, conn: sqlite3.Connection
) -> list[Insight]:
    """Oldest first by (created_at, id), optionally one status."""
    value = None if status is None else InsightStatus(status).value
    rows = conn.execute(
        f"SELECT {INSIGHT_COLUMNS} FROM insights WHERE persona_id = ? "
        "AND (? IS NULL OR status = ?) ORDER BY created_at, id",
        (persona_id, value, value),
    )
    return [insight_from_row(row) for row in rows]


def list_facts(persona_id: str, user_id: str, conn: sqlite3.Connection) -> list[UserFact]:
    """A user's facts that are not retracted, by (created_at, id)."""
    rows = conn.execute(
        f"SELECT {FACT_COLUMNS} FROM user_facts WHERE persona_id = ? AND user_id = ? "
        "AND retracted = 0 ORDER BY created_at, id",
        (persona_id, user_id),
    )
    return [fact_from_row(row) for row in rows]


def retract_fact(persona_id: str, user_id: str, fact_id: str, conn: sqlite3.Connection) -> None:
    """``NotFoundError`` if that user has no such fact."""
    cursor = conn.execute(
        "UPDATE user_facts SET retracted = 1 WHERE persona_id = ? AND user_id = ? AND id = ?",
        (persona_id, user_id, fact_id),
    )
    if cursor.rowcount == 0:
        raise NotFoundError("no such fact", persona_id=persona_id, user_id=user_id, fact_id=fact_id)
