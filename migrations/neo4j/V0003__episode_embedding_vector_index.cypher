// Cosine vector index over episode embeddings. Its dimension comes from the settings
// (SONALITY_EMBEDDING_DIMENSIONS): Neo4j 5.26 accepts a query parameter inside
// OPTIONS {indexConfig: ...}, so the runner passes $embedding_dimensions as a real
// parameter (never substituted into the text). IF NOT EXISTS keeps an existing index as it
// is, so the runner compares its dimension with the settings before and after.
CREATE VECTOR INDEX episode_embedding IF NOT EXISTS
FOR (e:Episode) ON e.embedding
OPTIONS {
  indexConfig: {
    `vector.dimensions`: $embedding_dimensions,
    `vector.similarity_function`: 'cosine'
  }
};
