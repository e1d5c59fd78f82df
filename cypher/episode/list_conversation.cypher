// One conversation's episodes, most recent first, below the $before cursor, read backwards
// through the (persona_id, conversation_id, seq) index from it (V0270) and stopped after
// $limit matches: the Talker reads a conversation's newest turns on every reply, whatever
// the conversation's length. $opt's null filters are ignored.
MATCH (e:Episode)
USING INDEX SEEK e:Episode(persona_id, conversation_id, seq)
WHERE e.persona_id = $persona_id
  AND e.conversation_id = $conversation_id
  AND e.seq < $before
  AND ($opt.user_id IS NULL OR e.user_id = $opt.user_id)
  AND ($opt.since_interaction IS NULL
       OR (e.enrichment_status = 'enriched' AND e.interaction_index > $opt.since_interaction))
WITH e
ORDER BY e.persona_id DESC, e.conversation_id DESC, e.seq DESC
LIMIT $limit
RETURN e {.*, embedding: null, created_at: null, thinker_created_at: null,
         thinker_updated_at: null,
         created_at_us: e.created_at.epochMillis * 1000 + e.created_at.microsecond % 1000} AS episode
