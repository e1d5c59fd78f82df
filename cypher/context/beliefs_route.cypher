// The persona's $beliefs active beliefs whose topic is most similar to $embedding, on a
// server without filtered vector search (5.26): the belief_topic_embedding index is asked
// for $belief_candidates nearest topics of every persona and the persona's active ones are kept;
// when fewer than $beliefs of them are among those, the persona's embedded topics are
// scanned exactly instead (a persona with few beliefs among many). Similarity is computed
// exactly (Neo4j reports cosine as (1 + cos) / 2, mapped back to [-1, 1]); equal scores by
// topic. Rows: belief, similarity. Nothing when $embedding is empty or $beliefs is 0.
// Times come as microseconds since the epoch (<name>_us): the driver builds each DateTime
// in Python, slower than the rest of a belief together, and the context shows up to
// three sets of beliefs on every read.
CALL () {
  WITH 1 AS asked
  WHERE size($embedding) > 0 AND $beliefs > 0
  CALL db.index.vector.queryNodes('belief_topic_embedding', $belief_candidates, $embedding)
  YIELD node AS b
  WITH b
  WHERE b.persona_id = $persona_id AND b.status = 'active'
  RETURN collect(b) AS found
}
CALL (found) {
  WITH found
  WHERE size(found) >= $beliefs
  UNWIND found AS b
  RETURN b
UNION
  // (an UNWIND, not a WHERE: the planner would run the seek and filter its rows)
  UNWIND CASE WHEN size(found) < $beliefs AND size($embedding) > 0 THEN [1] ELSE [] END AS scan
  MATCH (b:Belief)
  USING INDEX SEEK b:Belief(persona_id, status, strength)
  WHERE b.persona_id = $persona_id AND b.status = 'active' AND b.strength IS NOT NULL
    AND b.topic_embedding IS NOT NULL
  RETURN b
}
WITH b
WHERE size(b.topic_embedding) = size($embedding)
WITH b, 2 * vector.similarity.cosine(b.topic_embedding, $embedding) - 1 AS similarity
ORDER BY similarity DESC, b.topic
LIMIT $beliefs
RETURN b {.*, topic_embedding: null, created_at: null, updated_at: null,
         created_at_us: b.created_at.epochMillis * 1000 + b.created_at.microsecond % 1000,
         updated_at_us: b.updated_at.epochMillis * 1000 + b.updated_at.microsecond % 1000} AS belief, similarity
