// Take the conversation's write lock for the rest of the transaction and read its
// compare-and-swap counters under it (no row: the Thinker never touched it).
MATCH (c:Conversation {persona_id: $persona_id, id: $conversation_id})
WHERE c.thought_turn IS NOT NULL
SET c._lock = true
REMOVE c._lock
RETURN c.narrative_version AS narrative_version, c.thought_turn AS thought_turn
