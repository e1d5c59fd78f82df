// Neo4j 2026.x only: CYPHER 25 statements are skipped on 5.26 (the runner's rule, see
// sonality/storage/neo4j/migrations.py). Recreates the episode vector index with the two
// properties every similarity search is scoped by, so the index filters inside the search
// (episode/similar_search) instead of returning an unscoped top-k. Its dimension comes from
// the settings, as in V0003.
CYPHER 25
DROP INDEX episode_embedding IF EXISTS;

CYPHER 25
CREATE VECTOR INDEX episode_embedding IF NOT EXISTS
FOR (e:Episode) ON e.embedding
WITH [e.persona_id, e.user_id]
OPTIONS {
  indexConfig: {
    `vector.dimensions`: $embedding_dimensions,
    `vector.similarity_function`: 'cosine'
  }
};
