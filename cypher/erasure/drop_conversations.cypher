// Remove the conversations left without episodes, with their Thinker state.
UNWIND $ids AS conversation_id
MATCH (c:Conversation {persona_id: $persona_id, id: conversation_id})
WHERE NOT EXISTS { MATCH (c)-[:HAS_EPISODE]->(:Episode) }
CALL (c) {
  OPTIONAL MATCH (c)-[:NARRATIVE|THOUGHT]->(x)
  DETACH DELETE x
}
DETACH DELETE c
RETURN count(*) AS dropped
