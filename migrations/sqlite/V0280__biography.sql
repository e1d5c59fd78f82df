-- The persona's biographical memory (issue 25, seed 002): its own past in short entries,
-- recalled by 0.7 x similarity + 0.3 x importance. key is the normalised text: a persona
-- holds an entry once. vector is the text's embedding as a JSON list.
CREATE TABLE biography (
    persona_id TEXT NOT NULL REFERENCES personas (id),
    id TEXT NOT NULL,
    key TEXT NOT NULL,
    text TEXT NOT NULL,
    importance INTEGER NOT NULL CHECK (importance BETWEEN 1 AND 10),
    source TEXT NOT NULL CHECK (source IN ('authored', 'statement')),
    created_at TEXT NOT NULL,
    vector TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (persona_id, id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX biography_one_per_key ON biography (persona_id, key);

-- `doctor` looks for users whose active constraints pass the context's compact cap.
CREATE INDEX user_facts_kind ON user_facts (persona_id, kind, retracted);
