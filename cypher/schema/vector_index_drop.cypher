// Drop the episode vector index (SONALITY_NEO4J_VECTOR_INDEX off, or an unscoped index
// about to be recreated scoped on 2026.x).
DROP INDEX episode_embedding IF EXISTS
