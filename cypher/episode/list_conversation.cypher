// One conversation's episodes, most recent first, through the (persona_id,
// conversation_id) index. Null filters are ignored.
MATCH (e:Episode {persona_id: $persona_id, conversation_id: $conversation_id})
WHERE ($user_id IS NULL OR e.user_id = $user_id)
  AND ($since_interaction IS NULL
       OR (e.enrichment_status = 'enriched' AND e.interaction_index > $since_interaction))
WITH e
ORDER BY e.seq DESC
LIMIT $limit
RETURN e {.*, embedding: null} AS episode
