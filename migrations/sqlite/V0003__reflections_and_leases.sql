
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
