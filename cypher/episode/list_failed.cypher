// Episodes given up after their attempts, oldest first.
MATCH (e:Episode {persona_id: $persona_id, enrichment_status: 'failed'})
RETURN e {.*, embedding: null} AS episode
ORDER BY e.seq
LIMIT $limit
