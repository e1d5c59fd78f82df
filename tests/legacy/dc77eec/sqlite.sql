BEGIN TRANSACTION;
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
INSERT INTO "affect_states" VALUES('ada','u1',1,'warm','trusting','[{"level": 1, "text": "Learn their name", "status": "completed"}, {"level": 2, "text": "Find common ground", "status": "pending"}]','[{"text": "Be kind", "progress": "going well"}]','They want reassurance.','I feel glad.','Answer briefly.','a1','2026-01-01T12:01:30.000000Z');
INSERT INTO "affect_states" VALUES('ada','u2',1,'wary','new','[]','[]',NULL,NULL,NULL,NULL,'2026-01-01T12:12:00.000000Z');
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
INSERT INTO "beliefs" VALUES('ada','coffee',0.5,0.03,3,0.97,4,'retired','2026-01-01T12:01:00.000000Z','2026-01-01T12:31:00.000000Z');
INSERT INTO "beliefs" VALUES('ada','energy',-0.125,0.28125,1,0.5,2,'active','2026-01-01T12:01:00.000000Z','2026-01-01T12:02:00.000000Z');
INSERT INTO "beliefs" VALUES('ada','nuclear_power',0.03125,0.28125,1,0.5,2,'active','2026-01-01T12:01:00.000000Z','2026-01-01T12:02:00.000000Z');
INSERT INTO "beliefs" VALUES('bob','tea',-0.25,0.25,0,0.5,0,'active','2026-01-01T12:01:00.000000Z','2026-01-01T12:00:00.000000Z');
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
INSERT INTO "conversation_minds" VALUES('ada','c1','u1',1,1,'2026-01-01T12:01:30.000000Z');
CREATE TABLE conversations (
    persona_id TEXT NOT NULL REFERENCES personas (id),
    id TEXT NOT NULL,
    last_turn INTEGER NOT NULL DEFAULT 0,
    last_episode_id TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (persona_id, id)
) WITHOUT ROWID;
INSERT INTO "conversations" VALUES('ada','c1',5,'a5','2026-01-01T12:01:00.000000Z');
INSERT INTO "conversations" VALUES('ada','c2',2,'b2','2026-01-01T12:11:00.000000Z');
INSERT INTO "conversations" VALUES('bob','c9',1,'x1','2026-01-01T12:20:00.000000Z');
CREATE TABLE episode_topics (
    persona_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    PRIMARY KEY (persona_id, episode_id, topic),
    FOREIGN KEY (persona_id, episode_id) REFERENCES episodes (persona_id, id),
    FOREIGN KEY (persona_id, topic) REFERENCES topics (persona_id, name)
) WITHOUT ROWID;
INSERT INTO "episode_topics" VALUES('ada','a1','energy');
INSERT INTO "episode_topics" VALUES('ada','a2','energy');
INSERT INTO "episode_topics" VALUES('ada','b1','energy');
INSERT INTO "episode_topics" VALUES('ada','a1','nuclear_power');
INSERT INTO "episode_topics" VALUES('ada','a2','nuclear_power');
INSERT INTO "episode_topics" VALUES('ada','b1','nuclear_power');
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
INSERT INTO "episodes" VALUES('ada','a1','u1','c1',1,1,NULL,'a1: I think nuclear power is safe — évidence ✓','a1: Interesting; tell me more. 🙂','2026-01-01T12:01:00.000000Z','enriched',0,NULL,1,0.75,'empirical',0.625,0.875,0.5,'supports','["nuclear_power","energy"]','[]','["nuclear_power","energy"]',7,'I noticed something in a1.',0,X'0000803F000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000',1);
INSERT INTO "episodes" VALUES('ada','a2','u1','c1',2,2,'a1','a2: I think nuclear power is safe — évidence ✓','a2: Interesting; tell me more. 🙂','2026-01-01T12:02:00.000000Z','enriched',0,NULL,2,0.75,'empirical',0.625,0.875,0.5,'supports','["nuclear_power","energy"]','[]','["nuclear_power","energy"]',7,'I noticed something in a2.',1,X'000000000000803F0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000',2);
INSERT INTO "episodes" VALUES('ada','a3','u1','c1',3,3,'a2','a3: I think nuclear power is safe — évidence ✓','a3: Interesting; tell me more. 🙂','2026-01-01T12:03:00.000000Z','enriched',0,NULL,3,NULL,NULL,NULL,NULL,NULL,NULL,NULL,'["score","direction","topics"]','[]',1,NULL,0,X'0000000000000000000000000000803F000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000',3);
INSERT INTO "episodes" VALUES('ada','a4','u1','c1',4,4,'a3','a4: I think nuclear power is safe — évidence ✓','a4: Interesting; tell me more. 🙂','2026-01-01T12:04:00.000000Z','pending',1,'model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model down model',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,'[]','[]',NULL,NULL,NULL,X'F304353F00000000F304353F00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000',7);
INSERT INTO "episodes" VALUES('ada','a5','u1','c1',5,5,'a4','a5: I think nuclear power is safe — évidence ✓','a5: Interesting; tell me more. 🙂','2026-01-01T12:05:00.000000Z','pending',0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,'[]','[]',NULL,NULL,NULL,NULL,NULL);
INSERT INTO "episodes" VALUES('ada','b1','u2','c2',6,1,NULL,'b1: I think nuclear power is safe — évidence ✓','b1: Interesting; tell me more. 🙂','2026-01-01T12:11:00.000000Z','enriched',0,NULL,4,0.75,'empirical',0.625,0.875,0.5,'supports','["nuclear_power","energy"]','[]','["nuclear_power","energy"]',7,'I noticed something in b1.',1,X'F304353FF304353F0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000',5);
INSERT INTO "episodes" VALUES('ada','b2','u2','c2',7,2,'b1','b2: I think nuclear power is safe — évidence ✓','b2: Interesting; tell me more. 🙂','2026-01-01T12:12:00.000000Z','failed',1,'invalid reply',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,'[]','[]',NULL,NULL,NULL,X'F304353FF304353F0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000',6);
INSERT INTO "episodes" VALUES('bob','x1','u1','c9',1,1,NULL,'x1: I think nuclear power is safe — évidence ✓','x1: Interesting; tell me more. 🙂','2026-01-01T12:20:00.000000Z','pending',0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,'[]','[]',NULL,NULL,NULL,NULL,NULL);
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
INSERT INTO "insights" VALUES('ada','ins-a1','a1','I noticed something in a1.','consumed','2026-01-01T12:01:00.000000Z');
INSERT INTO "insights" VALUES('ada','ins-a2','a2','I noticed something in a2.','consumed','2026-01-01T12:02:00.000000Z');
INSERT INTO "insights" VALUES('ada','ins-b1','b1','I noticed something in b1.','pending','2026-01-01T12:11:00.000000Z');
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
INSERT INTO "monologue_entries" VALUES('ada','c1',1,'u1','a1','They cite data.','Peanuts!','Stay curious.',17,'2026-01-01T12:01:30.000000Z');
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
INSERT INTO "narratives" VALUES('ada','c1',1,'u1',1,'a1','We talk about energy; they are careful.',9,'2026-01-01T12:01:30.000000Z');
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
, last_reflection_attempt_at INTEGER NOT NULL DEFAULT 0, runtime_mode TEXT NOT NULL DEFAULT 'full'
    CHECK (runtime_mode IN ('baseline', 'threads', 'controller', 'full')), affect TEXT NOT NULL DEFAULT 'off'
    CHECK (affect IN ('off', 'talker', 'thinker'))) WITHOUT ROWID;
