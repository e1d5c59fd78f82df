// Enriched episodes whose insight part is $status ('pending' or 'failed'), oldest first.
MATCH (e:Episode {persona_id: $persona_id, insight_status: $status})
RETURN e {.*, embedding: null} AS episode
ORDER BY e.seq
LIMIT $limit
