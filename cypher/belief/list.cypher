MATCH (b:Belief {persona_id: $persona_id})
WHERE $include_retired OR b.status = 'active'
RETURN b {.*, topic_embedding: null} AS belief
ORDER BY b.topic
