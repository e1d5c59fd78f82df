// The persona's $beliefs strongest active beliefs (strength = |position| x confidence, kept
// on every belief by the store), read backwards through the (persona_id, status, strength)
// index and stopped at the limit: the cost follows $beliefs, not the persona's beliefs.
// Their topic embedding stays on the server.
MATCH (b:Belief)
USING INDEX b:Belief(persona_id, status, strength)
WHERE b.persona_id = $persona_id AND b.status = 'active' AND b.strength IS NOT NULL
WITH b
ORDER BY b.persona_id DESC, b.status DESC, b.strength DESC
LIMIT $beliefs
RETURN collect(b {.*, topic_embedding: null}) AS strongest
