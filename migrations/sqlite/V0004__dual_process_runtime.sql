
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
