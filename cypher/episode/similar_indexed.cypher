// Approximate nearest neighbours from the vector index, then kept to one persona's user.
// Neo4j 5.26 cannot filter inside a vector search, so the caller oversamples ($candidates)
// and falls back to episode/similar_exact when fewer than $k survive the filter. The
// index score is quantised, so the similarity is recomputed exactly; Neo4j reports cosine
// as (1 + cos) / 2, which is mapped back to the plain cosine in [-1, 1].
CALL db.index.vector.queryNodes('episode_embedding', $candidates, $embedding)
YIELD node AS e
WHERE e.persona_id = $persona_id AND e.user_id = $user_id
WITH e, 2 * vector.similarity.cosine(e.embedding, $embedding) - 1 AS similarity
RETURN e {.*, embedding: null} AS episode, similarity
ORDER BY similarity DESC, e.seq DESC
LIMIT $k
