// The persona's reflection lease as stored, for diagnostics (`sonality doctor`): a read, no
// lock. No row: nobody holds it.
MATCH (:Persona {id: $persona_id})-[:LEASE]->(l:ReflectionLease {persona_id: $persona_id})
RETURN l.owner AS owner, l.expires_at AS expires_at
