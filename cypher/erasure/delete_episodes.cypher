// Remove episodes with what hangs off them: insights, staged updates, usage (facts, which
// may hang off several episodes, are settled before: erasure/refact); DETACH takes their
// NEXT, MENTIONS, FROM, provenance and Thinker edges.
UNWIND $ids AS episode_id
MATCH (e:Episode {persona_id: $persona_id, id: episode_id})
USING INDEX SEEK e:Episode(persona_id, id)
CALL (e) {
  OPTIONAL MATCH (e)-[:YIELDED]->(i:Insight)
  DETACH DELETE i
}
CALL (e) {
  OPTIONAL MATCH (e)-[:STAGED]->(s:StagedUpdate)
  DETACH DELETE s
}
CALL (e) {
  OPTIONAL MATCH (e)-[:USAGE]->(u:TurnUsage)
  DETACH DELETE u
}
DETACH DELETE e
RETURN count(*) AS deleted
