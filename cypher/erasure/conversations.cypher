// The conversations that lose episodes, with the first turn each loses.
MATCH (e:Episode {persona_id: $persona_id})
WHERE e.id IN $ids
RETURN e.conversation_id AS id, min(e.turn) AS first_turn, collect(DISTINCT e.user_id) AS users
