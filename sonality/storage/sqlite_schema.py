"""The SQLite store's own versioned schema.

Each :class:`SchemaStep` is a numbered SQL script with a sha256 checksum. ``migrate()``
applies the pending steps in order, each in its own ``BEGIN IMMEDIATE`` transaction (SQLite
DDL is transactional), and records it in ``schema_migrations``; a second run is a no-op.
An applied step whose recorded checksum differs from the code's raises
:class:`~sonality.errors.MigrationChecksumMismatch`: shipped steps are never edited, a
change is a new step.

Every table is scoped by ``persona_id`` (first column of every composite key and index).
Later features (reflections, leases, narratives, monologue entries) arrive as new steps.

All functions here are synchronous and take the connection: the store runs them on its
single worker thread. The connection is in autocommit mode (``isolation_level=None``), so
transactions are explicit. The SQL sticks to SQLite 3.24+ (no STRICT tables, no RETURNING)
so that the SQLite linked into older Pythons still works.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sonality.errors import MigrationChecksumMismatch, SchemaError
from sonality.models import AppliedMigration, SchemaStatus

__all__ = [
    "DATA_TABLES",
    "STEPS",
    "SchemaStep",
    "applied_migrations",
    "migrate",
    "schema_status",
    "verify_current",
]

_V0001 = """
CREATE TABLE personas (
    id TEXT NOT NULL PRIMARY KEY,
    name TEXT NOT NULL,
    core_identity TEXT NOT NULL,
    interaction_count INTEGER NOT NULL DEFAULT 0,
    last_reflection_at INTEGER NOT NULL DEFAULT 0,
    disagreement_window TEXT NOT NULL DEFAULT '[]',
    shift_since_reflection REAL NOT NULL DEFAULT 0.0,
    episode_seq INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE snapshots (
    persona_id TEXT NOT NULL REFERENCES personas (id),
    version INTEGER NOT NULL CHECK (version >= 1),
    text TEXT NOT NULL,
    reason TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (persona_id, version)
) WITHOUT ROWID;

CREATE TABLE users (
    persona_id TEXT NOT NULL REFERENCES personas (id),
    id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (persona_id, id)
) WITHOUT ROWID;

CREATE TABLE conversations (
    persona_id TEXT NOT NULL REFERENCES personas (id),
    id TEXT NOT NULL,
    last_turn INTEGER NOT NULL DEFAULT 0,
    last_episode_id TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (persona_id, id)
) WITHOUT ROWID;

CREATE TABLE episodes (
    persona_id TEXT NOT NULL REFERENCES personas (id),
    id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    turn INTEGER NOT NULL,
    prev_episode_id TEXT,
    user_message TEXT NOT NULL,
    agent_response TEXT NOT NULL,
    created_at TEXT NOT NULL,
    enrichment_status TEXT NOT NULL DEFAULT 'pending'
        CHECK (enrichment_status IN ('pending', 'enriched', 'failed')),
    enrichment_attempts INTEGER NOT NULL DEFAULT 0,
    enrichment_error TEXT,
    interaction_index INTEGER,
    ess_score REAL,
    ess_reasoning_type TEXT,
    ess_source_reliability REAL,
    ess_internal_consistency REAL,
    ess_novelty REAL,
    ess_direction TEXT,
    ess_topics TEXT,
    defaulted TEXT NOT NULL DEFAULT '[]',
    topics TEXT NOT NULL DEFAULT '[]',
    importance INTEGER,
    insight TEXT,
    disagreement INTEGER,
    embedding BLOB,
    embedding_rev INTEGER,
    UNIQUE (persona_id, id),
    UNIQUE (persona_id, seq),
    UNIQUE (persona_id, conversation_id, turn),
    FOREIGN KEY (persona_id, user_id) REFERENCES users (persona_id, id),
    FOREIGN KEY (persona_id, conversation_id) REFERENCES conversations (persona_id, id),
    FOREIGN KEY (persona_id, prev_episode_id) REFERENCES episodes (persona_id, id)
);

CREATE INDEX episodes_by_user ON episodes (persona_id, user_id, seq);
CREATE INDEX episodes_by_conversation ON episodes (persona_id, conversation_id, seq);
CREATE INDEX episodes_by_status ON episodes (persona_id, enrichment_status, seq);
CREATE INDEX episodes_by_interaction ON episodes (persona_id, interaction_index);
CREATE INDEX episodes_by_embedding_rev ON episodes (persona_id, user_id, embedding_rev)
    WHERE embedding_rev IS NOT NULL;

CREATE TABLE store_meta (
    name TEXT NOT NULL PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO store_meta (name, value) VALUES ('embedding_rev', 0);
"""

_V0002 = """
CREATE TABLE topics (
    persona_id TEXT NOT NULL REFERENCES personas (id),
    name TEXT NOT NULL,
    PRIMARY KEY (persona_id, name)
) WITHOUT ROWID;

CREATE TABLE episode_topics (
    persona_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    PRIMARY KEY (persona_id, episode_id, topic),
    FOREIGN KEY (persona_id, episode_id) REFERENCES episodes (persona_id, id),
    FOREIGN KEY (persona_id, topic) REFERENCES topics (persona_id, name)
) WITHOUT ROWID;

CREATE INDEX episode_topics_by_topic ON episode_topics (persona_id, topic, episode_id);

CREATE TABLE beliefs (
    persona_id TEXT NOT NULL REFERENCES personas (id),
    topic TEXT NOT NULL,
    position REAL NOT NULL,
    confidence REAL NOT NULL,
    evidence_count INTEGER NOT NULL,
    uncertainty REAL NOT NULL,
    last_reinforced_at INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'retired')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (persona_id, topic),
    FOREIGN KEY (persona_id, topic) REFERENCES topics (persona_id, name)
) WITHOUT ROWID;

CREATE INDEX beliefs_by_status ON beliefs (persona_id, status, topic);

CREATE TABLE insights (
    persona_id TEXT NOT NULL REFERENCES personas (id),
    id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    text TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'consumed')),
    created_at TEXT NOT NULL,
    PRIMARY KEY (persona_id, id),
    FOREIGN KEY (persona_id, episode_id) REFERENCES episodes (persona_id, id)
) WITHOUT ROWID;

