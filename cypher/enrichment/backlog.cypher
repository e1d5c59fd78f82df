// What an enrichment pass reads before it asks the model, in one statement: the persona,
// its oldest pending episodes (up to $limit, by seq: the order enrichment follows), when
// $count how many are pending in all (an index range of the pending ones, never a scan of
// the persona's episodes), and the state their commits are planned from, as
// enrichment/state reads it for the episodes' users and the influence window of the
// persona's next interaction, but no belief: planning reads the beliefs of the topics the
// replies name (enrichment/beliefs), never every belief of the persona. Times come as
// microseconds since the epoch (<name>_us), which the driver reads far faster than a
// DateTime. No row: no such persona.
MATCH (p:Persona {id: $persona_id})
CALL (p) {
  MATCH (e:Episode {persona_id: $persona_id, enrichment_status: 'pending'})
  WITH e
  ORDER BY e.seq
  LIMIT $limit
  RETURN collect(e {.*, embedding: null, created_at: null, thinker_created_at: null,
                    thinker_updated_at: null,
                    created_at_us: e.created_at.epochMillis * 1000 + e.created_at.microsecond % 1000}) AS episodes
}
WITH p, episodes, [e IN episodes | e.user_id] AS user_ids,
     p.interaction_count + 1 - $influence_window AS since
CALL (p) {
  MATCH (s:StagedUpdate {persona_id: $persona_id})
  USING INDEX SEEK s:StagedUpdate(persona_id, due_at)
  WHERE s.due_at IS NOT NULL AND s.committed_at IS NULL
  WITH s
  ORDER BY s.due_at, s.staged_at, s.id
  RETURN collect(s {.*}) AS staged
}
CALL (user_ids) {
  MATCH (f:UserFact {persona_id: $persona_id})
  WHERE f.user_id IN user_ids AND NOT f.retracted
  RETURN collect(f {.*, created_at: null,
                    created_at_us: f.created_at.epochMillis * 1000 + f.created_at.microsecond % 1000}) AS facts
}
CALL (user_ids, since) {
  MATCH (s:StagedUpdate {persona_id: $persona_id})
  WHERE s.staged_at > since
  MATCH (e:Episode {persona_id: $persona_id})-[:STAGED]->(s)
  WHERE e.user_id IN user_ids
  RETURN collect({
    user_id: e.user_id, staged_id: s.id, episode_id: s.episode_id, topic: s.topic,
    signed_delta: s.signed_delta, staged_at: s.staged_at, message: e.user_message
  }) AS influence
}
RETURN p {.*, created_at: null,
          created_at_us: p.created_at.epochMillis * 1000 + p.created_at.microsecond % 1000}
         AS persona,
       episodes, staged, facts, influence,
       CASE WHEN $count
         THEN COUNT { MATCH (x:Episode {persona_id: $persona_id, enrichment_status: 'pending'}) }
       END AS pending
