// Usage of a conversation's turns, by turn and component.
MATCH (u:TurnUsage {persona_id: $persona_id, conversation_id: $conversation_id})
RETURN u {.*} AS usage
ORDER BY u.turn, u.component
