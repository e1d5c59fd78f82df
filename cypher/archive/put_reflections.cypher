// Reflection records with their outcome labels, what they produced and consumed.
MATCH (p:Persona {id: $persona_id})
UNWIND $reflections AS row
CREATE (r:Reflection)
SET r = row.reflection
CREATE (p)-[:REFLECTED]->(r)
FOREACH (_ IN CASE WHEN r.outcome = 'committed' THEN [1] ELSE [] END | SET r:Committed)
FOREACH (_ IN CASE WHEN r.outcome = 'rejected' THEN [1] ELSE [] END | SET r:Rejected)
FOREACH (_ IN CASE WHEN r.outcome = 'failed' THEN [1] ELSE [] END | SET r:Failed)
WITH r, row
CALL (r) {
  MATCH (s:Snapshot {persona_id: $persona_id, version: r.snapshot_version})
  CREATE (r)-[:PRODUCED]->(s)
}
CALL (r, row) {
  UNWIND row.consumed AS insight_id
  MATCH (i:Insight {persona_id: $persona_id, id: insight_id})
  CREATE (r)-[:CONSUMED]->(i)
}
RETURN count(r) AS created
