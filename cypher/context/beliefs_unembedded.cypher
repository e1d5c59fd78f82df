// Up to $beliefs of the persona's active beliefs whose topic is not embedded yet (marked
// embed_pending when a commit creates them), through the (persona_id, embed_pending) index
// named by a hint (the (persona_id) index would read every belief of the persona): `context`
// embeds their topics and stores them (belief/set_topic_embeddings).
MATCH (b:Belief)
USING INDEX b:Belief(persona_id, embed_pending)
WHERE b.persona_id = $persona_id AND b.embed_pending = true AND b.status = 'active'
WITH b
LIMIT $beliefs
RETURN collect(b {.*, topic_embedding: null}) AS unembedded
