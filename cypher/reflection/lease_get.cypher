// Take the persona's write lock, then read its reflection lease: what the lease check
// (storage.checks.lease_is_free) decides on before reflection/lease_set. No row: unknown
// persona; null owner: nobody holds the lease.
MATCH (p:Persona {id: $persona_id})
SET p._lock = true
REMOVE p._lock
WITH p
OPTIONAL MATCH (p)-[:LEASE]->(l:ReflectionLease {persona_id: $persona_id})
RETURN l.owner AS owner, l.expires_at AS expires_at
