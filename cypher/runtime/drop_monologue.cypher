// Delete the monologue entries the history bound drops (oldest first, chosen by caller).
MATCH (m:MonologueEntry {persona_id: $persona_id, conversation_id: $conversation_id})
WHERE m.turn IN $turns
DETACH DELETE m
RETURN count(*) AS dropped
