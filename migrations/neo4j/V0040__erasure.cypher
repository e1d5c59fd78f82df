// Forgetting and correcting (issue 12): erasure audit records, keyed within their persona
// (they outlive it), and the staged-at lookup the replay rewrites staged updates from.
CREATE CONSTRAINT erasure_persona_id_unique IF NOT EXISTS
FOR (n:Erasure) REQUIRE (n.persona_id, n.id) IS UNIQUE;

CREATE INDEX staged_update_persona_staged_at IF NOT EXISTS
FOR (n:StagedUpdate) ON (n.persona_id, n.staged_at);
