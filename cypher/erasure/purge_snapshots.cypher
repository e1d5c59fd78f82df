// After a reviewing reflection: delete the snapshot versions it replaced, never CURRENT.
MATCH (s:Snapshot {persona_id: $persona_id})
WHERE s.version >= $from AND s.version < $below
  AND NOT EXISTS { MATCH (:Persona {id: $persona_id})-[:CURRENT]->(s) }
DETACH DELETE s
RETURN count(*) AS purged
