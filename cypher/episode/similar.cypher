// The user's k most similar embedded episodes, in one statement, routed by how many
// episodes the user has (the persona/user index counts them; the count store gives the
// database's total at no cost):
// - at most $exact_max: an exact cosine scan of the user's episodes;
// - above: the vector index with candidates ≈ k × (total ÷ user's) × $oversample, capped
//   at $max_candidates, filtered to the persona's user. Neo4j 5.26 cannot filter inside
//   a vector search; when fewer than $k survive, the caller runs episode/similar_exact.
// The index score is quantised, so similarity is recomputed exactly; Neo4j reports
// cosine as (1 + cos) / 2, which is mapped back to the plain cosine in [-1, 1].
CALL () {
  MATCH (mine:Episode {persona_id: $persona_id, user_id: $user_id})
  RETURN count(mine) AS mine
}
CALL () {
  MATCH (n:Episode)
  RETURN count(n) AS total
}
CALL (mine, total) {
  WITH mine
  WHERE mine <= $exact_max
  MATCH (e:Episode {persona_id: $persona_id, user_id: $user_id})
  WHERE e.embedding IS NOT NULL AND size(e.embedding) = size($embedding)
  RETURN e, 'exact' AS route
UNION
  WITH mine, total
  WHERE mine > $exact_max
  WITH toInteger(ceil(toFloat($k) * total / mine * $oversample)) AS wanted
  CALL db.index.vector.queryNodes(
    'episode_embedding',
    CASE WHEN wanted > $max_candidates THEN $max_candidates ELSE wanted END,
    $embedding
  )
  YIELD node AS e
  WHERE e.persona_id = $persona_id AND e.user_id = $user_id
  RETURN e, 'index' AS route
}
WITH e, route, 2 * vector.similarity.cosine(e.embedding, $embedding) - 1 AS similarity
RETURN e {.*, embedding: null} AS episode, similarity, route
ORDER BY similarity DESC, e.seq DESC
LIMIT $k
