// The persona's reflection lease, read after the caller locked the persona. No row:
// unknown persona; null owner: nobody holds the lease.
MATCH (p:Persona {id: $persona_id})
OPTIONAL MATCH (p)-[:LEASE]->(l:ReflectionLease {persona_id: $persona_id})
RETURN l.owner AS owner, l.expires_at AS expires_at
