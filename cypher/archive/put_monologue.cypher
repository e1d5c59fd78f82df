UNWIND $entries AS row
MATCH (c:Conversation {persona_id: $persona_id, id: row.conversation_id})
MATCH (e:Episode {persona_id: $persona_id, id: row.episode_id})
USING INDEX SEEK e:Episode(persona_id, id)
CREATE (m:MonologueEntry)
SET m = row
CREATE (c)-[:THOUGHT]->(m)
CREATE (m)-[:ABOUT]->(e)
RETURN count(m) AS created
