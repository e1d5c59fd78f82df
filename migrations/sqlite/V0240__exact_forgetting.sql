-- Forgetting is exact and immediate (issue 24).

-- The decay review's advice, kept with its reflection: an erasure applies it again where
-- it did not depend on what was erased.
ALTER TABLE reflections ADD COLUMN advice TEXT NOT NULL DEFAULT '[]';

-- Audit subjects are keyed with the store's own secret (store_meta 'audit_key', made on
-- first use); `migrate` re-keys the records written before (subject_keyed = 0 until then).
ALTER TABLE erasures ADD COLUMN subject_keyed INTEGER NOT NULL DEFAULT 1;
UPDATE erasures SET subject_keyed = 0;
CREATE INDEX erasures_unkeyed ON erasures (persona_id) WHERE subject_keyed = 0;

-- A correction that merges a fact into another leaves it backed by both exchanges. One
-- active fact per user and key: active_key is the normalised text, null while retracted
-- (`migrate` fills it for the facts written before, merging any duplicates).
ALTER TABLE user_facts ADD COLUMN also_from TEXT NOT NULL DEFAULT '[]';
ALTER TABLE user_facts ADD COLUMN active_key TEXT;
CREATE UNIQUE INDEX user_facts_one_per_key ON user_facts (persona_id, user_id, active_key);
CREATE INDEX user_facts_unkeyed ON user_facts (persona_id) WHERE retracted = 0 AND active_key IS NULL;

-- Each persona's incarnation (random, made at creation or import); an API key grants a
-- persona incarnation, so a persona created later under the same id is never opened by an
-- older key (`migrate` binds the grants of the keys made before).
ALTER TABLE personas ADD COLUMN incarnation TEXT NOT NULL DEFAULT '';
UPDATE personas SET incarnation = lower(hex(randomblob(16)));
ALTER TABLE api_keys ADD COLUMN incarnations TEXT;
