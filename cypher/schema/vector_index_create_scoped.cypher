CYPHER 25
// The episode vector index on Neo4j 2026.x, as migration V0271 makes it (keep the two in
// step): persona_id and user_id are filter properties, so episode/similar_search and
// context/read_search filter inside the index; unquantised, built with ef_construction 32
// (V0271 says why). `sonality migrate` makes it here when the setting wants it and the
// versioned step's index is missing or unscoped.
CREATE VECTOR INDEX episode_embedding IF NOT EXISTS
FOR (e:Episode) ON e.embedding
WITH [e.persona_id, e.user_id]
OPTIONS {
  indexConfig: {
    `vector.dimensions`: $embedding_dimensions,
    `vector.similarity_function`: 'cosine',
    `vector.quantization.enabled`: false,
    `vector.hnsw.ef_construction`: 32
  }
}
