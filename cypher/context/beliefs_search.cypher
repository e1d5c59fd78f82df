CYPHER 25
// The persona's $beliefs active beliefs whose topic is most similar to $embedding, through
// the belief_topic_embedding index's own filter (Neo4j 2026.x: persona_id and status are
// its filter properties, so the index answers with the persona's nearest, whatever the
// number of beliefs). Similarity is recomputed exactly (the index may quantise its score;
// Neo4j reports cosine as (1 + cos) / 2, mapped back to [-1, 1]); equal scores by topic.
// Rows: belief, similarity. Nothing when $embedding is empty or $beliefs is 0.
// Times come as microseconds since the epoch (<name>_us): the driver builds each DateTime
// in Python, slower than the rest of a belief together, and the context shows up to
// three sets of beliefs on every read.
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
RETURN b {.*, topic_embedding: null, created_at: null, updated_at: null,
         created_at_us: b.created_at.epochMillis * 1000 + b.created_at.microsecond % 1000,
         updated_at_us: b.updated_at.epochMillis * 1000 + b.updated_at.microsecond % 1000} AS belief, similarity
