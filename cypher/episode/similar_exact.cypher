// Exact cosine over one user's embedded episodes (the scoped fallback of
// episode/similar_indexed). Neo4j reports cosine as (1 + cos) / 2; mapped back to [-1, 1].
MATCH (e:Episode {persona_id: $persona_id, user_id: $user_id})
WHERE e.embedding IS NOT NULL AND size(e.embedding) = size($embedding)
WITH e, 2 * vector.similarity.cosine(e.embedding, $embedding) - 1 AS similarity
RETURN e {.*, embedding: null} AS episode, similarity
ORDER BY similarity DESC, e.seq DESC
LIMIT $k
