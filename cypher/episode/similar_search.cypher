CYPHER 25
// The user's k most similar embedded episodes through the vector index's own filter
// (Neo4j 2026.x, the index of migration V0036: persona_id and user_id are filter
// properties, so the index returns the user's top k, not an unscoped top k to filter).
// The index score is quantised, so similarity is recomputed exactly; Neo4j reports cosine
// as (1 + cos) / 2, which is mapped back to the plain cosine in [-1, 1].
MATCH (e:Episode)
  SEARCH e IN (
    VECTOR INDEX episode_embedding
    FOR $embedding
    WHERE e.persona_id = $persona_id AND e.user_id = $user_id
    LIMIT $k
  ) SCORE AS score
WITH e, 2 * vector.similarity.cosine(e.embedding, $embedding) - 1 AS similarity
RETURN e {.*, embedding: null} AS episode, similarity
ORDER BY similarity DESC, e.seq DESC
