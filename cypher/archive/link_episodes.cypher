// NEXT edges and topic mentions of the imported episodes.
UNWIND $episodes AS row
MATCH (e:Episode {persona_id: $persona_id, id: row.id})
USING INDEX SEEK e:Episode(persona_id, id)
CALL (e, row) {
  MATCH (previous:Episode {persona_id: $persona_id, id: row.prev_episode_id})
  CREATE (previous)-[:NEXT]->(e)
}
CALL (e, row) {
  UNWIND row.topics AS name
  MATCH (t:Topic {persona_id: $persona_id, name: name})
  MERGE (e)-[:MENTIONS]->(t)
}
RETURN count(e) AS linked