INSERT INTO "personas" VALUES('ada','Ada Lovelace','Ada Lovelace: evidence over pressure.',4,4,'[false,true,false,true]',0.09375,7,'2026-01-01T12:00:00.000000Z',4,'threads','thinker');
INSERT INTO "personas" VALUES('bob','Bob','Bob: evidence over pressure.',0,0,'[]',0.0,1,'2026-01-01T12:00:00.000000Z',0,'full','off');
INSERT INTO "personas" VALUES('cal','Cal','Cal: evidence over pressure.',0,0,'[]',0.0,0,'2026-01-01T12:00:00.000000Z',0,'full','off');
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
INSERT INTO "provenance" VALUES(1,'ada','a1','nuclear_power','SUPPORTS',0.03125,2);
INSERT INTO "provenance" VALUES(2,'ada','a2','energy','CONTRADICTS',-0.125,2);
CREATE TABLE reflection_insights (
    persona_id TEXT NOT NULL,
    reflection_id TEXT NOT NULL,
    insight_id TEXT NOT NULL,
    PRIMARY KEY (persona_id, reflection_id, insight_id),
    FOREIGN KEY (persona_id, reflection_id) REFERENCES reflections (persona_id, id),
    FOREIGN KEY (persona_id, insight_id) REFERENCES insights (persona_id, id)
) WITHOUT ROWID;
INSERT INTO "reflection_insights" VALUES('ada','refl-1','ins-a1');
INSERT INTO "reflection_insights" VALUES('ada','refl-1','ins-a2');
CREATE TABLE reflection_leases (
    persona_id TEXT NOT NULL PRIMARY KEY REFERENCES personas (id),
    owner TEXT NOT NULL,
    expires_at TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO "reflection_leases" VALUES('ada','worker-b','2121-01-25T18:10:00.000000Z');
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
INSERT INTO "reflections" VALUES('ada','refl-1','periodic','committed',NULL,NULL,'2026-01-01T12:30:00.000000Z','2026-01-01T12:31:00.000000Z',4,3,2,0.875,0.625,'["sycophancy_risk"]',2,4,1,1,2,1234.5,'worker-a');
INSERT INTO "reflections" VALUES('ada','refl-2','manual','rejected','shrunk','0.41 < 0.6','2026-01-01T12:40:00.000000Z','2026-01-01T12:41:00.000000Z',4,NULL,3,0.41,NULL,'[]',0,0,0,0,1,99.0,'worker-b');
CREATE TABLE schema_migrations (
    version INTEGER NOT NULL PRIMARY KEY,
    description TEXT NOT NULL,
    checksum TEXT NOT NULL,
    applied_at TEXT NOT NULL
);
INSERT INTO "schema_migrations" VALUES(1,'personas_and_episodes','5fcd7574e4f327ef6fba4b6e8d7e55245288ab4280ce291028f894ff2f71583a','2026-11-24T18:49:22.615863+00:00');
INSERT INTO "schema_migrations" VALUES(2,'beliefs_insights_facts','263acd9e4e7ac7df03ed4871e06db985bd2028aa4488ba8bcadb04098994a062','2026-11-24T18:49:22.619435+00:00');
INSERT INTO "schema_migrations" VALUES(3,'reflections_and_leases','1d65c64efae931373218dc10ba941d338bdbde4b8e3aa0267e0353581e8ccb87','2026-11-24T18:49:22.620404+00:00');
INSERT INTO "schema_migrations" VALUES(4,'dual_process_runtime','df7182323ca3a75503518f8f5401dd1863b1e1a2020dab4d877c96f20d02957b','2026-11-24T18:49:22.626079+00:00');
CREATE TABLE snapshots (
    persona_id TEXT NOT NULL REFERENCES personas (id),
    version INTEGER NOT NULL CHECK (version >= 1),
    text TEXT NOT NULL,
    reason TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (persona_id, version)
) WITHOUT ROWID;
INSERT INTO "snapshots" VALUES('ada',1,'I am Ada Lovelace.','initial','2026-01-01T12:00:00.000000Z');
INSERT INTO "snapshots" VALUES('ada',2,'I am Ada, a little wiser.','rollback:1','2026-01-01T12:02:00.000000Z');
INSERT INTO "snapshots" VALUES('ada',3,'I am Ada; I weigh evidence.','reflection','2026-01-01T12:31:00.000000Z');
INSERT INTO "snapshots" VALUES('bob',1,'I am Bob.','initial','2026-01-01T12:00:00.000000Z');
INSERT INTO "snapshots" VALUES('cal',1,'I am Cal.','initial','2026-01-01T12:00:00.000000Z');
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
INSERT INTO "staged_updates" VALUES('ada','s-a1','nuclear_power',0.03125,1,2,'a1',2);
INSERT INTO "staged_updates" VALUES('ada','s-a2','energy',-0.0625,2,5,'a2',NULL);
INSERT INTO "staged_updates" VALUES('ada','s-b1','energy',0.015625,4,7,'b1',NULL);
CREATE TABLE store_meta (
    name TEXT NOT NULL PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO "store_meta" VALUES('embedding_dimensions',64);
INSERT INTO "store_meta" VALUES('embedding_rev',7);
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
INSERT INTO "thinker_turns" VALUES('ada','a1','c1','u1',1,'full','thinker','done',0,NULL,0,'2026-01-01T12:01:00.000000Z','2026-01-01T12:01:30.000000Z');
INSERT INTO "thinker_turns" VALUES('ada','a2','c1','u1',2,'full','thinker','failed',1,'boom',0,'2026-01-01T12:02:00.000000Z','2026-01-01T12:02:30.000000Z');
INSERT INTO "thinker_turns" VALUES('ada','a3','c1','u1',3,'threads','thinker','abandoned',1,'bad json',0,'2026-01-01T12:03:00.000000Z','2026-01-01T12:03:30.000000Z');
INSERT INTO "thinker_turns" VALUES('ada','a5','c1','u1',5,'full','thinker','pending',0,NULL,0,'2026-01-01T12:05:00.000000Z','2026-01-01T12:05:00.000000Z');
CREATE TABLE topics (
    persona_id TEXT NOT NULL REFERENCES personas (id),
    name TEXT NOT NULL,
    PRIMARY KEY (persona_id, name)
) WITHOUT ROWID;
INSERT INTO "topics" VALUES('ada','coffee');
INSERT INTO "topics" VALUES('ada','energy');
INSERT INTO "topics" VALUES('ada','nuclear_power');
INSERT INTO "topics" VALUES('bob','tea');
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
INSERT INTO "turn_usage" VALUES('ada','a1','monologue','c1',1,1,300,80,0.0,1);
INSERT INTO "turn_usage" VALUES('ada','a1','talker','c1',1,2,130,35,0.00135,0);
INSERT INTO "turn_usage" VALUES('ada','a2','talker','c1',2,1,120,30,0.00125,0);
INSERT INTO "turn_usage" VALUES('ada','a3','talker','c1',3,1,120,30,0.00125,0);
INSERT INTO "turn_usage" VALUES('ada','a5','talker','c1',5,1,120,30,0.00125,0);
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
INSERT INTO "user_facts" VALUES('ada','f-a1-1','u1','constraint','Allergic to peanuts.',5,'a1','2026-01-01T12:01:00.000000Z',0);
INSERT INTO "user_facts" VALUES('ada','f-a1-2','u1','preference','Prefers short answers.',2,'a1','2026-01-01T12:01:01.000000Z',1);
INSERT INTO "user_facts" VALUES('ada','f-b1-1','u2','fact','Lives in Zürich.',1,'b1','2026-01-01T12:11:00.000000Z',0);
CREATE TABLE users (
    persona_id TEXT NOT NULL REFERENCES personas (id),
    id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (persona_id, id)
) WITHOUT ROWID;
INSERT INTO "users" VALUES('ada','u1','2026-01-01T12:01:00.000000Z');
INSERT INTO "users" VALUES('ada','u2','2026-01-01T12:11:00.000000Z');
INSERT INTO "users" VALUES('bob','u1','2026-01-01T12:20:00.000000Z');
CREATE INDEX episodes_by_user ON episodes (persona_id, user_id, seq);
CREATE INDEX episodes_by_conversation ON episodes (persona_id, conversation_id, seq);
CREATE INDEX episodes_by_status ON episodes (persona_id, enrichment_status, seq);
CREATE INDEX episodes_by_interaction ON episodes (persona_id, interaction_index);
CREATE INDEX episodes_by_embedding_rev ON episodes (persona_id, user_id, embedding_rev)
    WHERE embedding_rev IS NOT NULL;
CREATE INDEX episode_topics_by_topic ON episode_topics (persona_id, topic, episode_id);
CREATE INDEX beliefs_by_status ON beliefs (persona_id, status, topic);
CREATE INDEX insights_by_time ON insights (persona_id, created_at, id);
CREATE INDEX insights_by_status ON insights (persona_id, status, created_at, id);
CREATE INDEX insights_by_episode ON insights (persona_id, episode_id);
CREATE INDEX user_facts_by_user ON user_facts (persona_id, user_id, retracted, created_at, id);
CREATE INDEX user_facts_by_episode ON user_facts (persona_id, episode_id);
CREATE INDEX staged_updates_due ON staged_updates (persona_id, due_at, staged_at, id)
    WHERE committed_at IS NULL;
CREATE INDEX staged_updates_by_episode ON staged_updates (persona_id, episode_id);
CREATE INDEX provenance_by_belief ON provenance (persona_id, topic, committed_at);
CREATE INDEX provenance_by_episode ON provenance (persona_id, episode_id);
CREATE INDEX reflections_by_time ON reflections (persona_id, started_at, id);
CREATE INDEX reflection_insights_by_insight ON reflection_insights (persona_id, insight_id);
CREATE INDEX provenance_by_commit ON provenance (persona_id, committed_at);
CREATE INDEX thinker_turns_by_status ON thinker_turns (persona_id, status, conversation_id, turn);
CREATE INDEX turn_usage_by_conversation ON turn_usage (persona_id, conversation_id, turn);
COMMIT;
