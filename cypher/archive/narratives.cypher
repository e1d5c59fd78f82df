MATCH (n:Narrative {persona_id: $persona_id})
RETURN n {.*} AS narrative
