// The Thinker bookkeeping of every turn answered by `respond`.
MATCH (e:Episode {persona_id: $persona_id})
WHERE e.thinker_status IS NOT NULL
RETURN e {.persona_id, .conversation_id, .user_id, .turn, episode_id: e.id,
          status: e.thinker_status, attempts: e.thinker_attempts, error: e.thinker_error,
          mode: e.thinker_mode, affect: e.thinker_affect,
          narrative_version_used: e.narrative_version_used,
          created_at: e.thinker_created_at, updated_at: e.thinker_updated_at} AS turn
