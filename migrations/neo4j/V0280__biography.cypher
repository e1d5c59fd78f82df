// The persona's biographical memory (issue 25, seed 002): (:Persona)-[:REMEMBERS]->
// (:BiographyEntry {persona_id, id, key, text, importance, source, created_at, vector}).
// An entry is unique within its persona, by id and by its normalised words (key).
CREATE CONSTRAINT biography_persona_id_unique IF NOT EXISTS
FOR (n:BiographyEntry) REQUIRE (n.persona_id, n.id) IS UNIQUE;

CREATE CONSTRAINT biography_persona_key_unique IF NOT EXISTS
FOR (n:BiographyEntry) REQUIRE (n.persona_id, n.key) IS UNIQUE;

// `doctor` looks for users whose active constraints pass the context's compact cap.
CREATE INDEX fact_persona_kind IF NOT EXISTS
FOR (n:UserFact) ON (n.persona_id, n.kind);
