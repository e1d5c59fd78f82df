// Store the topic embeddings `context` computed ($rows: [{topic, embedding}]) on the
// persona's beliefs as float32 vectors (what belief_topic_embedding reads) and clear their
// embed_pending mark. A topic whose belief is gone (an erasure meanwhile) is skipped.
// Returns how many beliefs took one.
UNWIND $rows AS row
MATCH (b:Belief {persona_id: $persona_id, topic: row.topic})
CALL db.create.setNodeVectorProperty(b, 'topic_embedding', row.embedding)
REMOVE b.embed_pending
RETURN count(b) AS n