CREATE INDEX insights_by_time ON insights (persona_id, created_at, id);
CREATE INDEX insights_by_status ON insights (persona_id, status, created_at, id);
CREATE INDEX insights_by_episode ON insights (persona_id, episode_id);

CREATE TABLE user_facts (
    persona_id TEXT NOT NULL REFERENCES personas (id),
    id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('constraint', 'preference', 'fact')),
    text TEXT NOT NULL,
    severity INTEGER NOT NULL CHECK (severity BETWEEN 1 AND 5),
    episode_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    retracted INTEGER NOT NULL DEFAULT 0 CHECK (retracted IN (0, 1)),
    PRIMARY KEY (persona_id, id),
    FOREIGN KEY (persona_id, user_id) REFERENCES users (persona_id, id),
    FOREIGN KEY (persona_id, episode_id) REFERENCES episodes (persona_id, id)
) WITHOUT ROWID;

CREATE INDEX user_facts_by_user ON user_facts (persona_id, user_id, retracted, created_at, id);
CREATE INDEX user_facts_by_episode ON user_facts (persona_id, episode_id);

CREATE TABLE staged_updates (
    persona_id TEXT NOT NULL REFERENCES personas (id),
    id TEXT NOT NULL,
    topic TEXT NOT NULL,
    signed_delta REAL NOT NULL,
    staged_at INTEGER NOT NULL,
    due_at INTEGER NOT NULL,
    episode_id TEXT NOT NULL,
    committed_at INTEGER,
    PRIMARY KEY (persona_id, id),
    FOREIGN KEY (persona_id, episode_id) REFERENCES episodes (persona_id, id)
) WITHOUT ROWID;

