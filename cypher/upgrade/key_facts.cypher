// One user's active facts keyed: duplicates ($merged) go, each kept fact takes its key,
// severity and other sources (with a FROM edge to each).
CALL () {
  UNWIND $merged AS fact_id
  MATCH (gone:UserFact {persona_id: $persona_id, id: fact_id})
  DETACH DELETE gone
}
UNWIND $rows AS row
MATCH (f:UserFact {persona_id: $persona_id, id: row.id})
SET f.active_key = row.active_key, f.severity = row.severity, f.also_from = row.also_from
WITH f
CALL (f) {
  UNWIND f.also_from AS other
  MATCH (e:Episode {persona_id: $persona_id, id: other})
  USING INDEX SEEK e:Episode(persona_id, id)
  MERGE (f)-[:FROM]->(e)
}
RETURN count(f) AS keyed
