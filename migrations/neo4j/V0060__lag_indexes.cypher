// The heads of a persona's queues of model work in index order (episode/oldest_pending):
// the pending episode of lowest seq, and the oldest pending Thinker turn.
CREATE INDEX episode_persona_status_seq IF NOT EXISTS
FOR (n:Episode) ON (n.persona_id, n.enrichment_status, n.seq);

CREATE INDEX episode_persona_thinker_created IF NOT EXISTS
FOR (n:Episode) ON (n.persona_id, n.thinker_status, n.thinker_created_at);
