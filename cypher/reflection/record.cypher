// Store a rejected or failed reflection attempt, in one statement, under the persona's
// write lock: (Persona)-[:REFLECTED]->(Reflection) with the outcome as a display label
// (Rejected, Failed), and the persona's last attempt moved forward to $attempt_at (never
// back). No row: no such persona.
MATCH (p:Persona {id: $persona_id})
SET p._lock = true
REMOVE p._lock
CREATE (r:Reflection)
SET r = $reflection
CREATE (p)-[:REFLECTED]->(r)
FOREACH (_ IN CASE WHEN r.outcome = 'committed' THEN [1] ELSE [] END | SET r:Committed)
FOREACH (_ IN CASE WHEN r.outcome = 'rejected' THEN [1] ELSE [] END | SET r:Rejected)
FOREACH (_ IN CASE WHEN r.outcome = 'failed' THEN [1] ELSE [] END | SET r:Failed)
SET p.last_reflection_attempt_at = CASE
  WHEN coalesce(p.last_reflection_attempt_at, 0) > $attempt_at
  THEN p.last_reflection_attempt_at
  ELSE $attempt_at
END
RETURN r.id AS id
