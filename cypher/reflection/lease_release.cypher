// Drop the lease if $owner still holds it, under the persona's write lock (so a commit
// that checks the lease sees it either held or gone).
MATCH (p:Persona {id: $persona_id})
SET p._lock = true
REMOVE p._lock
WITH p
OPTIONAL MATCH (p)-[:LEASE]->(l:ReflectionLease {persona_id: $persona_id, owner: $owner})
DETACH DELETE l
RETURN count(l) AS released
