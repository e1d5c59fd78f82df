// Give the reflection lease to $owner until $expires_at (the caller holds the persona
// lock and has checked the lease is free, expired or already $owner's).
MATCH (p:Persona {id: $persona_id})
MERGE (l:ReflectionLease {persona_id: $persona_id})
SET l.owner = $owner, l.expires_at = $expires_at, l.taken_at = $now
MERGE (p)-[:LEASE]->(l)
RETURN l.owner AS owner
