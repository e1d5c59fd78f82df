// A conversation's registered turns (all, or up to $opt.up_to_turn; with $opt.open_only
// only those still to think about: pending and failed), by turn. Times come as
// microseconds since the epoch (<name>_us): the driver builds each DateTime in Python,
// slower than the rest of a turn together, and the Thinker reads these on every turn.
MATCH (e:Episode {persona_id: $persona_id, conversation_id: $conversation_id})
WHERE e.thinker_status IS NOT NULL AND ($opt.up_to_turn IS NULL OR e.turn <= $opt.up_to_turn)
  AND (NOT $opt.open_only OR e.thinker_status IN ['pending', 'failed'])
RETURN e {.persona_id, .conversation_id, .user_id, .turn, episode_id: e.id,
          status: e.thinker_status, attempts: e.thinker_attempts, error: e.thinker_error,
          mode: e.thinker_mode, affect: e.thinker_affect,
          narrative_version_used: e.narrative_version_used,
          created_at_us: e.thinker_created_at.epochMillis * 1000 + e.thinker_created_at.microsecond % 1000,
          updated_at_us: e.thinker_updated_at.epochMillis * 1000 + e.thinker_updated_at.microsecond % 1000} AS turn
ORDER BY e.turn
