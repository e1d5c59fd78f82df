// A conversation's registered turns (all, or up to $opt.up_to_turn), by turn.
MATCH (e:Episode {persona_id: $persona_id, conversation_id: $conversation_id})
WHERE e.thinker_status IS NOT NULL AND ($opt.up_to_turn IS NULL OR e.turn <= $opt.up_to_turn)
RETURN e {.persona_id, .conversation_id, .user_id, .turn, episode_id: e.id,
          status: e.thinker_status, attempts: e.thinker_attempts, error: e.thinker_error,
          mode: e.thinker_mode, affect: e.thinker_affect,
          narrative_version_used: e.narrative_version_used,
          created_at: e.thinker_created_at, updated_at: e.thinker_updated_at} AS turn
ORDER BY e.turn
