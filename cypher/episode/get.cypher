MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
RETURN e {.*, embedding: null} AS episode
