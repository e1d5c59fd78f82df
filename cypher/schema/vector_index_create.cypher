// The episode vector index as Neo4j 5.26 speaks it, made by `sonality migrate` when
// SONALITY_NEO4J_VECTOR_INDEX is on (migration V0037 explains why it is opt-in). The
// dimension is a parameter: 5.26 accepts one inside OPTIONS {indexConfig: ...}.
CREATE VECTOR INDEX episode_embedding IF NOT EXISTS
FOR (e:Episode) ON e.embedding
OPTIONS {
  indexConfig: {
    `vector.dimensions`: $embedding_dimensions,
    `vector.similarity_function`: 'cosine'
  }
}
