// The user's $recent latest episodes, through the (persona_id, user_id, seq) index named by
// a hint (the planner's statistics could otherwise pick the (persona_id, user_id,
// embedding_rev) index and sort the user's history); created_at comes as microseconds since
// the epoch (created_at_us), which the driver reads faster than a DateTime.
OPTIONAL MATCH (e:Episode)
USING INDEX SEEK e:Episode(persona_id, user_id, seq)
WHERE e.persona_id = $persona_id AND e.user_id = $user_id AND e.seq IS NOT NULL
WITH e
ORDER BY e.persona_id DESC, e.user_id DESC, e.seq DESC
LIMIT $recent
RETURN collect(e {.*, embedding: null, created_at: null, thinker_created_at: null,
                  thinker_updated_at: null,
                  created_at_us: e.created_at.epochMillis * 1000 + e.created_at.microsecond % 1000})
       AS recent
