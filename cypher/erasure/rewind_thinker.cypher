// The Thinker wrote its monologue entries and narratives from a removed turn on after
// seeing it: they go, and the conversation's narrative pointer moves back to the newest
// version left (the compare-and-swap token the next thought starts from).
UNWIND $conversations AS row
MATCH (c:Conversation {persona_id: $persona_id, id: row.id})
CALL (row) {
  MATCH (m:MonologueEntry {persona_id: $persona_id, conversation_id: row.id})
  WHERE m.turn >= row.first_turn
  DETACH DELETE m
}
CALL (row) {
  MATCH (n:Narrative {persona_id: $persona_id, conversation_id: row.id})
  WHERE n.turn >= row.first_turn
  DETACH DELETE n
}
CALL (c) {
  OPTIONAL MATCH (c)-[:NARRATIVE]->(n:Narrative)
  RETURN max(n.version) AS latest
}
SET c.narrative_version = CASE
  WHEN c.narrative_version IS NULL THEN null ELSE coalesce(latest, 0) END
RETURN count(c) AS rewound
