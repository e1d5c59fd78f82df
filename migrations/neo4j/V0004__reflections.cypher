// Reflection records and the per-persona reflection lease.
CREATE CONSTRAINT reflection_persona_id_unique IF NOT EXISTS
FOR (n:Reflection) REQUIRE (n.persona_id, n.id) IS UNIQUE;

CREATE CONSTRAINT reflection_lease_persona_unique IF NOT EXISTS
FOR (n:ReflectionLease) REQUIRE n.persona_id IS UNIQUE;

CREATE INDEX reflection_persona_started IF NOT EXISTS
FOR (n:Reflection) ON (n.persona_id, n.started_at);

// The episodes since the last reflection, found by interaction index (set when enriched),
// newest first, without scanning the persona's whole history.
CREATE INDEX episode_persona_interaction IF NOT EXISTS
FOR (n:Episode) ON (n.persona_id, n.interaction_index);
