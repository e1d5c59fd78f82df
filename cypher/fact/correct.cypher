// Write a correction (kind, text, severity, retraction, the other exchanges backing it and
// its active key) and remove the fact it merged away ($merged, or null); the fact's FROM
// edges follow its sources and the Constraint display label its kind.
CALL () {
  OPTIONAL MATCH (gone:UserFact {persona_id: $persona_id, id: $merged})
  DETACH DELETE gone
}
MATCH (f:UserFact {persona_id: $persona_id, id: $fact_id})
SET f.kind = $kind, f.text = $text, f.severity = $severity, f.retracted = $retracted,
    f.also_from = $also_from, f.active_key = $active_key
REMOVE f:Constraint
FOREACH (_ IN CASE WHEN f.kind = 'constraint' THEN [1] ELSE [] END | SET f:Constraint)
WITH f
CALL (f) {
  UNWIND f.also_from AS other
  MATCH (e:Episode {persona_id: $persona_id, id: other})
  USING INDEX SEEK e:Episode(persona_id, id)
  MERGE (f)-[:FROM]->(e)
}
RETURN f {.*} AS fact
