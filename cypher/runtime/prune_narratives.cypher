// Narrative retention: delete the versions at or below $below.
MATCH (n:Narrative {persona_id: $persona_id, conversation_id: $conversation_id})
WHERE n.version <= $below
DETACH DELETE n
RETURN count(*) AS pruned
