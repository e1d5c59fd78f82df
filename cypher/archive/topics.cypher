MATCH (t:Topic {persona_id: $persona_id})
RETURN t.name AS name
