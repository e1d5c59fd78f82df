// The persona's episodes, most recent first, below the $before cursor (a seq: the last of
// the previous page). Ordered by (persona_id, seq) so that the planner seeks the
// (persona_id, seq) index to the cursor, reads it backwards and stops after $limit
// matches, instead of sorting the persona's whole history. $opt's null filters are ignored (a
// user or a conversation is read through episode/list_user or episode/list_conversation).
MATCH (e:Episode)
USING INDEX SEEK e:Episode(persona_id, seq)
WHERE e.persona_id = $persona_id
  AND e.seq < $before
  AND ($opt.user_id IS NULL OR e.user_id = $opt.user_id)
  AND ($opt.conversation_id IS NULL OR e.conversation_id = $opt.conversation_id)
  AND ($opt.since_interaction IS NULL
       OR (e.enrichment_status = 'enriched' AND e.interaction_index > $opt.since_interaction))
WITH e
ORDER BY e.persona_id DESC, e.seq DESC
LIMIT $limit
RETURN e {.*, embedding: null, created_at: null, thinker_created_at: null,
         thinker_updated_at: null,
         created_at_us: e.created_at.epochMillis * 1000 + e.created_at.microsecond % 1000} AS episode
