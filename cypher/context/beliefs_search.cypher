CYPHER 25
// The persona's $beliefs active beliefs whose topic is most similar to $embedding, through
// the belief_topic_embedding index's own filter (Neo4j 2026.x: persona_id and status are
// its filter properties, so the index answers with the persona's nearest, whatever the
// number of beliefs). Similarity is recomputed exactly (the index may quantise its score;
// Neo4j reports cosine as (1 + cos) / 2, mapped back to [-1, 1]); equal scores by topic.
// Rows: belief, similarity. Nothing when $embedding is empty or $beliefs is 0.
WITH 1 AS asked
WHERE size($embedding) > 0 AND $beliefs > 0
MATCH (b:Belief)
  SEARCH b IN (
    VECTOR INDEX belief_topic_embedding
    FOR $embedding
    WHERE b.persona_id = $persona_id AND b.status = 'active'
    LIMIT $beliefs
  ) SCORE AS score
WITH b, 2 * vector.similarity.cosine(b.topic_embedding, $embedding) - 1 AS similarity
ORDER BY similarity DESC, b.topic
RETURN b {.*, topic_embedding: null} AS belief, similarity
