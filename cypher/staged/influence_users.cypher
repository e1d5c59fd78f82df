// The staged deltas of several users' episodes staged after $since, each with its user,
// its id and the episode's message: the influence a backlog chunk carries, in one read.
MATCH (s:StagedUpdate {persona_id: $persona_id})
WHERE s.staged_at > $since
MATCH (e:Episode {persona_id: $persona_id})-[:STAGED]->(s)
WHERE e.user_id IN $user_ids
RETURN e.user_id AS user_id, s.id AS staged_id, s.episode_id AS episode_id, s.topic AS topic,
       s.signed_delta AS signed_delta, s.staged_at AS staged_at, e.user_message AS message
