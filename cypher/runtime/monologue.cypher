// The conversation's stored monologue history, oldest first.
MATCH (m:MonologueEntry {persona_id: $persona_id, conversation_id: $conversation_id})
RETURN m {.*} AS entry
ORDER BY m.turn
