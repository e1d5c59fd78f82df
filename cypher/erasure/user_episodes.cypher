// Every episode of one user of the persona (any status), by seq.
MATCH (e:Episode {persona_id: $persona_id, user_id: $user_id})
RETURN e {.*, embedding: null} AS episode
ORDER BY e.seq
