CYPHER 25
// The episode vector index on Neo4j 2026.x: persona_id and user_id are filter properties,
// so episode/similar_search can filter inside the index. Made by `sonality migrate` when
// SONALITY_NEO4J_VECTOR_INDEX is on and the server speaks Cypher 25.
CREATE VECTOR INDEX episode_embedding IF NOT EXISTS
FOR (e:Episode) ON e.embedding
WITH [e.persona_id, e.user_id]
OPTIONS {
  indexConfig: {
    `vector.dimensions`: $embedding_dimensions,
    `vector.similarity_function`: 'cosine'
  }
}
