// Episodes under their conversation, with the display captions `episode/append` sets.
UNWIND $episodes AS row
MATCH (c:Conversation {persona_id: $persona_id, id: row.conversation_id})
CREATE (e:Episode)
SET e = row
SET e.excerpt = CASE WHEN size(e.user_message) > 30
      THEN left(e.user_message, 29) + '…' ELSE e.user_message END
SET e.caption = replace(substring(toString(e.created_at), 5, 11), 'T', ' ') + ' ' + e.excerpt
CREATE (c)-[:HAS_EPISODE]->(e)
RETURN count(e) AS created
