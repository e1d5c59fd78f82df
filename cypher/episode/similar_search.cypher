CYPHER 25
// The user's k most similar embedded episodes through the vector index's own filter
// (Neo4j 2026.x, the index of migration V0036: persona_id and user_id are filter
// properties, so the index returns the user's nearest, not an unscoped top k to filter).
// The index is approximate and its score quantised: it is asked for $candidates (k times
// an oversampling factor), whose similarity is recomputed exactly to keep the best k; Neo4j reports cosine
// as (1 + cos) / 2, which is mapped back to the plain cosine in [-1, 1].
MATCH (e:Episode)
  SEARCH e IN (
    VECTOR INDEX episode_embedding
    FOR $embedding
    WHERE e.persona_id = $persona_id AND e.user_id = $user_id
    LIMIT $candidates
  ) SCORE AS score
WITH e, 2 * vector.similarity.cosine(e.embedding, $embedding) - 1 AS similarity
ORDER BY similarity DESC, e.seq DESC
LIMIT $k
RETURN e {.*, embedding: null} AS episode, similarity
