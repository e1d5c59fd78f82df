MATCH (p:Persona)
RETURN p {.*} AS persona
ORDER BY p.id
