// Episodes stored without an embedding (a remote embedder failed), oldest first.
MATCH (e:Episode {persona_id: $persona_id})
WHERE e.embedding IS NULL
RETURN e {.*, embedding: null} AS episode
ORDER BY e.seq
LIMIT $limit
