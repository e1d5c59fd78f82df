// One user's episodes, most recent first, below the $before cursor, read backwards
// through the (persona_id, user_id, seq) index from it: the scan stops after $limit
// matches, so the cost follows neither the persona's history nor the user's (the hint
// keeps the planner on that index). $opt's null filters are ignored.
MATCH (e:Episode)
USING INDEX SEEK e:Episode(persona_id, user_id, seq)
WHERE e.persona_id = $persona_id
  AND e.user_id = $user_id
  AND e.seq < $before
  AND ($opt.conversation_id IS NULL OR e.conversation_id = $opt.conversation_id)
  AND ($opt.since_interaction IS NULL
       OR (e.enrichment_status = 'enriched' AND e.interaction_index > $opt.since_interaction))
WITH e
ORDER BY e.persona_id DESC, e.user_id DESC, e.seq DESC
LIMIT $limit
RETURN e {.*, embedding: null, created_at: null, thinker_created_at: null,
         thinker_updated_at: null,
         created_at_us: e.created_at.epochMillis * 1000 + e.created_at.microsecond % 1000} AS episode
