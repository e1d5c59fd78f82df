// Neo4j 2026.x only (CYPHER 25 statements are skipped on 5.26): the episode vector index
// filtered by the two properties every similarity search is scoped by, so `context` finds a
// user's nearest episodes inside the index (episode/similar_search, context/read_search)
// with nothing held in the process. SONALITY_NEO4J_VECTOR_INDEX=auto (the default) keeps it
// there; `off` makes `sonality migrate` drop it again after this step.
//
// Its build options are measured (README, "Performance"; 50k episodes over 25 users on the
// dev server, interleaved): the default HNSW build (ef_construction 100) took bulk loads
// from 475 to 159 episodes/s, ef_construction 32 to 272-286/s; a user's filter matches few
// enough vectors that the search then scans them exactly, and int8 quantisation (on by
// default) cut recall@10 to 0.87, unquantised 1.000. An unscoped index of that name, left by
// an earlier migration with the setting on, is replaced by `sonality migrate`.
CYPHER 25
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
};
