// Most recent first. Null filters are ignored.
MATCH (e:Episode {persona_id: $persona_id})
WHERE ($user_id IS NULL OR e.user_id = $user_id)
  AND ($conversation_id IS NULL OR e.conversation_id = $conversation_id)
  AND ($since_interaction IS NULL
       OR (e.enrichment_status = 'enriched' AND e.interaction_index > $since_interaction))
RETURN e {.*, embedding: null} AS episode
ORDER BY e.seq DESC
LIMIT $limit
