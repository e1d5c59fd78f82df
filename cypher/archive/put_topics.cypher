UNWIND $topics AS name
CREATE (t:Topic {persona_id: $persona_id, name: name})
RETURN count(t) AS created
