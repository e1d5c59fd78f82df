// The conversation's Thinker counters and its current narrative (null when none).
MATCH (c:Conversation {persona_id: $persona_id, id: $conversation_id})
OPTIONAL MATCH (c)-[:NARRATIVE]->(n:Narrative)
  WHERE n.version = c.narrative_version
RETURN coalesce(c.narrative_version, 0) AS narrative_version,
       coalesce(c.thought_turn, 0) AS thought_turn,
       n {.*, created_at: null, created_at_us: n.created_at.epochMillis * 1000 + n.created_at.microsecond % 1000} AS narrative
