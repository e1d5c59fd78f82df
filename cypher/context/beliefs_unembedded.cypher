// Up to $beliefs of the persona's active beliefs whose topic is not embedded yet (marked
// embed_pending when a commit creates them), through the (persona_id, embed_pending) index:
// `context` embeds their topics and stores them (belief/set_topic_embeddings).
MATCH (b:Belief {persona_id: $persona_id, embed_pending: true})
WHERE b.status = 'active'
WITH b
LIMIT $beliefs
RETURN collect(b {.*, topic_embedding: null}) AS unembedded
