// What the reflection commit checks, read after the caller locked the persona: the
// CURRENT snapshot version and the lease owner (null when free).
MATCH (p:Persona {id: $persona_id})
OPTIONAL MATCH (p)-[:CURRENT]->(s:Snapshot)
OPTIONAL MATCH (p)-[:LEASE]->(l:ReflectionLease {persona_id: $persona_id})
RETURN s.version AS version, l.owner AS lease_owner
