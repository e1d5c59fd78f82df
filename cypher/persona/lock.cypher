// Take the persona's write lock for the rest of the transaction, so that what this
// transaction reads next (counters, CURRENT snapshot, episode status) cannot change
// under it. Writers that move persona state all lock the persona first.
MATCH (p:Persona {id: $persona_id})
SET p._lock = true
REMOVE p._lock
RETURN p.interaction_count AS interaction_count
