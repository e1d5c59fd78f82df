
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
