// The conversation's stored monologue history, oldest first (created_at as microseconds
// since the epoch, created_at_us: the driver's DateTime is the costliest value to read).
MATCH (m:MonologueEntry {persona_id: $persona_id, conversation_id: $conversation_id})
RETURN m {.*, created_at: null, created_at_us: m.created_at.epochMillis * 1000 + m.created_at.microsecond % 1000} AS entry
ORDER BY m.turn
