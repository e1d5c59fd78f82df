MATCH (p:Persona {id: $persona_id})
RETURN p {.*} AS persona
