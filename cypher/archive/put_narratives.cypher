// Narrative versions under their conversation, AFTER the episode they followed
// (archive/link_narratives chains them).
UNWIND $narratives AS row
MATCH (c:Conversation {persona_id: $persona_id, id: row.conversation_id})
MATCH (e:Episode {persona_id: $persona_id, id: row.episode_id})
USING INDEX SEEK e:Episode(persona_id, id)
CREATE (n:Narrative)
SET n = row
CREATE (c)-[:NARRATIVE]->(n)
CREATE (n)-[:AFTER]->(e)
RETURN count(n) AS created
