// Oldest first: the order enrichment must follow.
MATCH (e:Episode {persona_id: $persona_id, enrichment_status: 'pending'})
RETURN e {.*, embedding: null} AS episode
ORDER BY e.seq
LIMIT $limit
