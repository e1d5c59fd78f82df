// The persona's episodes, most recent first, below the $before cursor (a seq: the last of
// the previous page). Ordered by (persona_id, seq) so that the planner seeks the
// (persona_id, seq) index to the cursor, reads it backwards and stops after $limit
// matches, instead of sorting the persona's whole history. Null filters are ignored (a
// user or a conversation is read through episode/list_user or episode/list_conversation).
MATCH (e:Episode)
USING INDEX e:Episode(persona_id, seq)
WHERE e.persona_id = $persona_id
  AND e.seq < $before
  AND ($user_id IS NULL OR e.user_id = $user_id)
  AND ($conversation_id IS NULL OR e.conversation_id = $conversation_id)
  AND ($since_interaction IS NULL
       OR (e.enrichment_status = 'enriched' AND e.interaction_index > $since_interaction))
WITH e
ORDER BY e.persona_id DESC, e.seq DESC
LIMIT $limit
RETURN e {.*, embedding: null} AS episode
