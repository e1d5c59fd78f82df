// Snapshot retention: delete the persona's oldest versions up to $through, never the
// CURRENT one. Only the oldest go, so the PREVIOUS chain left is unbroken.
MATCH (s:Snapshot {persona_id: $persona_id})
WHERE s.version <= $through
  AND NOT EXISTS { MATCH (:Persona {id: $persona_id})-[:CURRENT]->(s) }
DETACH DELETE s
RETURN count(*) AS pruned
