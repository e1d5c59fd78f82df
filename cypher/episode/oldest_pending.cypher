// The heads of each persona's two queues of model work: the pending episode of lowest
// seq (enrichment goes in order) and the oldest pending Thinker turn. Each is a seek on
// an index that keeps the order, (persona_id, enrichment_status, seq) and (persona_id,
// thinker_status, thinker_created_at), cut at its first entry whatever the backlog
// (V0060). The hints hold the planner to seeks on these indexes (it may otherwise pick
// the shorter (persona_id, status) ones and sort, or scan an index whole, as it did in a
// full test run), and ORDER BY names every property of the index: only then is the index
// read in order instead of every pending node sorted.
UNWIND $persona_ids AS persona_id
OPTIONAL CALL (persona_id) {
  MATCH (e:Episode {persona_id: persona_id, enrichment_status: 'pending'})
  USING INDEX SEEK e:Episode(persona_id, enrichment_status, seq)
  WHERE e.seq IS NOT NULL
  RETURN e.created_at AS episode_at
  ORDER BY e.persona_id, e.enrichment_status, e.seq
  LIMIT 1
}
OPTIONAL CALL (persona_id) {
  MATCH (t:Episode {persona_id: persona_id, thinker_status: 'pending'})
  USING INDEX SEEK t:Episode(persona_id, thinker_status, thinker_created_at)
  WHERE t.thinker_created_at IS NOT NULL
  RETURN t.thinker_created_at AS turn_at
  ORDER BY t.persona_id, t.thinker_status, t.thinker_created_at
  LIMIT 1
}
RETURN persona_id, episode_at, turn_at
