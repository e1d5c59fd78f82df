// Enriched episodes with an interaction index above $since, newest first (only enriched
// episodes have one). Served by the (persona_id, interaction_index) index.
MATCH (e:Episode {persona_id: $persona_id})
WHERE e.interaction_index > $since
RETURN e {.*, embedding: null} AS episode
ORDER BY e.interaction_index DESC
LIMIT $limit
