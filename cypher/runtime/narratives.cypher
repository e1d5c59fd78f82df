// A conversation's stored narrative versions, newest first.
MATCH (n:Narrative {persona_id: $persona_id, conversation_id: $conversation_id})
RETURN n {.*} AS narrative
ORDER BY n.version DESC
