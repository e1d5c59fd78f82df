CYPHER 25
// The user's $k most similar embedded episodes through the vector index's own filter
// (Neo4j 2026.x: persona_id and user_id are filter properties of episode_embedding, so the
// index answers with the user's nearest, not an unscoped top k to filter). The index is
// asked for $candidates (k and a margin) and may quantise its score, so the similarity is
// recomputed exactly and the best $k kept, equal scores by the later seq (as the exact scan
// orders them); Neo4j reports cosine as (1 + cos) / 2, mapped back to [-1, 1]. created_at
// comes as microseconds since the epoch (created_at_us). Nothing when $embedding is empty or
// $k is 0.
WITH 1 AS asked
WHERE size($embedding) > 0 AND $k > 0
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
RETURN e {.*, embedding: null, created_at: null, thinker_created_at: null,
          thinker_updated_at: null,
          created_at_us: e.created_at.epochMillis * 1000 + e.created_at.microsecond % 1000}
       AS episode,
       similarity
