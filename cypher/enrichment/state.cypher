// What planning a persona's next enrichments reads, in one statement: the persona, every
// belief (retired too, by topic), the uncommitted staged deltas (in the order they net),
// the active facts of $user_ids, and the staged deltas of those users' episodes staged
// after $since with each one's user and message (the influence a chunk carries). No row:
// no such persona.
MATCH (p:Persona {id: $persona_id})
CALL (p) {
  MATCH (b:Belief {persona_id: $persona_id})
  WITH b
  ORDER BY b.topic
  RETURN collect(b {.*, topic_embedding: null}) AS beliefs
}
CALL (p) {
  MATCH (s:StagedUpdate {persona_id: $persona_id})
  USING INDEX SEEK s:StagedUpdate(persona_id, due_at)
  WHERE s.due_at IS NOT NULL AND s.committed_at IS NULL
  WITH s
  ORDER BY s.due_at, s.staged_at, s.id
  RETURN collect(s {.*}) AS staged
}
CALL (p) {
  MATCH (f:UserFact {persona_id: $persona_id})
  WHERE f.user_id IN $user_ids AND NOT f.retracted
  RETURN collect(f {.*}) AS facts
}
CALL (p) {
  MATCH (s:StagedUpdate {persona_id: $persona_id})
  WHERE s.staged_at > $since
  MATCH (e:Episode {persona_id: $persona_id})-[:STAGED]->(s)
  WHERE e.user_id IN $user_ids
  RETURN collect({
    user_id: e.user_id, staged_id: s.id, episode_id: s.episode_id, topic: s.topic,
    signed_delta: s.signed_delta, staged_at: s.staged_at, message: e.user_message
  }) AS influence
}
RETURN p {.*} AS persona, beliefs, staged, facts, influence
