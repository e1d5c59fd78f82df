// One user's episodes, most recent first: read through the (persona_id, user_id) index,
// so the cost follows the user's history, not the persona's (the general episode/list
// walks every episode of the persona). Null filters are ignored.
MATCH (e:Episode {persona_id: $persona_id, user_id: $user_id})
WHERE ($conversation_id IS NULL OR e.conversation_id = $conversation_id)
  AND ($since_interaction IS NULL
       OR (e.enrichment_status = 'enriched' AND e.interaction_index > $since_interaction))
WITH e
ORDER BY e.seq DESC
LIMIT $limit
RETURN e {.*, embedding: null} AS episode
