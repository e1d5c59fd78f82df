// Conversations under their user, with their counters.
UNWIND $conversations AS row
MATCH (u:User {persona_id: $persona_id, id: row.user_id})
CREATE (c:Conversation)
SET c = row, c.persona_id = $persona_id
CREATE (u)-[:HAD]->(c)
RETURN count(c) AS created