CREATE INDEX staged_updates_due ON staged_updates (persona_id, due_at, staged_at, id)
    WHERE committed_at IS NULL;
CREATE INDEX staged_updates_by_episode ON staged_updates (persona_id, episode_id);

CREATE TABLE provenance (
    id INTEGER PRIMARY KEY,
    persona_id TEXT NOT NULL REFERENCES personas (id),
    episode_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('SUPPORTS', 'CONTRADICTS')),
    delta REAL NOT NULL,
    committed_at INTEGER NOT NULL,
    FOREIGN KEY (persona_id, episode_id) REFERENCES episodes (persona_id, id),
    FOREIGN KEY (persona_id, topic) REFERENCES beliefs (persona_id, topic)
);

CREATE INDEX provenance_by_belief ON provenance (persona_id, topic, committed_at);
CREATE INDEX provenance_by_episode ON provenance (persona_id, episode_id);
"""

_V0003 = """
ALTER TABLE personas ADD COLUMN last_reflection_attempt_at INTEGER NOT NULL DEFAULT 0;

CREATE TABLE reflections (
    persona_id TEXT NOT NULL REFERENCES personas (id),
    id TEXT NOT NULL,
    trigger TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('committed', 'rejected', 'failed')),
    reason TEXT,
    detail TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    interaction_count INTEGER NOT NULL,
    snapshot_version INTEGER,
    previous_version INTEGER NOT NULL,
    retention_ratio REAL,
    unique_ratio REAL,
    health TEXT NOT NULL DEFAULT '[]',
    insights_consumed INTEGER NOT NULL DEFAULT 0,
    episodes_read INTEGER NOT NULL DEFAULT 0,
    beliefs_decayed INTEGER NOT NULL DEFAULT 0,
    beliefs_retired INTEGER NOT NULL DEFAULT 0,
    llm_calls INTEGER NOT NULL DEFAULT 0,
    duration_ms REAL NOT NULL DEFAULT 0,
    owner TEXT NOT NULL,
    PRIMARY KEY (persona_id, id)
) WITHOUT ROWID;

CREATE INDEX reflections_by_time ON reflections (persona_id, started_at, id);

CREATE TABLE reflection_insights (
    persona_id TEXT NOT NULL,
    reflection_id TEXT NOT NULL,
    insight_id TEXT NOT NULL,
    PRIMARY KEY (persona_id, reflection_id, insight_id),
    FOREIGN KEY (persona_id, reflection_id) REFERENCES reflections (persona_id, id),
    FOREIGN KEY (persona_id, insight_id) REFERENCES insights (persona_id, id)
) WITHOUT ROWID;

CREATE INDEX reflection_insights_by_insight ON reflection_insights (persona_id, insight_id);

