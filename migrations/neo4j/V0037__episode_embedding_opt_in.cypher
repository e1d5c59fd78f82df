// The episode vector index becomes opt-in (SONALITY_NEO4J_VECTOR_INDEX, off by default).
// Why, measured on 5.26 (README, "Performance"): every embedded append inserts into the
// HNSW graph at commit, and that insert was most of the write (append p50 3.8x the floor
// with it on a quiet machine, about 1.7x without; bulk loads 2-5x faster without), while
// the default similarity search never reads the index: the per-process cache is exact
// (recall 1.000) and the scoped exact scan is its fallback. Only the server-side route
// with the cache switched off, and the in-index SEARCH of 2026.x, use it.
// This drops the index V0003 (or V0036) made; after the versioned files, `sonality
// migrate` creates it again, in the form the server speaks, when the setting is on.
DROP INDEX episode_embedding IF EXISTS;
