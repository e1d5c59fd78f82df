// The staged deltas of one user's episodes staged after $since, with the episode's
// message: what the per-user influence budget and the repetition rule read.
MATCH (s:StagedUpdate {persona_id: $persona_id})
WHERE s.staged_at > $since
MATCH (e:Episode {persona_id: $persona_id, user_id: $user_id})-[:STAGED]->(s)
RETURN s.episode_id AS episode_id, s.topic AS topic, s.signed_delta AS signed_delta,
       s.staged_at AS staged_at, e.user_message AS message
ORDER BY s.staged_at, s.id
