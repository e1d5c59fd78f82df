// Up to $beliefs of the persona's active beliefs whose topic is not embedded yet (marked
// embed_pending when a commit creates them), through the (persona_id, embed_pending) index
// named by a hint (the (persona_id) index would read every belief of the persona): `context`
// embeds their topics and stores them (belief/set_topic_embeddings).
// Times come as microseconds since the epoch (<name>_us): the driver builds each DateTime
// in Python, slower than the rest of a belief together, and the context shows up to
// three sets of beliefs on every read.
MATCH (b:Belief)
USING INDEX SEEK b:Belief(persona_id, embed_pending)
WHERE b.persona_id = $persona_id AND b.embed_pending = true AND b.status = 'active'
WITH b
LIMIT $beliefs
RETURN collect(b {.*, topic_embedding: null, created_at: null, updated_at: null,
         created_at_us: b.created_at.epochMillis * 1000 + b.created_at.microsecond % 1000,
         updated_at_us: b.updated_at.epochMillis * 1000 + b.updated_at.microsecond % 1000}) AS unembedded
