// One conversation's first episode (the lowest seq), read forwards through the
// (persona_id, conversation_id, seq) index and stopped at the first match: the Talker's
// window always shows the conversation's first message.
MATCH (e:Episode)
USING INDEX e:Episode(persona_id, conversation_id, seq)
WHERE e.persona_id = $persona_id
  AND e.conversation_id = $conversation_id
  AND e.seq IS NOT NULL
WITH e
ORDER BY e.persona_id, e.conversation_id, e.seq
LIMIT 1
RETURN e {.*, embedding: null} AS episode
