// Give an exchange stored without a response (a respond whose answer did not come in time)
// its response; one that has a response keeps it (the adapter compares: the same is a
// retry, another a conflict). Returns the episode as stored after; no row: unknown.
MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
SET e.agent_response = CASE WHEN e.agent_response = '' THEN $response ELSE e.agent_response END
RETURN e {.*, embedding: null} AS episode
