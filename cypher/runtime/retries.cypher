// Turns the retry job picks up: failed ones, and pending ones nobody touched since
// $stale_before (the process thinking about them died), by conversation and turn.
MATCH (e:Episode {persona_id: $persona_id})
WHERE e.thinker_status = 'failed'
   OR (e.thinker_status = 'pending' AND e.thinker_updated_at < $stale_before)
RETURN e {.persona_id, .conversation_id, .user_id, .turn, episode_id: e.id,
          status: e.thinker_status, attempts: e.thinker_attempts, error: e.thinker_error,
          mode: e.thinker_mode, affect: e.thinker_affect,
          narrative_version_used: e.narrative_version_used,
          created_at: e.thinker_created_at, updated_at: e.thinker_updated_at} AS turn
ORDER BY e.conversation_id, e.turn
