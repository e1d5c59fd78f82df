// The persona's episodes, most recent first. Ordered by (persona_id, seq) so that the
// planner reads the (persona_id, seq) index backwards and stops after $limit matches,
// instead of sorting the persona's whole history. Null filters are ignored (a user or a
// conversation is read through episode/list_user or episode/list_conversation).
MATCH (e:Episode)
USING INDEX e:Episode(persona_id, seq)
WHERE e.persona_id = $persona_id
  AND e.seq IS NOT NULL
  AND ($user_id IS NULL OR e.user_id = $user_id)
  AND ($conversation_id IS NULL OR e.conversation_id = $conversation_id)
  AND ($since_interaction IS NULL
       OR (e.enrichment_status = 'enriched' AND e.interaction_index > $since_interaction))
WITH e
ORDER BY e.persona_id DESC, e.seq DESC
LIMIT $limit
RETURN e {.*, embedding: null} AS episode