CREATE TABLE reflection_leases (
    persona_id TEXT NOT NULL PRIMARY KEY REFERENCES personas (id),
    owner TEXT NOT NULL,
    expires_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX provenance_by_commit ON provenance (persona_id, committed_at);
"""

_V0004 = """
ALTER TABLE personas ADD COLUMN runtime_mode TEXT NOT NULL DEFAULT 'full'
    CHECK (runtime_mode IN ('baseline', 'threads', 'controller', 'full'));
ALTER TABLE personas ADD COLUMN affect TEXT NOT NULL DEFAULT 'off'
    CHECK (affect IN ('off', 'talker', 'thinker'));

CREATE TABLE thinker_turns (
    persona_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    mode TEXT NOT NULL CHECK (mode IN ('baseline', 'threads', 'controller', 'full')),
    affect TEXT NOT NULL CHECK (affect IN ('off', 'talker', 'thinker')),
    status TEXT NOT NULL CHECK (status IN ('pending', 'done', 'failed', 'abandoned')),
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    narrative_version_used INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (persona_id, episode_id),
    UNIQUE (persona_id, conversation_id, turn),
    FOREIGN KEY (persona_id, episode_id) REFERENCES episodes (persona_id, id)
) WITHOUT ROWID;

CREATE INDEX thinker_turns_by_status ON thinker_turns (persona_id, status, conversation_id, turn);

CREATE TABLE conversation_minds (
    persona_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    narrative_version INTEGER NOT NULL DEFAULT 0,
    thought_turn INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (persona_id, conversation_id),
    FOREIGN KEY (persona_id, conversation_id) REFERENCES conversations (persona_id, id)
) WITHOUT ROWID;

CREATE TABLE narratives (
    persona_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    version INTEGER NOT NULL CHECK (version >= 1),
    user_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    episode_id TEXT NOT NULL,
    text TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (persona_id, conversation_id, version),
    FOREIGN KEY (persona_id, conversation_id) REFERENCES conversation_minds
        (persona_id, conversation_id),
    FOREIGN KEY (persona_id, episode_id) REFERENCES episodes (persona_id, id)
) WITHOUT ROWID;

CREATE TABLE monologue_entries (
    persona_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    user_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    reasoning TEXT NOT NULL,
    memory TEXT NOT NULL,
    goal TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (persona_id, conversation_id, turn),
    FOREIGN KEY (persona_id, conversation_id) REFERENCES conversation_minds
        (persona_id, conversation_id),
    FOREIGN KEY (persona_id, episode_id) REFERENCES episodes (persona_id, id)
) WITHOUT ROWID;

CREATE TABLE affect_states (
    persona_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    version INTEGER NOT NULL CHECK (version >= 1),
    emotional_state TEXT NOT NULL,
    relationship TEXT NOT NULL,
    hard_goals TEXT NOT NULL DEFAULT '[]',
    soft_goals TEXT NOT NULL DEFAULT '[]',
    interpretation TEXT,
    appraisal TEXT,
    plan TEXT,
    episode_id TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (persona_id, user_id),
    FOREIGN KEY (persona_id, user_id) REFERENCES users (persona_id, id)
) WITHOUT ROWID;

CREATE TABLE turn_usage (
    persona_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    component TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    calls INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    unpriced_calls INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (persona_id, episode_id, component),
    FOREIGN KEY (persona_id, episode_id) REFERENCES episodes (persona_id, id)
) WITHOUT ROWID;

CREATE INDEX turn_usage_by_conversation ON turn_usage (persona_id, conversation_id, turn);
"""


@dataclass(frozen=True)
class SchemaStep:
    """One versioned schema change: plain SQL statements, no transaction control."""

    version: int
    description: str
    sql: str

    @property
    def name(self) -> str:
        """``V0001__description``, as Neo4j migration files are named."""
        return f"V{self.version:04d}__{self.description}"

    @property
    def checksum(self) -> str:
        """sha256 of the SQL text, hex."""
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()

    def statements(self) -> Iterator[str]:
        """The script split into complete statements (``sqlite3.complete_statement``)."""
        buffer = ""
        for line in self.sql.splitlines(keepends=True):
            buffer += line
            if sqlite3.complete_statement(buffer):
                if buffer.strip():
                    yield buffer.strip()
                buffer = ""
        if buffer.strip():
            raise ValueError(f"schema step {self.name} ends with an incomplete statement")


STEPS: tuple[SchemaStep, ...] = (
    SchemaStep(1, "personas_and_episodes", _V0001),
    SchemaStep(2, "beliefs_insights_facts", _V0002),
    SchemaStep(3, "reflections_and_leases", _V0003),
    SchemaStep(4, "dual_process_runtime", _V0004),
)
"""Every step, in version order. Append only; never edit an entry once released."""

DATA_TABLES: tuple[str, ...] = (
    "turn_usage",
    "thinker_turns",
    "monologue_entries",
    "narratives",
    "conversation_minds",
    "affect_states",
    "reflection_insights",
    "reflections",
    "reflection_leases",
    "provenance",
    "episode_topics",
    "beliefs",
    "topics",
    "insights",
    "user_facts",
    "staged_updates",
    "episodes",
    "conversations",
    "users",
    "snapshots",
    "personas",
)
"""Every table holding data, children before parents (the order ``delete_all`` empties
them in). A new step that adds a table adds it here too; ``schema_migrations`` and
``store_meta`` are bookkeeping and survive ``delete_all``."""

_CREATE_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER NOT NULL PRIMARY KEY,
    description TEXT NOT NULL,
    checksum TEXT NOT NULL,
    applied_at TEXT NOT NULL
)
"""


def _ledger_exists(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    return row is not None


def applied_migrations(conn: sqlite3.Connection) -> list[AppliedMigration]:
    """The recorded steps, by version (empty when the ledger does not exist yet)."""
    if not _ledger_exists(conn):
        return []
    rows = conn.execute(
        "SELECT version, description, checksum, applied_at FROM schema_migrations ORDER BY version"
    ).fetchall()
    return [
        AppliedMigration(
            version=int(row[0]),
            description=str(row[1]),
            checksum=str(row[2]),
            applied_at=datetime.fromisoformat(str(row[3])).astimezone(UTC),
        )
        for row in rows
    ]


def _check_checksums(applied: Sequence[AppliedMigration], steps: Sequence[SchemaStep]) -> None:
    known = {step.version: step for step in steps}
    for record in applied:
        step = known.get(record.version)
        if step is None:
            raise SchemaError(
                "the database has a schema step this Sonality does not know; upgrade Sonality",
                version=record.version,
                description=record.description,
            )
        if step.checksum != record.checksum:
            raise MigrationChecksumMismatch(
                f"schema step {step.name} was changed after it was applied",
                step=step.name,
                recorded=record.checksum,
                expected=step.checksum,
            )


def schema_status(
    conn: sqlite3.Connection, backend: str, steps: Sequence[SchemaStep] = STEPS
) -> SchemaStatus:
    """Applied steps and the names of the pending ones (does not check checksums)."""
    applied = applied_migrations(conn)
    done = {record.version for record in applied}
    pending = tuple(step.name for step in steps if step.version not in done)
    return SchemaStatus(backend=backend, applied=tuple(applied), pending=pending)


def verify_current(conn: sqlite3.Connection, steps: Sequence[SchemaStep] = STEPS) -> None:
    """Raise ``SchemaError`` unless every step is applied unchanged."""
    applied = applied_migrations(conn)
    _check_checksums(applied, steps)
    done = {record.version for record in applied}
    if any(step.version not in done for step in steps):
        raise SchemaError("schema is not current; run `sonality migrate`")


def migrate(conn: sqlite3.Connection, steps: Sequence[SchemaStep] = STEPS) -> list[str]:
    """Apply the pending steps in order, each in its own transaction; return their names.

    The ledger is re-read inside each step's write transaction, so two processes migrating
    the same file at once apply every step exactly once.
    """
    _run_in_transaction(conn, [_CREATE_LEDGER])
    _check_checksums(applied_migrations(conn), steps)
    names: list[str] = []
    for step in sorted(steps, key=lambda s: s.version):
        conn.execute("BEGIN IMMEDIATE")
        try:
            already = conn.execute(
                "SELECT checksum FROM schema_migrations WHERE version = ?", (step.version,)
            ).fetchone()
            if already is None:
                for statement in step.statements():
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (version, description, checksum, applied_at) "
                    "VALUES (?, ?, ?, ?)",
                    (
                        step.version,
                        step.description,
                        step.checksum,
                        datetime.now(UTC).isoformat(timespec="microseconds"),
                    ),
                )
                names.append(step.name)
            elif already[0] != step.checksum:
                raise MigrationChecksumMismatch(
                    f"schema step {step.name} was changed after it was applied",
                    step=step.name,
                    recorded=str(already[0]),
                    expected=step.checksum,
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return names


def _run_in_transaction(conn: sqlite3.Connection, statements: Sequence[str]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in statements:
            conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
