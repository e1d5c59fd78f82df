// Store one reflection attempt: (Persona)-[:REFLECTED]->(Reflection), and
// (Reflection)-[:PRODUCED]->(Snapshot) when $produced names the version it wrote. The
// outcome is also a display label (Committed, Rejected, Failed) for Neo4j Browser styles.
MATCH (p:Persona {id: $persona_id})
CREATE (r:Reflection $reflection)
CREATE (p)-[:REFLECTED]->(r)
FOREACH (_ IN CASE WHEN r.outcome = 'committed' THEN [1] ELSE [] END | SET r:Committed)
FOREACH (_ IN CASE WHEN r.outcome = 'rejected' THEN [1] ELSE [] END | SET r:Rejected)
FOREACH (_ IN CASE WHEN r.outcome = 'failed' THEN [1] ELSE [] END | SET r:Failed)
WITH r
OPTIONAL MATCH (s:Snapshot {persona_id: $persona_id, version: $produced})
FOREACH (snapshot IN CASE WHEN s IS NULL THEN [] ELSE [s] END |
  CREATE (r)-[:PRODUCED]->(snapshot))
RETURN r.id AS id
