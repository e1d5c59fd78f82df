
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
