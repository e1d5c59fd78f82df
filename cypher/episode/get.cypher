MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
RETURN e {.*, embedding: null, created_at: null, thinker_created_at: null,
         thinker_updated_at: null,
         created_at_us: e.created_at.epochMillis * 1000 + e.created_at.microsecond % 1000} AS episode
