// The persona's $beliefs strongest active beliefs (strength = |position| x confidence, kept
// on every belief by the store), read backwards through the (persona_id, status, strength)
// index and stopped at the limit: the cost follows $beliefs, not the persona's beliefs.
// Their topic embedding stays on the server.
// Times come as microseconds since the epoch (<name>_us): the driver builds each DateTime
// in Python, slower than the rest of a belief together, and the context shows up to
// three sets of beliefs on every read.
MATCH (b:Belief)
USING INDEX SEEK b:Belief(persona_id, status, strength)
WHERE b.persona_id = $persona_id AND b.status = 'active' AND b.strength IS NOT NULL
WITH b
ORDER BY b.persona_id DESC, b.status DESC, b.strength DESC
LIMIT $beliefs
RETURN collect(b {.*, topic_embedding: null, created_at: null, updated_at: null,
         created_at_us: b.created_at.epochMillis * 1000 + b.created_at.microsecond % 1000,
         updated_at_us: b.updated_at.epochMillis * 1000 + b.updated_at.microsecond % 1000}) AS strongest
