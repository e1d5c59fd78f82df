// The conversation's episodes in NEXT-chain order, from the one nothing points to.
MATCH (first:Episode {persona_id: $persona_id, conversation_id: $conversation_id})
WHERE NOT EXISTS { MATCH (:Episode {persona_id: $persona_id})-[:NEXT]->(first) }
MATCH path = (first)-[:NEXT*0..]->(e:Episode)
RETURN e.id AS id
ORDER BY length(path)
