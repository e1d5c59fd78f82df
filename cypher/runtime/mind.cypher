// A conversation's Thinker state in one statement (one round trip: it is read on every
// Thinker turn): its counters with its current narrative, and its stored monologue
// history, oldest first. No row: no such conversation. Times come as microseconds since
// the epoch (<name>_us): the driver builds each DateTime in Python, slower than the rest
// of an entry together.
MATCH (c:Conversation {persona_id: $persona_id, id: $conversation_id})
OPTIONAL MATCH (c)-[:NARRATIVE]->(n:Narrative)
  WHERE n.version = c.narrative_version
CALL () {
  MATCH (m:MonologueEntry {persona_id: $persona_id, conversation_id: $conversation_id})
  WITH m
  ORDER BY m.turn
  RETURN collect(m {.*, created_at: null,
                    created_at_us: m.created_at.epochMillis * 1000
                                   + m.created_at.microsecond % 1000}) AS entries
}
RETURN coalesce(c.narrative_version, 0) AS narrative_version,
       coalesce(c.thought_turn, 0) AS thought_turn,
       n {.*, created_at: null, created_at_us: n.created_at.epochMillis * 1000 + n.created_at.microsecond % 1000} AS narrative,
       entries
