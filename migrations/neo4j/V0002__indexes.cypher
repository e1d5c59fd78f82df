// Range indexes for the persona-scoped reads (the unique constraints of V0001 already
// index their own keys).
CREATE INDEX episode_persona_user IF NOT EXISTS
FOR (n:Episode) ON (n.persona_id, n.user_id);

CREATE INDEX episode_persona_conversation IF NOT EXISTS
FOR (n:Episode) ON (n.persona_id, n.conversation_id);

CREATE INDEX episode_persona_status IF NOT EXISTS
FOR (n:Episode) ON (n.persona_id, n.enrichment_status);

CREATE INDEX episode_persona_seq IF NOT EXISTS
FOR (n:Episode) ON (n.persona_id, n.seq);

CREATE INDEX insight_persona_status IF NOT EXISTS
FOR (n:Insight) ON (n.persona_id, n.status);

CREATE INDEX user_fact_persona_user IF NOT EXISTS
FOR (n:UserFact) ON (n.persona_id, n.user_id);

CREATE INDEX staged_update_persona_committed IF NOT EXISTS
FOR (n:StagedUpdate) ON (n.persona_id, n.committed_at);

CREATE INDEX staged_update_persona_due IF NOT EXISTS
FOR (n:StagedUpdate) ON (n.persona_id, n.due_at);

CREATE INDEX belief_persona IF NOT EXISTS
FOR (n:Belief) ON (n.persona_id);

CREATE INDEX snapshot_persona IF NOT EXISTS
FOR (n:Snapshot) ON (n.persona_id);
